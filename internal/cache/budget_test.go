package cache

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftdata/weft/internal/membudget"
)

// TestBudget: resident entries lease their bytes; a short budget evicts
// the cache's own LRU first; what cannot fit is served but not kept; the
// budget's pressure makes the cache give bytes back; releasing returns
// every lease.
func TestBudget(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b, err := membudget.New(membudget.Options{Total: 100, MaxWait: time.Millisecond})
	require.NoError(t, err)
	tr := &tracker{}
	c := New[int, *value](1000, tr.release) // capacity above the budget: the budget binds
	c.UseBudget(b)

	get := func(k int, size int64) {
		h, err := c.Get(ctx, k, loadOf(k, size))
		require.NoError(t, err)
		h.Release()
	}
	t.Run("leases", func(t *testing.T) {
		get(1, 40)
		get(2, 40)
		require.EqualValues(t, 80, b.Stats().Used)
		require.EqualValues(t, 80, c.Stats().Bytes)
	})
	t.Run("evicts its own LRU when short", func(t *testing.T) {
		get(3, 40) // needs 40 of 20 free: evicts 1
		require.EqualValues(t, 80, b.Stats().Used)
		require.Nil(t, c.Peek(1))
		h := c.Peek(3)
		require.NotNil(t, h)
		h.Release()
	})
	t.Run("too big for the budget is served, not kept", func(t *testing.T) {
		h, err := c.Get(ctx, 9, loadOf(9, 150))
		require.NoError(t, err)
		require.EqualValues(t, 150, h.Size())
		h.Release()
		require.Nil(t, c.Peek(9))
		require.LessOrEqual(t, b.Stats().Used, int64(100))
	})
	t.Run("pressure shrinks the cache", func(t *testing.T) {
		get(4, 40)
		used := b.Stats().Used
		require.EqualValues(t, 80, used)
		l, err := b.Acquire(ctx, 60, "test")
		require.NoError(t, err) // reclaimed from the cache
		require.LessOrEqual(t, c.Stats().Bytes, int64(40))
		l.Release()
	})
	t.Run("pinned entries keep their lease until released", func(t *testing.T) {
		h, err := c.Get(ctx, 5, loadOf(5, 30))
		require.NoError(t, err)
		c.Shrink(0)
		require.EqualValues(t, 30, b.Stats().Used)
		h.Release()
		require.EqualValues(t, 0, b.Stats().Used)
	})
	c.Purge()
	require.EqualValues(t, 0, b.Stats().Used)
}
