package metrics_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/weftdata/weft/bucket"
	"github.com/weftdata/weft/internal/membudget"
	"github.com/weftdata/weft/internal/metrics"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func newMetrics(t *testing.T) (*metrics.Metrics, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg)
	require.NoError(t, err)
	return m, reg
}

// names returns the metric families reg gathers, with their types and
// label names.
func names(t *testing.T, g prometheus.Gatherer) map[string]string {
	t.Helper()
	mfs, err := g.Gather()
	require.NoError(t, err)
	out := map[string]string{}
	for _, mf := range mfs {
		labels := map[string]bool{}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = true
			}
		}
		var ls []string
		for l := range labels {
			ls = append(ls, l)
		}
		desc := strings.ToLower(mf.GetType().String())
		if len(ls) > 0 {
			desc += " " + strings.Join(slices.Sorted(slices.Values(ls)), ",")
		}
		out[mf.GetName()] = desc
	}
	return out
}

func TestNames(t *testing.T) {
	m, reg := newMetrics(t)
	budget, err := membudget.New(membudget.Options{Total: 1 << 20})
	require.NoError(t, err)
	reg.MustRegister(metrics.NewCacheCollector(func() metrics.CacheStats { return metrics.CacheStats{} }), metrics.NewBudgetCollector(budget),
		metrics.NewGPUCollector(func() metrics.GPUStats { return metrics.GPUStats{} }))

	// Vectors show up once they have a series.
	m.RunRecordsStored.Inc()
	_, _ = m.UnaryInterceptor(context.Background(), nil, &grpc.UnaryServerInfo{FullMethod: "/p.S/M"}, func(context.Context, any) (any, error) { return nil, nil })
	_ = m.StreamInterceptor(nil, nil, &grpc.StreamServerInfo{FullMethod: "/p.S/N"}, func(any, grpc.ServerStream) error { return nil })

	require.Equal(t, map[string]string{
		"weft_grpc_requests_total":               "counter code,method",
		"weft_grpc_request_duration_seconds":     "histogram method",
		"weft_grpc_active_streams":               "gauge method",
		"weft_flight_bytes_sent_total":           "counter",
		"weft_flight_bytes_received_total":       "counter",
		"weft_bucket_operations_total":           "counter op,result",
		"weft_bucket_operation_duration_seconds": "histogram op",
		"weft_run_records_stored_total":          "counter",
		"weft_block_cache_hits_total":            "counter",
		"weft_block_cache_misses_total":          "counter",
		"weft_block_cache_joins_total":           "counter",
		"weft_block_cache_evictions_total":       "counter",
		"weft_block_cache_bytes":                 "gauge",
		"weft_block_cache_entries":               "gauge",
		"weft_memory_budget_bytes":               "gauge",
		"weft_memory_budget_used_bytes":          "gauge",
		"weft_memory_budget_waits_total":         "counter",
		"weft_memory_budget_refusals_total":      "counter",
		"weft_gpu_decode_sessions_created_total": "counter",
		"weft_gpu_decode_sessions_reused_total":  "counter",
		"weft_gpu_frames_decoded_total":          "counter",
		"weft_gpu_frames_kept_total":             "counter",
		"weft_gpu_frame_copy_bytes_total":        "counter",
		"weft_gpu_memory_used_bytes":             "gauge",
	}, names(t, reg))

	problems, err := testutil.GatherAndLint(reg)
	require.NoError(t, err)
	require.Empty(t, problems, "Prometheus naming conventions")
}

func TestNewTwiceOnOneRegistry(t *testing.T) {
	_, reg := newMetrics(t)
	_, err := metrics.New(reg)
	require.Error(t, err, "a second set of the same metrics must not register silently")
}

func TestNilRegisterer(t *testing.T) {
	m, err := metrics.New(nil)
	require.NoError(t, err)
	m.RunRecordsStored.Inc()
	require.InDelta(t, 1, testutil.ToFloat64(m.RunRecordsStored), 0)
}

