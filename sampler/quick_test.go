package sampler

import (
	"testing"
)

func TestQuick(t *testing.T) {
	p, err := NewPlan(Spec{Seed: 2048, BatchSize: 64, Shuffle: DefaultShuffle(), Components: []Component{
		{Weight: 0.3, Rows: 9412}, {Weight: 0.7, Rows: 81006, Blocks: append(rep(1024, 79), 110)}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(p.Weights(), p.Steps(), p.RunID())
	for s := int64(0); s < 5; s++ {
		t.Log(p.Counts(s))
	}
	b, _ := p.Batch(0, nil)
	t.Log(b[:10])
	for c, n := range []int64{9412, 81006} {
		seen := make([]bool, n)
		rows := make([]int64, n)
		for e := int64(0); e < 3; e++ {
			clear(seen)
			p.DrawRows(c, e*n, rows)
			for _, r := range rows {
				if seen[r] {
					t.Fatalf("dup %d", r)
				}
				seen[r] = true
			}
			t.Log(c, e, rows[:8])
		}
	}
}

func rep(v int64, n int) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = v
	}
	return out
}
