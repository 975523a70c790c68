package mix

import (
	"context"
	"errors"
	"math"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftdata/weft/bucket"
	"github.com/weftdata/weft/sampler"
	"github.com/weftdata/weft/tables"
	"github.com/weftdata/weft/versions"
)

func newFS(t testing.TB) bucket.Bucket {
	b, err := bucket.NewFS(t.TempDir())
	require.NoError(t, err)
	return b
}

// twoTables makes project p with tables a (na rows) and b (nb rows), each
// in several files of several row groups.
func twoTables(en *env, p string, na, nb int64) {
	en.project(p)
	en.appendRows(p, "main", "a", 0, na, max(1, na/3), 16)
	en.appendRows(p, "main", "b", 0, nb, max(1, nb/2), 16)
}

func recipe(p string, seed uint64, batch int, wa, wb float64) *Recipe {
	return &Recipe{Seed: seed, BatchSize: batch, Components: []Component{
		{Project: p, Table: "a", Weight: wa},
		{Project: p, Table: "b", Weight: wb},
	}}
}

func TestResolveAndServe(t *testing.T) {
	t.Parallel()
	en := newEnv(t, newFS(t), envOpts{rowGroupRows: 100})
	twoTables(en, "robotics", 941, 2100)
	ctx := context.Background()

	run, err := en.e.Resolve(ctx, recipe("robotics", 2048, 64, 0.3, 0.7))
	require.NoError(t, err)
	rec := run.Record()
	require.Equal(t, RecordFormat, rec.Format)
	require.Equal(t, int64((941+2100+63)/64), run.Steps())
	require.Equal(t, int64(941), rec.Components[0].Rows)
	require.Equal(t, []string{"id", "name", "vec", "blob", "ok"}, rec.Components[0].Columns)
	require.Equal(t, "main", rec.Components[1].Ref)
	require.Equal(t, []int64{100, 100, 100, 13, 100, 100, 100, 13, 100, 100, 100, 13, 2}, rec.Components[0].Blocks) // appends of 313, 313, 313 and 2 rows, row groups of 100
	require.Equal(t, int64(sampler.DefaultBufferRows), rec.Shuffle.BufferRows)
	require.Equal(t, 7, run.Schema().NumFields())

	// The same recipe at the same commits is the same run, on another engine.
	other := en.engine(nil)
	again, err := other.Resolve(ctx, recipe("robotics", 2048, 64, 0.3, 0.7))
	require.NoError(t, err)
	require.Equal(t, run.ID(), again.ID())
	require.Equal(t, run.JSON(), again.JSON())

	// W = 1: every batch has the exact shares, and every row is the row
	// its _row names.
	steps, w1 := collect(t, en.e.Steps(ctx, run, 0, 1, 0, 0))
	require.Len(t, steps, int(run.Steps()))
	for s, batch := range w1 {
		require.Equal(t, int64(s), steps[s])
		require.Len(t, batch, 64)
		counts := [2]int{}
		for _, smp := range batch {
			counts[smp.comp]++
		}
		require.Contains(t, []int{19, 20}, counts[0], "step %d", s) // 0.3·64 = 19.2
		require.Contains(t, []int{44, 45}, counts[1], "step %d", s)
		want, err := run.Plan().Batch(int64(s), nil)
		require.NoError(t, err)
		for i, smp := range want {
			require.Equal(t, sample{smp.Component, smp.Row}, batch[i])
		}
	}

	// W = 2, 4, 8: rank r's rows are positions r, r+W, … of the W = 1
	// batch; ranks served by one engine and by another alike.
	for _, w := range []int{2, 4, 8} {
		for r := range w {
			e := en.e
			if r%2 == 1 {
				e = other
			}
			_, got := collect(t, e.Steps(ctx, run, r, w, 0, 0))
			require.Len(t, got, len(w1))
			for s := range got {
				for i, smp := range got[s] {
					require.Equal(t, w1[s][r+i*w], smp, "W=%d rank %d step %d pos %d", w, r, s, i)
				}
			}
		}
	}

	// Resume: a fresh engine loads the run by id alone and serves any step
	// range on any W.
	fresh := en.engine(nil)
	loaded, err := fresh.Load(ctx, run.ID(), "")
	require.NoError(t, err)
	require.Equal(t, run.JSON(), loaded.JSON())
	steps, got := collect(t, fresh.Steps(ctx, loaded, 3, 4, 17, 20))
	require.Equal(t, []int64{17, 18, 19}, steps)
	for i, s := range steps {
		for k, smp := range got[i] {
			require.Equal(t, w1[s][3+k*4], smp)
		}
	}
}