func TestInterceptors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		stream bool
		err    error
		code   string
	}{
		{"unary ok", false, nil, "OK"},
		{"unary invalid", false, status.Error(codes.InvalidArgument, "bad"), "InvalidArgument"},
		{"unary plain error", false, errors.New("plain"), "Unknown"},
		{"stream ok", true, nil, "OK"},
		{"stream unauthenticated", true, status.Error(codes.Unauthenticated, "who"), "Unauthenticated"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, reg := newMetrics(t)
			const method = "/arrow.flight.protocol.FlightService/DoGet"
			var err error
			if tc.stream {
				err = m.StreamInterceptor(nil, nil, &grpc.StreamServerInfo{FullMethod: method}, func(any, grpc.ServerStream) error {
					require.Equal(t, 1, activeStreams(t, reg, method), "a running stream counts as active")
					return tc.err
				})
				require.Equal(t, 0, activeStreams(t, reg, method))
			} else {
				_, err = m.UnaryInterceptor(context.Background(), nil, &grpc.UnaryServerInfo{FullMethod: method}, func(context.Context, any) (any, error) { return nil, tc.err })
			}
			require.Equal(t, tc.err, err, "the call's error passes through")
			require.Equal(t, 1.0, gauged(t, reg, "weft_grpc_requests_total", map[string]string{"method": method, "code": tc.code}))
			require.Equal(t, 1, testutil.CollectAndCount(reg, "weft_grpc_requests_total"), "one series")
			require.Equal(t, uint64(1), histCount(t, reg, "weft_grpc_request_duration_seconds", map[string]string{"method": method}))
		})
	}
}

// TestGRPCServer runs the interceptors and the stats handler in a real gRPC
// server (the standard health service) over TCP.
func TestGRPCServer(t *testing.T) {
	m, reg := newMetrics(t)
	srv := grpc.NewServer(m.ServerOptions()...)
	hs := health.NewServer()
	healthpb.RegisterHealthServer(srv, hs)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	defer func() {
		srv.Stop()
		require.NoError(t, <-served)
	}()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	c := healthpb.NewHealthClient(conn)

	ctx := context.Background()
	_, err = c.Check(ctx, &healthpb.HealthCheckRequest{})
	require.NoError(t, err)
	_, err = c.Check(ctx, &healthpb.HealthCheckRequest{Service: "nope"})
	require.Equal(t, codes.NotFound, status.Code(err))
	wctx, cancel := context.WithCancel(ctx)
	w, err := c.Watch(wctx, &healthpb.HealthCheckRequest{})
	require.NoError(t, err)
	_, err = w.Recv()
	require.NoError(t, err)
	require.Equal(t, 1, activeStreams(t, reg, "/grpc.health.v1.Health/Watch"), "the server is sending on the stream")
	cancel()
	_, err = w.Recv()
	require.Equal(t, codes.Canceled, status.Code(err))

	check := "/grpc.health.v1.Health/Check"
	require.Equal(t, 1.0, gauged(t, reg, "weft_grpc_requests_total", map[string]string{"method": check, "code": "OK"}))
	require.Equal(t, 1.0, gauged(t, reg, "weft_grpc_requests_total", map[string]string{"method": check, "code": "NotFound"}))
	require.Greater(t, gauged(t, reg, "weft_flight_bytes_received_total", nil), 0.0)
	require.Greater(t, gauged(t, reg, "weft_flight_bytes_sent_total", nil), 0.0)

	// An unknown method never reaches the interceptors: no unbounded label.
	err = conn.Invoke(ctx, "/no.Such/Method", &healthpb.HealthCheckRequest{}, &healthpb.HealthCheckResponse{})
	require.Equal(t, codes.Unimplemented, status.Code(err))
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		for _, mt := range mf.GetMetric() {
			for _, l := range mt.GetLabel() {
				require.NotEqual(t, "/no.Such/Method", l.GetValue(), mf.GetName())
			}
		}
	}
}

func TestBucketMetrics(t *testing.T) {
	m, reg := newMetrics(t)
	require.Equal(t, len(bucket.Ops)*len(bucket.Results), testutil.CollectAndCount(reg, "weft_bucket_operations_total"), "every series exists from the start")
	b := m.Bucket(bucket.NewMem())
	ctx := context.Background()
	_, err := b.Put(ctx, "k", bytes.NewReader([]byte("v")), 1)
	require.NoError(t, err)
	_, _, err = b.Get(ctx, "missing")
	require.ErrorIs(t, err, bucket.ErrNotFound)
	_, err = b.PutIfAbsent(ctx, "k", []byte("w"))
	require.ErrorIs(t, err, bucket.ErrExists)

	for _, tc := range []struct {
		op, result string
		want       float64
	}{
		{"put", "ok", 1},
		{"get", "not_found", 1},
		{"put_if_absent", "conflict", 1},
		{"get", "ok", 0},
		{"delete", "error", 0},
	} {
		t.Run(tc.op+"/"+tc.result, func(t *testing.T) {
			require.Equal(t, tc.want, gauged(t, reg, "weft_bucket_operations_total", map[string]string{"op": tc.op, "result": tc.result}))
		})
	}
	require.Equal(t, uint64(1), histCount(t, reg, "weft_bucket_operation_duration_seconds", map[string]string{"op": "put"}))
	require.Equal(t, uint64(2), histCount(t, reg, "weft_bucket_operation_duration_seconds", map[string]string{"op": "get"})+
		histCount(t, reg, "weft_bucket_operation_duration_seconds", map[string]string{"op": "put_if_absent"}))
}

