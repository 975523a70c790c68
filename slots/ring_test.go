package slots

import (
	"context"
	"errors"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftdata/weft/errdefs"
	"github.com/weftdata/weft/internal/membudget"
)

func newRing(t *testing.T, slots int, slotBytes int64) *Ring {
	t.Helper()
	r, err := NewRing(context.Background(), Options{Dir: shmDir(t), Slots: slots, SlotBytes: slotBytes})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, r.Close()) })
	return r
}

// waitForWaiters yields until n Acquires are blocked on the ring.
func waitForWaiters(r *Ring, n int32) {
	for r.Waiting() != int(n) {
		runtime.Gosched()
	}
}

func TestOptionsValidate(t *testing.T) {
	t.Parallel()
	require.NoError(t, DefaultOptions().Validate())
	for _, tc := range []struct {
		name string
		opts Options
	}{
		{"no slots", Options{Slots: 0, SlotBytes: 64}},
		{"negative slots", Options{Slots: -1, SlotBytes: 64}},
		{"zero bytes", Options{Slots: 1, SlotBytes: 0}},
		{"unaligned bytes", Options{Slots: 1, SlotBytes: 100}},
		{"64-byte aligned, not a whole page", Options{Slots: 2, SlotBytes: 4096 + 64}},
		{"less than a page", Options{Slots: 2, SlotBytes: 1024}},
		{"overflow", Options{Slots: 1 << 40, SlotBytes: 1 << 30}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.opts.Validate()
			require.ErrorIs(t, err, ErrInvalidOptions)
			require.ErrorIs(t, err, errdefs.ErrInvalidArgument)
		})
	}
}

func TestNewRingFile(t *testing.T) {
	t.Parallel()
	budget, err := membudget.New(membudget.Options{Total: 1 << 20})
	require.NoError(t, err)
	r, err := NewRing(context.Background(), Options{Dir: shmDir(t), Slots: 4, SlotBytes: 64 << 10, Budget: budget})
	require.NoError(t, err)
	require.Equal(t, int64(4*64<<10), budget.Stats().Used, "the ring leases its bytes")

	fi, err := os.Stat(r.Path())
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "only the server's user may open the ring")
	require.True(t, fi.Mode().IsRegular())
	require.Equal(t, int64(4*64<<10), fi.Size())

	require.NoError(t, r.Close())
	_, err = os.Stat(r.Path())
	require.ErrorIs(t, err, os.ErrNotExist, "Close unlinks the ring's file")
	require.Zero(t, budget.Stats().Used, "Close returns the bytes to the budget")
	require.NoError(t, r.Close(), "Close is idempotent")
	require.Zero(t, budget.Stats().Used)
}

func TestNewRingRefused(t *testing.T) {
	t.Parallel()
	t.Run("budget too small", func(t *testing.T) {
		dir := t.TempDir()
		budget, err := membudget.New(membudget.Options{Total: 1000})
		require.NoError(t, err)
		_, err = NewRing(context.Background(), Options{Dir: dir, Slots: 2, SlotBytes: SlotAlign, Budget: budget})
		require.ErrorIs(t, err, errdefs.ErrResourceExhausted)
		left, _ := os.ReadDir(dir)
		require.Empty(t, left, "a refused ring leaves no file")
	})
	t.Run("no such dir", func(t *testing.T) {
		_, err := NewRing(context.Background(), Options{Dir: t.TempDir() + "/missing", Slots: 1, SlotBytes: SlotAlign})
		require.ErrorIs(t, err, ErrNoSharedMemory)
		require.ErrorIs(t, err, errdefs.ErrUnavailable)
	})
	t.Run("bad options", func(t *testing.T) {
		dir := t.TempDir()
		_, err := NewRing(context.Background(), Options{Dir: dir, Slots: 1, SlotBytes: 65})
		require.ErrorIs(t, err, errdefs.ErrInvalidArgument)
		left, _ := os.ReadDir(dir)
		require.Empty(t, left)
	})
}

func TestAcquireWaitsForRelease(t *testing.T) {
	t.Parallel()
	r := newRing(t, 1, SlotAlign)
	held, err := r.Acquire(context.Background())
	require.NoError(t, err)
	require.Equal(t, 0, held.Index())
	require.Equal(t, uint64(1), held.Generation())
	held.Bytes()[0] = 42

	type result struct {
		s   *Slot
		err error
	}
	got := make(chan result, 1)
	go func() {
		s, err := r.Acquire(context.Background())
		got <- result{s, err}
	}()
	waitForWaiters(r, 1)
	select {
	case res := <-got:
		t.Fatalf("Acquire handed out a held slot: %+v", res)
	default:
	}
	require.Equal(t, byte(42), held.Bytes()[0], "the held slot is untouched")

	require.NoError(t, held.Release())
	res := <-got
	require.NoError(t, res.err)
	require.Equal(t, 0, res.s.Index())
	require.Equal(t, uint64(2), res.s.Generation(), "a reuse has a new generation")
	require.NoError(t, res.s.Release())
}