// TestFirstEpoch: a component's first epoch has no repeated row, covers
// every row, and is shuffled; also for a component of one row group.
func TestFirstEpoch(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		rgRows  int64
		rows    int64
		shuffle *Shuffle
	}{
		{"one row group", 100000, 9412, nil},
		{"many row groups", 500, 9412, nil},
		{"small window", 500, 9412, &Shuffle{BufferRows: 256}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			en := newEnv(t, bucket.NewMem(), envOpts{rowGroupRows: tc.rgRows})
			en.project("p")
			en.appendRows("p", "main", "a", 0, tc.rows, tc.rows, 4)
			run, err := en.e.Resolve(context.Background(), &Recipe{Seed: 7, BatchSize: 128, Shuffle: tc.shuffle,
				Components: []Component{{Project: "p", Table: "a", Weight: 1, Columns: []string{"id"}}}})
			require.NoError(t, err)
			_, batches := collect(t, en.e.Steps(context.Background(), run, 0, 1, 0, 0))
			// Steps before ⌊N/B⌋ draw only from the first epoch: no repeats.
			full := tc.rows / 128
			seen := make(map[int64]bool)
			var order []int64
			for _, b := range batches[:full] {
				for _, s := range b {
					require.False(t, seen[s.row], "row %d repeated within the first epoch", s.row)
					seen[s.row] = true
					order = append(order, s.row)
				}
			}
			// The next step completes the epoch: every row is covered.
			for _, s := range batches[full] {
				seen[s.row] = true
			}
			require.Len(t, seen, int(tc.rows))
			// Shuffled: rows come in no order related to their ordinals,
			// and the epoch as the plan defines it is a permutation.
			require.Less(t, math.Abs(correlation(order)), 0.1, "first epoch not shuffled")
			var epoch []int64
			for k := range tc.rows {
				epoch = append(epoch, run.Plan().Draw(0, k))
			}
			require.Equal(t, seqN(tc.rows), slices.Sorted(slices.Values(epoch)))
			require.Less(t, spearman(epoch), 0.1, "first epoch not shuffled")
		})
	}
}

func seqN(n int64) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = int64(i)
	}
	return out
}

// correlation is the Pearson correlation of position and value.
func correlation(xs []int64) float64 {
	n := float64(len(xs))
	var sx, sy, sxx, syy, sxy float64
	for i, v := range xs {
		x, y := float64(i), float64(v)
		sx, sy, sxx, syy, sxy = sx+x, sy+y, sxx+x*x, syy+y*y, sxy+x*y
	}
	return (n*sxy - sx*sy) / math.Sqrt((n*sxx-sx*sx)*(n*syy-sy*sy))
}

// spearman is |rank correlation| between position and value of a
// permutation of 0..n-1.
func spearman(p []int64) float64 {
	n := float64(len(p))
	var d2 float64
	for i, v := range p {
		d := float64(i) - float64(v)
		d2 += d * d
	}
	r := 1 - 6*d2/(n*(n*n-1))
	if r < 0 {
		return -r
	}
	return r
}

// TestMidRunCommit: appending to a component's branch mid-run changes
// nothing in the run; the same recipe resolved afterwards is a new run.
func TestMidRunCommit(t *testing.T) {
	t.Parallel()
	en := newEnv(t, newFS(t), envOpts{rowGroupRows: 200})
	twoTables(en, "p", 500, 700)
	ctx := context.Background()
	r := recipe("p", 1, 32, 1, 3)
	run, err := en.e.Resolve(ctx, r)
	require.NoError(t, err)
	_, before := collect(t, en.e.Steps(ctx, run, 0, 1, 0, 0))

	en.appendRows("p", "main", "b", 700, 300, 300, 16)

	fresh := en.engine(nil)
	loaded, err := fresh.Load(ctx, run.ID(), "p")
	require.NoError(t, err)
	_, after := collect(t, fresh.Steps(ctx, loaded, 0, 1, 0, 0))
	require.Equal(t, before, after)

	run2, err := en.e.Resolve(ctx, r)
	require.NoError(t, err)
	require.NotEqual(t, run.ID(), run2.ID())
	require.Equal(t, int64(1000), run2.Record().Components[1].Rows)
}

