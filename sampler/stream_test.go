package sampler

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestUnits(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		rows   int64
		blocks []int64
		window int64
		want   []int64
	}{
		{"block order keeps blocks", 10, []int64{1, 2, 3, 4}, 0, []int64{1, 2, 3, 4}},
		{"one small block", 100, []int64{100}, 8192, []int64{100}},
		{"clumps reach W/64 rows", 10, []int64{1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, 256, []int64{4, 4, 2}},
		{"blocks of W/64 stay", 1024, blocksOf(1024, 128), 8192, blocksOf(1024, 128)},
		{"one row group of 9,412", 9412, []int64{9412}, 8192, []int64{4706, 4706}},
		{"long block split evenly", 21, []int64{3, 17, 1}, 8, []int64{3, 6, 6, 5, 1}},
		{"huge component splits by N/4096", 1 << 30, []int64{1 << 30}, 8192, slices.Repeat([]int64{1 << 18}, 4096)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := units(tc.rows, tc.blocks, tc.window)
			require.Equal(t, tc.want, got)
			var sum int64
			for _, u := range got {
				sum += u
			}
			require.Equal(t, tc.rows, sum)
		})
	}
}

// TestLocate: walking an epoch's units from the start visits every unit
// once, and locate finds, for any position, the unit the walk found.
func TestLocate(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(11, 12))
	for _, tc := range []struct {
		rows   int64
		blocks []int64
	}{
		{1, nil}, {5, []int64{1, 1, 1, 1, 1}}, {1000, blocksOf(1000, 7)},
		{100_000, blocksOf(100_000, 129)}, {100_000, randomBlocks(r, 100_000)},
		{10_000_000, randomBlocks(r, 10_000_000)},
	} {
		st := newStream(r.Uint64(), 0, tc.rows, tc.blocks, 0)
		for _, epoch := range []int64{0, 1, 1 << 40} {
			var ep epochLanes
			st.initEpoch(&ep, epoch)
			w := st.locate(&ep, 0)
			var bases []int64
			seen := map[int64]bool{}
			for {
				require.False(t, seen[w.q], "unit at σ-position %d twice", w.q)
				seen[w.q] = true
				bases = append(bases, w.base)
				if !st.next(&ep, &w) {
					break
				}
			}
			require.Len(t, seen, len(st.start))
			require.Equal(t, tc.rows, w.base+w.size)
			for range 200 {
				p := r.Int64N(tc.rows)
				i, _ := slices.BinarySearch(bases, p+1)
				got := st.locate(&ep, p)
				require.Equal(t, bases[i-1], got.base, "rows %d position %d", tc.rows, p)
			}
		}
	}
}

// checkEpoch reads epoch e of component i and checks that every row appears
// exactly once; it returns the epoch's rows when keep is set.
func checkEpoch(t *testing.T, p *Plan, i int, rows int64, e int64, keep bool) []int64 {
	t.Helper()
	seen := newBitset(rows)
	buf := make([]int64, min(rows, 1<<16))
	var out []int64
	for o := int64(0); o < rows; o += int64(len(buf)) {
		chunk := buf[:min(int64(len(buf)), rows-o)]
		p.DrawRows(i, e*rows+o, chunk)
		for _, row := range chunk {
			require.True(t, row >= 0 && row < rows, "row %d out of [0, %d)", row, rows)
			if seen.set(row) {
				require.Failf(t, "row twice", "component %d epoch %d: row %d twice", i, e, row)
			}
		}
		if keep {
			out = append(out, chunk...)
		}
	}
	return out
}

// TestEpochExactlyOnce: every row once per epoch, for edge-case sizes, block
// layouts and windows, in early and far epochs; and epochs differ.
func TestEpochExactlyOnce(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(13, 14))
	type layout struct {
		rows   int64
		blocks []int64
	}
	layouts := []layout{
		{1, nil}, {2, nil}, {3, []int64{1, 2}}, {7, []int64{1, 1, 1, 1, 1, 1, 1}},
		{9412, nil}, {9412, []int64{4096, 4096, 1220}}, {81006, blocksOf(81006, 1024)},
		{65521, randomBlocks(r, 65521)}, {999_983, randomBlocks(r, 999_983)},
		{1_000_000, blocksOf(1_000_000, 256)},
	}
	windows := []int64{0, 1, 100, DefaultBufferRows, 1 << 40}
	for li, l := range layouts {
		for wi, w := range windows {
			// The largest layouts run with the default window in
			// TestShuffleQuality; here block order only and windows of 1.
			if l.rows >= 500_000 && w != 0 && w != 1 {
				continue
			}
			t.Run(fmt.Sprintf("N=%d/layout%d/W=%d", l.rows, li, w), func(t *testing.T) {
				t.Parallel()
				spec := Spec{Seed: uint64(li*10 + wi), BatchSize: 1, Shuffle: Shuffle{BufferRows: w},
					Components: []Component{{Weight: 1, Rows: l.rows, Blocks: l.blocks}}}
				p := mustPlan(t, spec)
				e0 := checkEpoch(t, p, 0, l.rows, 0, true)
				e1 := checkEpoch(t, p, 0, l.rows, 1, true)
				if l.rows <= 200_000 {
					checkEpoch(t, p, 0, l.rows, 1_000_000_000, false)
				}
				units := len(p.streams[0].start)
				if l.rows >= 8 && (w > 0 || units >= 8) {
					require.NotEqual(t, e0, e1, "epochs 0 and 1 differ")
				}
				if w == 0 && units == 1 {
					require.Equal(t, e0, e1, "block order only: one block reads in row order")
					require.True(t, slices.IsSorted(e0))
				}
			})
		}
	}
}

// TestDrawMatchesDrawRows: single draws, in any order, equal the stream read
// in order.
func TestDrawMatchesDrawRows(t *testing.T) {
	t.Parallel()
	p := mustPlan(t, acceptanceSpec(64))
	const first, n = 9412*3 - 500, 3000
	rows := make([]int64, n)
	p.DrawRows(0, first, rows)
	for _, k := range rand.New(rand.NewPCG(15, 16)).Perm(n) {
		require.Equal(t, rows[k], p.Draw(0, first+int64(k)))
	}
}

// TestStreamProperty: random recipes; every row exactly once per epoch in
// early and far epochs (components up to 10^6 rows; one of 10^5 to 10^6 rows
// per recipe), and epochs 0 and 1 differ.
func TestStreamProperty(t *testing.T) {
	t.Parallel()
	recipes := 12
	if testing.Short() {
		recipes = 3
	}
	r := rand.New(rand.NewPCG(19, 20))
	for ri := range recipes {
		spec := randomSpec(r)
		far := r.Int64N(1 << 40)
		t.Run(fmt.Sprintf("%d/n=%d/W=%d", ri, len(spec.Components), spec.Shuffle.BufferRows), func(t *testing.T) {
			t.Parallel()
			p := mustPlan(t, spec)
			bigDone := false
			for i, c := range spec.Components {
				switch {
				case c.Rows <= 100_000:
					e0 := checkEpoch(t, p, i, c.Rows, 0, true)
					e1 := checkEpoch(t, p, i, c.Rows, 1, true)
					checkEpoch(t, p, i, c.Rows, far, false)
					units := len(p.streams[i].start)
					if c.Rows >= 8 && (spec.Shuffle.BufferRows > 0 || units >= 8) {
						require.NotEqual(t, e0, e1, "component %d: epochs 0 and 1 differ", i)
					}
				case c.Rows <= 1_000_000 && !bigDone:
					bigDone = true
					checkEpoch(t, p, i, c.Rows, far, false)
				}
			}
		})
	}
}
