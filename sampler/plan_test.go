package sampler

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestNewPlanValidation(t *testing.T) {
	t.Parallel()
	ok := func() Spec { return acceptanceSpec(64) }
	for _, tc := range []struct {
		name   string
		edit   func(*Spec)
		err    error
		substr string
	}{
		{"no components", func(s *Spec) { s.Components = nil }, ErrNoComponents, "no components"},
		{"zero weight", func(s *Spec) { s.Components[1].Weight = 0 }, ErrWeight, "component 1: weight 0"},
		{"negative weight", func(s *Spec) { s.Components[0].Weight = -0.5 }, ErrWeight, "weight -0.5"},
		{"NaN weight", func(s *Spec) { s.Components[0].Weight = math.NaN() }, ErrWeight, "NaN"},
		{"infinite weight", func(s *Spec) { s.Components[0].Weight = math.Inf(1) }, ErrWeight, "+Inf"},
		{"no rows", func(s *Spec) { s.Components[0].Rows = 0 }, ErrRows, "component 0: 0 rows"},
		{"negative rows", func(s *Spec) { s.Components[0].Rows = -3 }, ErrRows, "-3 rows"},
		{"empty block", func(s *Spec) { s.Components[1].Blocks[4] = 0 }, ErrBlocks, "block 4 has 0 rows"},
		{"blocks short", func(s *Spec) { s.Components[0].Blocks = []int64{9000} }, ErrBlocks, "sum to 9000, not its 9412"},
		{"blocks long", func(s *Spec) { s.Components[0].Blocks = []int64{9000, 9000} }, ErrBlocks, "past its 9412 rows"},
		{"B zero", func(s *Spec) { s.BatchSize = 0 }, ErrBatchSize, "batch size 0"},
		{"B negative", func(s *Spec) { s.BatchSize = -1 }, ErrBatchSize, "batch size -1"},
		{"B too large", func(s *Spec) { s.BatchSize = MaxBatchSize + 1 }, ErrBatchSize, "1048577"},
		{"negative buffer", func(s *Spec) { s.Shuffle.BufferRows = -1 }, ErrShuffle, "buffer_rows -1"},
		{"negative steps", func(s *Spec) { s.Steps = -1 }, ErrSteps, "steps -1"},
		{"too many steps", func(s *Spec) { s.Steps = math.MaxInt64 }, ErrTooLarge, "exceed 2^62"},
		{"too many rows", func(s *Spec) {
			s.Components[0].Rows, s.Components[0].Blocks = 1<<62, nil
			s.Components[1].Rows, s.Components[1].Blocks = 1<<62, nil
		}, ErrTooLarge, "exceed 2^62"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := ok()
			s.Components = slices.Clone(s.Components)
			s.Components[1].Blocks = slices.Clone(s.Components[1].Blocks)
			tc.edit(&s)
			p, err := NewPlan(s)
			require.Nil(t, p)
			require.ErrorIs(t, err, tc.err)
			require.ErrorIs(t, err, ErrInvalid)
			require.Contains(t, err.Error(), tc.substr)
		})
	}
	t.Run("largest batch", func(t *testing.T) {
		t.Parallel()
		s := ok()
		s.BatchSize = MaxBatchSize
		_, err := NewPlan(s)
		require.NoError(t, err)
	})
}

