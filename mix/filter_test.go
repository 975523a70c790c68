package mix

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestFilteredComponent: a filtered component draws only its matching
// rows, each once per epoch, with the recipe's exact shares; the run id
// covers the filter; W = 1 and W = 4 see the same batches; a fresh engine
// resumes mid-run with the same samples.
func TestFilteredComponent(t *testing.T) {
	t.Parallel()
	en := newEnv(t, newFS(t), envOpts{rowGroupRows: 100})
	twoTables(en, "p", 941, 2100)
	ctx := context.Background()
	// b's rows with id in [1000, 1300) or id % 3 = 0 below 200 (ok is
	// id % 3 = 0): 300 + 67 matches, two clusters of row groups.
	const filt = "(id >= 1000 AND id < 1300) OR (ok AND id < 200)"
	match := func(id int64) bool { return id >= 1000 && id < 1300 || id%3 == 0 && id < 200 }
	r := recipe("p", 7, 20, 0.5, 0.5)
	r.Components[1].Filter = filt
	run, err := en.e.Resolve(ctx, r)
	require.NoError(t, err)
	rec := run.Record()
	c := rec.Components[1]
	require.Equal(t, "id >= 1000 AND id < 1300 OR ok AND id < 200", c.Filter) // canonical: minimal parentheses
	require.Equal(t, int64(367), c.Matches)
	require.Equal(t, int64(2100), c.Rows)
	var sum int64
	for _, n := range c.MatchBlocks {
		require.Positive(t, n)
		sum += n
	}
	require.Equal(t, c.Matches, sum)

	// The filter is part of the run id.
	plain, err := en.e.Prepare(ctx, recipe("p", 7, 20, 0.5, 0.5))
	require.NoError(t, err)
	require.NotEqual(t, plain.ID(), run.ID())
	r2 := recipe("p", 7, 20, 0.5, 0.5)
	r2.Components[1].Filter = "(id>=1000 and id<1300) or (ok and id<200)" // same canonical text
	same, err := en.e.Prepare(ctx, r2)
	require.NoError(t, err)
	require.Equal(t, run.ID(), same.ID())

	steps, w1 := collect(t, en.e.Steps(ctx, run, 0, 1, 0, 0))
	require.Len(t, steps, int(run.Steps()))
	seen := map[int64]int{}
	for s, batch := range w1 {
		counts := [2]int{}
		for _, smp := range batch {
			counts[smp.comp]++
			if smp.comp == 1 {
				require.True(t, match(smp.row), "step %d: row %d does not match", s, smp.row)
				seen[smp.row]++
			}
		}
		require.Equal(t, [2]int{10, 10}, counts, "step %d", s)
	}
	// Every matching row is drawn; none twice within the first 36 steps
	// (360 draws of b, less than an epoch of 367).
	require.Len(t, seen, 367)
	first := map[int64]bool{}
	for _, batch := range w1[:36] {
		for _, smp := range batch {
			if smp.comp == 1 {
				require.False(t, first[smp.row], "row %d twice in the first epoch", smp.row)
				first[smp.row] = true
			}
		}
	}

	for r := range 4 {
		_, got := collect(t, en.e.Steps(ctx, run, r, 4, 0, 0))
		for s := range got {
			for i, smp := range got[s] {
				require.Equal(t, w1[s][r+i*4], smp, "W=4 rank %d step %d", r, s)
			}
		}
	}
	fresh := en.engine(nil)
	loaded, err := fresh.Load(ctx, run.ID(), "")
	require.NoError(t, err)
	steps, got := collect(t, fresh.Steps(ctx, loaded, 1, 2, 5, 9))
	require.Equal(t, []int64{5, 6, 7, 8}, steps)
	for i, s := range steps {
		for k, smp := range got[i] {
			require.Equal(t, w1[s][1+k*2], smp)
		}
	}

	// A filter that matches nothing, and a bad one.
	bad := recipe("p", 7, 20, 0.5, 0.5)
	bad.Components[0].Filter = "id < 0"
	_, err = en.e.Prepare(ctx, bad)
	require.ErrorIs(t, err, ErrEmptyComponent)
	require.ErrorContains(t, err, "component 0")
	bad.Components[0].Filter = "id <"
	_, err = en.e.Prepare(ctx, bad)
	require.ErrorContains(t, err, "at byte 4: expected a literal")
}
