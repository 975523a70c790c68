package cache

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// value is a cached thing that knows whether it was released.
type value struct {
	id       int
	released atomic.Int32
}

// tracker records release callbacks.
type tracker struct {
	mu       sync.Mutex
	released []int
}

func (tr *tracker) release(k int, v *value) {
	if v.released.Add(1) != 1 {
		panic(fmt.Sprintf("value %d released twice", k))
	}
	tr.mu.Lock()
	tr.released = append(tr.released, k)
	tr.mu.Unlock()
}

func (tr *tracker) count() int {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return len(tr.released)
}

func loadOf(id int, size int64) Loader[*value] {
	return func(context.Context) (*value, int64, error) { return &value{id: id}, size, nil }
}

func TestSingleFlight(t *testing.T) {
	t.Parallel()
	tr := &tracker{}
	c := New[int, *value](1<<20, tr.release)
	defer c.Purge()
	var loads atomic.Int64
	gate := make(chan struct{})
	load := func(ctx context.Context) (*value, int64, error) {
		loads.Add(1)
		select {
		case <-gate:
		case <-ctx.Done():
			return nil, 0, ctx.Err()
		}
		return &value{id: 1}, 10, nil
	}
	// Eight callers, one load; one caller gives up, the others still get
	// the value.
	var wg sync.WaitGroup
	got := make(chan *Handle[int, *value], 8)
	quitter, quit := context.WithCancel(context.Background())
	for i := range 8 {
		ctx := context.Background()
		if i == 0 {
			ctx = quitter
		}
		wg.Go(func() {
			h, err := c.Get(ctx, 1, load)
			if i == 0 {
				require.ErrorIs(t, err, context.Canceled)
				return
			}
			require.NoError(t, err)
			got <- h
		})
	}
	require.Eventually(t, func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.mu.flights[1] != nil && c.mu.flights[1].waiters == 8
	}, 5*time.Second, time.Millisecond)
	quit()
	require.Eventually(t, func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.mu.flights[1].waiters == 7
	}, 5*time.Second, time.Millisecond)
	close(gate)
	wg.Wait()
	close(got)
	n := 0
	for h := range got {
		require.Equal(t, 1, h.Value().id)
		h.Release()
		n++
	}
	require.Equal(t, 7, n)
	require.EqualValues(t, 1, loads.Load())
	st := c.Stats()
	require.EqualValues(t, 1, st.Loads)
	require.EqualValues(t, 1, st.Misses)
	require.EqualValues(t, 7, st.Joins)
	require.Zero(t, tr.count(), "a cached value is not released")
	h := c.Peek(1)
	require.NotNil(t, h)
	h.Release()

	// When every caller gives up, the load is cancelled, and the next
	// caller starts a new one.
	slow := func(ctx context.Context) (*value, int64, error) {
		<-ctx.Done() // never returns a value: only cancellation ends it
		return nil, 0, ctx.Err()
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for {
			c.mu.Lock()
			started := c.mu.flights[2] != nil
			c.mu.Unlock()
			if started {
				cancel()
				return
			}
			time.Sleep(time.Millisecond)
		}
	}()
	_, err := c.Get(ctx, 2, slow)
	require.ErrorIs(t, err, context.Canceled)
	h, err = c.Get(context.Background(), 2, loadOf(2, 3))
	require.NoError(t, err)
	require.Equal(t, 2, h.Value().id)
	h.Release()

	// A failed load reaches its callers and is not cached.
	boom := errors.New("boom")
	_, err = c.Get(context.Background(), 3, func(context.Context) (*value, int64, error) { return nil, 0, boom })
	require.ErrorIs(t, err, boom)
	require.Nil(t, c.Peek(3))
}

