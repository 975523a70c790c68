package flight

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/weftdata/weft/mix"
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
	// Mix configures the engine that serves runs (its block cache above
	// all). A nil Allocator or Logger there means the Service's.
	Mix mix.Options
}

// DefaultOptions: 256 MiB put messages, 3 MiB scan batches, 128 MiB
// endpoints, 4 batches decoded ahead, 10 s shutdown grace, and
// mix.DefaultOptions (a 1 GiB block cache).
func DefaultOptions() Options {
	return Options{
		MaxRecvMessageBytes: 256 << 20,
		BatchBytes:          3 << 20,
		EndpointBytes:       128 << 20,
		Prefetch:            4,
		ShutdownGrace:       10 * time.Second,
		Mix:                 mix.DefaultOptions(),
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
	}
	if err := o.Mix.Validate(); err != nil {
		return fmt.Errorf("flight options: %w", err)
	}
	return nil
}
