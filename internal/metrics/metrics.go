package metrics

import (
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/weftdata/weft/bucket"
)

// Metrics are the metrics that parts of flightd update as they work. Build
// them with New; the methods are safe for concurrent use.
type Metrics struct {
	// RunRecordsStored counts run records written to the store. Whoever
	// stores them (the mix engine) increments it once per record written,
	// not for a run it finds already stored.
	RunRecordsStored prometheus.Counter

	grpcRequests  *prometheus.CounterVec
	grpcDuration  *prometheus.HistogramVec
	grpcActive    *prometheus.GaugeVec
	bytesSent     prometheus.Counter
	bytesReceived prometheus.Counter

	bucketOps      *prometheus.CounterVec
	bucketDuration *prometheus.HistogramVec
}

// grpcBuckets span a 1 ms unary call to a rank stream of an hour:
// 1 ms × 4^k for k = 0..12.
var grpcBuckets = prometheus.ExponentialBuckets(0.001, 4, 12)

// bucketBuckets span a 100 µs local read to a 37 s multipart upload:
// 100 µs × 2.5^k for k = 0..14.
var bucketBuckets = prometheus.ExponentialBuckets(0.0001, 2.5, 15)

// New returns the metrics, registered on reg. A nil reg registers nothing
// (the metrics still count; nothing exports them).
func New(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		RunRecordsStored: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "weft_run_records_stored_total",
			Help: "Run records written to the store (one per new run planned).",
		}),
		grpcRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "weft_grpc_requests_total",
			Help: "gRPC calls finished, by full method name and status code.",
		}, []string{"method", "code"}),
		grpcDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "weft_grpc_request_duration_seconds",
			Help:    "Duration of gRPC calls, from the call's start to its handler's return (whole streams for streaming calls).",
			Buckets: grpcBuckets,
		}, []string{"method"}),
		grpcActive: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "weft_grpc_active_streams",
			Help: "Streaming gRPC calls running now (DoGet, DoPut, DoAction, ...).",
		}, []string{"method"}),
		bytesSent: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "weft_flight_bytes_sent_total",
			Help: "Bytes of gRPC messages sent (wire length: payload after compression plus framing).",
		}),
		bytesReceived: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "weft_flight_bytes_received_total",
			Help: "Bytes of gRPC messages received (wire length: payload after compression plus framing).",
		}),
		bucketOps: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "weft_bucket_operations_total",
			Help: "Object store operations finished, by operation and result (ok, not_found, conflict, error).",
		}, []string{"op", "result"}),
		bucketDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "weft_bucket_operation_duration_seconds",
			Help:    "Duration of object store operations (retries included; list: the whole listing).",
			Buckets: bucketBuckets,
		}, []string{"op"}),
	}
	// Every bucket series exists from the start, so rates and ratios of
	// results that have not happened yet read 0 rather than nothing.
	for _, op := range bucket.Ops {
		m.bucketDuration.WithLabelValues(op)
		for _, r := range bucket.Results {
			m.bucketOps.WithLabelValues(op, r)
		}
	}
	if reg == nil {
		return m, nil
	}
	var errs []error
	for _, c := range []prometheus.Collector{m.RunRecordsStored, m.grpcRequests, m.grpcDuration, m.grpcActive, m.bytesSent, m.bytesReceived, m.bucketOps, m.bucketDuration} {
		errs = append(errs, reg.Register(c))
	}
	return m, errors.Join(errs...)
}

// NewRegistry returns a registry holding the Go runtime's and the process's
// standard collectors (go_…, process_…: heap, GC, RSS, open files), for
// New and the collectors of this package to join.
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// ObserveBucketOp implements bucket.Observer.
func (m *Metrics) ObserveBucketOp(op, result string, d time.Duration) {
	m.bucketOps.WithLabelValues(op, result).Inc()
	m.bucketDuration.WithLabelValues(op).Observe(d.Seconds())
}

// Bucket returns b with every operation counted and timed
// (bucket.Observe).
func (m *Metrics) Bucket(b bucket.Bucket) bucket.Bucket { return bucket.Observe(b, m) }