func TestRunIDChanges(t *testing.T) {
	t.Parallel()
	en := newEnv(t, bucket.NewMem(), envOpts{rowGroupRows: 100})
	twoTables(en, "p", 300, 400)
	ctx := context.Background()
	ids := map[RunID]string{}
	add := func(name string, r *Recipe) {
		run, err := en.e.Resolve(ctx, r)
		require.NoError(t, err, name)
		prev, dup := ids[run.ID()]
		require.False(t, dup, "%s has the run id of %s", name, prev)
		ids[run.ID()] = name
	}
	add("base", recipe("p", 1, 32, 1, 3))
	add("seed", recipe("p", 2, 32, 1, 3))
	add("batch", recipe("p", 1, 64, 1, 3))
	add("weights", recipe("p", 1, 32, 1, 2))
	r := recipe("p", 1, 32, 1, 3)
	r.Components[0].Columns = []string{"id", "vec"}
	add("columns", r)
	r = recipe("p", 1, 32, 1, 3)
	r.Shuffle = &Shuffle{BufferRows: 100}
	add("shuffle", r)
	r = recipe("p", 1, 32, 1, 3)
	r.Steps = 5
	add("steps", r)
	// Proportional weights and another spelling of the same ref are the
	// same run.
	same, err := en.e.Resolve(ctx, recipe("p", 1, 32, 2, 6))
	require.NoError(t, err)
	require.Equal(t, "base", ids[same.ID()])
	head, err := en.v.Resolve(ctx, "p", "main")
	require.NoError(t, err)
	r = recipe("p", 1, 32, 1, 3)
	r.Components[0].Ref = string(head)
	same, err = en.e.Resolve(ctx, r)
	require.NoError(t, err)
	require.Equal(t, "base", ids[same.ID()])
	// The stored record wins: it names the ref of the first resolution.
	require.Equal(t, "main", same.Record().Components[0].Ref)
}

func TestBadRequests(t *testing.T) {
	t.Parallel()
	en := newEnv(t, bucket.NewMem(), envOpts{rowGroupRows: 100})
	twoTables(en, "p", 300, 400)
	ctx := context.Background()
	// A table with no rows: appends cannot make one, a hand-made manifest can.
	schemaBytes, err := tables.EncodeSchema(testSchema)
	require.NoError(t, err)
	_, err = en.v.Commit(ctx, "p", "main", "empty table", func(ctx context.Context, _ *versions.Commit) (map[versions.TableName]versions.ManifestID, error) {
		id, err := en.v.PutManifest(ctx, "p", &versions.Manifest{Table: "empty", Schema: schemaBytes})
		return map[versions.TableName]versions.ManifestID{"empty": id}, err
	})
	require.NoError(t, err)

	for _, tc := range []struct {
		name string
		edit func(*Recipe)
		kind error
		msg  string
	}{
		{"zero weight", func(r *Recipe) { r.Components[1].Weight = 0 }, ErrBadRecipe, "component 1 (p/b): weight 0"},
		{"batch size", func(r *Recipe) { r.BatchSize = 0 }, ErrBadRecipe, "batch_size 0"},
		{"no components", func(r *Recipe) { r.Components = nil }, ErrBadRecipe, "components"},
		{"unknown project", func(r *Recipe) { r.Components[1].Project = "nope" }, versions.ErrProjectNotFound, "component 1"},
		{"unknown table", func(r *Recipe) { r.Components[0].Table = "nope" }, versions.ErrNotFound, "component 0"},
		{"unknown ref", func(r *Recipe) { r.Components[0].Ref = "nope" }, versions.ErrNotFound, "nope"},
		{"unknown column", func(r *Recipe) { r.Components[0].Columns = []string{"id", "nope"} }, versions.ErrInvalid, `"nope"`},
		{"other columns", func(r *Recipe) { r.Components[1].Columns = []string{"id"} }, ErrBadRecipe, "component 1 (p/b) asks for columns [id]"},
		{"reserved column", func(r *Recipe) { r.Components[0].Columns = []string{"_row"} }, ErrBadRecipe, "reserved"},
		{"bad name", func(r *Recipe) { r.Components[0].Table = "a/b" }, versions.ErrInvalidName, "component 0"},
		{"empty table", func(r *Recipe) { r.Components[1].Table = "empty" }, ErrEmptyComponent, "component 1 (p/empty at \"main\"): the table has no rows"},
		{"negative window", func(r *Recipe) { r.Shuffle = &Shuffle{BufferRows: -1} }, ErrBadRecipe, "buffer_rows -1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := recipe("p", 1, 32, 1, 3)
			tc.edit(r)
			_, err := en.e.Resolve(ctx, r)
			require.ErrorIs(t, err, tc.kind)
			require.ErrorContains(t, err, tc.msg)
		})
	}

	run, err := en.e.Resolve(ctx, recipe("p", 1, 32, 1, 3))
	require.NoError(t, err)
	for _, tc := range []struct {
		name        string
		rank, world int
		start, end  int64
		kind        error
		msg         string
	}{
		{"world 0", 0, 0, 0, 0, ErrWorldSize, "world_size 0"},
		{"world not dividing", 0, 3, 0, 0, ErrWorldSize, "does not divide batch_size 32"},
		{"rank", 4, 4, 0, 0, ErrRank, "rank 4"},
		{"start past end", 0, 1, 22, 0, ErrStepRange, "start_step 22 is not in 0..21"},
		{"negative start", 0, 1, -1, 0, ErrStepRange, "start_step -1"},
		{"end before start", 0, 1, 5, 5, ErrStepRange, "end_step 5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, err := range en.e.Steps(ctx, run, tc.rank, tc.world, tc.start, tc.end) {
				require.ErrorIs(t, err, tc.kind)
				require.ErrorIs(t, err, versions.ErrInvalid)
				require.ErrorContains(t, err, tc.msg)
			}
		})
	}

	_, err = en.e.Load(ctx, "abc", "")
	require.ErrorIs(t, err, ErrBadRunID)
	_, err = en.e.Load(ctx, RunID(string(run.ID()[:63])+"0"), "")
	if run.ID()[63] == '0' {
		_, err = en.e.Load(ctx, RunID(string(run.ID()[:63])+"1"), "")
	}
	require.ErrorIs(t, err, ErrRunNotFound)
	require.True(t, errors.Is(err, versions.ErrNotFound))
}

