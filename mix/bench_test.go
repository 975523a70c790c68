package mix

import (
	"context"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/weftdata/weft/bucket"
	"github.com/weftdata/weft/internal/benchdata"
	"github.com/weftdata/weft/tables"
	"github.com/weftdata/weft/versions"
)

// BenchmarkSmallRowMix streams one epoch of the small-row mix (the shape of
// bench/'s: id, 32 float32 features, label; tables of 300k and 700k rows
// mixed 0.3/0.7, B = 256, one rank) from an fs store, and reports
// samples/s. It is the engine's share of `make bench-mix`, without Flight:
// a quick check that the planner/builder path did not get slower.
func BenchmarkSmallRowMix(b *testing.B) {
	ctx := context.Background()
	fsb, err := bucket.NewFS(b.TempDir())
	require.NoError(b, err)
	v, err := versions.New(fsb, versions.DefaultOptions())
	require.NoError(b, err)
	_, err = v.CreateProject(ctx, "bench")
	require.NoError(b, err)
	ts, err := tables.New(v, tables.DefaultOptions())
	require.NoError(b, err)
	for i, n := range []int64{300_000, 700_000} {
		rr := &smallRows{n: n, rng: rand.New(rand.NewPCG(uint64(i+1), 7))}
		_, err := ts.Append(ctx, "bench", "main", versions.TableName([]string{"small_a", "small_b"}[i]), rr, "")
		require.NoError(b, err)
	}
	e, err := New(ts, DefaultOptions())
	require.NoError(b, err)
	defer e.Close()
	run, err := e.Resolve(ctx, &Recipe{Seed: 1, BatchSize: 256, Components: []Component{
		{Project: "bench", Table: "small_a", Weight: 0.3}, {Project: "bench", Table: "small_b", Weight: 0.7}}})
	require.NoError(b, err)
	b.ResetTimer()
	var samples int64
	start, cpu0 := time.Now(), cpuTime()
	for range b.N {
		for st, err := range e.Steps(ctx, run, 0, 1, 0, 0) {
			require.NoError(b, err)
			samples += st.Batch.NumRows()
			st.Batch.Release()
		}
	}
	b.ReportMetric(float64(samples)/time.Since(start).Seconds(), "samples/s")
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(samples), "cpu-ns/sample")
}

// cpuTime is the process's user and system CPU time: less disturbed by
// other processes on a shared machine than wall time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// smallRows generates the small-row table, 65,536 rows a batch.
type smallRows struct {
	n, at int64
	rng   *rand.Rand
	rec   arrow.RecordBatch
}

func (g *smallRows) Schema() *arrow.Schema          { return benchdata.SmallSchema }
func (g *smallRows) RecordBatch() arrow.RecordBatch { return g.rec }
func (g *smallRows) Record() arrow.RecordBatch      { return g.rec }
func (g *smallRows) Err() error                     { return nil }
func (g *smallRows) Retain()                        {}
func (g *smallRows) Release() {
	if g.rec != nil {
		g.rec.Release()
		g.rec = nil
	}
}

func (g *smallRows) Next() bool {
	g.Release()
	if g.at >= g.n {
		return false
	}
	k := min(65536, g.n-g.at)
	bld := array.NewRecordBuilder(memory.DefaultAllocator, benchdata.SmallSchema)
	defer bld.Release()
	fl := bld.Field(1).(*array.FixedSizeListBuilder)
	fv := fl.ValueBuilder().(*array.Float32Builder)
	for i := g.at; i < g.at+k; i++ {
		bld.Field(0).(*array.Int64Builder).Append(i)
		fl.Append(true)
		for range 32 {
			fv.Append(float32(g.rng.NormFloat64()))
		}
		bld.Field(2).(*array.Int64Builder).Append(int64(g.rng.IntN(1000)))
	}
	g.rec = bld.NewRecordBatch()
	g.at += k
	return true
}
