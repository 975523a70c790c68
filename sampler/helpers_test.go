package sampler

import (
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
)

// Row counts the property tests draw from: the edge cases 1, 2 and 3,
// primes, powers of two and their neighbours, and the acceptance sizes.
var specialRows = []int64{1, 2, 3, 5, 7, 31, 127, 255, 256, 257, 4093, 8191, 8192, 8193,
	9412, 65521, 81006, 999_983, 1_000_000, 9_999_991, 10_000_000}

// randomSpec draws a recipe: 1 to 8 components, weights log-uniform in
// [1e-3, 1e3], B in 1..4096, N_i in 1..10^7 (a third of them special), a
// random block layout, and a random shuffle window.
func randomSpec(r *rand.Rand) Spec {
	s := Spec{Seed: r.Uint64()}
	switch r.IntN(4) {
	case 0:
		s.BatchSize = 1 + r.IntN(16)
	case 1:
		s.BatchSize = 1 << r.IntN(13) // 1..4096
	default:
		s.BatchSize = 1 + r.IntN(4096)
	}
	switch r.IntN(4) {
	case 0:
		s.Shuffle.BufferRows = 0
	case 1:
		s.Shuffle.BufferRows = 1 + r.Int64N(20_000)
	default:
		s.Shuffle.BufferRows = DefaultBufferRows
	}
	n := 1 + r.IntN(8)
	for range n {
		var rows int64
		if r.IntN(3) == 0 {
			rows = specialRows[r.IntN(len(specialRows))]
		} else {
			rows = int64(math.Exp(r.Float64() * math.Log(1e7)))
		}
		rows = max(1, rows)
		s.Components = append(s.Components, Component{
			Weight:   math.Pow(10, -3+6*r.Float64()),
			Rows:     rows,
			Blocks:   randomBlocks(r, rows),
			Identity: "t",
		})
	}
	return s
}

// randomBlocks draws a layout of rows: nil (one block), equal blocks with a
// short last one, or random sizes; never more than about 20,000 blocks.
func randomBlocks(r *rand.Rand, rows int64) []int64 {
	minSize := max(1, rows/20_000)
	switch r.IntN(3) {
	case 0:
		return nil
	case 1:
		size := max(minSize, int64(math.Exp(r.Float64()*math.Log(float64(rows)+1))))
		return blocksOf(rows, size)
	default:
		var out []int64
		mean := max(minSize, rows/int64(1+r.IntN(200)))
		for left := rows; left > 0; {
			b := min(left, minSize+r.Int64N(2*mean))
			out = append(out, b)
			left -= b
		}
		return out
	}
}

func divisors(n int) []int {
	var out []int
	for d := 1; d*d <= n; d++ {
		if n%d == 0 {
			out = append(out, d)
			if d*d != n {
				out = append(out, n/d)
			}
		}
	}
	slices.Sort(out)
	return out
}

// u128 is an unsigned 128-bit integer for exact checks.
type u128 struct{ hi, lo uint64 }

func mul128(a, b uint64) u128 {
	h, l := bits.Mul64(a, b)
	return u128{h, l}
}

func (a u128) cmp(b u128) int {
	switch {
	case a.hi != b.hi:
		if a.hi < b.hi {
			return -1
		}
		return 1
	case a.lo != b.lo:
		if a.lo < b.lo {
			return -1
		}
		return 1
	}
	return 0
}

// absDiff returns |a-b|.
func absDiff(a, b u128) u128 {
	if a.cmp(b) < 0 {
		a, b = b, a
	}
	lo, borrow := bits.Sub64(a.lo, b.lo, 0)
	hi, _ := bits.Sub64(a.hi, b.hi, borrow)
	return u128{hi, lo}
}

func (a u128) shl1() u128 { return u128{a.hi<<1 | a.lo>>63, a.lo << 1} }

// quota returns ⌊q⌋ and whether q = B·u/U is whole.
func quota(b, u, total uint64) (floor uint64, whole bool) {
	h, l := bits.Mul64(b, u)
	q, r := bits.Div64(h, l, total)
	return q, r == 0
}

// driftOK reports whether |C·U - B·u·(s+1)| ≤ bound·U, with bound = d/2:
// 2·|C·U - B·(s+1)·u| ≤ d·U.
func driftOK(c, b, u, total uint64, steps uint64, d uint64) bool {
	lhs := absDiff(mul128(c, total), mul128(b*steps, u)).shl1()
	return lhs.cmp(mul128(d, total)) <= 0
}

// bitset marks rows seen in an epoch in O(N/8) bytes.
type bitset []uint64

func newBitset(n int64) bitset { return make(bitset, (n+63)/64) }

// set marks i and reports whether it was already marked.
func (b bitset) set(i int64) bool {
	w, m := i/64, uint64(1)<<(i%64)
	seen := b[w]&m != 0
	b[w] |= m
	return seen
}
