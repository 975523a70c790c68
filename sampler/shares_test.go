package sampler

import (
	"fmt"
	"math/bits"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// checkShares walks steps 0..steps-1 of p, checking at every step that each
// component gets ⌊q_i⌋ or ⌈q_i⌉ slots, that they sum to B, and that the
// running totals stay within DriftBound(n) of q_i·(s+1); and, at every
// stride-th step, that seeking (DrawRange) gives the running totals reached by
// iterating.
func checkShares(t *testing.T, p *Plan, steps int64, stride int64) {
	t.Helper()
	u := p.Weights()
	var total uint64
	for _, x := range u {
		total += x
	}
	n := len(u)
	b := uint64(p.BatchSize())
	d := uint64(bits.Len(uint(n - 1))) // 2·DriftBound(n)
	require.Equal(t, float64(d)/2, DriftBound(n))
	floors := make([]uint64, n)
	whole := make([]bool, n)
	for i := range u {
		floors[i], whole[i] = quota(b, u[i], total)
	}
	running := make([]uint64, n)
	counts := make([]int, n)
	xs, prev := make([]uint64, len(p.shares.nodes)), make([]uint64, len(p.shares.nodes))
	for s := int64(0); s < steps; s++ {
		// The closed form Counts uses, without its pooling: c_i(s) =
		// F_i + X_i(s+1) - X_i(s). Counts itself is compared every stride.
		p.shares.extras(uint64(s+1), xs)
		for i, v := range p.shares.leaf {
			counts[i] = int(p.shares.nodes[v].whole + xs[v] - prev[v])
		}
		xs, prev = prev, xs
		sum := 0
		for i, c := range counts {
			sum += c
			cu := uint64(c)
			if cu != floors[i] && (whole[i] || cu != floors[i]+1) {
				t.Fatalf("step %d component %d: %d slots, quota %d·%d/%d has floor %d (whole: %v)",
					s, i, c, b, u[i], total, floors[i], whole[i])
			}
			running[i] += cu
			if !driftOK(running[i], b, u[i], total, uint64(s+1), d) {
				t.Fatalf("step %d component %d: running total %d drifts more than %v from %d·%d/%d per step",
					s, i, running[i], DriftBound(n), b, u[i], total)
			}
		}
		if sum != p.BatchSize() {
			t.Fatalf("step %d: counts %v sum to %d, not B=%d", s, counts, sum, p.BatchSize())
		}
		if s%stride == 0 || s == steps-1 {
			require.Equal(t, counts, p.Counts(s), "step %d", s)
			for i := range n {
				lo, hi := p.DrawRange(i, s)
				require.Equal(t, int64(running[i]), hi, "step %d component %d: seek vs iterate", s, i)
				require.Equal(t, int64(running[i])-int64(counts[i]), lo)
			}
		}
	}
}

// TestSharesProperty: random recipes (1–8 components, weights 1e-3..1e3,
// B 1..4096), 10^5 steps each.
func TestSharesProperty(t *testing.T) {
	t.Parallel()
	recipes := 24
	if testing.Short() {
		recipes = 4
	}
	r := rand.New(rand.NewPCG(1, 2))
	for i := range recipes {
		spec := randomSpec(r)
		spec.Steps = 1 << 30
		for i := range spec.Components { // shares do not depend on rows
			spec.Components[i].Rows, spec.Components[i].Blocks = 1, nil
		}
		t.Run(fmt.Sprintf("%d/n=%d/B=%d", i, len(spec.Components), spec.BatchSize), func(t *testing.T) {
			t.Parallel()
			checkShares(t, mustPlan(t, spec), 100_000, 4999)
		})
	}
}

func TestSharesCases(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		b       int
		weights []float64
		counts  [][]int // first steps
	}{
		{"acceptance 0.3/0.7 of 64", 64, []float64{0.3, 0.7},
			[][]int{{19, 45}, {19, 45}, {20, 44}, {19, 45}, {19, 45}, {19, 45}, {19, 45}, {20, 44}}},
		{"whole quotas never vary", 10, []float64{0.3, 0.7}, [][]int{{3, 7}, {3, 7}, {3, 7}}},
		{"one component", 7, []float64{5}, [][]int{{7}, {7}}},
		{"below one sample per batch", 4, []float64{1, 1000}, [][]int{{0, 4}, {0, 4}, {0, 4}}},
		{"equal thirds of 4", 4, []float64{1, 1, 1}, nil},
		{"B=1 alternates", 1, []float64{1, 1}, [][]int{{0, 1}, {1, 0}, {0, 1}, {1, 0}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			spec := Spec{BatchSize: tc.b, Steps: 1 << 40}
			for _, w := range tc.weights {
				spec.Components = append(spec.Components, Component{Weight: w, Rows: 10})
			}
			p := mustPlan(t, spec)
			for s, want := range tc.counts {
				require.Equal(t, want, p.Counts(int64(s)), "step %d", s)
			}
			checkShares(t, p, 20_000, 1000)
		})
	}
}

// TestSharesRate: a component with a quota far below one sample per batch
// appears at its rate, and the rate holds at step 10^12 as at step 0.
func TestSharesRate(t *testing.T) {
	t.Parallel()
	spec := Spec{BatchSize: 1, Steps: 1 << 60, Components: []Component{
		{Weight: 1, Rows: 5}, {Weight: 999, Rows: 5}, {Weight: 1000, Rows: 5}}}
	p := mustPlan(t, spec)
	for _, start := range []int64{0, 1_000_000_000_000, 1 << 55} {
		lo, _ := p.DrawRange(0, start)
		_, hi := p.DrawRange(0, start+2_000_000-1)
		require.InDelta(t, 1000, hi-lo, 2, "1 in 2000 over 2·10^6 steps from %d", start)
	}
	checkShares(t, p, 100_000, 9999)
}

// TestSharesFarSteps: floor/ceil, sum and drift at isolated steps up to the
// largest the run allows, computed by seeking only.
func TestSharesFarSteps(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(3, 4))
	for range 200 {
		spec := randomSpec(r)
		spec.Steps = maxDraws / int64(spec.BatchSize)
		p := mustPlan(t, spec)
		u := p.Weights()
		var total uint64
		for _, x := range u {
			total += x
		}
		d := uint64(bits.Len(uint(len(u) - 1)))
		for _, s := range []int64{0, 1, 1_000_000_000_000, r.Int64N(spec.Steps), spec.Steps - 1} {
			sum := 0
			for i, c := range p.Counts(s) {
				sum += c
				f, _ := quota(uint64(spec.BatchSize), u[i], total)
				require.Contains(t, []uint64{f, f + 1}, uint64(c))
				_, hi := p.DrawRange(i, s)
				require.True(t, driftOK(uint64(hi), uint64(spec.BatchSize), u[i], total, uint64(s+1), d),
					"step %d component %d", s, i)
			}
			require.Equal(t, spec.BatchSize, sum)
		}
	}
}

func TestDriftBound(t *testing.T) {
	t.Parallel()
	for n, want := range map[int]float64{1: 0, 2: 0.5, 3: 1, 4: 1, 5: 1.5, 8: 1.5, 9: 2, 16: 2, 17: 2.5} {
		require.Equal(t, want, DriftBound(n), "n=%d", n)
	}
}
