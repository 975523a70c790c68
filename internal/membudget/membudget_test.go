package membudget_test

import (
	"context"
	"errors"
	"sync"
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
