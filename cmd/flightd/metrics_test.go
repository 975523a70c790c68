package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"

	"github.com/weftdata/weft/client"
)

// startFlightdMetrics runs `flightd serve --metrics-addr 127.0.0.1:0` over
// a new fs store and returns the process and the metrics address, read
// from the "serving metrics" log line.
func startFlightdMetrics(t *testing.T) (*flightdProc, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "serve", "--addr", "127.0.0.1:0", "--metrics-addr", "127.0.0.1:0", "--log-format", "json", "--store", t.TempDir())
	cmd.Env = append(os.Environ(), asFlightd+"=1")
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	p := &flightdProc{cmd: cmd, done: make(chan struct{})}
	addrs := make(chan [2]string, 1)
	go func() {
		defer close(p.done)
		var metricsAddr string
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			var line struct{ Msg, Addr string }
			if json.Unmarshal(sc.Bytes(), &line) != nil {
				continue
			}
			switch line.Msg {
			case "serving metrics":
				metricsAddr = line.Addr
			case "serving":
				addrs <- [2]string{line.Addr, metricsAddr}
			}
		}
		_ = cmd.Wait()
	}()
	var got [2]string
	select {
	case got = <-addrs:
	case <-p.done:
		t.Fatal("flightd exited before serving")
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("flightd did not start")
	}
	t.Cleanup(func() { p.kill() })
	require.NotEmpty(t, got[1], `no "serving metrics" line before "serving"`)
	p.addr = got[0]
	return p, got[1]
}

func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body)
}

// scrape returns every sample of /metrics as name → labels → value
// (histograms: their sample count).
func scrape(t *testing.T, addr string) map[string][]sample {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(resp.Body)
	require.NoError(t, err)
	out := map[string][]sample{}
	for name, mf := range mfs {
		for _, m := range mf.GetMetric() {
			s := sample{labels: map[string]string{}}
			for _, l := range m.GetLabel() {
				s.labels[l.GetName()] = l.GetValue()
			}
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				s.value = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				s.value = m.GetGauge().GetValue()
			case dto.MetricType_HISTOGRAM:
				s.value = float64(m.GetHistogram().GetSampleCount())
			default:
				s.value = m.GetUntyped().GetValue()
			}
			out[name] = append(out[name], s)
		}
	}
	return out
}

type sample struct {
	labels map[string]string
	value  float64
}

// value returns the sample of name with exactly labels, failing if none.
func value(t *testing.T, samples map[string][]sample, name string, labels map[string]string) float64 {
	t.Helper()
	for _, s := range samples[name] {
		if maps.Equal(s.labels, labels) || len(s.labels) == 0 && len(labels) == 0 {
			return s.value
		}
	}
	t.Fatalf("no sample %s%v among %v", name, labels, samples[name])
	return 0
}

