# Weft — make targets. `make test` is what CI runs (through .ci/run).
GO        ?= go
# Where the S3 test servers are installed (cached between runs when possible).
TOOLS_BIN ?= $(HOME)/.cache/weft/bin
export WEFT_TOOLS_BIN := $(abspath $(TOOLS_BIN))

MINIO_MODULE     := github.com/minio/minio@v0.0.0-20260212201848-7aac2a2c5b7c
VERSITYGW_MODULE := github.com/versity/versitygw/cmd/versitygw@v1.8.0
# kubeconform validates deploy/ against JSON schemas of Kubernetes $(KUBE_VERSION),
# made by deploy/kubeschemas.py from the OpenAPI spec in the k8s.io/kubernetes
# Go module (fetched through the Go module proxy): no network at test time.
KUBECONFORM_MODULE := github.com/yannh/kubeconform/cmd/kubeconform@v0.8.0
KUBE_VERSION       := 1.33.4
KUBE_SCHEMAS       ?= $(HOME)/.cache/weft/kube-schemas
KUBE_KINDS         := StatefulSet Deployment Service Secret PodDisruptionBudget
KUBE_SCHEMA_DIR    := $(KUBE_SCHEMAS)/v$(KUBE_VERSION)-standalone-strict

GOTEST_FLAGS ?= -race -count=1 -timeout 40m

# Python tests: a venv (Debian's python3, so its packages, e.g. python3-torch,
# stay visible) with the pinned test requirements.
PYTHON ?= /usr/bin/python3
VENV   ?= .venv
PYTEST_FLAGS ?= -v -rs

.PHONY: ptx gpu-check gpu-check-prep all build test test-go test-python test-deploy bench-multi vet tools bench bench-full bench-storage bench-flight bench-mix bench-python bench-filter flightd demo venv clean

all: build

build:
	$(GO) build ./...

vet:
	$(GO) vet ./...

## tools: install the S3 servers the tests run (MinIO, versitygw) and kubeconform with its Kubernetes schemas into $(TOOLS_BIN) if missing.
tools: $(TOOLS_BIN)/minio $(TOOLS_BIN)/versitygw $(TOOLS_BIN)/kubeconform $(KUBE_SCHEMA_DIR)/.done

$(TOOLS_BIN)/minio:
	@mkdir -p $(TOOLS_BIN)
	@echo "installing minio into $(TOOLS_BIN) (about 3.5 min cold)"
	GOBIN=$(WEFT_TOOLS_BIN) $(GO) install $(MINIO_MODULE)

$(TOOLS_BIN)/versitygw:
	@mkdir -p $(TOOLS_BIN)
	@echo "installing versitygw into $(TOOLS_BIN) (about 2.5 min cold)"
	GOBIN=$(WEFT_TOOLS_BIN) $(GO) install $(VERSITYGW_MODULE)

$(TOOLS_BIN)/kubeconform:
	@mkdir -p $(TOOLS_BIN)
	GOBIN=$(WEFT_TOOLS_BIN) $(GO) install $(KUBECONFORM_MODULE)

$(KUBE_SCHEMA_DIR)/.done: deploy/kubeschemas.py
	@dir=$$(cd / && $(GO) mod download -json k8s.io/kubernetes@v$(KUBE_VERSION) | $(PYTHON) -c 'import json,sys; print(json.load(sys.stdin)["Dir"])') && \
	  $(PYTHON) deploy/kubeschemas.py --swagger "$$dir/api/openapi-spec/swagger.json" --out $(KUBE_SCHEMA_DIR) $(KUBE_KINDS)
	touch $@

## test: vet, install the tools, make the venv (gpu/ compares its colour conversion with the Python client's), run every Go test with -race, validate deploy/, then the Python tests.
test: vet tools venv test-go test-deploy test-python

## test-deploy: kubeconform (strict, offline schemas of Kubernetes $(KUBE_VERSION)) on the manifests in deploy/.
test-deploy: $(TOOLS_BIN)/kubeconform $(KUBE_SCHEMA_DIR)/.done
	$(TOOLS_BIN)/kubeconform -strict -summary -kubernetes-version $(KUBE_VERSION) \
	  -schema-location '$(KUBE_SCHEMAS)/{{ .NormalizedKubernetesVersion }}-standalone{{ .StrictSuffix }}/{{ .ResourceKind }}{{ .KindSuffix }}.json' deploy/

test-go:
	$(GO) test $(GOTEST_FLAGS) ./...

## flightd: build the server binary into bin/flightd.
flightd:
	$(GO) build -o bin/flightd ./cmd/flightd

## demo: the first command to run: Weft's story in under a minute on a fresh local store (rows, then
## robot episodes with video windows decoded by the client: a contact sheet PNG, path printed).
demo: flightd venv
	bin/flightd demo
	$(VENV)/bin/python python/examples/video_demo.py --flightd bin/flightd --clips testdata/video
	$(VENV)/bin/python python/examples/import_demo.py --flightd bin/flightd --source testdata/lerobot/v30

## venv: $(VENV) with the weft client (editable), torch (Debian's python3-torch) and the test requirements.
venv: $(VENV)/.installed