// TestEvictionPinsRelease: LRU eviction by bytes; a pinned value outlives
// its eviction and is released when its last handle goes; a value larger
// than the cache is served, never kept, and released after use.
func TestEvictionPinsRelease(t *testing.T) {
	t.Parallel()
	tr := &tracker{}
	c := New[int, *value](35, tr.release)
	ctx := context.Background()
	var held *Handle[int, *value]
	for i := range 10 {
		h, err := c.Get(ctx, i, loadOf(i, 10))
		require.NoError(t, err)
		require.LessOrEqual(t, c.Stats().Bytes, int64(35))
		if i == 5 {
			held = h
			continue
		}
		h.Release()
	}
	st := c.Stats()
	require.Equal(t, 3, st.Entries)
	require.EqualValues(t, 30, st.Bytes)
	require.EqualValues(t, 7, st.Evictions)
	require.Equal(t, 6, tr.count(), "evicted and unpinned: released")
	require.Zero(t, held.Value().released.Load(), "pinned: still valid")
	held.Release()
	require.Equal(t, 7, tr.count())
	require.Panics(t, held.Release)

	// Touching 7 makes 8 the least recently used.
	h := c.Peek(7)
	require.NotNil(t, h)
	h.Release()
	h, err := c.Get(ctx, 10, loadOf(10, 10))
	require.NoError(t, err)
	h.Release()
	require.Nil(t, c.Peek(8))
	for _, k := range []int{7, 9, 10} {
		h := c.Peek(k)
		require.NotNil(t, h, "key %d", k)
		h.Release()
	}

	big, err := c.Get(ctx, 99, loadOf(99, 100))
	require.NoError(t, err)
	require.Nil(t, c.Peek(99))
	n := tr.count()
	big.Release()
	require.Equal(t, n+1, tr.count())

	// Shrink and SetCapacity evict least recently used entries first.
	require.EqualValues(t, 20, c.Shrink(10))
	require.Equal(t, 1, c.Stats().Entries)
	c.SetCapacity(0)
	require.Zero(t, c.Stats().Entries)
	require.Zero(t, c.Stats().Bytes)
	require.EqualValues(t, 0, c.Stats().Capacity)
	h, err = c.Get(ctx, 11, loadOf(11, 1))
	require.NoError(t, err)
	require.Nil(t, c.Peek(11), "capacity 0 keeps nothing")
	h.Release()
	c.SetCapacity(100)
	h, err = c.Get(ctx, 12, loadOf(12, 1))
	require.NoError(t, err)
	c.Purge()
	require.Zero(t, h.Value().released.Load(), "pinned through Purge")
	h.Release()
	require.Equal(t, 1, int(h.Value().released.Load()))
	require.Equal(t, 14, tr.count(), "every loaded value released once: %v", tr.released)
}

// TestConcurrent hammers a small cache from many goroutines (run it with
// -race): every handle sees its own key's value, alive, and every loaded
// value is released exactly once by the end.
func TestConcurrent(t *testing.T) {
	t.Parallel()
	tr := &tracker{}
	c := New[int, *value](50, tr.release)
	var loaded atomic.Int64
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			for range 2000 {
				k := rng.IntN(20)
				ctx := context.Background()
				var cancel context.CancelFunc = func() {}
				if rng.IntN(10) == 0 {
					ctx, cancel = context.WithCancel(ctx)
					cancel()
				}
				h, err := c.Get(ctx, k, func(context.Context) (*value, int64, error) {
					loaded.Add(1)
					return &value{id: k}, int64(1 + k%7), nil
				})
				cancel()
				if err != nil {
					require.ErrorIs(t, err, context.Canceled)
					continue
				}
				require.Equal(t, k, h.Value().id)
				require.Zero(t, h.Value().released.Load())
				if rng.IntN(50) == 0 {
					c.Shrink(int64(rng.IntN(50)))
				}
				h.Release()
			}
		})
	}
	wg.Wait()
	c.Purge()
	require.EqualValues(t, loaded.Load(), tr.count())
	st := c.Stats()
	require.Zero(t, st.Entries)
	require.EqualValues(t, loaded.Load(), st.Loads)
}

// TestPurgeCancelsLoads: Purge cancels the loads in flight
// and waits for them.
func TestPurgeCancelsLoads(t *testing.T) {
	t.Parallel()
	c := New[string, int](10, nil)
	started := make(chan struct{})
	errc := make(chan error, 1)
	go func() {
		_, err := c.Get(context.Background(), "k", func(ctx context.Context) (int, int64, error) {
			close(started)
			<-ctx.Done()
			return 0, 0, ctx.Err()
		})
		errc <- err
	}()
	<-started
	c.Purge()
	require.ErrorIs(t, <-errc, context.Canceled)
}

// TestLoadPanics: a loader that panics (on a damaged object) fails the
// Get with an error instead of ending the process, and the next Get of
// the key loads again.
func TestLoadPanics(t *testing.T) {
	t.Parallel()
	c := New[int, *value](1<<20, nil)
	defer c.Purge()
	_, err := c.Get(context.Background(), 1, func(context.Context) (*value, int64, error) { panic("bad object") })
	require.ErrorContains(t, err, "bad object")
	h, err := c.Get(context.Background(), 1, loadOf(1, 10))
	require.NoError(t, err)
	require.Equal(t, 1, h.Value().id)
	h.Release()
}
