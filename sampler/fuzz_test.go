package sampler

import (
	"math"
	"math/bits"
	"testing"

	"github.com/stretchr/testify/require"
)

// fuzzSpec builds a valid recipe from fuzz input: shape[0] picks 1–8
// components; each takes three bytes (weight in 1e-3..1e3, rows, layout).
func fuzzSpec(seed uint64, shape []byte, b uint16, buffer uint16) Spec {
	at := func(i int) byte {
		if len(shape) == 0 {
			return 0
		}
		return shape[i%len(shape)]
	}
	s := Spec{Seed: seed, BatchSize: 1 + int(b)%4096}
	switch buffer % 4 {
	case 0:
		s.Shuffle.BufferRows = 0
	case 1:
		s.Shuffle.BufferRows = DefaultBufferRows
	default:
		s.Shuffle.BufferRows = int64(buffer)
	}
	n := 1 + int(at(0))%8
	for i := range n {
		wb, rb, lb := at(3*i+1), at(3*i+2), at(3*i+3)
		w := math.Pow(10, -3+6*float64(wb)/255)
		var rows int64
		switch {
		case rb < 16:
			rows = int64(rb) + 1 // 1..16
		case rb < 240:
			rows = 1 + int64(rb)*int64(rb)*int64(1+lb%4)/16 // up to ~16k
		default:
			rows = specialRows[int(lb)%len(specialRows)]
		}
		var blocks []int64
		switch lb % 3 {
		case 1:
			blocks = blocksOf(rows, max(1, rows/int64(1+lb%64), rows/10_000))
		case 2:
			blocks = blocksOf(rows, int64(1+lb))
			if int64(len(blocks)) > 20_000 {
				blocks = nil
			}
		}
		s.Components = append(s.Components, Component{Weight: w, Rows: rows, Blocks: blocks})
	}
	s.Steps = maxDraws / int64(s.BatchSize)
	return s
}

// FuzzPlan checks the contract on fuzzed recipes: counts are floor/ceil of
// the quotas and sum to B, the running total stays within the drift bound,
// the batch is the component draws in the seeded order, rank slices tile it
// for any world size dividing B, and small components read every row once
// in the epoch the step is in.
func FuzzPlan(f *testing.F) {
	f.Add(uint64(2048), []byte{1, 77, 200, 0, 200, 250, 1}, uint16(63), uint16(3), uint64(0), uint16(1))
	f.Add(uint64(1), []byte{7, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24}, uint16(4095), uint16(7), uint64(1e12), uint16(100))
	f.Add(uint64(0), []byte{}, uint16(0), uint16(0), uint64(0), uint16(0))
	f.Add(uint64(99), []byte{2, 0, 1, 5, 255, 255, 7, 128, 17, 3}, uint16(1023), uint16(1), uint64(1<<61), uint16(2))
	f.Fuzz(func(t *testing.T, seed uint64, shape []byte, b uint16, world uint16, step uint64, buffer uint16) {
		spec := fuzzSpec(seed, shape, b, buffer)
		p, err := NewPlan(spec)
		require.NoError(t, err)
		s := int64(step % uint64(p.Steps()))
		bsz := uint64(spec.BatchSize)

		// Shares at this step, by seeking only.
		u := p.Weights()
		var total uint64
		for _, x := range u {
			total += x
		}
		d := uint64(bits.Len(uint(len(u) - 1)))
		counts := p.Counts(s)
		sum := 0
		for i, c := range counts {
			sum += c
			fl, whole := quota(bsz, u[i], total)
			if uint64(c) != fl && (whole || uint64(c) != fl+1) {
				t.Fatalf("step %d component %d: %d slots, floor %d", s, i, c, fl)
			}
			lo, hi := p.DrawRange(i, s)
			require.Equal(t, int64(c), hi-lo)
			if !driftOK(uint64(hi), bsz, u[i], total, uint64(s+1), d) {
				t.Fatalf("step %d component %d: drift beyond %v", s, i, DriftBound(len(u)))
			}
		}
		require.Equal(t, spec.BatchSize, sum)

		// The batch, and the slices of a world size that divides B.
		batch, err := p.Batch(s, nil)
		require.NoError(t, err)
		require.Equal(t, expectedBatch(p, s), batch)
		divs := divisors(spec.BatchSize)
		w := divs[int(world)%len(divs)]
		var slice []Sample
		for r := range w {
			slice, err = p.RankSlice(s, r, w, slice)
			require.NoError(t, err)
			for j, x := range slice {
				if batch[r+j*w] != x {
					t.Fatalf("world %d rank %d slot %d: %v, batch has %v", w, r, j, x, batch[r+j*w])
				}
			}
		}
		_, err = p.RankSlice(s, 0, spec.BatchSize+1, nil)
		require.ErrorIs(t, err, ErrWorldSize)

		// Every row once in the epoch of this step, for small components.
		for i, c := range spec.Components {
			if c.Rows > 20_000 {
				continue
			}
			lo, _ := p.DrawRange(i, s)
			checkEpoch(t, p, i, c.Rows, lo/c.Rows, false)
		}
	})
}
