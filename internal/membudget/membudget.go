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
// Work already running that needs more as it goes (a block read whose
// pages and arrays grow) asks with Grow: it takes free bytes ahead of new
// work waiting in Acquire, and waits ahead of it. New work waits first
// for what running work frees; running work never waits for bytes that
// are free because new work queued before it (Acquire is first come,
// first served: had growth queued behind it, a read holding a lease would
// wait for new work, which waits for that read to finish).
//
// A nil *Budget is unlimited: every call succeeds and leases are no-ops, so
// parts built without a budget (tests, tools) need no special case.
package membudget

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

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
	used atomic.Int64 // mu.used, for Stats

	waits   atomic.Int64
	refused atomic.Int64

	mu struct {
		sync.Mutex
		reclaimers []func(need int64)
		used       int64
		// waiters wait for bytes: those of Grow first, in order, then
		// those of Acquire, in order.
		waiters list.List // of *waiter
	}
}

// waiter is a call waiting for n bytes; ready is closed when they are
// its.
type waiter struct {
	n     int64
	grow  bool
	ready chan struct{}
}

// New returns a budget of opts.Total bytes.
func New(opts Options) (*Budget, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	return &Budget{opts: opts}, nil
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
	b := l.b
	b.mu.Lock()
	b.takeLocked(-l.n)
	b.notifyLocked()
	b.mu.Unlock()
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

// TryAcquire reserves n bytes if they are free now and no call waits
// for bytes, without reclaiming or waiting.
func (b *Budget) TryAcquire(n int64) (*Lease, bool) {
	return b.try(n, false)
}

// TryGrow is TryAcquire for work already running (see Grow): it takes
// free bytes even when calls wait.
func (b *Budget) TryGrow(n int64) (*Lease, bool) {
	return b.try(n, true)
}

func (b *Budget) try(n int64, grow bool) (*Lease, bool) {
	if b == nil || n <= 0 {
		return &Lease{}, true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.fitsLocked(n, grow) {
		return nil, false
	}
	b.takeLocked(n)
	return &Lease{b: b, n: n}, true
}

// fitsLocked says whether n bytes may be taken now: they are free, and
// no call waits that comes first (growth waits only for other growth,
// and takes what is free without waiting for it either).
func (b *Budget) fitsLocked(n int64, grow bool) bool {
	if b.opts.Total-b.mu.used < n {
		return false
	}
	return grow || b.mu.waiters.Len() == 0
}

func (b *Budget) takeLocked(n int64) {
	b.mu.used += n
	b.used.Store(b.mu.used)
}

// notifyLocked hands freed bytes to waiters: to every waiting Grow they
// suffice for, in order, then, once none waits, to Acquires in order
// while the first fits (first come, first served: a large one is not
// passed by smaller ones behind it).
func (b *Budget) notifyLocked() {
	for e := b.mu.waiters.Front(); e != nil; {
		w := e.Value.(*waiter)
		next := e.Next()
		if !w.grow {
			break
		}
		if b.opts.Total-b.mu.used >= w.n {
			b.takeLocked(w.n)
			b.mu.waiters.Remove(e)
			close(w.ready)
		}
		e = next
	}
	for e := b.mu.waiters.Front(); e != nil; e = b.mu.waiters.Front() {
		w := e.Value.(*waiter)
		if w.grow || b.opts.Total-b.mu.used < w.n {
			return
		}
		b.takeLocked(w.n)
		b.mu.waiters.Remove(e)
		close(w.ready)
	}
}

// Acquire reserves n bytes for what (named in the error), asking the
// reclaimers for room and then waiting up to MaxWait. It fails with
// ErrExhausted when n is more than the budget or the wait times out, and
// with ctx's error when ctx ends first.
func (b *Budget) Acquire(ctx context.Context, n int64, what string) (*Lease, error) {
	return b.acquire(ctx, n, what, false)
}

// Grow is Acquire for work already running that holds leases and needs
// more to finish (a read whose buffers grow): it takes free bytes even
// when Acquires wait, and when it must wait, it waits ahead of them.
func (b *Budget) Grow(ctx context.Context, n int64, what string) (*Lease, error) {
	return b.acquire(ctx, n, what, true)
}

func (b *Budget) acquire(ctx context.Context, n int64, what string, grow bool) (*Lease, error) {
	if b == nil || n <= 0 {
		return &Lease{}, nil
	}
	if n > b.opts.Total {
		b.refused.Add(1)
		return nil, fmt.Errorf("%w: %s needs %d bytes, more than the whole --memory-limit budget of %d bytes; make it smaller (fewer rows per batch or step)", ErrExhausted, what, n, b.opts.Total)
	}
	if l, ok := b.try(n, grow); ok {
		return l, nil
	}
	b.reclaim(n)
	b.mu.Lock()
	if err := ctx.Err(); err != nil {
		b.mu.Unlock()
		return nil, err
	}
	if b.fitsLocked(n, grow) {
		b.takeLocked(n)
		b.mu.Unlock()
		return &Lease{b: b, n: n}, nil
	}
	w := &waiter{n: n, grow: grow, ready: make(chan struct{})}
	var e *list.Element
	if grow {
		// After the other growers, before every Acquire.
		at := b.mu.waiters.Front()
		for at != nil && at.Value.(*waiter).grow {
			at = at.Next()
		}
		if at == nil {
			e = b.mu.waiters.PushBack(w)
		} else {
			e = b.mu.waiters.InsertBefore(w, at)
		}
	} else {
		e = b.mu.waiters.PushBack(w)
	}
	b.mu.Unlock()
	b.waits.Add(1)
	timer := time.NewTimer(b.opts.MaxWait)
	defer timer.Stop()
	select {
	case <-w.ready:
		return &Lease{b: b, n: n}, nil
	case <-ctx.Done():
	case <-timer.C:
	}
	b.mu.Lock()
	select {
	case <-w.ready:
		// Given the bytes as it gave up: they go back.
		b.takeLocked(-n)
	default:
		b.mu.waiters.Remove(e)
	}
	b.notifyLocked() // those behind it may fit now
	used := b.mu.used
	b.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	b.refused.Add(1)
	return nil, fmt.Errorf("%w: %s needs %d bytes; %d of %d are in use and none were freed within %v; retry later or lower the load", ErrExhausted, what, n, used, b.opts.Total, b.opts.MaxWait)
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
