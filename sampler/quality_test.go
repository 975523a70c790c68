package sampler

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// spearman is the rank correlation between draw order and row over one
// epoch: rows is a permutation of [0, N), so both rank vectors are 0..N-1.
func spearman(rows []int64) float64 {
	n := float64(len(rows))
	var d2 uint64
	for k, r := range rows {
		d := uint64(max(int64(k)-r, r-int64(k)))
		d2 += d * d
	}
	return 1 - 6*float64(d2)/(n*(n*n-1))
}

// blocksWithin is the most blocks that a run of span consecutive positions
// can touch: the two end blocks, plus the most blocks whose sizes sum to at
// most span-2 (the smallest ones).
func blocksWithin(blocks []int64, span int64) int {
	sizes := slices.Sorted(slices.Values(blocks))
	t := 0
	for left := span - 2; t < len(sizes) && sizes[t] <= left; t++ {
		left -= sizes[t]
	}
	return min(len(blocks), t+2)
}

// blockOf returns the block index of each row.
func blockOf(blocks []int64, rows int64) []int32 {
	out := make([]int32, 0, rows)
	for i, b := range blocks {
		for range b {
			out = append(out, int32(i))
		}
	}
	return out
}

// TestShuffleQuality is the acceptance shuffle test: N = 10^6 in blocks of
// 256 with the default window.
func TestShuffleQuality(t *testing.T) {
	t.Parallel()
	const n = 1_000_000
	blocks := blocksOf(n, 256)
	spec := Spec{Seed: 99, BatchSize: 1, Shuffle: DefaultShuffle(), Components: []Component{{Weight: 1, Rows: n, Blocks: blocks}}}
	p := mustPlan(t, spec)
	st := p.streams[0]
	lMax := (int64(n) + st.nSeg - 1) / st.nSeg
	require.Equal(t, int64(122), st.nSeg)
	require.Equal(t, int64(8197), lMax)
	windowBound := blocksWithin(blocks, lMax)
	anyBound := blocksWithin(blocks, 2*lMax)
	require.Equal(t, 34, windowBound, "≈ 8192/256 + 2")
	require.Equal(t, 66, anyBound)
	owner := blockOf(blocks, n)

	// The Spearman correlation of a uniformly random order of the 3,907
	// blocks has standard deviation 1/√3907 ≈ 0.016, so 0.05 is a 3σ bound;
	// the lanes match it (rms 0.0162 over 200 seeds). Other seeds, epoch 0:
	for _, seed := range []uint64{1, 2, 2048} {
		s := spec
		s.Seed = seed
		rows := make([]int64, n)
		mustPlan(t, s).DrawRows(0, 0, rows)
		rho := spearman(rows)
		require.Less(t, abs(rho), 0.05, "seed %d", seed)
		t.Logf("seed %d epoch 0: Spearman %.4f", seed, rho)
	}
	for _, epoch := range []int64{0, 1, 1_000_000} {
		rows := checkEpoch(t, p, 0, n, epoch, true)
		rho := spearman(rows)
		require.Less(t, abs(rho), 0.05, "epoch %d", epoch)

		// Distinct blocks in every run of W consecutive draws (sliding),
		// and in the draws of each window.
		const w = DefaultBufferRows
		count := make([]int32, len(blocks))
		distinct, maxAny := 0, 0
		for k := range rows {
			if count[owner[rows[k]]]++; count[owner[rows[k]]] == 1 {
				distinct++
			}
			if k >= w {
				if count[owner[rows[k-w]]]--; count[owner[rows[k-w]]] == 0 {
					distinct--
				}
			}
			maxAny = max(maxAny, distinct)
		}
		maxWindow := 0
		windowsOf := make([][]int64, len(blocks))
		for j := range st.nSeg {
			lo, hi := st.segStart(j), st.segStart(j+1)
			seen := map[int32]bool{}
			for _, r := range rows[lo:hi] {
				b := owner[r]
				if !seen[b] {
					seen[b] = true
					windowsOf[b] = append(windowsOf[b], j)
				}
			}
			maxWindow = max(maxWindow, len(seen))
		}
		require.LessOrEqual(t, maxWindow, windowBound, "blocks touched by one window")
		require.LessOrEqual(t, maxAny, anyBound, "blocks touched by %d consecutive draws", w)
		// Every block is drawn within one window or two adjacent ones.
		straddle := 0
		for b, ws := range windowsOf {
			require.True(t, len(ws) == 1 || (len(ws) == 2 && ws[1] == ws[0]+1), "block %d read in windows %v", b, ws)
			if len(ws) == 2 {
				straddle++
			}
		}
		t.Logf("epoch %d: Spearman %.4f; blocks per window ≤ %d (bound %d); per %d consecutive draws ≤ %d (bound %d); %d of %d blocks span two adjacent windows",
			epoch, rho, maxWindow, windowBound, w, maxAny, anyBound, straddle, len(blocks))
	}
}

// TestShuffleSingleBlock: 9,412 rows in one row group is one window, a
// keyed permutation of all its rows: uncorrelated with row order, and every
// tenth of the epoch draws from every tenth of the rows.
func TestShuffleSingleBlock(t *testing.T) {
	t.Parallel()
	const n = 9412
	spec := Spec{Seed: 2048, BatchSize: 64, Shuffle: DefaultShuffle(), Components: []Component{{Weight: 1, Rows: n}}}
	p := mustPlan(t, spec)
	require.Equal(t, int64(1), p.streams[0].nSeg)
	for _, epoch := range []int64{0, 1, 2} {
		rows := checkEpoch(t, p, 0, n, epoch, true)
		rho := spearman(rows)
		require.Less(t, abs(rho), 0.05, "epoch %d", epoch)
		for part := range 10 {
			var hist [10]int
			for _, r := range rows[part*n/10 : (part+1)*n/10] {
				hist[r*10/n]++
			}
			for decile, c := range hist {
				require.InDelta(t, n/100, c, 60, "epoch %d: draws %d/10 from rows %d/10", epoch, part, decile)
			}
		}
		t.Logf("one row group of %d rows, epoch %d: Spearman %.4f", n, epoch, rho)
	}
}

// TestBlockOrderOnly: with buffer_rows 0, blocks are permuted per epoch and
// each block's rows come in order.
func TestBlockOrderOnly(t *testing.T) {
	t.Parallel()
	const n = 100_000
	blocks := blocksOf(n, 1000)
	spec := Spec{Seed: 5, BatchSize: 1, Components: []Component{{Weight: 1, Rows: n, Blocks: blocks}}}
	p := mustPlan(t, spec)
	var starts [][]int64
	for epoch := range int64(2) {
		rows := checkEpoch(t, p, 0, n, epoch, true)
		var order []int64
		for k := 0; k < n; k += 1000 {
			require.Zero(t, rows[k]%1000, "blocks start at a block boundary")
			for j := 1; j < 1000; j++ {
				require.Equal(t, rows[k]+int64(j), rows[k+j])
			}
			order = append(order, rows[k]/1000)
		}
		require.Less(t, abs(spearman(order)), 0.3)
		starts = append(starts, order)
	}
	require.NotEqual(t, starts[0], starts[1])
}

func abs(x float64) float64 { return max(x, -x) }
