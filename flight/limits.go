package flight

import (
	"context"
	"fmt"
	"sync"

	arrowflight "github.com/apache/arrow-go/v18/arrow/flight"
	"golang.org/x/sync/semaphore"
	"google.golang.org/protobuf/proto"

	"github.com/weftdata/weft/internal/membudget"
	"github.com/weftdata/weft/mix"
	"github.com/weftdata/weft/tables"
)

// Limits (Options; docs/operations.md, "Limits"). Every request is
// bounded: its JSON by MaxCommandBytes before it is decoded, a run's
// endpoints by MaxWorldSize, a reply by MaxReplyBytes, a step by
// MaxStepBytes (and by the memory budget), list results by
// MaxListEntries, the streams and puts running at once by MaxStreams and
// MaxPuts. What a stream or a put holds in memory is leased from the
// budget for as long as it runs, so that over --memory-limit new work
// waits and then gets ResourceExhausted rather than pushing the process
// out of memory.

// limiter is the Service's state for its concurrency limits.
type limiter struct {
	streams, puts *semaphore.Weighted
	rowBytes      struct {
		sync.Mutex
		m map[mix.RunID]int64 // estimated bytes of a run's widest row
	}
}

// maxCostEntries bounds the runs whose row width the Service remembers.
const maxCostEntries = 1024

func newLimiter(o Options) *limiter {
	l := &limiter{streams: semaphore.NewWeighted(int64(o.MaxStreams)), puts: semaphore.NewWeighted(int64(o.MaxPuts))}
	l.rowBytes.m = make(map[mix.RunID]int64)
	return l
}

// slot takes one of a bounded number of places (a stream or a put),
// waiting up to QueueWait, and returns its release.
func (s *Service) slot(ctx context.Context, sem *semaphore.Weighted, what string, limit int, flag string) (func(), error) {
	if sem.TryAcquire(1) {
		return func() { sem.Release(1) }, nil
	}
	wctx, cancel := context.WithTimeout(ctx, s.opts.QueueWait)
	defer cancel()
	if err := sem.Acquire(wctx, 1); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("%w: %d %s are running, the server's limit (%s), and none ended within %v; retry later", ErrBusy, limit, what, flag, s.opts.QueueWait)
	}
	return func() { sem.Release(1) }, nil
}

// checkLen refuses a JSON input longer than MaxCommandBytes before it is
// decoded.
func (s *Service) checkLen(what string, data []byte) error {
	if len(data) > s.opts.MaxCommandBytes {
		return fmt.Errorf("%w: the %s is %d bytes, over the server's limit of %d bytes for one JSON input (--max-command-size); send a smaller one", ErrTooLarge, what, len(data), s.opts.MaxCommandBytes)
	}
	return nil
}

// checkWorldSize refuses more ranks than one reply may list.
func (s *Service) checkWorldSize(world int) error {
	if world > s.opts.MaxWorldSize {
		return fmt.Errorf("%w: world_size %d is over the server's limit of %d ranks (endpoints) per run plan (--max-world-size); plan fewer ranks, or ask the operator to raise the limit", ErrTooLarge, world, s.opts.MaxWorldSize)
	}
	return nil
}

// lease reserves n bytes of the budget for what; nil budget: no-op.
func (s *Service) lease(ctx context.Context, n int64, what string) (*membudget.Lease, error) {
	return s.budget.Acquire(ctx, n, what)
}

// streamCost estimates what a rank stream of rows rows per step, of rows
// of rowBytes bytes, holds: StreamSteps steps and StreamBlocks decoded
// blocks of the size mix reads (tables.DefaultLayout).
func (s *Service) streamCost(rowBytes, rows int64) (step, block, stream int64) {
	l := tables.DefaultLayout()
	step = rows * rowBytes
	block = min(max(rowBytes*l.TargetRows, l.MinBytes), max(l.MaxBytes, l.MinBytes))
	stream = int64(s.opts.StreamSteps)*step + int64(s.opts.StreamBlocks)*block
	return step, block, stream
}

// checkStep refuses a run whose rank streams would hold too much: a step
// over MaxStepBytes, or a stream over half of the memory budget.
func (s *Service) checkStep(batch, world int, rowBytes int64) error {
	rows := int64(batch / max(1, world))
	step, block, stream := s.streamCost(rowBytes, rows)
	if step > s.opts.MaxStepBytes {
		return fmt.Errorf("%w: each rank's step would be about %d bytes (batch_size %d / world_size %d = %d rows of about %d bytes), over the server's limit of %d bytes per step (--max-step-size); raise world_size, lower batch_size or select fewer columns", ErrTooLarge, step, batch, world, rows, rowBytes, s.opts.MaxStepBytes)
	}
	if total := s.budget.Stats().Total; total > 0 && stream > total/2 {
		return fmt.Errorf("%w: a rank stream of this run would hold about %d bytes (%d steps of %d bytes and %d blocks of %d bytes), more than half of the server's memory budget of %d bytes (--memory-limit); raise world_size, lower batch_size, select fewer columns, or ask the operator for more memory", ErrTooLarge, stream, s.opts.StreamSteps, step, s.opts.StreamBlocks, block, total)
	}
	return nil
}

// rowBytes estimates the Arrow bytes of one row of a run over vs with
// columns (a run record's, always resolved): the widest component's
// average, from the Parquet footers (cached), plus _component and _row.
func (s *Service) rowBytes(ctx context.Context, vs []*tables.Version, columns []string) (int64, error) {
	var widest int64
	for _, v := range vs {
		proj, err := v.Projection(columns)
		if err != nil {
			return 0, err
		}
		_, bytes, err := s.tables.Layout(ctx, v, proj, tables.DefaultLayout())
		if err != nil {
			return 0, err
		}
		widest = max(widest, (bytes+v.Rows()-1)/max(1, v.Rows()))
	}
	return widest + 4 + 8, nil
}

// runRowBytes is rowBytes for a resolved run, remembered per run.
func (s *Service) runRowBytes(ctx context.Context, run *mix.Run) (int64, error) {
	s.lim.rowBytes.Lock()
	n, ok := s.lim.rowBytes.m[run.ID()]
	s.lim.rowBytes.Unlock()
	if ok {
		return n, nil
	}
	n, err := s.rowBytes(ctx, run.Versions(), run.Record().Components[0].Columns)
	if err != nil {
		return 0, err
	}
	s.lim.rowBytes.Lock()
	if len(s.lim.rowBytes.m) >= maxCostEntries {
		clear(s.lim.rowBytes.m)
	}
	s.lim.rowBytes.m[run.ID()] = n
	s.lim.rowBytes.Unlock()
	return n, nil
}

// putCost is what one put leases for as long as it runs: a message twice
// (MaxRecvMessageBytes: grpc's frames of the message being received and
// the data_body the codec copies out of them, which the batch read from
// it holds; codec.go, unmarshalFlightData) and twice a row group
// (PutBufferBytes; see DoPut).
func (s *Service) putCost() int64 {
	return 2*int64(s.opts.MaxRecvMessageBytes) + 2*s.opts.PutBufferBytes
}

// checkReply refuses a FlightInfo larger than MaxReplyBytes.
func (s *Service) checkReply(info *arrowflight.FlightInfo) error {
	if n := proto.Size(info); n > s.opts.MaxReplyBytes {
		return fmt.Errorf("%w: the reply would be %d bytes, over the server's limit of %d (--max-reply-size)", ErrTooLarge, n, s.opts.MaxReplyBytes)
	}
	return nil
}