func TestAcquireEnds(t *testing.T) {
	t.Parallel()
	t.Run("ctx canceled", func(t *testing.T) {
		r := newRing(t, 1, SlotAlign)
		_, err := r.Acquire(context.Background())
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error, 1)
		go func() {
			_, err := r.Acquire(ctx)
			errc <- err
		}()
		waitForWaiters(r, 1)
		cancel()
		require.ErrorIs(t, <-errc, context.Canceled)
		require.Zero(t, r.Waiting())
	})
	t.Run("ring closed", func(t *testing.T) {
		r, err := NewRing(context.Background(), Options{Dir: shmDir(t), Slots: 1, SlotBytes: SlotAlign})
		require.NoError(t, err)
		_, err = r.Acquire(context.Background())
		require.NoError(t, err)
		errc := make(chan error, 1)
		go func() {
			_, err := r.Acquire(context.Background())
			errc <- err
		}()
		waitForWaiters(r, 1)
		require.NoError(t, r.Close())
		require.ErrorIs(t, <-errc, ErrClosed)
		_, err = r.Acquire(context.Background())
		require.ErrorIs(t, err, ErrClosed)
		require.ErrorIs(t, r.Release(0, 1), ErrClosed)
		require.Zero(t, r.ReleaseAll())
	})
}

func TestRelease(t *testing.T) {
	t.Parallel()
	r := newRing(t, 2, SlotAlign)
	ctx := context.Background()
	a, err := r.Acquire(ctx)
	require.NoError(t, err)
	require.NoError(t, a.Release())
	b, err := r.Acquire(ctx) // the other slot, generation 1
	require.NoError(t, err)
	a2, err := r.Acquire(ctx) // a's slot again, generation 2
	require.NoError(t, err)
	require.Equal(t, a.Index(), a2.Index())
	require.NotEqual(t, a.Index(), b.Index())
	require.Equal(t, uint64(2), a2.Generation())

	for _, tc := range []struct {
		name       string
		index      int
		gen        uint64
		want, kind error
	}{
		{"negative index", -1, 1, ErrUnknownSlot, errdefs.ErrInvalidArgument},
		{"index past the end", 2, 1, ErrUnknownSlot, errdefs.ErrInvalidArgument},
		{"stale generation", a.Index(), 1, ErrStaleGeneration, errdefs.ErrFailedPrecondition},
		{"future generation", a.Index(), 3, ErrStaleGeneration, errdefs.ErrFailedPrecondition},
		{"generation zero", b.Index(), 0, ErrStaleGeneration, errdefs.ErrFailedPrecondition},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := r.Release(tc.index, tc.gen)
			require.ErrorIs(t, err, tc.want)
			require.ErrorIs(t, err, tc.kind)
			require.Equal(t, 2, r.Held(), "a refused release changes nothing")
		})
	}
	require.NoError(t, r.Release(a2.Index(), a2.Generation()))
	err = r.Release(a2.Index(), a2.Generation())
	require.ErrorIs(t, err, ErrNotHeld, "double release")
	require.ErrorIs(t, err, errdefs.ErrFailedPrecondition)
	require.Equal(t, 1, r.Held())
	require.NoError(t, b.Release())
	require.Zero(t, r.Held())
}

func TestReleaseAll(t *testing.T) {
	t.Parallel()
	r := newRing(t, 3, SlotAlign)
	ctx := context.Background()
	var held []*Slot
	for range 3 {
		s, err := r.Acquire(ctx)
		require.NoError(t, err)
		held = append(held, s)
	}
	got := make(chan *Slot, 1)
	go func() {
		s, _ := r.Acquire(ctx)
		got <- s
	}()
	waitForWaiters(r, 1)
	require.Equal(t, 3, r.ReleaseAll(), "the client went away")
	woken := <-got
	require.NotNil(t, woken)
	require.Equal(t, uint64(2), woken.Generation())
	require.Equal(t, 1, r.Held())
	for _, s := range held {
		if s.Index() == woken.Index() {
			require.ErrorIs(t, s.Release(), ErrStaleGeneration)
		} else {
			require.ErrorIs(t, s.Release(), ErrNotHeld)
		}
	}
	require.Equal(t, 1, r.ReleaseAll())
	require.Zero(t, r.ReleaseAll())
	require.Zero(t, r.Held())
}

// TestNeverSharedConcurrently has goroutines acquire, own, check and
// release slots many times; a slot handed to two holders at once, or a
// holder's bytes changed by another, fails it (run with -race).
func TestNeverSharedConcurrently(t *testing.T) {
	t.Parallel()
	const slots, workers, rounds = 3, 8, 300
	r := newRing(t, slots, SlotAlign)
	var inUse [slots]atomic.Int32
	var wg sync.WaitGroup
	errc := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			for i := range rounds {
				s, err := r.Acquire(context.Background())
				if err != nil {
					errc <- err
					return
				}
				if !inUse[s.Index()].CompareAndSwap(0, 1) {
					errc <- errors.New("slot handed out twice")
					return
				}
				mark := byte(w*rounds + i)
				for j := range s.Bytes() {
					s.Bytes()[j] = mark
				}
				runtime.Gosched()
				for j := range s.Bytes() {
					if s.Bytes()[j] != mark {
						errc <- errors.New("a held slot's bytes changed")
						return
					}
				}
				inUse[s.Index()].Store(0)
				if err := s.Release(); err != nil {
					errc <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		require.NoError(t, err)
	}
	require.Zero(t, r.Held())
}