// TestPrepareStore: Prepare resolves without storing (a GetSchema, or a
// request still to be checked, leaves no record); Store writes the record
// once, calls OnRunRecordStored only when it writes, and serves the
// stored record when it finds one.
func TestPrepareStore(t *testing.T) {
	t.Parallel()
	var stored atomic.Int64
	count := func(o *Options) { o.OnRunRecordStored = func() { stored.Add(1) } }
	en := newEnv(t, bucket.NewMem(), envOpts{rowGroupRows: 100, engine: count})
	twoTables(en, "p", 300, 400)
	ctx := context.Background()

	run, err := en.e.Prepare(ctx, recipe("p", 1, 32, 1, 3))
	require.NoError(t, err)
	_, err = en.v.GetRunRecord(ctx, "p", string(run.ID()))
	require.ErrorIs(t, err, versions.ErrNotFound, "Prepare stored the record")
	_, err = en.e.Load(ctx, run.ID(), "")
	require.ErrorIs(t, err, ErrRunNotFound, "a prepared run is not servable by id before Store")
	require.Zero(t, stored.Load())
	collect(t, en.e.Steps(ctx, run, 0, 1, 0, 2)) // but it streams

	served, err := en.e.Store(ctx, run)
	require.NoError(t, err)
	require.Equal(t, run.ID(), served.ID())
	require.EqualValues(t, 1, stored.Load())
	body, err := en.v.GetRunRecord(ctx, "p", string(run.ID()))
	require.NoError(t, err)
	require.Equal(t, run.JSON(), body)
	loaded, err := en.engine(nil).Load(ctx, run.ID(), "")
	require.NoError(t, err)
	require.Equal(t, run.JSON(), loaded.JSON())

	// Again, by Resolve, and with another spelling of the ref on another
	// engine: nothing is written, and the stored record (ref "main") wins.
	_, err = en.e.Resolve(ctx, recipe("p", 1, 32, 1, 3))
	require.NoError(t, err)
	head, err := en.v.Resolve(ctx, "p", "main")
	require.NoError(t, err)
	r := recipe("p", 1, 32, 1, 3)
	r.Components[0].Ref = string(head)
	other := en.engine(count)
	prep, err := other.Prepare(ctx, r)
	require.NoError(t, err)
	require.Equal(t, string(head), prep.Record().Components[0].Ref)
	again, err := other.Store(ctx, prep)
	require.NoError(t, err)
	require.Equal(t, run.ID(), again.ID())
	require.Equal(t, "main", again.Record().Components[0].Ref)
	require.Equal(t, body, again.JSON())
	require.EqualValues(t, 1, stored.Load(), "no second write")
	collect(t, other.Steps(ctx, again, 1, 2, 0, 3))
}
