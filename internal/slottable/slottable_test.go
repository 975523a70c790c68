package slottable_test

import (
	"context"
	"errors"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/weftdata/weft/errdefs"
	"github.com/weftdata/weft/internal/slottable"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func waitFor(t *slottable.Table, n int) {
	for t.Waiting() != n {
		runtime.Gosched()
	}
}

func TestTable(t *testing.T) {
	t.Parallel()
	for _, first := range []int{0, 5} {
		t.Run("first="+string(rune('0'+first)), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			tb := slottable.New("test", first, 2)
			require.Equal(t, first, tb.First())
			require.Equal(t, 2, tb.Len())
			i, g, err := tb.Acquire(ctx)
			require.NoError(t, err)
			require.True(t, tb.Contains(i))
			require.ErrorContains(t, tb.Release(first+2, 1), "test: unknown slot")
			require.Equal(t, uint64(1), g)
			j, _, err := tb.Acquire(ctx)
			require.NoError(t, err)
			require.NotEqual(t, i, j)
			require.ElementsMatch(t, []int{first, first + 1}, []int{i, j})
			require.Equal(t, 2, tb.Held())
			require.NoError(t, tb.Check(i, g))

			for _, tc := range []struct {
				name  string
				index int
				gen   uint64
				want  error
				kind  error
			}{
				{"unknown index above", first + 2, 1, slottable.ErrUnknownSlot, errdefs.ErrInvalidArgument},
				{"unknown index below", first - 1, 1, slottable.ErrUnknownSlot, errdefs.ErrInvalidArgument},
				{"stale generation", i, g + 1, slottable.ErrStaleGeneration, errdefs.ErrFailedPrecondition},
			} {
				err := tb.Release(tc.index, tc.gen)
				require.ErrorIs(t, err, tc.want, tc.name)
				require.ErrorIs(t, err, tc.kind, tc.name)
				require.Equal(t, 2, tb.Held(), "%s: a refused release changes nothing", tc.name)
			}
			require.NoError(t, tb.Release(i, g))
			require.ErrorIs(t, tb.Release(i, g), slottable.ErrNotHeld, "a double release")
			require.ErrorIs(t, tb.Check(i, g), slottable.ErrNotHeld)
			i2, g2, err := tb.Acquire(ctx)
			require.NoError(t, err)
			require.Equal(t, i, i2, "the one free slot")
			require.Equal(t, g+1, g2, "a new generation each hand-out")
			require.ErrorIs(t, tb.Release(i, g), slottable.ErrStaleGeneration, "a release of the earlier use")

			// all held: Acquire waits; a release wakes it; ctx ends it
			got := make(chan int, 1)
			go func() {
				k, _, err := tb.Acquire(ctx)
				if err != nil {
					k = -1
				}
				got <- k
			}()
			waitFor(tb, 1)
			require.NoError(t, tb.Release(j, 1))
			require.Equal(t, j, <-got)
			cctx, cancel := context.WithCancelCause(ctx)
			cause := errors.New("the trainer left")
			cancel(cause)
			_, _, err = tb.Acquire(cctx)
			require.ErrorIs(t, err, cause)

			// the client died: every slot comes back
			require.Equal(t, 2, tb.ReleaseAll())
			require.Zero(t, tb.Held())
			require.Zero(t, tb.ReleaseAll())

			// Close wakes a blocked Acquire and refuses everything after
			_, _, err = tb.Acquire(ctx)
			require.NoError(t, err)
			_, _, err = tb.Acquire(ctx)
			require.NoError(t, err)
			errc := make(chan error, 1)
			go func() {
				_, _, err := tb.Acquire(ctx)
				errc <- err
			}()
			waitFor(tb, 1)
			require.True(t, tb.Close())
			require.ErrorIs(t, <-errc, slottable.ErrClosed)
			require.False(t, tb.Close(), "Close is idempotent")
			_, _, err = tb.Acquire(ctx)
			require.ErrorIs(t, err, slottable.ErrClosed)
			require.ErrorIs(t, tb.Release(first, 1), slottable.ErrClosed)
			require.Zero(t, tb.ReleaseAll())
		})
	}
}

func TestNewPanicsOnNoSlots(t *testing.T) {
	t.Parallel()
	require.Panics(t, func() { slottable.New("test", 0, 0) })
	require.Panics(t, func() { slottable.New("test", -1, 1) })
}