func TestStepAndRankErrors(t *testing.T) {
	t.Parallel()
	p := mustPlan(t, acceptanceSpec(64))
	require.Equal(t, int64(1413), p.Steps(), "⌈(9412+81006)/64⌉")
	for _, tc := range []struct {
		name         string
		step         int64
		rank, world  int
		err          error
		substr       string
		batchErrOnly bool
	}{
		{"negative step", -1, 0, 1, ErrStep, "step -1 is negative", false},
		{"step at the end", 1413, 0, 1, ErrStep, "step 1413 is beyond the run's 1413 steps", false},
		{"world zero", 0, 0, 0, ErrWorldSize, "world size 0 is less than 1", true},
		{"world not dividing B", 0, 0, 3, ErrWorldSize, "world size 3 does not divide the batch size 64", true},
		{"world larger than B", 0, 0, 128, ErrWorldSize, "does not divide", true},
		{"negative rank", 0, -1, 8, ErrRank, "rank -1 is not in 0..7", true},
		{"rank too large", 0, 8, 8, ErrRank, "rank 8 is not in 0..7", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := p.RankSlice(tc.step, tc.rank, tc.world, nil)
			require.ErrorIs(t, err, tc.err)
			require.ErrorIs(t, err, ErrInvalid)
			require.Contains(t, err.Error(), tc.substr)
			require.Empty(t, got)
			if !tc.batchErrOnly {
				_, err = p.Batch(tc.step, nil)
				require.ErrorIs(t, err, tc.err)
				require.Contains(t, err.Error(), tc.substr)
			}
		})
	}
	require.Nil(t, p.Counts(-1))
	require.Panics(t, func() { p.Draw(2, 0) })
	require.Panics(t, func() { p.Draw(0, -1) })
	require.Panics(t, func() { p.DrawRange(0, 1413) })
}

func TestSteps(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		rows  []int64
		b     int
		steps int64
		want  int64
	}{
		{[]int64{10}, 3, 0, 4},
		{[]int64{9}, 3, 0, 3},
		{[]int64{1}, 1 << 20, 0, 1},
		{[]int64{5, 6}, 11, 0, 1},
		{[]int64{5, 6}, 11, 1_000_000_000_000, 1_000_000_000_000},
	} {
		s := Spec{BatchSize: tc.b, Steps: tc.steps}
		for _, n := range tc.rows {
			s.Components = append(s.Components, Component{Weight: 1, Rows: n})
		}
		require.Equal(t, tc.want, mustPlan(t, s).Steps())
	}
}

// expectedBatch builds the batch at step from first principles: each
// component's draws in order, via Draw, placed by the step's positions.
func expectedBatch(p *Plan, step int64) []Sample {
	out := make([]Sample, p.BatchSize())
	pos := p.positions(step)
	var x uint64
	for i := range p.streams {
		lo, hi := p.DrawRange(i, step)
		rows := make([]int64, hi-lo)
		p.DrawRows(i, lo, rows)
		for _, row := range rows {
			out[pos.apply(x)] = Sample{Component: int32(i), Row: row}
			x++
		}
	}
	return out
}

// checkBatch checks the batch at step against the counts, the draws, and
// every rank slice for every divisor of B.
func checkBatch(t *testing.T, p *Plan, step int64, worlds []int) []Sample {
	t.Helper()
	batch, err := p.Batch(step, nil)
	require.NoError(t, err)
	require.Len(t, batch, p.BatchSize())
	require.Equal(t, expectedBatch(p, step), batch, "step %d", step)
	counts := make([]int, len(p.streams))
	for _, s := range batch {
		counts[s.Component]++
	}
	require.Equal(t, p.Counts(step), counts)
	var slice []Sample
	for _, w := range worlds {
		union := make([]Sample, 0, len(batch))
		for r := 0; r < w; r++ {
			slice, err = p.RankSlice(step, r, w, slice)
			require.NoError(t, err)
			require.Len(t, slice, p.BatchSize()/w)
			for j, s := range slice {
				if batch[r+j*w] != s {
					t.Fatalf("step %d world %d rank %d slot %d: %v, batch has %v", step, w, r, j, s, batch[r+j*w])
				}
			}
			union = append(union, slice...)
		}
		require.Equal(t, sortedSamples(batch), sortedSamples(union), "union of the rank slices")
	}
	return batch
}