func TestCacheCollector(t *testing.T) {
	st := metrics.CacheStats{Hits: 7, Misses: 3, Joins: 2, Evictions: 1, Bytes: 4096, Entries: 5}
	c := metrics.NewCacheCollector(func() metrics.CacheStats { return st })
	want := `
# HELP weft_block_cache_bytes Bytes of the blocks in the cache now.
# TYPE weft_block_cache_bytes gauge
weft_block_cache_bytes 4096
# HELP weft_block_cache_entries Blocks in the cache now.
# TYPE weft_block_cache_entries gauge
weft_block_cache_entries 5
# HELP weft_block_cache_evictions_total Blocks evicted from the cache to stay within its size.
# TYPE weft_block_cache_evictions_total counter
weft_block_cache_evictions_total 1
# HELP weft_block_cache_hits_total Block requests served from the decoded-block cache.
# TYPE weft_block_cache_hits_total counter
weft_block_cache_hits_total 7
# HELP weft_block_cache_joins_total Block requests that waited for a decode already in progress.
# TYPE weft_block_cache_joins_total counter
weft_block_cache_joins_total 2
# HELP weft_block_cache_misses_total Block requests that read and decoded the block (cache misses).
# TYPE weft_block_cache_misses_total counter
weft_block_cache_misses_total 3
`
	require.NoError(t, testutil.CollectAndCompare(c, strings.NewReader(want)))
	st.Hits = 8 // read at every scrape
	require.NoError(t, testutil.CollectAndCompare(c, strings.NewReader(strings.Replace(want, "hits_total 7", "hits_total 8", 1))))
}

func TestBudgetCollector(t *testing.T) {
	t.Run("nil budget: no metrics", func(t *testing.T) {
		reg := prometheus.NewRegistry()
		reg.MustRegister(metrics.NewBudgetCollector(nil))
		require.Equal(t, 0, testutil.CollectAndCount(reg))
	})
	t.Run("waits and refusals", func(t *testing.T) {
		b, err := membudget.New(membudget.Options{Total: 100, MaxWait: 0})
		require.NoError(t, err)
		reg := prometheus.NewRegistry()
		reg.MustRegister(metrics.NewBudgetCollector(b))
		ctx := context.Background()
		l, err := b.Acquire(ctx, 60, "test")
		require.NoError(t, err)
		defer l.Release()
		_, err = b.Acquire(ctx, 200, "too big") // refused at once
		require.ErrorIs(t, err, membudget.ErrExhausted)
		_, err = b.Acquire(ctx, 50, "no room") // waits 0 s, then refused
		require.ErrorIs(t, err, membudget.ErrExhausted)
		for name, want := range map[string]float64{
			"weft_memory_budget_bytes":          100,
			"weft_memory_budget_used_bytes":     60,
			"weft_memory_budget_waits_total":    1,
			"weft_memory_budget_refusals_total": 2,
		} {
			require.Equal(t, want, gauged(t, reg, name, nil), name)
		}
	})
}

func TestGPUCollector(t *testing.T) {
	t.Run("GPU delivery off: no metrics", func(t *testing.T) {
		reg := prometheus.NewRegistry()
		reg.MustRegister(metrics.NewGPUCollector(nil))
		require.Equal(t, 0, testutil.CollectAndCount(reg))
	})
	t.Run("read at every scrape", func(t *testing.T) {
		st := metrics.GPUStats{SessionsCreated: 2, SessionsReused: 9, Decoded: 120, Kept: 64, FrameCopyBytes: 0, MemUsedBytes: 3 << 30}
		reg := prometheus.NewRegistry()
		reg.MustRegister(metrics.NewGPUCollector(func() metrics.GPUStats { return st }))
		for name, want := range map[string]float64{
			"weft_gpu_decode_sessions_created_total": 2,
			"weft_gpu_decode_sessions_reused_total":  9,
			"weft_gpu_frames_decoded_total":          120,
			"weft_gpu_frames_kept_total":             64,
			"weft_gpu_frame_copy_bytes_total":        0,
			"weft_gpu_memory_used_bytes":             3 << 30,
		} {
			require.Equal(t, want, gauged(t, reg, name, nil), name)
		}
		st.Decoded, st.FrameCopyBytes = 130, 4096
		require.Equal(t, float64(130), gauged(t, reg, "weft_gpu_frames_decoded_total", nil))
		require.Equal(t, float64(4096), gauged(t, reg, "weft_gpu_frame_copy_bytes_total", nil))
	})
}

