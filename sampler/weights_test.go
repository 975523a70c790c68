package sampler

import (
	"math"
	"math/big"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestReduceWeights(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		in   []float64
		want []uint64
	}{
		{"decimal, not binary", []float64{0.3, 0.7}, []uint64{3, 7}},
		{"gcd", []float64{0.1, 0.2}, []uint64{1, 2}},
		{"mixed exponents", []float64{1, 2.5}, []uint64{2, 5}},
		{"one", []float64{42}, []uint64{1}},
		{"equal", []float64{7, 7, 7}, []uint64{1, 1, 1}},
		{"wide range", []float64{1e-3, 1e3}, []uint64{1, 1_000_000}},
		{"thirds", []float64{1.0 / 3, 2.0 / 3}, []uint64{1, 2}},
		{"integers", []float64{3, 9, 12}, []uint64{1, 3, 4}},
		{"tiny", []float64{5e-324, 1e-323}, []uint64{1, 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := reduceWeights(tc.in)
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

// TestReduceWeightsRounded: when the exact decimal integers are too large,
// the rounded ones sum to at most 2^62, keep every weight positive, and keep
// each share within 2^-57 of the exact share of the decimal weights.
func TestReduceWeightsRounded(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(5, 6))
	for range 500 {
		n := 1 + r.IntN(8)
		ws := make([]float64, n)
		for i := range ws {
			ws[i] = math.Pow(10, -300+600*r.Float64())
			if r.IntN(2) == 0 {
				ws[i] = math.Pow(10, -3+6*r.Float64())
			}
		}
		got, err := reduceWeights(ws)
		require.NoError(t, err)
		var total uint64
		for _, u := range got {
			require.Positive(t, u)
			total += u
			require.LessOrEqual(t, total, uint64(maxWeightTotal))
		}
		// Exact shares of the decimal weights.
		dec := make([]*big.Rat, n)
		exactTotal := new(big.Rat)
		for i, w := range ws {
			dec[i], _ = new(big.Rat).SetString(strconv.FormatFloat(w, 'g', -1, 64))
			exactTotal.Add(exactTotal, dec[i])
		}
		for i := range ws {
			exact := new(big.Rat).Quo(dec[i], exactTotal)
			share := new(big.Rat).SetFrac(new(big.Int).SetUint64(got[i]), new(big.Int).SetUint64(total))
			diff, _ := new(big.Rat).Sub(exact, share).Float64()
			if exact.Cmp(new(big.Rat).SetFloat64(math.Ldexp(1, -61))) > 0 {
				require.Less(t, math.Abs(diff), math.Ldexp(1, -57), "weights %v", ws)
			}
		}
	}
}

// TestReduceWeightsProportional: scaling every weight by a power of ten
// gives the same integers.
func TestReduceWeightsProportional(t *testing.T) {
	t.Parallel()
	a, err := reduceWeights([]float64{0.25, 1.5, 3})
	require.NoError(t, err)
	b, err := reduceWeights([]float64{25, 150, 300})
	require.NoError(t, err)
	require.Equal(t, a, b)
	require.Equal(t, []uint64{1, 6, 12}, a)
}

func TestReduceWeightsInvalid(t *testing.T) {
	t.Parallel()
	for _, w := range []float64{0, -1, math.Inf(1), math.Inf(-1), math.NaN(), math.Copysign(0, -1)} {
		_, err := reduceWeights([]float64{1, w})
		require.ErrorIs(t, err, ErrWeight, "weight %v", w)
		require.ErrorIs(t, err, ErrInvalid)
		require.Contains(t, err.Error(), "component 1")
	}
}