// TestBatchProperty: random recipes; at early and far steps the batch is the
// component draws in the seeded order, matches Counts, and every world size
// that divides B slices it into ranks whose union is the batch. Batches
// reached by stepping through a run equal those computed cold on a fresh
// plan.
func TestBatchProperty(t *testing.T) {
	t.Parallel()
	recipes := 30
	if testing.Short() {
		recipes = 6
	}
	r := rand.New(rand.NewPCG(17, 18))
	for i := range recipes {
		spec := randomSpec(r)
		spec.Steps = maxDraws / int64(spec.BatchSize)
		far := r.Int64N(spec.Steps)
		t.Run(fmt.Sprintf("%d/n=%d/B=%d", i, len(spec.Components), spec.BatchSize), func(t *testing.T) {
			t.Parallel()
			checkBatchRecipe(t, spec, far)
		})
	}
}

func checkBatchRecipe(t *testing.T, spec Spec, far int64) {
	warm := mustPlan(t, spec)
	divs := divisors(spec.BatchSize)
	var stepped [][]Sample
	for s := int64(0); s < 40; s++ {
		b, err := warm.Batch(s, nil)
		require.NoError(t, err)
		stepped = append(stepped, b)
	}
	cold := mustPlan(t, spec)
	for _, s := range []int64{39, 0, 17} {
		require.Equal(t, stepped[s], checkBatch(t, cold, s, divs), "step %d: stepping vs seeking", s)
	}
	for _, s := range []int64{1_000_000_000_000, far, spec.Steps - 1} {
		checkBatch(t, cold, s, divs)
	}
	require.Equal(t, warm.RunID(), cold.RunID())
}

// TestRankSliceAllWorlds: every divisor of B, acceptance run.
func TestRankSliceAllWorlds(t *testing.T) {
	t.Parallel()
	for _, b := range []int{1, 64, 360, 4096} {
		p := mustPlan(t, acceptanceSpec(b))
		for _, s := range []int64{0, 1, p.Steps() - 1} {
			checkBatch(t, p, s, divisors(b))
		}
	}
}

// TestRankSliceUnbiased: over many steps, each rank of 8 sees component 0 in
// proportion to its share of the batch, with the spread of a random sample.
func TestRankSliceUnbiased(t *testing.T) {
	t.Parallel()
	spec := acceptanceSpec(64)
	spec.Steps = 1 << 40
	p := mustPlan(t, spec)
	const steps, world = 4000, 8
	seen := make([]int, world)
	var slice []Sample
	var err error
	for s := int64(0); s < steps; s++ {
		for r := range world {
			slice, err = p.RankSlice(s, r, world, slice)
			require.NoError(t, err)
			for _, x := range slice {
				if x.Component == 0 {
					seen[r]++
				}
			}
		}
	}
	// Component 0 has 19.2 of 64 slots; a rank's 8 slots hold a
	// hypergeometric count with mean 2.4 and variance 8·0.3·0.7·56/63.
	mean := 2.4 * steps
	sd := math.Sqrt(steps * 8 * 0.3 * 0.7 * 56 / 63)
	for r, n := range seen {
		require.InDelta(t, mean, float64(n), 5*sd, "rank %d", r)
	}
}

// TestConcurrent: a Plan is safe for concurrent use and concurrent callers
// get the same batches.
func TestConcurrent(t *testing.T) {
	t.Parallel()
	p := mustPlan(t, eightSpec(256))
	want := make([][]Sample, 50)
	for s := range want {
		want[s], _ = p.Batch(int64(s)*37, nil)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			var b []Sample
			for i := range 200 {
				s := (i*7 + g) % len(want)
				b, _ = p.Batch(int64(s)*37, b)
				if !slices.Equal(want[s], b) {
					t.Errorf("goroutine %d step %d differs", g, s)
					return
				}
				sl, _ := p.RankSlice(int64(s)*37, g, 8, nil)
				for j, x := range sl {
					if want[s][g+8*j] != x {
						t.Errorf("goroutine %d step %d rank slice differs", g, s)
						return
					}
				}
			}
		})
	}
	wg.Wait()
}

func TestBatchReusesDst(t *testing.T) {
	t.Parallel()
	p := mustPlan(t, acceptanceSpec(64))
	buf := make([]Sample, 3, 100)
	got, err := p.Batch(5, buf)
	require.NoError(t, err)
	require.Len(t, got, 64)
	require.Same(t, &buf[:1][0], &got[0], "reuses dst's array")
}

