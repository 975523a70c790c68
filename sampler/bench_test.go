package sampler

import (
	"runtime"
	"syscall"
	"testing"
	"time"
)

// acceptanceSpec is the run of the issue: seed 2048, B, weights 0.3/0.7, a
// 9,412-row table in one row group and an 81,006-row table in row groups of
// 1,024.
func acceptanceSpec(b int) Spec {
	return Spec{Seed: 2048, BatchSize: b, Shuffle: DefaultShuffle(), Components: []Component{
		{Weight: 0.3, Rows: 9412, Identity: "robotics/failed_grasps"},
		{Weight: 0.7, Rows: 81006, Blocks: blocksOf(81006, 1024), Identity: "robotics/nominal_grasps"},
	}}
}

// blocksOf cuts n rows into blocks of size rows, the last one shorter.
func blocksOf(n, size int64) []int64 {
	var out []int64
	for n > 0 {
		b := min(n, size)
		out = append(out, b)
		n -= b
	}
	return out
}

func eightSpec(b int) Spec {
	s := Spec{Seed: 7, BatchSize: b, Shuffle: DefaultShuffle()}
	for i := 0; i < 8; i++ {
		n := int64(100_000 * (i + 1))
		s.Components = append(s.Components, Component{Weight: float64(i + 1), Rows: n, Blocks: blocksOf(n, 4096)})
	}
	return s
}

func mustPlan(tb testing.TB, s Spec) *Plan {
	tb.Helper()
	p, err := NewPlan(s)
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

// perSample reports wall-clock and CPU nanoseconds per sample (the CPU
// figure is steadier on a shared machine).
func perSample(b *testing.B, samples int, cpu0 time.Duration) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(samples), "ns/sample")
	b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(b.N)/float64(samples), "cpu-ns/sample")
}

// cpuTime is the process's user and system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkBatch: global batches at consecutive steps, as the serving layer
// asks for them.
func BenchmarkBatch(b *testing.B) {
	for _, tc := range []struct {
		name string
		spec Spec
	}{
		{"2comp/B=64", acceptanceSpec(64)},
		{"2comp/B=1024", acceptanceSpec(1024)},
		{"2comp/B=65536", acceptanceSpec(65536)},
		{"8comp/B=1024", eightSpec(1024)},
	} {
		b.Run(tc.name, func(b *testing.B) {
			p := mustPlan(b, tc.spec)
			var dst []Sample
			var step int64
			cpu0 := cpuTime()
			for b.Loop() {
				dst, _ = p.Batch(step, dst)
				step = (step + 1) % p.Steps()
			}
			perSample(b, p.BatchSize(), cpu0)
		})
	}
}

// BenchmarkRankSlice: one rank's slice at consecutive steps.
func BenchmarkRankSlice(b *testing.B) {
	for _, tc := range []struct {
		name  string
		spec  Spec
		world int
	}{
		{"2comp/B=64/W=8", acceptanceSpec(64), 8},
		{"2comp/B=1024/W=8", acceptanceSpec(1024), 8},
		{"8comp/B=1024/W=8", eightSpec(1024), 8},
		{"2comp/B=65536/W=64", acceptanceSpec(65536), 64},
	} {
		b.Run(tc.name, func(b *testing.B) {
			p := mustPlan(b, tc.spec)
			var dst []Sample
			var step int64
			cpu0 := cpuTime()
			for b.Loop() {
				dst, _ = p.RankSlice(step, 3, tc.world, dst)
				step = (step + 1) % p.Steps()
			}
			perSample(b, p.BatchSize()/tc.world, cpu0)
		})
	}
}

// BenchmarkRankSlicesAllRanks: every rank's slice of each step in turn, as
// one server serving all ranks of a job sees them.
func BenchmarkRankSlicesAllRanks(b *testing.B) {
	for _, tc := range []struct {
		name  string
		spec  Spec
		world int
	}{
		{"2comp/B=64/W=8", acceptanceSpec(64), 8},
		{"2comp/B=1024/W=8", acceptanceSpec(1024), 8},
	} {
		b.Run(tc.name, func(b *testing.B) {
			p := mustPlan(b, tc.spec)
			var dst []Sample
			var step int64
			cpu0 := cpuTime()
			for b.Loop() {
				for r := range tc.world {
					dst, _ = p.RankSlice(step, r, tc.world, dst)
				}
				step = (step + 1) % p.Steps()
			}
			perSample(b, p.BatchSize(), cpu0)
		})
	}
}

