package flight

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
)

// Options configure a Service.
type Options struct {
	// Logger receives one line per call and the causes of internal errors;
	// nil discards.
	Logger *slog.Logger
	// Allocator for the Arrow memory of streams; nil means
	// memory.DefaultAllocator.
	Allocator memory.Allocator
	// MaxRecvMessageBytes bounds one incoming gRPC message (one DoPut
	// batch). gRPC's default is 4 MiB; Weft accepts 256 MiB.
	MaxRecvMessageBytes int
	// BatchBytes is the target size of one DoGet record batch: scans are
	// sliced to stay at or below it whenever single rows allow. Keep it
	// well under 4 MiB, the default receive limit of gRPC clients.
	BatchBytes int64
	// EndpointBytes is the target Parquet size of one scan endpoint: a
	// scan's row groups are grouped, in order, into endpoints of about
	// this many bytes (never splitting a row group).
	EndpointBytes int64
	// Prefetch is how many batches DoGet decodes ahead of the one it is
	// sending (0: decode and send in turn).
	Prefetch int
	// ShutdownGrace is how long Serve lets running calls finish after its
	// context ends before it cancels them.
	ShutdownGrace time.Duration
	// StepMessageBytes is the largest message of a rank stream: a step
	// whose batch is larger goes out as several slices of it, each at most
	// this size when single rows allow, with app_metadata parts that
	// clients reassemble (docs/flight.md). 3 MiB keeps every step within
	// gRPC clients' default 4 MiB receive limit.
	StepMessageBytes int64
	// PutTimeout bounds a DoPut from its first message to its commit: a
	// put still running then fails with DeadlineExceeded and commits
	// nothing. It must stay well under the grace period of garbage
	// collection (`flightd admin gc --older-than`, 24 h by convention),
	// which assumes every put finishes within it (see package gc).
	PutTimeout time.Duration
	// ServerOptions are added to the gRPC server's own (interceptors run
	// after the Service's recovery interceptor).
	ServerOptions []grpc.ServerOption
}

// DefaultOptions: 256 MiB put messages, 3 MiB scan batches and step
// messages, 128 MiB endpoints, 4 batches decoded ahead, 10 s shutdown
// grace, 1 h put timeout.
func DefaultOptions() Options {
	return Options{
		MaxRecvMessageBytes: 256 << 20,
		BatchBytes:          3 << 20,
		EndpointBytes:       128 << 20,
		Prefetch:            4,
		ShutdownGrace:       10 * time.Second,
		StepMessageBytes:    3 << 20,
		PutTimeout:          time.Hour,
	}
}

// Validate reports an unusable option.
func (o Options) Validate() error {
	switch {
	case o.MaxRecvMessageBytes < 1<<20:
		return fmt.Errorf("flight options: MaxRecvMessageBytes is %d; it must be at least 1 MiB", o.MaxRecvMessageBytes)
	case o.BatchBytes < 1:
		return fmt.Errorf("flight options: BatchBytes is %d; it must be positive", o.BatchBytes)
	case o.EndpointBytes < 1:
		return fmt.Errorf("flight options: EndpointBytes is %d; it must be positive", o.EndpointBytes)
	case o.Prefetch < 0:
		return fmt.Errorf("flight options: Prefetch is %d; it must be 0 or more", o.Prefetch)
	case o.ShutdownGrace < 0:
		return fmt.Errorf("flight options: ShutdownGrace is %v; it must be 0 or more", o.ShutdownGrace)
	case o.StepMessageBytes < 1:
		return fmt.Errorf("flight options: StepMessageBytes is %d; it must be positive", o.StepMessageBytes)
	case o.PutTimeout <= 0:
		return fmt.Errorf("flight options: PutTimeout is %v; it must be positive (and under the gc grace period)", o.PutTimeout)
	}
	return nil
}
