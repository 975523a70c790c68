package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"github.com/weftdata/weft/bucket"
	"github.com/weftdata/weft/flight"
	"github.com/weftdata/weft/mix"
	"github.com/weftdata/weft/tables"
	"github.com/weftdata/weft/versions"
)

// serveConfig is everything `flightd serve` takes from its flags.
type serveConfig struct {
	store string
	s3    bucket.S3Config
	addr  string
	// metricsAddr is where /metrics, /healthz and /readyz are served; ""
	// serves none.
	metricsAddr string
	logLevel    string
	logFormat   string
	flight      flight.Options
	mix         mix.Options
	tables      tables.Options
	versions    versions.Options
	// memoryLimit is the Go runtime's soft memory limit; 0 means the
	// cache size plus memoryHeadroom. $GOMEMLIMIT, when set, wins.
	memoryLimit int64
	security    securityConfig // security.go
}

// memoryHeadroom is what the default memory limit allows beyond the block
// cache: the blocks and batches of running streams, gRPC buffers, footers.
const memoryHeadroom = 512 << 20

func serveFlags(cfg *serveConfig) *flag.FlagSet {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fo, mo, to, vo := flight.DefaultOptions(), mix.DefaultOptions(), tables.DefaultOptions(), versions.DefaultOptions()
	*cfg = serveConfig{store: bucket.DefaultStore, addr: "127.0.0.1:8815", logLevel: "info", logFormat: "text", flight: fo, mix: mo, tables: to, versions: vo}

	fs.StringVar(&cfg.store, "store", cfg.store, "store `URL`: a directory, file://DIR, or s3://BUCKET[/PREFIX]")
	fs.StringVar(&cfg.s3.Endpoint, "s3-endpoint", "", "S3 endpoint `URL` for s3:// stores, e.g. http://127.0.0.1:9000 (default $AWS_ENDPOINT_URL_S3, $AWS_ENDPOINT_URL, else AWS)")
	fs.StringVar(&cfg.s3.AccessKey, "s3-access-key", "", "S3 access `key` (default $AWS_ACCESS_KEY_ID)")
	fs.StringVar(&cfg.s3.SecretKey, "s3-secret-key", "", "S3 secret `key` (default $AWS_SECRET_ACCESS_KEY; prefer the variable: flags show in ps)")
	fs.StringVar(&cfg.s3.Region, "s3-region", "", "S3 `region` (default $AWS_REGION, $AWS_DEFAULT_REGION, else us-east-1)")
	fs.StringVar(&cfg.addr, "addr", cfg.addr, "listen on `HOST:PORT` (port 0 picks a free port; the log line \"serving\" names it)")
	fs.StringVar(&cfg.metricsAddr, "metrics-addr", "", "serve Prometheus metrics at /metrics, and /healthz and /readyz, over HTTP on `HOST:PORT` (off by default; port 0 picks a free port; the log line \"serving metrics\" names it); they have no authentication: keep them on loopback or a monitoring network")
	fs.StringVar(&cfg.logLevel, "log-level", cfg.logLevel, "log `level`: debug, info, warn or error")
	fs.StringVar(&cfg.logFormat, "log-format", cfg.logFormat, "log `format`: text or json (one object per line), on stderr")

	sizeVar(fs, &cfg.flight.MaxRecvMessageBytes, "max-message-size", "largest gRPC message accepted, i.e. one DoPut batch: a `SIZE` like 256MiB, 64KiB or 1048576")
	size64Var(fs, &cfg.flight.BatchBytes, "scan-batch-size", "target `SIZE` of one DoGet batch; keep it under 4MiB, gRPC clients' default limit")
	size64Var(fs, &cfg.flight.EndpointBytes, "scan-endpoint-size", "target Parquet `SIZE` of one scan endpoint (row groups are grouped into endpoints of about this size)")
	size64Var(fs, &cfg.flight.StepMessageBytes, "step-message-size", "largest message of a rank stream (`SIZE`): bigger steps go out as several messages that clients reassemble; keep it under 4MiB, gRPC clients' default limit")
	fs.IntVar(&cfg.flight.Prefetch, "scan-prefetch", cfg.flight.Prefetch, "batches a DoGet decodes ahead of the one it sends (`N`)")
	size64Var(fs, &cfg.mix.CacheBytes, "cache-size", "`SIZE` of the decoded-block cache shared by all rank streams of runs (blocks in use by streams come on top)")
	size64Var(fs, &cfg.memoryLimit, "memory-limit", "soft limit of the Go heap (`SIZE`), so the garbage collector keeps RSS near it rather than at twice the live heap; 0 means --cache-size plus 512MiB; $GOMEMLIMIT, if set, wins")
	fs.IntVar(&cfg.mix.Prefetch, "mix-prefetch", cfg.mix.Prefetch, "steps a rank stream prepares ahead of the one it sends (`N`)")
	fs.DurationVar(&cfg.flight.ShutdownGrace, "shutdown-grace", cfg.flight.ShutdownGrace, "on SIGINT/SIGTERM, how long running calls may finish before they are cancelled (`DURATION`)")
	fs.Int64Var(&cfg.tables.RowGroupRows, "row-group-rows", cfg.tables.RowGroupRows, "most rows in one Parquet row group of a written file (`N`)")
	size64Var(fs, &cfg.tables.RowGroupBytes, "row-group-size", "most Arrow bytes in one Parquet row group of a written file (`SIZE`)")
	fs.IntVar(&cfg.versions.MaxAttempts, "commit-attempts", cfg.versions.MaxAttempts, "tries of a commit that keeps losing the race for its branch before the put fails with ABORTED (`N`)")
	fs.DurationVar(&cfg.flight.PutTimeout, "put-timeout", cfg.flight.PutTimeout, "longest a DoPut may run before it fails and commits nothing (`DURATION`); must stay under 'flightd admin gc --older-than'")
	securityFlags(fs, &cfg.security)

	fs.Usage = func() {
		out := fs.Output()
		fmt.Fprint(out, `Usage: flightd serve [flags]

Serve Weft's Arrow Flight protocol (projects, branches, table puts and scans,
training runs and their rank streams) over a store, until SIGINT or SIGTERM: then stop accepting calls, let running
ones finish for --shutdown-grace, cancel the rest, and exit 0.

Exit status: 0 after a signal, 2 for a bad flag or an unreachable store or
address, 1 if the server fails while running.

Flags:
`)
		fs.PrintDefaults()
	}
	return fs
}

