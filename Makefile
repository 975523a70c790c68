# Weft — make targets. `make test` is what CI runs (through .ci/run).
GO        ?= go
# Where the S3 test servers are installed (cached between runs when possible).
TOOLS_BIN ?= $(HOME)/.cache/weft/bin
export WEFT_TOOLS_BIN := $(abspath $(TOOLS_BIN))

MINIO_MODULE     := github.com/minio/minio@v0.0.0-20260212201848-7aac2a2c5b7c
VERSITYGW_MODULE := github.com/versity/versitygw/cmd/versitygw@v1.8.0

GOTEST_FLAGS ?= -race -count=1 -timeout 40m

.PHONY: all build test test-go vet tools bench clean

all: build

build:
	$(GO) build ./...

vet:
	$(GO) vet ./...

## tools: install the S3 servers the tests run (MinIO, versitygw) into $(TOOLS_BIN) if missing.
tools: $(TOOLS_BIN)/minio $(TOOLS_BIN)/versitygw

$(TOOLS_BIN)/minio:
	@mkdir -p $(TOOLS_BIN)
	@echo "installing minio into $(TOOLS_BIN) (about 3.5 min cold)"
	GOBIN=$(WEFT_TOOLS_BIN) $(GO) install $(MINIO_MODULE)

$(TOOLS_BIN)/versitygw:
	@mkdir -p $(TOOLS_BIN)
	@echo "installing versitygw into $(TOOLS_BIN) (about 2.5 min cold)"
	GOBIN=$(WEFT_TOOLS_BIN) $(GO) install $(VERSITYGW_MODULE)

## test: vet, install the S3 servers, run every test with -race.
test: vet tools test-go

test-go:
	$(GO) test $(GOTEST_FLAGS) ./...

## bench: storage benchmarks (prints MB/s; see bench/).
bench: tools
	$(GO) test -run '^$$' -bench . -benchtime 1x -timeout 60m ./tables/

clean:
	rm -rf weft-data
