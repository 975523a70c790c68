package metrics

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// probeTimeout bounds one store probe of /readyz.
const probeTimeout = 5 * time.Second

// probeEvery is how long a store probe's answer is reused, so that
// frequent /readyz calls cost the store at most one list a second.
const probeEvery = time.Second

// maxReasonBytes caps the reason /readyz gives (it may quote a store
// error).
const maxReasonBytes = 1 << 10

// Health answers /readyz: ready when the gRPC server is serving and the
// store answers a cheap probe. It is safe for concurrent use.
type Health struct {
	ping    func(context.Context) error
	serving atomic.Bool

	mu struct {
		sync.Mutex
		at  time.Time // of the last probe; zero before the first
		err error     // its result
	}
}

// NewHealth returns a Health that probes the store with ping (for flightd,
// flight.Service.Ping). It is not serving until SetServing(true) or a
// Listener's first Accept.
func NewHealth(ping func(context.Context) error) *Health {
	return &Health{ping: ping}
}

// SetServing says whether the gRPC server is serving.
func (h *Health) SetServing(serving bool) { h.serving.Store(serving) }

// Listener returns lis, marking h serving while the gRPC server accepts
// connections on it: from its first call to Accept until Close (which a
// gRPC server calls when it stops, graceful or not).
func (h *Health) Listener(lis net.Listener) net.Listener {
	return &servingListener{Listener: lis, h: h}
}

type servingListener struct {
	net.Listener
	h *Health
}

func (l *servingListener) Accept() (net.Conn, error) {
	l.h.serving.Store(true)
	return l.Listener.Accept()
}

func (l *servingListener) Close() error {
	l.h.serving.Store(false)
	return l.Listener.Close()
}

// Ready returns nil when the process can take calls, or an error wrapping
// ErrNotReady that says why not. The store is probed at most once per
// second; callers in that second share the answer.
func (h *Health) Ready(ctx context.Context) error {
	if !h.serving.Load() {
		return fmt.Errorf("%w: the gRPC server is not serving (starting or shutting down)", ErrNotReady)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.mu.at.IsZero() || time.Since(h.mu.at) >= probeEvery {
		pctx, cancel := context.WithTimeout(ctx, probeTimeout)
		err := h.ping(pctx)
		cancel()
		if ctx.Err() != nil {
			return ctx.Err() // the caller left: this answer says nothing of the store
		}
		h.mu.at, h.mu.err = time.Now(), err
	}
	if h.mu.err != nil {
		return fmt.Errorf("%w: the store does not answer: %w", ErrNotReady, h.mu.err)
	}
	return nil
}

// Handler serves:
//
//   - /metrics: the metrics of g in Prometheus' text (or protobuf) format;
//   - /healthz: 200 "ok" while the process runs;
//   - /readyz: 200 "ok" when h.Ready, else 503 and the reason.
//
// Any other path is 404. The endpoints have no authentication: expose them
// only to the monitoring network.
func Handler(g prometheus.Gatherer, h *Health) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(g, promhttp.HandlerOpts{
		ErrorHandling:       promhttp.ContinueOnError,
		MaxRequestsInFlight: 4,
		Timeout:             30 * time.Second,
	}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if err := h.Ready(r.Context()); err != nil {
			msg := err.Error()
			if len(msg) > maxReasonBytes {
				msg = msg[:maxReasonBytes] + "…"
			}
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintln(w, msg)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	return mux
}