// bigSpec is 10^10 rows in 150,000 blocks of 66,666 or 66,667 rows.
func bigSpec() Spec {
	const rows, nb = 10_000_000_000, 150_000
	blocks := make([]int64, nb)
	for i := range blocks {
		blocks[i] = rows/nb + int64(i%3/2) // 66,666, 66,666, 66,667, …
	}
	var sum int64
	for _, x := range blocks {
		sum += x
	}
	blocks[nb-1] += rows - sum
	return Spec{Seed: 1, BatchSize: 1024, Shuffle: DefaultShuffle(), Steps: 10_000_000_000_000,
		Components: []Component{
			{Weight: 0.5, Rows: rows, Blocks: blocks},
			{Weight: 0.5, Rows: 81006, Blocks: blocksOf(81006, 1024)},
		}}
}

// BenchmarkSeek: the batch at a step from a cold start (the cursors forget
// their epoch and window every time): at step 0, at scattered early steps
// (the first run of 1,413 steps), and at scattered steps near 10^12. Cost
// depends on where in an epoch a step falls (step 0 starts at position 0,
// the cheapest search), never on how large the step is.
func BenchmarkSeek(b *testing.B) {
	far := acceptanceSpec(64)
	far.Steps = 10_000_000_000_000
	one := acceptanceSpec(1)
	one.Steps = 10_000_000_000_000
	big := bigSpec()
	eight := eightSpec(1024)
	eight.Steps = 10_000_000_000_000
	for _, tc := range []struct {
		name        string
		spec        Spec
		first, span int64
	}{
		{"2comp/B=1/step=0", one, 0, 1},
		{"2comp/B=1/step<1413", one, 0, 1413},
		{"2comp/B=1/step≈1e12", one, 1_000_000_000_000, 1_000_000_007},
		{"2comp/B=64/step=0", far, 0, 1},
		{"2comp/B=64/step<1413", far, 0, 1413},
		{"2comp/B=64/step≈1e12", far, 1_000_000_000_000, 1_000_000_007},
		{"1e10rows/B=1024/step<1e6", big, 0, 1_000_000},
		{"1e10rows/B=1024/step≈1e12", big, 1_000_000_000_000, 1_000_000_007},
		{"8comp/B=1024/step≈1e12", eight, 1_000_000_000_000, 1_000_000_007},
	} {
		b.Run(tc.name, func(b *testing.B) {
			p := mustPlan(b, tc.spec)
			var dst []Sample
			i := int64(0)
			for b.Loop() {
				p.forget()
				dst, _ = p.Batch(tc.first+(i*1_000_003)%tc.span, dst)
				i++
			}
		})
	}
}

// forget drops what the pooled cursors cached.
func (p *Plan) forget() {
	sc := p.get()
	for _, c := range sc.cursors {
		c.epoch, c.seg, c.wNext, c.lastK = -1, -1, false, -1
	}
	sc.stepOK = false
	p.put(sc)
}

// BenchmarkPlanMemory: heap held by a plan over 10^10 rows in 150,000 blocks,
// after NewPlan and a batch.
func BenchmarkPlanMemory(b *testing.B) {
	spec := bigSpec()
	for b.Loop() {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		p := mustPlan(b, spec)
		if _, err := p.Batch(12345, nil); err != nil {
			b.Fatal(err)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/(1<<20), "MiB")
		b.ReportMetric(float64(p.footprint())/(1<<20), "MiB-arrays")
		runtime.KeepAlive(p)
	}
}

// BenchmarkSeekDraw: one draw of one component at a far draw index, from a
// cold cursor: the pure cost of a seek (epoch, window, unit table) plus one
// row.
func BenchmarkSeekDraw(b *testing.B) {
	big := mustPlan(b, bigSpec())
	acc := mustPlan(b, acceptanceSpec(64))
	for _, tc := range []struct {
		name string
		p    *Plan
		comp int
		k    int64
	}{
		{"81006rows/k=0", acc, 1, 0},
		{"81006rows/k=7e11", acc, 1, 700_000_000_000},
		{"1e10rows/k=0", big, 0, 0},
		{"1e10rows/k=5e14", big, 0, 500_000_000_000_000},
	} {
		b.Run(tc.name, func(b *testing.B) {
			i := int64(0)
			for b.Loop() {
				tc.p.forget()
				tc.p.Draw(tc.comp, tc.k+(i*1_000_003)%1_000_000_007)
				i++
			}
		})
	}
}

// BenchmarkNewPlan: building the plan for 10^10 rows in 150,000 blocks (run
// id hash, units, σ order).
func BenchmarkNewPlan(b *testing.B) {
	spec := bigSpec()
	for b.Loop() {
		mustPlan(b, spec)
	}
}
