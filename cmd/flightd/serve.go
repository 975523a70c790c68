package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/weftdata/weft/bucket"
	"github.com/weftdata/weft/episodes"
	"github.com/weftdata/weft/flight"
	"github.com/weftdata/weft/importers"
	"github.com/weftdata/weft/internal/membudget"
	"github.com/weftdata/weft/internal/offheap"
	"github.com/weftdata/weft/mix"
	"github.com/weftdata/weft/slots"
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
	// cpuProfile, if set, is where a CPU profile of the whole serve is
	// written (runtime/pprof) when it ends.
	cpuProfile string
	flight     flight.Options
	mix        mix.Options
	tables     tables.Options
	versions   versions.Options
	// memoryLimit bounds the process: the memory budget (membudget) is
	// memoryLimit minus runtimeOverhead, and the Go runtime's soft memory
	// limit is memoryLimit; 0 means the cache size plus memoryHeadroom,
	// runtimeOverhead and receiving (serveConfig.limit).
	// $GOMEMLIMIT, when set, wins for the runtime's limit only.
	memoryLimit int64
	// gpu is GPU delivery's driver, device and memory limit (gpu.go).
	gpu gpuConfig
	// memoryWait is how long new work waits for memory before it is
	// refused with RESOURCE_EXHAUSTED.
	memoryWait time.Duration
	security   securityConfig // security.go
	// importRoots are the local directories DoAction import may read
	// (none: only s3:// sources); importS3 reaches s3:// sources.
	importRoots multiFlag
	importS3    bucket.S3Config
}

// memoryHeadroom is what the default memory limit gives the budget beyond
// the block cache: the blocks and batches of running streams, puts,
// footers. The default limit is the cache, this, the runtime overhead and
// what received data may hold (serveConfig.receiving): 1872 MiB with the
// defaults, so that any --cache-size starts with the default flags.
const memoryHeadroom = 320 << 20

// runtimeOverhead is the part of --memory-limit kept out of the memory
// budget, for what no lease counts: the Go runtime and binary (an idle
// flightd's RSS is about 30 MiB), goroutine stacks, and the garbage the
// collector has not reclaimed yet (a stream's batches once sent).
// Received data is not in it: a put leases its own
// messages (two: frames and decoded body), and what the others may hold
// (messages being received, calls' flow-control windows, connections'
// buffers; flight's Options.ReceivingBytes) is kept out of the budget
// besides (serveConfig.receiving). 128 MiB was not
// enough: under full CI load (the collector starved of CPU) the abuse test
// peaked 15-23 MiB over its 1 GiB limit. With receiving gated and put
// copies cut (bench/abuse-results.md, 3 runs at load 10-13 on 2 cores) it
// peaked at 804, 1047 and 684 MiB: the 1047 with a put running, over by
// its garbage. A put now leaves next to none (its row group and message
// bodies are mapped off the heap and unmapped when done: 0.2 bytes
// allocated per byte put, was 6.1; 4 puts of 200 MB peak at 219 MiB, were
// 897), but the whole scenario with puts through still peaked at 844
// and 1010 MiB (main: 914-1108 in the same series, at load 1-6): the
// streams' garbage is still the collector's. So it stays 192 MiB.
const runtimeOverhead = 192 << 20

// runtimeSlack is how far under --memory-limit the Go runtime's soft
// memory limit is set.
const runtimeSlack = runtimeOverhead

// heapReleaseStep is how much the write path's mappings grow before the
// heap is made to give its free memory back (offheap.HeapLimiter): about
// a quarter of a row group.
const heapReleaseStep = 32 << 20

