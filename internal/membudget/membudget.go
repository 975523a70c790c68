// Package membudget bounds the bytes that the parts of one process hold at
// once: the block cache, the steps buffered by rank streams, the batches of
// uploads. It is the one place where flightd's --memory-limit is enforced.
//
// A part reserves bytes before it allocates them and releases the lease
// when it frees them. When the budget is short, Acquire first asks the
// registered reclaimers (the cache) to give bytes back, then waits up to
// Options.MaxWait for other holders, then fails with ErrExhausted, which
// wraps errdefs.ErrResourceExhausted: over the limit, new work waits or is
// refused with a message; it never pushes the process past the limit.
//
// A nil *Budget is unlimited: every call succeeds and leases are no-ops, so
// parts built without a budget (tests, tools) need no special case.
package membudget

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/weftdata/weft/errdefs"
)

// ErrExhausted: the budget cannot give the bytes asked for, now (after
// waiting MaxWait) or ever (more than the whole budget).
var ErrExhausted = fmt.Errorf("memory budget %w", errdefs.ErrResourceExhausted)

// Options configure a Budget.
type Options struct {
	// Total is the number of bytes the budget hands out at most.
	Total int64
	// MaxWait bounds how long Acquire waits for bytes held by others.
	MaxWait time.Duration
}

// DefaultMaxWait is how long Acquire waits by default.
const DefaultMaxWait = 30 * time.Second

// Validate reports an unusable option.
func (o Options) Validate() error {
	switch {
	case o.Total < 1:
		return fmt.Errorf("membudget: Total is %d; it must be positive", o.Total)
	case o.MaxWait < 0:
		return fmt.Errorf("membudget: MaxWait is %v; it must be 0 or more", o.MaxWait)
	}
	return nil
}

// Budget hands out leases on a fixed number of bytes. It is safe for
// concurrent use.
type Budget struct {
	opts Options
	sem  *semaphore.Weighted
	used atomic.Int64

	waits   atomic.Int64
	refused atomic.Int64

	mu struct {
		sync.Mutex
		reclaimers []func(need int64)
	}
}

// New returns a budget of opts.Total bytes.
func New(opts Options) (*Budget, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	return &Budget{opts: opts, sem: semaphore.NewWeighted(opts.Total)}, nil
}

// Lease is a reservation of bytes. Release returns them; it is idempotent
// and safe on a nil lease.
type Lease struct {
	b    *Budget
	n    int64
	done atomic.Bool
}

// Bytes is the size of the lease.
func (l *Lease) Bytes() int64 {
	if l == nil {
		return 0
	}
	return l.n
}

// Release gives the lease's bytes back.
func (l *Lease) Release() {
	if l == nil || l.b == nil || l.n == 0 || !l.done.CompareAndSwap(false, true) {
		return
	}
	l.b.used.Add(-l.n)
	l.b.sem.Release(l.n)
}

// OnPressure registers f, called with the number of bytes Acquire is short
// of before it waits. f should free (release leases of) about that many
// bytes if it can, without calling Acquire.
func (b *Budget) OnPressure(f func(need int64)) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.mu.reclaimers = append(b.mu.reclaimers, f)
}

// TryAcquire reserves n bytes if they are free now, without reclaiming or
// waiting.
func (b *Budget) TryAcquire(n int64) (*Lease, bool) {
	if b == nil || n <= 0 {
		return &Lease{}, true
	}
	if !b.sem.TryAcquire(n) {
		return nil, false
	}
	b.used.Add(n)
	return &Lease{b: b, n: n}, true
}

// Acquire reserves n bytes for what (named in the error), asking the
// reclaimers for room and then waiting up to MaxWait. It fails with
// ErrExhausted when n is more than the budget or the wait times out, and
// with ctx's error when ctx ends first.
func (b *Budget) Acquire(ctx context.Context, n int64, what string) (*Lease, error) {
	if b == nil || n <= 0 {
		return &Lease{}, nil
	}
	if n > b.opts.Total {
		b.refused.Add(1)
		return nil, fmt.Errorf("%w: %s needs %d bytes, more than the whole --memory-limit budget of %d bytes; make it smaller (fewer rows per batch or step)", ErrExhausted, what, n, b.opts.Total)
	}
	if l, ok := b.TryAcquire(n); ok {
		return l, nil
	}
	b.reclaim(n)
	if l, ok := b.TryAcquire(n); ok {
		return l, nil
	}
	b.waits.Add(1)
	wctx, cancel := context.WithTimeout(ctx, b.opts.MaxWait)
	defer cancel()
	if err := b.sem.Acquire(wctx, n); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		b.refused.Add(1)
		return nil, fmt.Errorf("%w: %s needs %d bytes; %d of %d are in use and none were freed within %v; retry later or lower the load", ErrExhausted, what, n, b.used.Load(), b.opts.Total, b.opts.MaxWait)
	}
	b.used.Add(n)
	return &Lease{b: b, n: n}, nil
}

func (b *Budget) reclaim(n int64) {
	b.mu.Lock()
	fs := append([]func(int64){}, b.mu.reclaimers...)
	b.mu.Unlock()
	for _, f := range fs {
		free := b.opts.Total - b.used.Load()
		if free >= n {
			return
		}
		f(n - free)
	}
}

// Stats are a budget's counters.
type Stats struct {
	Total, Used    int64
	Waits, Refused int64
}

// Stats returns the budget's counters; zero for a nil budget.
func (b *Budget) Stats() Stats {
	if b == nil {
		return Stats{}
	}
	return Stats{Total: b.opts.Total, Used: b.used.Load(), Waits: b.waits.Load(), Refused: b.refused.Load()}
}

// IsExhausted reports whether err is a refusal of this package.
func IsExhausted(err error) bool { return errors.Is(err, ErrExhausted) }
