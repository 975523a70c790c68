package membudget_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftdata/weft/errdefs"
	"github.com/weftdata/weft/internal/membudget"
)

func newBudget(t *testing.T, total int64, wait time.Duration) *membudget.Budget {
	t.Helper()
	b, err := membudget.New(membudget.Options{Total: total, MaxWait: wait})
	require.NoError(t, err)
	return b
}

func TestAcquireRelease(t *testing.T) {
	t.Parallel()
	b := newBudget(t, 100, time.Second)
	l1, err := b.Acquire(context.Background(), 60, "a")
	require.NoError(t, err)
	_, ok := b.TryAcquire(50)
	require.False(t, ok, "60+50 > 100")
	l2, ok := b.TryAcquire(40)
	require.True(t, ok)
	require.Equal(t, int64(100), b.Stats().Used)
	l1.Release()
	l1.Release() // idempotent
	require.Equal(t, int64(40), b.Stats().Used)
	l2.Release()
	require.Equal(t, int64(0), b.Stats().Used)
}

func TestTooLargeIsRefusedAtOnce(t *testing.T) {
	t.Parallel()
	b := newBudget(t, 100, time.Hour)
	_, err := b.Acquire(context.Background(), 101, "a giant put")
	require.ErrorIs(t, err, membudget.ErrExhausted)
	require.ErrorIs(t, err, errdefs.ErrResourceExhausted)
	require.Contains(t, err.Error(), "a giant put")
	require.Equal(t, int64(1), b.Stats().Refused)
}

func TestWaitTimesOut(t *testing.T) {
	t.Parallel()
	b := newBudget(t, 100, 20*time.Millisecond)
	l, err := b.Acquire(context.Background(), 100, "first")
	require.NoError(t, err)
	defer l.Release()
	_, err = b.Acquire(context.Background(), 1, "second")
	require.ErrorIs(t, err, errdefs.ErrResourceExhausted)
	require.Equal(t, int64(1), b.Stats().Waits)
}

func TestWaitEndsWithContext(t *testing.T) {
	t.Parallel()
	b := newBudget(t, 100, time.Hour)
	l, err := b.Acquire(context.Background(), 100, "first")
	require.NoError(t, err)
	defer l.Release()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	_, err = b.Acquire(ctx, 1, "second")
	require.True(t, errors.Is(err, context.DeadlineExceeded), "%v", err)
}

func TestWaiterGetsReleasedBytes(t *testing.T) {
	t.Parallel()
	b := newBudget(t, 100, time.Minute)
	l, err := b.Acquire(context.Background(), 100, "first")
	require.NoError(t, err)
	got := make(chan error, 1)
	go func() {
		l2, err := b.Acquire(context.Background(), 30, "second")
		l2.Release()
		got <- err
	}()
	time.Sleep(10 * time.Millisecond)
	l.Release()
	require.NoError(t, <-got)
}

func TestReclaimerFreesRoom(t *testing.T) {
	t.Parallel()
	b := newBudget(t, 100, 0)
	var mu sync.Mutex
	held := []*membudget.Lease{}
	for range 10 {
		l, ok := b.TryAcquire(10)
		require.True(t, ok)
		held = append(held, l)
	}
	b.OnPressure(func(need int64) {
		mu.Lock()
		defer mu.Unlock()
		for need > 0 && len(held) > 0 {
			need -= held[0].Bytes()
			held[0].Release()
			held = held[1:]
		}
	})
	l, err := b.Acquire(context.Background(), 25, "new stream")
	require.NoError(t, err, "the reclaimer frees 30 bytes, no wait needed")
	require.Len(t, held, 7)
	require.Equal(t, int64(95), b.Stats().Used)
	l.Release()
}

func TestNilBudgetIsUnlimited(t *testing.T) {
	t.Parallel()
	var b *membudget.Budget
	l, err := b.Acquire(context.Background(), 1<<60, "x")
	require.NoError(t, err)
	l.Release()
	_, ok := b.TryAcquire(1 << 60)
	require.True(t, ok)
	b.OnPressure(func(int64) {})
	require.Equal(t, membudget.Stats{}, b.Stats())
}