// minMemoryLimit is the smallest --memory-limit accepted.
const minMemoryLimit = 2 * runtimeOverhead

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
	fs.StringVar(&cfg.cpuProfile, "cpu-profile", "", "write a CPU profile of the server to `FILE` when it stops (go tool pprof FILE)")

	sizeVar(fs, &cfg.flight.MaxRecvMessageBytes, "max-message-size", "largest gRPC message accepted, i.e. one DoPut batch (every put leases this much of --memory-limit while it runs; clients send pieces of 16MiB): a `SIZE` like 64MiB, 64KiB or 1048576")
	size64Var(fs, &cfg.flight.BatchBytes, "scan-batch-size", "target `SIZE` of one DoGet batch; keep it under 4MiB, gRPC clients' default limit")
	size64Var(fs, &cfg.flight.EndpointBytes, "scan-endpoint-size", "target Parquet `SIZE` of one scan endpoint (row groups are grouped into endpoints of about this size)")
	size64Var(fs, &cfg.flight.SlotInlineBytes, "slot-inline-size", "host-slot delivery: steps smaller than this (`SIZE`) travel inline in the exchange, which costs less than a slot's round trip; 0 puts every step in a slot")
	size64Var(fs, &cfg.flight.StepMessageBytes, "step-message-size", "largest message of a rank stream (`SIZE`): bigger steps go out as several messages that clients reassemble; keep it under 4MiB, gRPC clients' default limit")
	fs.IntVar(&cfg.flight.Prefetch, "scan-prefetch", cfg.flight.Prefetch, "batches a DoGet decodes ahead of the one it sends (`N`)")
	size64Var(fs, &cfg.mix.CacheBytes, "cache-size", "`SIZE` of the decoded-block cache shared by all rank streams of runs (blocks in use by streams come on top)")
	size64Var(fs, &cfg.memoryLimit, "memory-limit", "memory bound of the whole process (`SIZE`): the block and footer caches, rank and scan streams and puts lease their bytes from a budget of this minus 192MiB (runtime overhead: the runtime, garbage) and what received data may hold unleased (--max-receiving messages of --max-message-size, 64KiB for each of --max-streams, a --stream-window for each of --max-calls, 128KiB for each of --max-connections: 336MiB with the defaults), and over it new work waits --memory-wait, then fails with RESOURCE_EXHAUSTED; at least 384MiB, and the budget at least 192MiB (720MiB with the defaults); the Go runtime's soft memory limit is set 192MiB under it ($GOMEMLIMIT, if set, wins for that); 0 means --cache-size plus 320MiB for streams and puts plus the runtime overhead and the received data's allowance (1872MiB with the defaults)")
	fs.DurationVar(&cfg.memoryWait, "memory-wait", membudget.DefaultMaxWait, "how long a stream or put waits for memory under --memory-limit before it fails with RESOURCE_EXHAUSTED (`DURATION`)")
	sizeVar(fs, &cfg.flight.MaxCommandBytes, "max-command-size", "largest JSON command, action body or put app_metadata (`SIZE`), refused with INVALID_ARGUMENT before decoding")
	fs.IntVar(&cfg.flight.MaxWorldSize, "max-world-size", cfg.flight.MaxWorldSize, "largest world_size of a run plan (`N` endpoints in one reply); more is INVALID_ARGUMENT")
	sizeVar(fs, &cfg.flight.MaxReplyBytes, "max-reply-size", "largest FlightInfo reply (`SIZE`); a bigger one is INVALID_ARGUMENT")
	size64Var(fs, &cfg.flight.MaxStepBytes, "max-step-size", "largest step of one rank (`SIZE`: batch_size/world_size rows times the row size); a run with bigger steps is INVALID_ARGUMENT when planned")
	fs.IntVar(&cfg.flight.MaxListEntries, "max-list", cfg.flight.MaxListEntries, "most entries of one log or list_branches result (`N`)")
	fs.IntVar(&cfg.flight.MaxStreams, "max-streams", cfg.flight.MaxStreams, "most DoGet streams (scans and rank streams) served at once (`N`); more wait --queue-wait, then fail with RESOURCE_EXHAUSTED")
	fs.IntVar(&cfg.flight.MaxPuts, "max-puts", cfg.flight.MaxPuts, "most DoPuts running at once (`N`); more wait --queue-wait, then fail with RESOURCE_EXHAUSTED")
	fs.IntVar(&cfg.flight.MaxReceiving, "max-receiving", cfg.flight.MaxReceiving, "most calls receiving their first message at once (`N`; DoPuts excepted, they lease theirs): each may take --max-message-size (a call's later messages, a DoExchange's slot releases, are refused over 64KiB before they are received), kept out of the --memory-limit budget; more wait --queue-wait, then fail with RESOURCE_EXHAUSTED")
	fs.IntVar(&cfg.flight.MaxConnections, "max-connections", cfg.flight.MaxConnections, "most client connections served at once (`N`): one over it is closed as it is accepted. Each may hold about 100KiB of gRPC buffers (128KiB each is kept out of the --memory-limit budget)")
	fs.IntVar(&cfg.flight.MaxConnStreams, "max-conn-streams", cfg.flight.MaxConnStreams, "most calls open at once on one connection (`N`, HTTP/2 MAX_CONCURRENT_STREAMS): clients queue more")
	fs.IntVar(&cfg.flight.MaxCalls, "max-calls", cfg.flight.MaxCalls, "most calls open at once on all connections (`N`; a call waiting for a place or for memory is open): one over it fails with RESOURCE_EXHAUSTED as it opens, before it is received or authenticated. Each may hold a --stream-window of data sent and not read yet, kept out of the --memory-limit budget (128MiB with the defaults); 512 is twice --max-streams: every stream slot busy and as many calls again waiting or brief")
	sizeVar(fs, &cfg.flight.StreamWindowBytes, "stream-window", "flow-control window of each call (`SIZE`, 64KiB to 16MiB): what a call may hold of data its handler has not read (times --max-calls, kept out of the --memory-limit budget), and what a client may send a call per round trip in messages smaller than it (a put of small batches over a slow link: 256KiB per round trip; messages larger are let in whole as they are read)")
	fs.DurationVar(&cfg.flight.ConnIdle, "conn-idle", cfg.flight.ConnIdle, "how long a connection with no call open is kept (`DURATION`): then it is closed (clients reconnect at their next call) and its --max-connections place freed")
	fs.DurationVar(&cfg.flight.ConnTimeout, "conn-timeout", cfg.flight.ConnTimeout, "how long a new connection may take to complete its TLS and HTTP/2 handshakes (`DURATION`); one that has not is closed, and its --max-connections place freed")
	fs.DurationVar(&cfg.flight.ReceiveTimeout, "receive-timeout", cfg.flight.ReceiveTimeout, "how long an admitted call's first message may take to arrive (`DURATION`; it holds one of --max-receiving places meanwhile): a slower call fails with DEADLINE_EXCEEDED; keep it under --queue-wait")
	fs.DurationVar(&cfg.flight.QueueWait, "queue-wait", cfg.flight.QueueWait, "how long a stream or put waits for a place under --max-streams or --max-puts (`DURATION`)")
	fs.IntVar(&cfg.mix.Prefetch, "mix-prefetch", cfg.mix.Prefetch, "steps a rank stream prepares ahead of the one it sends (`N`)")
	fs.DurationVar(&cfg.flight.ShutdownGrace, "shutdown-grace", cfg.flight.ShutdownGrace, "on SIGINT/SIGTERM, how long running calls may finish before they are cancelled (`DURATION`)")
	fs.Int64Var(&cfg.tables.RowGroupRows, "row-group-rows", cfg.tables.RowGroupRows, "most rows in one Parquet row group of a written file (`N`)")
	size64Var(fs, &cfg.tables.RowGroupBytes, "row-group-size", "most Arrow bytes in one Parquet row group of a written file (`SIZE`)")
	fs.IntVar(&cfg.versions.MaxAttempts, "commit-attempts", cfg.versions.MaxAttempts, "tries of a commit that keeps losing the race for its branch before the put fails with ABORTED (`N`)")
	fs.DurationVar(&cfg.flight.PutTimeout, "put-timeout", cfg.flight.PutTimeout, "longest a DoPut may run before it fails and commits nothing (`DURATION`); must stay under 'flightd admin gc --older-than'")
	fs.Func("advertise", "a Flight `LOCATION` (grpc://HOST:PORT or grpc+tls://HOST:PORT) of a server over this store, this one included if it should serve streams; repeatable, or a comma list. Run and scan endpoints then name every advertised server, rank or endpoint i starting with server i mod N, the others for failover; any server over the store serves any ticket (run records, ticket keys and tokens are in the bucket). Default: none, clients stream from the server they asked", func(v string) error {
		for _, l := range strings.Split(v, ",") {
			if l = strings.TrimSpace(l); l != "" {
				cfg.flight.Advertise = append(cfg.flight.Advertise, l)
			}
		}
		return nil
	})
	fs.Var(&cfg.importRoots, "import-root", "let DoAction import read local directories under `DIR` (repeatable; none by default: only s3:// sources); the flightd user's file permissions apply")
	fs.StringVar(&cfg.importS3.Endpoint, "import-s3-endpoint", "", "S3 endpoint `URL` of import sources (default: --s3-endpoint, then $AWS_ENDPOINT_URL_S3, $AWS_ENDPOINT_URL); keys from the store's")
	securityFlags(fs, &cfg.security)
	gpuFlags(fs, &cfg.gpu)

	fs.Usage = func() {
		out := fs.Output()
		fmt.Fprint(out, `Usage: flightd serve [flags]

Serve Weft's Arrow Flight protocol (projects, branches, table puts and scans,
training runs and their rank streams) over a store, until SIGINT or SIGTERM: then stop accepting calls, let running
ones finish for --shutdown-grace, cancel the rest, and exit 0.

Memory: --memory-limit bounds the whole process; every request is bounded
too (--max-* flags; docs/operations.md, "Limits"): a request too big by
itself is refused with INVALID_ARGUMENT, one that finds the server at a
limit waits, then gets RESOURCE_EXHAUSTED; both say which limit.

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
	if cfg.cpuProfile != "" {
		f, err := os.Create(cfg.cpuProfile)
		if err != nil {
			return usageErr("--cpu-profile: %v", err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return usageErr("--cpu-profile: %v", err)
		}
		defer func() {
			pprof.StopCPUProfile()
			if err := f.Close(); err != nil {
				log.Warn("write the CPU profile", "file", cfg.cpuProfile, "err", err)
			}
		}()
	}
	budget, err := cfg.budget()
	if err != nil {
		return usageErr("%v", err)
	}
	cfg.mix.Budget, cfg.tables.Budget = budget, budget
	// What a rank stream holds (flight's estimate) follows mix's pipeline;
	// what a put buffers, tables' row groups.
	cfg.flight.StreamSteps, cfg.flight.StreamBlocks = cfg.mix.Prefetch+2, cfg.mix.ReadAhead
	cfg.flight.PutBufferBytes = cfg.tables.RowGroupBytes
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
	// The window kinds: "rows" and "video" (media opened through the
	// tables store), and the check of video rows at write time.
	eo := episodes.DefaultOptions()
	eo.Logger = log
	eo.Media = t
	eo.MaxStepBytes = cfg.flight.MaxStepBytes
	eo.Budget = budget
	kinds, err := episodes.New(eo)
	if err != nil {
		return usageErr("%v", err)
	}
	defer kinds.Close()
	cfg.mix.Kinds = kinds.Map()
	engine, err := mix.New(t, cfg.mix)
	if err != nil {
		return usageErr("%v", err)
	}
	defer engine.Close()
	ms.watch(engine, budget)
	sec, err := cfg.security.build(openCtx, cfg.addr, b, log)
	if err != nil {
		return usageErr("%v", err)
	}
	cfg.flight.ServerOptions = append(cfg.flight.ServerOptions, sec.serverOptions...)
	impOpts := importers.DefaultOptions()
	impOpts.Logger = log
	impOpts.Source = importers.SourceOptions{Roots: cfg.importRoots, LocalAllowed: len(cfg.importRoots) > 0, S3: sourceS3(cfg.importS3, cfg.s3)}
	impOpts.AppendCheck = kinds.AppendCheck
	imp, err := importers.New(t, impOpts)
	if err != nil {
		return usageErr("%v", err)
	}
	gd := openGPU(ctx, log, cfg.gpu)
	gs := newGPUStats(gd)
	defer gs.close() // closes the device
	ms.watchGPU(gs)
	svc, err := flight.New(flight.Parts{Tables: t, Mix: engine, AppendCheck: kinds.AppendCheck, Authenticator: sec.authenticator, Signer: sec.signer, Budget: budget, Importer: imp, GPU: gd}, cfg.flight)
	if err != nil {
		return usageErr("%v", err)
	}
	if err := svc.Ping(openCtx); err != nil {
		return usageErr("store %s does not answer: %v", cfg.store, err)
	}
	cancel()

	// Rings a killed or crashed flightd left in /dev/shm hold memory no one
	// frees: remove those whose owner is gone (slots.Sweep).
	if files, bytes, err := slots.Sweep(""); err != nil {
		log.Warn("sweeping dead servers' slot rings", "err", err)
	} else if files > 0 {
		log.Info("removed slot rings of servers that died", "files", files, "bytes", bytes)
	}
	lis, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		return usageErr("cannot listen on --addr %s: %v", cfg.addr, err)
	}
	lis = ms.start(log, svc.Ping, lis)
	limit := memoryLimit(cfg, t)
	if len(cfg.flight.Advertise) > 0 {
		log.Info("advertising", "locations", strings.Join(cfg.flight.Advertise, ","))
	}
	log.Info("serving", "addr", lis.Addr().String(), "store", cfg.store, "cache", formatBytes(cfg.mix.CacheBytes), "memory_limit", limit, "memory_budget", formatBytes(budget.Stats().Total))
	if err := svc.Serve(ctx, lis); err != nil {
		log.Error("server failed", "err", err)
		return exitFail
	}
	return exitOK
}

// limit is the process's memory bound: --memory-limit, or the cache size
// plus memoryHeadroom, the runtime overhead and receiving.
func (cfg serveConfig) limit() int64 {
	if cfg.memoryLimit != 0 {
		return cfg.memoryLimit
	}
	return cfg.mix.CacheBytes + memoryHeadroom + runtimeOverhead + cfg.receiving()
}

// receiving is the memory of received data that no lease counts:
// --max-receiving first messages of --max-message-size, a later message
// (a slot release, 64 KiB at most) of each of --max-streams exchanges, a
// --stream-window of each of --max-calls calls and the buffers of
// --max-connections connections (flight's Options.ReceivingBytes).
func (cfg serveConfig) receiving() int64 {
	return cfg.flight.ReceivingBytes()
}

// budget builds the process's memory budget: the limit minus the runtime
// overhead and what received data may hold (receiving).
func (cfg serveConfig) budget() (*membudget.Budget, error) {
	limit := cfg.limit()
	if limit < minMemoryLimit {
		return nil, fmt.Errorf("--memory-limit %s is under the %s minimum (%s of it is runtime overhead)", formatBytes(limit), formatBytes(minMemoryLimit), formatBytes(runtimeOverhead))
	}
	total := limit - runtimeOverhead - cfg.receiving()
	if total < runtimeOverhead {
		return nil, fmt.Errorf("--memory-limit %s leaves a budget of %s: %s is runtime overhead and %s what received data may hold (--max-receiving %d messages of --max-message-size %s, a 64KiB slot release of each of --max-streams %d exchanges, a --stream-window %s of each of --max-calls %d, 128KiB of buffers of each of --max-connections %d); raise --memory-limit or lower those", formatBytes(limit), formatBytes(max(total, 0)), formatBytes(runtimeOverhead), formatBytes(cfg.receiving()), cfg.flight.MaxReceiving, formatBytes(int64(cfg.flight.MaxRecvMessageBytes)), cfg.flight.MaxStreams, formatBytes(int64(cfg.flight.StreamWindowBytes)), cfg.flight.MaxCalls, cfg.flight.MaxConnections)
	}
	return membudget.New(membudget.Options{Total: total, MaxWait: cfg.memoryWait})
}

// memoryLimit sets the Go runtime's soft memory limit to the limit less
// runtimeSlack unless $GOMEMLIMIT is set, and returns the limit in force,
// for the log; while t's write path maps memory off the heap, the
// runtime's limit is lowered by as much (offheap.HeapLimiter).
func memoryLimit(cfg serveConfig, t *tables.Store) string {
	if v := os.Getenv("GOMEMLIMIT"); v != "" {
		return v + " ($GOMEMLIMIT)"
	}
	// The runtime counts the memory it maps, not the binary's text or
	// what the kernel has yet to take back: keep it a little under the
	// limit, so that RSS stays under it when the budget is full.
	limit := cfg.limit() - runtimeSlack
	// What the write path maps off the heap (a put's row group and
	// message bodies) the runtime does not count: its heap must leave
	// room for it, and give back the memory it frees, or heap and
	// mappings together pass the limit (offheap.HeapLimiter).
	t.WriteAllocator().Watch(offheap.NewHeapLimiter(limit, heapReleaseStep).Update)
	return formatBytes(limit)
}