// TestRunID: the id ignores world size and changes with every semantic
// field.
func TestRunID(t *testing.T) {
	t.Parallel()
	base := acceptanceSpec(64)
	p := mustPlan(t, base)
	id := p.RunID()
	require.Len(t, id, 64)
	require.Regexp(t, "^[0-9a-f]{64}$", id)
	// World size is an argument of RankSlice only, never of the run.
	for _, w := range divisors(64) {
		_, err := p.RankSlice(3, 0, w, nil)
		require.NoError(t, err)
	}
	require.Equal(t, id, p.RunID())
	require.Equal(t, id, mustPlan(t, base).RunID(), "deterministic")

	same := map[string]func(*Spec){
		"nil blocks = one block": func(s *Spec) { s.Components[0].Blocks = []int64{9412} },
		"proportional weights":   func(s *Spec) { s.Components[0].Weight, s.Components[1].Weight = 3, 7 },
		"explicit derived steps": func(s *Spec) { s.Steps = 1413 },
		"weights as printed":     func(s *Spec) { s.Components[0].Weight = 0.30000000000000000001 },
	}
	for name, edit := range same {
		s := cloneSpec(base)
		edit(&s)
		require.Equal(t, id, mustPlan(t, s).RunID(), name)
	}
	differ := map[string]func(*Spec){
		"seed":              func(s *Spec) { s.Seed++ },
		"weight 0":          func(s *Spec) { s.Components[0].Weight = 0.31 },
		"weight 1":          func(s *Spec) { s.Components[1].Weight = 0.71 },
		"rows":              func(s *Spec) { s.Components[0].Rows++ },
		"rows and blocks":   func(s *Spec) { s.Components[1].Rows++; s.Components[1].Blocks[0]++ },
		"block layout":      func(s *Spec) { s.Components[1].Blocks[0]--; s.Components[1].Blocks[1]++ },
		"batch size":        func(s *Spec) { s.BatchSize = 32 },
		"buffer rows":       func(s *Spec) { s.Shuffle.BufferRows = 4096 },
		"block order only":  func(s *Spec) { s.Shuffle.BufferRows = 0 },
		"steps":             func(s *Spec) { s.Steps = 10 },
		"identity":          func(s *Spec) { s.Components[0].Identity += "@c0ffee" },
		"component order":   func(s *Spec) { s.Components[0], s.Components[1] = s.Components[1], s.Components[0] },
		"extra component":   func(s *Spec) { s.Components = append(s.Components, Component{Weight: 1, Rows: 1}) },
		"identity boundary": func(s *Spec) { s.Components[0].Identity, s.Components[1].Identity = "a", "b"+s.Components[1].Identity },
	}
	seen := map[string]string{id: "base"}
	for name, edit := range differ {
		s := cloneSpec(base)
		edit(&s)
		got := mustPlan(t, s).RunID()
		require.NotContains(t, seen, got, "%s collides with %s", name, seen[got])
		seen[got] = name
	}
}

func sortedSamples(s []Sample) []Sample {
	s = slices.Clone(s)
	slices.SortFunc(s, func(a, b Sample) int {
		if a.Component != b.Component {
			return int(a.Component - b.Component)
		}
		return int(a.Row - b.Row)
	})
	return s
}

func cloneSpec(s Spec) Spec {
	s.Components = slices.Clone(s.Components)
	for i := range s.Components {
		s.Components[i].Blocks = slices.Clone(s.Components[i].Blocks)
	}
	return s
}

// TestPlanFootprint: the arrays of a plan over 10^10 rows in 150,000 blocks
// stay well under 16 MiB.
func TestPlanFootprint(t *testing.T) {
	t.Parallel()
	p := mustPlan(t, bigSpec())
	require.Less(t, p.footprint(), int64(16<<20))
	t.Logf("plan arrays for 10^10 rows in 150,000 blocks: %.2f MiB", float64(p.footprint())/(1<<20))
}