// TestMetricsEndToEnd runs a real flightd with --metrics-addr, puts, scans
// and reads a run through the Go client, and checks what /metrics,
// /healthz and /readyz say.
func TestMetricsEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end: skipped with -short")
	}
	srv, maddr := startFlightdMetrics(t)

	code, body := httpGet(t, "http://"+maddr+"/healthz")
	require.Equal(t, http.StatusOK, code, body)
	// "serving" is logged just before the gRPC server's first Accept, which
	// is what makes it ready: under load /readyz may say 503 for a moment.
	require.Eventually(t, func() bool {
		code, body = httpGet(t, "http://"+maddr+"/readyz")
		return code == http.StatusOK
	}, 20*time.Second, 10*time.Millisecond, "/readyz never answered 200")

	c := dial(t, srv.addr)
	ctx := context.Background()
	_, err := c.CreateProject(ctx, "robotics")
	require.NoError(t, err)
	putRows(t, c, "episodes", 0, 500)

	scan, err := c.Scan(ctx, client.ScanRequest{Project: "robotics", Ref: "main", Table: "episodes"})
	require.NoError(t, err)
	rows := 0
	for _, ep := range scan.Endpoints {
		for rec, err := range c.Read(ctx, ep) {
			require.NoError(t, err)
			rows += int(rec.NumRows())
		}
	}
	require.Equal(t, 500, rows)

	recipe := &client.Recipe{Seed: 1, BatchSize: 50, Components: []client.Component{{Project: "robotics", Table: "episodes", Weight: 1}}}
	info, run, err := plan(c, client.RunCommand{Recipe: recipe, WorldSize: world(1)})
	require.NoError(t, err)
	require.Len(t, readRank(t, c, info.Ranks[0], run), 10)

	m := scrape(t, maddr)
	const flight = "/arrow.flight.protocol.FlightService/"
	for _, tc := range []struct {
		name   string
		labels map[string]string
		min    float64
	}{
		{"weft_grpc_requests_total", map[string]string{"method": flight + "DoPut", "code": "OK"}, 1},
		{"weft_grpc_requests_total", map[string]string{"method": flight + "DoGet", "code": "OK"}, 2},
		{"weft_grpc_requests_total", map[string]string{"method": flight + "GetFlightInfo", "code": "OK"}, 2},
		{"weft_grpc_requests_total", map[string]string{"method": flight + "DoAction", "code": "OK"}, 1},
		{"weft_grpc_request_duration_seconds", map[string]string{"method": flight + "DoPut"}, 1},
		{"weft_flight_bytes_received_total", nil, 500 * 300},
		{"weft_flight_bytes_sent_total", nil, 2 * 500 * 300},
		{"weft_bucket_operations_total", map[string]string{"op": "put", "result": "ok"}, 1},
		{"weft_bucket_operations_total", map[string]string{"op": "cas", "result": "ok"}, 1},
		{"weft_bucket_operations_total", map[string]string{"op": "read", "result": "ok"}, 1},
		{"weft_bucket_operation_duration_seconds", map[string]string{"op": "put"}, 1},
		{"weft_block_cache_misses_total", nil, 1},
		{"weft_block_cache_entries", nil, 1},
		{"weft_block_cache_bytes", nil, 1},
		{"weft_run_records_stored_total", nil, 1},
		{"weft_memory_budget_bytes", nil, 256 << 20},
		{"process_resident_memory_bytes", nil, 1},
	} {
		t.Run(fmt.Sprint(tc.name, tc.labels), func(t *testing.T) {
			require.GreaterOrEqual(t, value(t, m, tc.name, tc.labels), tc.min, "%s%v", tc.name, tc.labels)
		})
	}
	require.Zero(t, value(t, m, "weft_grpc_active_streams", map[string]string{"method": flight + "DoPut"}), "the put is over")
	for _, name := range []string{"weft_block_cache_hits_total", "weft_block_cache_joins_total", "weft_block_cache_evictions_total", "weft_memory_budget_used_bytes", "weft_memory_budget_waits_total", "weft_memory_budget_refusals_total"} {
		value(t, m, name, nil) // exported, whatever the count
	}

	// Labels stay bounded: no project, table or run id anywhere.
	for name, ss := range m {
		for _, s := range ss {
			for k, v := range s.labels {
				require.NotContains(t, []string{"robotics", "episodes", run}, v, "%s{%s=%q}", name, k, v)
			}
		}
	}
}

// TestMetricsFlagErrors checks that an unusable --metrics-addr is a usage
// error (exit 2) that names the flag.
func TestMetricsFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"bad address", []string{"--metrics-addr", "not-an-address"}, "cannot listen on --metrics-addr not-an-address"},
		{"port taken", nil, "cannot listen on --metrics-addr"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := tc.args
			if args == nil {
				if testing.Short() {
					t.Skip("starts flightd: skipped with -short")
				}
				_, maddr := startFlightdMetrics(t)
				args = []string{"--metrics-addr", maddr}
			}
			var stdout, stderr strings.Builder
			code := run(context.Background(), append([]string{"serve", "--addr", "127.0.0.1:0", "--store", t.TempDir()}, args...), &stdout, &stderr)
			require.Equal(t, exitUsage, code, stderr.String())
			require.Contains(t, stderr.String(), tc.want)
		})
	}
}

// TestMetricsAddrWarning checks that metrics on a non-loopback address log
// a warning and on loopback do not. It runs flightd in this process and
// stops it once it serves.
func TestMetricsAddrWarning(t *testing.T) {
	for _, tc := range []struct {
		addr string
		warn bool
	}{
		{"127.0.0.1:0", false},
		{"0.0.0.0:0", true},
	} {
		t.Run(tc.addr, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			stderr := &servingWatcher{serving: make(chan struct{})}
			done := make(chan int, 1)
			go func() {
				done <- run(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--store", t.TempDir(), "--metrics-addr", tc.addr}, io.Discard, stderr)
			}()
			select {
			case <-stderr.serving:
			case code := <-done:
				t.Fatalf("flightd exited with %d before serving: %s", code, stderr)
			}
			cancel()
			require.Equal(t, exitOK, <-done, stderr.String())
			require.Contains(t, stderr.String(), `msg="serving metrics"`)
			require.Equal(t, tc.warn, strings.Contains(stderr.String(), "without authentication"), stderr.String())
		})
	}
}

// servingWatcher collects a text log and closes serving at the line
// "serving".
type servingWatcher struct {
	mu      sync.Mutex
	buf     strings.Builder
	serving chan struct{}
}

func (w *servingWatcher) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if strings.Contains(string(p), "msg=serving ") {
		close(w.serving)
	}
	return len(p), nil
}

func (w *servingWatcher) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}
