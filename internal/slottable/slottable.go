package slottable

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
)

// Table is the slot table of a ring of n slots numbered first, …,
// first+n-1. See the package documentation for its promises.
type Table struct {
	name     string // prefixes the table's errors
	first, n int
	free     chan int      // local indices of free slots; capacity n
	waiters  atomic.Int32  // Acquires blocked on free
	done     chan struct{} // closed by Close

	mu struct {
		sync.Mutex
		gen    []uint64 // current generation per slot (0: never handed out)
		held   []bool
		closed bool
	}
}

// New is a table of n slots (n ≥ 1) numbered from first (≥ 0), all free.
// Its errors start with name ("slots", "gpu: device ring").
func New(name string, first, n int) *Table {
	if n < 1 || first < 0 {
		panic(fmt.Sprintf("slottable: New(%q, %d, %d): a table has 1 or more slots numbered from 0 or more", name, first, n))
	}
	t := &Table{name: name, first: first, n: n, free: make(chan int, n), done: make(chan struct{})}
	t.mu.gen = make([]uint64, n)
	t.mu.held = make([]bool, n)
	for i := range n {
		t.free <- i
	}
	return t
}

// First is the index of the table's first slot.
func (t *Table) First() int { return t.first }

// Len is the number of slots.
func (t *Table) Len() int { return t.n }

// Contains says whether index names one of the table's slots.
func (t *Table) Contains(index int) bool { return index >= t.first && index < t.first+t.n }

// Acquire hands out a free slot, its index and generation, waiting while
// all are held. It fails with ctx's error (its cause) when ctx ends first
// and with ErrClosed when the table is (or gets) closed.
func (t *Table) Acquire(ctx context.Context) (index int, gen uint64, err error) {
	select {
	case <-t.done:
		return 0, 0, t.closedErr()
	default:
	}
	var i int
	select {
	case i = <-t.free:
	default:
		t.waiters.Add(1)
		select {
		case <-ctx.Done():
			t.waiters.Add(-1)
			return 0, 0, context.Cause(ctx)
		case <-t.done:
			t.waiters.Add(-1)
			return 0, 0, t.closedErr()
		case i = <-t.free:
			t.waiters.Add(-1)
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.mu.closed {
		return 0, 0, t.closedErr()
	}
	t.mu.gen[i]++
	t.mu.held[i] = true
	return t.first + i, t.mu.gen[i], nil
}

// Release frees the slot index held under generation gen, so that Acquire
// may hand it out again. It refuses (and changes nothing) a closed table
// (ErrClosed), an index outside the table (ErrUnknownSlot), a generation
// other than the slot's current one (ErrStaleGeneration) and a slot that
// is not held (ErrNotHeld).
func (t *Table) Release(index int, gen uint64) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.checkLocked(index, gen); err != nil {
		return err
	}
	t.releaseLocked(index - t.first)
	return nil
}

// Check says whether (index, gen) is a hand-out held now, with Release's
// errors when it is not.
func (t *Table) Check(index int, gen uint64) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.checkLocked(index, gen)
}

func (t *Table) checkLocked(index int, gen uint64) error {
	if t.mu.closed {
		return t.closedErr()
	}
	if !t.Contains(index) {
		return fmt.Errorf("%s: %w: %d; the ring has slots %d to %d", t.name, ErrUnknownSlot, index, t.first, t.first+t.n-1)
	}
	i := index - t.first
	switch {
	case gen != t.mu.gen[i]:
		return fmt.Errorf("%s: %w: slot %d is at generation %d, not %d", t.name, ErrStaleGeneration, index, t.mu.gen[i], gen)
	case !t.mu.held[i]:
		return fmt.Errorf("%s: %w: slot %d generation %d was released already", t.name, ErrNotHeld, index, gen)
	}
	return nil
}

func (t *Table) closedErr() error { return fmt.Errorf("%s: %w", t.name, ErrClosed) }

// ReleaseAll frees every held slot (the client that held them is gone) and
// returns how many it freed. Releases of those hand-outs are then refused.
func (t *Table) ReleaseAll() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.mu.closed {
		return 0
	}
	n := 0
	for i, held := range t.mu.held {
		if held {
			t.releaseLocked(i)
			n++
		}
	}
	return n
}

func (t *Table) releaseLocked(i int) {
	t.mu.held[i] = false
	t.free <- i // never blocks: at most n indices are ever free
}

// Held is the number of slots held now.
func (t *Table) Held() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, h := range t.mu.held {
		if h {
			n++
		}
	}
	return n
}

// Waiting is the number of Acquires blocked now, waiting for a release
// (for tests and metrics).
func (t *Table) Waiting() int { return int(t.waiters.Load()) }

// Close closes the table: blocked and later Acquires fail with ErrClosed,
// as do releases. It reports whether this call closed it (false: it was
// closed already), so that the ring frees its memory once.
func (t *Table) Close() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.mu.closed {
		return false
	}
	t.mu.closed = true
	close(t.done)
	return true
}
