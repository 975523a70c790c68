package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"

	"github.com/weftdata/weft/bucket"
	"github.com/weftdata/weft/internal/membudget"
	"github.com/weftdata/weft/internal/metrics"
	"github.com/weftdata/weft/mix"
)

// metricsServer is the optional --metrics-addr endpoint: /metrics,
// /healthz, /readyz. A nil *metricsServer (the flag unset) does nothing:
// its methods leave what they are given as it is.
type metricsServer struct {
	m   *metrics.Metrics
	reg *prometheus.Registry
	lis net.Listener
	srv *http.Server
}

// metricsShutdown bounds how long a scrape in progress may finish at exit.
const metricsShutdown = 2 * time.Second

// newMetricsServer listens on addr and builds the registry; "" returns nil.
func newMetricsServer(addr string) (*metricsServer, error) {
	if addr == "" {
		return nil, nil
	}
	reg := metrics.NewRegistry()
	m, err := metrics.New(reg)
	if err != nil {
		return nil, err
	}
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("cannot listen on --metrics-addr %s: %w", addr, err)
	}
	return &metricsServer{m: m, reg: reg, lis: lis}, nil
}

// bucket returns b with its operations counted.
func (s *metricsServer) bucket(b bucket.Bucket) bucket.Bucket {
	if s == nil {
		return b
	}
	return s.m.Bucket(b)
}

// serverOptions returns the gRPC options that count calls and bytes.
func (s *metricsServer) serverOptions() []grpc.ServerOption {
	if s == nil {
		return nil
	}
	return s.m.ServerOptions()
}

// watch exports the block cache's and the memory budget's numbers (a nil
// budget exports none).
func (s *metricsServer) watch(engine *mix.Engine, budget *membudget.Budget) {
	if s == nil {
		return
	}
	s.reg.MustRegister(metrics.NewCacheCollector(func() metrics.CacheStats { return cacheStats(engine.Stats()) }), metrics.NewBudgetCollector(budget))
}

// watchGPU exports GPU delivery's numbers (weft_gpu_…; none when it is off).
func (s *metricsServer) watchGPU(g *gpuStats) {
	if s == nil || g == nil {
		return
	}
	s.reg.MustRegister(metrics.NewGPUCollector(g.stats()))
}

// runRecordStored returns the function to call once per run record
// written (for mix's options), nil when metrics are off.
func (s *metricsServer) runRecordStored() func() {
	if s == nil {
		return nil
	}
	return s.m.RunRecordsStored.Inc
}

// cacheStats adapts the mix engine's block cache counters.
func cacheStats(st mix.Stats) metrics.CacheStats {
	return metrics.CacheStats{Hits: st.Hits, Misses: st.Decodes, Joins: st.Joins, Evictions: st.Evictions, Bytes: st.CachedBytes, Entries: int64(st.CachedBlocks)}
}

// start serves HTTP until close and returns grpcLis marked so that /readyz
// knows when the gRPC server is serving on it; ping probes the store.
func (s *metricsServer) start(log *slog.Logger, ping func(context.Context) error, grpcLis net.Listener) net.Listener {
	if s == nil {
		return grpcLis
	}
	health := metrics.NewHealth(ping)
	s.srv = &http.Server{
		Handler:           metrics.Handler(s.reg, health),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	go func() {
		if err := s.srv.Serve(s.lis); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics server failed", "err", err)
		}
	}()
	addr := s.lis.Addr().String()
	if tcp, ok := s.lis.Addr().(*net.TCPAddr); ok && !tcp.IP.IsLoopback() {
		log.Warn("metrics are served without authentication on a non-loopback address: expose --metrics-addr only to the monitoring network", "addr", addr)
	}
	log.Info("serving metrics", "addr", addr, "paths", "/metrics /healthz /readyz")
	return health.Listener(grpcLis)
}

// close stops the HTTP server, letting scrapes in progress finish briefly.
func (s *metricsServer) close() {
	if s == nil {
		return
	}
	if s.srv == nil {
		_ = s.lis.Close()
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), metricsShutdown)
	defer cancel()
	if err := s.srv.Shutdown(ctx); err != nil {
		_ = s.srv.Close()
	}
}