func TestConcurrentNeverOverspends(t *testing.T) {
	t.Parallel()
	b := newBudget(t, 1000, time.Minute)
	var wg sync.WaitGroup
	var peak, cur int64
	var mu sync.Mutex
	for i := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 200 {
				n := int64(1 + (i*7+j*13)%300)
				l, err := b.Acquire(context.Background(), n, "w")
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				cur += n
				peak = max(peak, cur)
				mu.Unlock()
				mu.Lock()
				cur -= n
				mu.Unlock()
				l.Release()
			}
		}()
	}
	wg.Wait()
	require.LessOrEqual(t, peak, int64(1000))
	require.Equal(t, int64(0), b.Stats().Used)
}

// waitFor returns once b counts n waits (no timing asserted).
func waitFor(b *membudget.Budget, n int64) {
	for b.Stats().Waits < n {
		time.Sleep(time.Millisecond)
	}
}

// TestGrowIsServedBeforeNewWork: Grow (work already running) takes free
// bytes although an Acquire waits, and when it must wait it is served
// before Acquires that waited first; an Acquire is served once no Grow
// waits, first come, first served.
func TestGrowIsServedBeforeNewWork(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("free bytes", func(t *testing.T) {
		b := newBudget(t, 100, time.Minute)
		held, err := b.Acquire(ctx, 60, "running")
		require.NoError(t, err)
		got := make(chan error, 1)
		go func() {
			l, err := b.Acquire(ctx, 50, "new")
			l.Release()
			got <- err
		}()
		waitFor(b, 1)
		_, ok := b.TryAcquire(10)
		require.False(t, ok, "an Acquire waits")
		g, ok := b.TryGrow(10)
		require.True(t, ok, "free bytes, an Acquire waiting")
		g2, err := b.Grow(ctx, 30, "running")
		require.NoError(t, err, "free bytes, an Acquire waiting")
		require.Equal(t, int64(100), b.Stats().Used)
		g.Release()
		g2.Release()
		held.Release()
		require.NoError(t, <-got)
		require.Zero(t, b.Stats().Used)
	})
	t.Run("waiting", func(t *testing.T) {
		b := newBudget(t, 100, time.Minute)
		held, err := b.Acquire(ctx, 100, "running")
		require.NoError(t, err)
		order := make(chan string, 2)
		go func() {
			l, err := b.Acquire(ctx, 40, "new")
			require.NoError(t, err)
			order <- "acquire"
			l.Release()
		}()
		waitFor(b, 1)
		grown := make(chan *membudget.Lease, 1)
		go func() {
			l, err := b.Grow(ctx, 80, "running")
			require.NoError(t, err)
			order <- "grow"
			grown <- l
		}()
		waitFor(b, 2)
		held.Release() // 100 free: the Grow's 80 first, then the Acquire's 40 does not fit
		require.Equal(t, "grow", <-order)
		(<-grown).Release()
		require.Equal(t, "acquire", <-order)
	})
	t.Run("a Grow gives up", func(t *testing.T) {
		b := newBudget(t, 100, 20*time.Millisecond)
		held, err := b.Acquire(ctx, 70, "running")
		require.NoError(t, err)
		defer held.Release()
		_, err = b.Grow(ctx, 50, "running")
		require.ErrorIs(t, err, membudget.ErrExhausted)
		l, err := b.Acquire(ctx, 30, "new")
		require.NoError(t, err)
		l.Release()
	})
}

func TestConcurrentGrowNeverOverspends(t *testing.T) {
	t.Parallel()
	b := newBudget(t, 1000, time.Minute)
	var wg sync.WaitGroup
	var peak atomic.Int64
	for i := range 16 {
		wg.Go(func() {
			for j := range 200 {
				n := int64(1 + (i*7+j*13)%300)
				acquire := b.Acquire
				if (i+j)%2 == 0 {
					acquire = b.Grow
				}
				l, err := acquire(context.Background(), n, "w")
				if err != nil {
					t.Error(err)
					return
				}
				for u := b.Stats().Used; u > peak.Load(); u = b.Stats().Used {
					peak.CompareAndSwap(peak.Load(), u)
				}
				l.Release()
			}
		})
	}
	wg.Wait()
	require.LessOrEqual(t, peak.Load(), int64(1000))
	require.Positive(t, peak.Load())
	require.Zero(t, b.Stats().Used)
}