func TestHandler(t *testing.T) {
	m, reg := newMetrics(t)
	m.RunRecordsStored.Add(3)
	var pingErr error
	pings := 0
	h := metrics.NewHealth(func(context.Context) error { pings++; return pingErr })
	srv := httptest.NewServer(metrics.Handler(reg, h))
	defer srv.Close()

	get := func(path string) (int, string) {
		resp, err := http.Get(srv.URL + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(body)
	}

	code, body := get("/metrics")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "weft_run_records_stored_total 3")
	code, _ = get("/healthz")
	require.Equal(t, http.StatusOK, code)
	code, _ = get("/nope")
	require.Equal(t, http.StatusNotFound, code)

	code, body = get("/readyz")
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.Contains(t, body, "gRPC server is not serving")
	require.Equal(t, 0, pings, "no probe while not serving")

	// The listener marks serving from the first Accept to Close.
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	wrapped := h.Listener(lis)
	accepted := make(chan error, 1)
	go func() {
		c, err := wrapped.Accept()
		if err == nil {
			c.Close()
		}
		accepted <- err
	}()
	conn, err := net.Dial("tcp", lis.Addr().String())
	require.NoError(t, err)
	conn.Close()
	require.NoError(t, <-accepted)
	code, body = get("/readyz")
	require.Equal(t, http.StatusOK, code, body)
	require.Equal(t, 1, pings)
	require.NoError(t, wrapped.Close())
	code, _ = get("/readyz")
	require.Equal(t, http.StatusServiceUnavailable, code)

	h.SetServing(true)
	require.NoError(t, h.Ready(context.Background()))
	require.LessOrEqual(t, pings, 2)
}

func TestReadyStoreDown(t *testing.T) {
	h := metrics.NewHealth(func(context.Context) error { return errors.New("connection refused") })
	h.SetServing(true)
	err := h.Ready(context.Background())
	require.ErrorIs(t, err, metrics.ErrNotReady)
	require.ErrorContains(t, err, "the store does not answer: connection refused")

	// A caller that leaves does not poison the next answer.
	calls := 0
	h = metrics.NewHealth(func(ctx context.Context) error { calls++; return nil })
	h.SetServing(true)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.ErrorIs(t, h.Ready(ctx), context.Canceled)
	require.NoError(t, h.Ready(context.Background()))
	require.Equal(t, 2, calls)
}

// gauged returns the value of the one series of name with exactly labels.
func gauged(t *testing.T, g prometheus.Gatherer, name string, labels map[string]string) float64 {
	t.Helper()
	mt := series(t, g, name, labels)
	switch {
	case mt.GetCounter() != nil:
		return mt.GetCounter().GetValue()
	case mt.GetGauge() != nil:
		return mt.GetGauge().GetValue()
	}
	t.Fatalf("%s is neither a counter nor a gauge", name)
	return 0
}

func histCount(t *testing.T, g prometheus.Gatherer, name string, labels map[string]string) uint64 {
	t.Helper()
	return series(t, g, name, labels).GetHistogram().GetSampleCount()
}

func activeStreams(t *testing.T, g prometheus.Gatherer, method string) int {
	t.Helper()
	return int(gauged(t, g, "weft_grpc_active_streams", map[string]string{"method": method}))
}

func series(t *testing.T, g prometheus.Gatherer, name string, labels map[string]string) *dto.Metric {
	t.Helper()
	mfs, err := g.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, mt := range mf.GetMetric() {
			got := map[string]string{}
			for _, l := range mt.GetLabel() {
				got[l.GetName()] = l.GetValue()
			}
			if maps.Equal(got, labels) || len(got) == 0 && len(labels) == 0 {
				return mt
			}
		}
	}
	t.Fatalf("no series %s%v", name, labels)
	return nil
}