func sizeVar(fs *flag.FlagSet, p *int, name, usage string) {
	v := byteSize(*p)
	fs.Func(name, usage+" (default "+v.String()+")", func(s string) error {
		if err := v.Set(s); err != nil {
			return err
		}
		if int64(v) > int64(^uint32(0)>>1) {
			return fmt.Errorf("%s is over 2GiB, gRPC's limit", s)
		}
		*p = int(v)
		return nil
	})
}

func size64Var(fs *flag.FlagSet, p *int64, name, usage string) {
	v := byteSize(*p)
	fs.Func(name, usage+" (default "+v.String()+")", func(s string) error {
		if err := v.Set(s); err != nil {
			return err
		}
		*p = int64(v)
		return nil
	})
}

func newLogger(level, format string, w io.Writer) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: l}
	switch strings.ToLower(format) {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("--log-format %q: want text or json", format)
}

// storeCheckTimeout bounds opening and probing the store at start.
const storeCheckTimeout = 30 * time.Second

func serveCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var cfg serveConfig
	fs := serveFlags(&cfg)
	if done, code := parseFlags(fs, args, stdout, stderr); done {
		return code
	}
	usageErr := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "flightd serve: "+format+"\n", a...)
		return exitUsage
	}
	log, err := newLogger(cfg.logLevel, cfg.logFormat, stderr)
	if err != nil {
		return usageErr("%v", err)
	}
	cfg.flight.Logger, cfg.mix.Logger, cfg.tables.Logger, cfg.versions.Logger = log, log, log, log
	if err := cfg.flight.Validate(); err != nil {
		return usageErr("%v", err)
	}
	if err := cfg.mix.Validate(); err != nil {
		return usageErr("%v", err)
	}
	if err := cfg.tables.Validate(); err != nil {
		return usageErr("%v", err)
	}
	if err := cfg.versions.Validate(); err != nil {
		return usageErr("%v", err)
	}

	ms, err := newMetricsServer(cfg.metricsAddr)
	if err != nil {
		return usageErr("%v", err)
	}
	defer ms.close()
	cfg.flight.ServerOptions = append(cfg.flight.ServerOptions, ms.serverOptions()...)

	openCtx, cancel := context.WithTimeout(ctx, storeCheckTimeout)
	defer cancel()
	b, err := bucket.Open(openCtx, cfg.store, cfg.s3)
	if err != nil {
		return usageErr("cannot open the store: %v", err)
	}
	b = ms.bucket(b)
	// The parts, built here and handed to the Flight service.
	v, err := versions.New(b, cfg.versions)
	if err != nil {
		return usageErr("%v", err)
	}
	t, err := tables.New(v, cfg.tables)
	if err != nil {
		return usageErr("%v", err)
	}
	cfg.mix.OnRunRecordStored = ms.runRecordStored()
	engine, err := mix.New(t, cfg.mix)
	if err != nil {
		return usageErr("%v", err)
	}
	defer engine.Close()
	ms.watch(engine, nil) // no memory budget yet: none to export
	sec, err := cfg.security.build(openCtx, cfg.addr, b, log)
	if err != nil {
		return usageErr("%v", err)
	}
	cfg.flight.ServerOptions = append(cfg.flight.ServerOptions, sec.serverOptions...)
	svc, err := flight.New(flight.Parts{Tables: t, Mix: engine, Authenticator: sec.authenticator, Signer: sec.signer}, cfg.flight)
	if err != nil {
		return usageErr("%v", err)
	}
	if err := svc.Ping(openCtx); err != nil {
		return usageErr("store %s does not answer: %v", cfg.store, err)
	}
	cancel()

	lis, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		return usageErr("cannot listen on --addr %s: %v", cfg.addr, err)
	}
	lis = ms.start(log, svc.Ping, lis)
	limit := memoryLimit(cfg)
	log.Info("serving", "addr", lis.Addr().String(), "store", cfg.store, "cache", formatBytes(cfg.mix.CacheBytes), "memory_limit", limit)
	if err := svc.Serve(ctx, lis); err != nil {
		log.Error("server failed", "err", err)
		return exitFail
	}
	return exitOK
}

// memoryLimit sets the Go runtime's soft memory limit from the config
// unless $GOMEMLIMIT is set, and returns the limit in force, for the log.
func memoryLimit(cfg serveConfig) string {
	if v := os.Getenv("GOMEMLIMIT"); v != "" {
		return v + " ($GOMEMLIMIT)"
	}
	limit := cfg.memoryLimit
	if limit == 0 {
		limit = cfg.mix.CacheBytes + memoryHeadroom
	}
	debug.SetMemoryLimit(limit)
	return formatBytes(limit)
}