$(VENV)/.installed: python/requirements-test.txt python/requirements-import.txt python/bootstrap-venv.sh python/pyproject.toml
	PYTHON=$(PYTHON) sh python/bootstrap-venv.sh $(VENV) python/requirements-test.txt
	touch $@

## test-python: the weft client and pyarrow.flight tests against a real bin/flightd, on the fs store and on MinIO.
test-python: flightd venv tools
	WEFT_FLIGHTD=$(abspath bin/flightd) $(VENV)/bin/python -m pytest $(PYTEST_FLAGS) python/tests

## bench-flight: DoGet scan throughput (fs, MinIO; 1 and 2 streams) against a bare arrow-go Flight ceiling (~1 GiB).
bench-flight: tools
	$(GO) test -run '^$$' -bench BenchmarkScan -benchtime 1x -timeout 60m ./flight/

## bench-python: the weft Python client (TrainLoader to torch tensors) against a Go client on the same run of the small-row mix (writes bench/pyclient-results.md).
bench-python: flightd venv
	$(GO) build -o bin/weftbench ./bench/cmd/weftbench
	$(VENV)/bin/python bench/pyclient.py --flightd bin/flightd --weftbench bin/weftbench --out bench/pyclient-results.md

## bench-filter: filtered scans (Weft's pushdown) against pyarrow.dataset on the same Parquet files: rows/s and bytes read (writes bench/filter-results.md).
bench-filter: flightd venv
	$(VENV)/bin/python bench/filter_bench.py --flightd bin/flightd --out bench/filter-results.md

## bench-mix: training mixes over Flight (fs, MinIO): samples/s and MB/s against a plain scan and the Flight ceiling, W=4 decodes, resume latency, flightd peak RSS (~3 GB of data; prints a table, writes bench/mix-results.md).
bench-mix: tools
	WEFT_MIX_RESULTS=$(abspath bench/mix-results.md) $(GO) test -run '^$$' -bench BenchmarkMix -benchtime 1x -timeout 60m ./bench/

## bench: loaders (PyTorch DataLoader, MosaicML Streaming, HF datasets, Lance, LitData, Weft on fs and MinIO) against limits, quick mode (about 12 min on 2 cores, W = 4 ranks included; venv bench/.venv on first use): writes bench/results.md, results.json, results-*.png.
bench: flightd tools
	$(PYTHON) bench/harness/run.py --quick --out bench

## bench-full: the same at the issue's scale (1 M + 4 M small rows, ~2 GB of 100 KiB rows, 5 runs).
bench-full: flightd tools
	$(PYTHON) bench/harness/run.py --full --out bench

## bench-multi: rows/s and per-server CPU of a 4-rank mix read from 1, 2 and 3 flightd over one MinIO bucket (writes bench/multi-server-results.md).
bench-multi: flightd venv tools
	$(VENV)/bin/python bench/multi_server.py --flightd bin/flightd --out bench/multi-server-results.md

## bench-storage: storage benchmarks (prints MB/s; see bench/storage.md).
bench-storage: tools
	$(GO) test -run '^$$' -bench . -benchtime 1x -timeout 60m ./tables/

## ptx: regenerate gpu/kernels/rgb.ptx from rgb.cu (nvcc, or clang-14+ without any CUDA install); TestPTXFresh checks it.
ptx:
	sh gpu/kernels/mkptx.sh

## gpu-check-prep: (CPU machine, needs ffmpeg, gcc) gpu/check/data: weftgpu and flightd (gzipped), nvdec_probe, the clips with ffmpeg's per-frame hashes (made again when the manifest's version is old), the delivery store.
GPU_CHECK_DATA ?= gpu/check/data
gpu-check-prep:
	@mkdir -p $(GPU_CHECK_DATA)/bin
	CGO_ENABLED=1 $(GO) build -trimpath -ldflags="-s -w" -o $(GPU_CHECK_DATA)/bin/weftgpu ./cmd/weftgpu
	CGO_ENABLED=1 $(GO) build -trimpath -ldflags="-s -w" -o $(GPU_CHECK_DATA)/bin/flightd ./cmd/flightd
	gcc -O2 -Wall -o $(GPU_CHECK_DATA)/bin/nvdec_probe gpu/check/nvdec_probe.c -Igpu/include -ldl -lpthread
	$(GPU_CHECK_DATA)/bin/weftgpu prep --flightd $(GPU_CHECK_DATA)/bin/flightd $(GPU_CHECK_DATA)
	gzip -f $(GPU_CHECK_DATA)/bin/flightd $(GPU_CHECK_DATA)/bin/weftgpu
	@du -shc $(GPU_CHECK_DATA) $(wildcard gpu-probe) | sed "s/total$$/total to carry (with the checkout, keep it under 64 MiB)/"

## gpu-check: (GPU machine) one script, < 5 min on one H200: RESULT lines (docs/gpu.md); carry gpu/check/data (and gpu-probe).
gpu-check:
	bash gpu/check/gpu-check.sh

clean:
	rm -rf weft-data bin
