package sampler

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPermBijection: apply is a bijection of [0, n) and invert undoes it,
// for small n, primes, and powers of two and their neighbours.
func TestPermBijection(t *testing.T) {
	t.Parallel()
	sizes := []uint64{1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 63, 64, 65, 100, 127, 255, 256, 257,
		1000, 1021, 1024, 4093, 4096, 9412, 65521, 65536, 65537}
	for n := uint64(1); n <= 40; n++ {
		sizes = append(sizes, n)
	}
	r := rand.New(rand.NewPCG(7, 8))
	for _, n := range sizes {
		for range 3 {
			p := newPerm(r.Uint64(), n)
			seen := newBitset(int64(n))
			for x := uint64(0); x < n; x++ {
				y := p.apply(x)
				if y >= n || seen.set(int64(y)) || p.invert(y) != x {
					t.Fatalf("n=%d: x=%d maps to %d (out of range, hit twice, or not inverted)", n, x, y)
				}
			}
		}
	}
}

// TestPermLarge: round trips on domains up to 2^62.
func TestPermLarge(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(9, 10))
	for range 2000 {
		n := 1 + r.Uint64N(1<<62)
		p := newPerm(r.Uint64(), n)
		x := r.Uint64N(n)
		y := p.apply(x)
		require.Less(t, y, n)
		require.Equal(t, x, p.invert(y))
	}
}

// TestPermUniform: over many keys, the image of a point is uniform on
// [0, n), and so is the joint image of two neighbouring points (chi-square;
// four Feistel rounds fail the joint test badly, eight pass).
func TestPermUniform(t *testing.T) {
	t.Parallel()
	for _, n := range []uint64{2, 3, 10, 64, 65, 100} {
		keys := 40 * n * (n - 1)
		if n == 2 {
			keys = 10_000
		}
		x := n / 3
		single := make([]float64, n)
		pairs := make([]float64, n*n)
		for k := range keys {
			p := newPerm(mix(k), n)
			a := p.apply(x)
			single[a]++
			pairs[a*n+p.apply(x+1)]++
		}
		chi, dof := chiSquare(single, float64(keys)/float64(n))
		require.Less(t, chi, dof+6*math.Sqrt(2*dof)+10, "n=%d", n)
		var cells []float64
		for a := range n {
			for b := range n {
				if a != b {
					cells = append(cells, pairs[a*n+b])
				}
			}
		}
		chi, dof = chiSquare(cells, float64(keys)/float64(n*(n-1)))
		require.Less(t, chi, dof+6*math.Sqrt(2*dof)+10, "pairs n=%d", n)
	}
}

// chiSquare returns the statistic and degrees of freedom for counts that
// should each be want.
func chiSquare(counts []float64, want float64) (chi, dof float64) {
	for _, c := range counts {
		chi += (c - want) * (c - want) / want
	}
	return chi, float64(len(counts) - 1)
}

func TestShuffleLanes(t *testing.T) {
	t.Parallel()
	for n := int64(1); n <= maxLanes; n++ {
		var order [maxLanes]uint8
		shuffleLanes(mix(uint64(n)), n, &order)
		seen := make([]bool, n)
		for _, l := range order[:n] {
			require.False(t, seen[l])
			seen[l] = true
		}
	}
}

func TestDeriveSeparatesTags(t *testing.T) {
	t.Parallel()
	seen := map[uint64]bool{}
	for tag := tagPositions; tag <= tagFeistel; tag++ {
		for x := uint64(0); x < 100; x++ {
			h := derive(42, tag, x)
			require.False(t, seen[h])
			seen[h] = true
		}
	}
}
