package mix

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/weftdata/weft/sampler"
	"github.com/weftdata/weft/tables"
	"github.com/weftdata/weft/versions"
)

// The seam test (issue 12.3): a second materializer, defined here and
// registered through Options.Kinds, serves a column that no non-test file
// knows about.
//
// rowWindowKind is a "row window": for each sample, the values of an
// int64 column at offsets k of the spec from the sample's row, in the
// same component, clamped to the table (the edge row repeats), and
// <key>_is_pad flags the clamped ones. Spec: {"offsets": [k, …]}; the key
// names the column. Components may give other offsets, of one length.
type rowWindowKind struct {
	live atomic.Int64 // steps prefetched and not yet released
}

type rowWindowSpec struct {
	Offsets []int64 `json:"offsets"`
}

func (k *rowWindowKind) New(_ context.Context, env Env, key string, in []Input) (Materializer, error) {
	m := &rowWindow{k: k, env: env, key: key, offsets: make([][]int64, len(in)), versions: make([]*tables.Version, len(in))}
	for i, c := range in {
		var spec rowWindowSpec
		if err := json.Unmarshal(c.Spec, &spec); err != nil || len(spec.Offsets) == 0 {
			return nil, fmt.Errorf("%w: component %d: a row window is {\"offsets\": [k, …]}, not %s", ErrBadWindow, i, c.Spec)
		}
		if i > 0 && len(spec.Offsets) != len(m.offsets[0]) {
			return nil, fmt.Errorf("%w: component %d has %d offsets, component 0 %d", ErrBadWindow, i, len(spec.Offsets), len(m.offsets[0]))
		}
		proj, err := c.Version.Projection([]string{key})
		if err != nil {
			return nil, fmt.Errorf("%w: component %d: %w", ErrBadWindow, i, err)
		}
		if proj.Field(0).Type.ID() != arrow.INT64 {
			return nil, fmt.Errorf("%w: component %d: column %q is %s, not int64", ErrBadWindow, i, key, proj.Field(0).Type)
		}
		m.proj = proj
		m.offsets[i], m.versions[i] = spec.Offsets, c.Version
	}
	n := int32(len(m.offsets[0]))
	m.fields = []arrow.Field{
		{Name: key, Type: arrow.FixedSizeListOf(n, arrow.PrimitiveTypes.Int64)},
		{Name: key + "_is_pad", Type: arrow.FixedSizeListOf(n, arrow.FixedWidthTypes.Boolean)},
	}
	return m, nil
}

type rowWindow struct {
	k        *rowWindowKind
	env      Env
	key      string
	proj     *arrow.Schema
	offsets  [][]int64 // per component
	versions []*tables.Version
	fields   []arrow.Field
}

func (m *rowWindow) Fields() []arrow.Field { return m.fields }

// Prefetch starts one read per component of the step: the rows its
// windows touch, gathered with the engine's reader.
func (m *rowWindow) Prefetch(ctx context.Context, loads *Loads, samples []sampler.Sample) Pending {
	m.k.live.Add(1)
	p := &rowWindowStep{m: m, samples: slices.Clone(samples), reads: make([]rowRead, len(m.versions))}
	need := make([]map[int64]bool, len(m.versions))
	for _, s := range samples {
		if need[s.Component] == nil {
			need[s.Component] = map[int64]bool{}
		}
		for _, k := range m.offsets[s.Component] {
			row, _ := clampRow(s.Row+k, m.versions[s.Component].Rows())
			need[s.Component][row] = true
		}
	}
	for c := range need {
		r := &p.reads[c]
		r.done = make(chan struct{})
		if need[c] == nil {
			close(r.done)
			continue
		}
		r.rows = slices.Sorted(maps.Keys(need[c]))
		loads.Go(ctx, func(err error) {
			defer close(r.done)
			if r.err = err; err == nil {
				r.rec, r.err = m.env.Reader.GatherRows(ctx, m.versions[c], r.rows, m.proj)
			}
		})
	}
	return p
}

func clampRow(row, n int64) (int64, bool) {
	switch {
	case row < 0:
		return 0, true
	case row >= n:
		return n - 1, true
	}
	return row, false
}

type rowRead struct {
	done chan struct{}
	rows []int64 // sorted
	rec  arrow.RecordBatch
	err  error
}

type rowWindowStep struct {
	m       *rowWindow
	samples []sampler.Sample
	reads   []rowRead
}

func (p *rowWindowStep) Build(ctx context.Context) ([]arrow.Array, error) {
	for c := range p.reads {
		select {
		case <-p.reads[c].done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if p.reads[c].err != nil {
			return nil, fmt.Errorf("component %d: %w", c, p.reads[c].err)
		}
	}
	vals := array.NewFixedSizeListBuilder(p.m.env.Allocator, p.m.fields[0].Type.(*arrow.FixedSizeListType).Len(), arrow.PrimitiveTypes.Int64)
	defer vals.Release()
	pads := array.NewFixedSizeListBuilder(p.m.env.Allocator, p.m.fields[1].Type.(*arrow.FixedSizeListType).Len(), arrow.FixedWidthTypes.Boolean)
	defer pads.Release()
	vb, pb := vals.ValueBuilder().(*array.Int64Builder), pads.ValueBuilder().(*array.BooleanBuilder)
	for _, s := range p.samples {
		r := &p.reads[s.Component]
		col := r.rec.Column(0).(*array.Int64)
		vals.Append(true)
		pads.Append(true)
		for _, k := range p.m.offsets[s.Component] {
			row, pad := clampRow(s.Row+k, p.m.versions[s.Component].Rows())
			i, _ := slices.BinarySearch(r.rows, row)
			vb.Append(col.Value(i))
			pb.Append(pad)
		}
	}
	return []arrow.Array{vals.NewArray(), pads.NewArray()}, nil
}

func (p *rowWindowStep) Release() {
	for c := range p.reads {
		<-p.reads[c].done
		if p.reads[c].rec != nil {
			p.reads[c].rec.Release()
			p.reads[c].rec = nil
		}
	}
	p.m.k.live.Add(-1)
}

// windowTable appends a table of n rows: "id" (the row ordinal) and "x",
// an int64 that is a hash of tag and id, in row groups of 64 rows. It
// returns x, the brute-force truth.
func windowTable(t *testing.T, ts *tables.Store, p, tag string, n int64) []int64 {
	t.Helper()
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "x", Type: arrow.PrimitiveTypes.Int64}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	xs := make([]int64, n)
	for i := range n {
		xs[i] = int64(uint64(i)*0x9E3779B97F4A7C15^uint64(len(tag))<<60) >> 3
		b.Field(0).(*array.Int64Builder).Append(i)
		b.Field(1).(*array.Int64Builder).Append(xs[i])
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	rr, err := array.NewRecordReader(schema, []arrow.RecordBatch{rec})
	require.NoError(t, err)
	defer rr.Release()
	_, err = ts.Append(context.Background(), versions.ProjectName(p), "main", versions.TableName(tag), rr, "")
	require.NoError(t, err)
	return xs
}

func TestSeam(t *testing.T) {
	t.Parallel()
	kind := &rowWindowKind{}
	withKind := func(o *Options) { o.Kinds = map[string]Kind{"rowwindow": kind} }
	en := newEnv(t, newFS(t), envOpts{rowGroupRows: 64, engine: withKind})
	en.project("p")
	truth := [][]int64{windowTable(t, en.tables, "p", "a", 500), windowTable(t, en.tables, "p", "bb", 700)}
	offsets := [][]int64{{-3, 0, 1, 7}, {-1, 0, 2, 40}}
	ctx := context.Background()

	win := func(off []int64) map[string]Window {
		spec, err := json.Marshal(rowWindowSpec{Offsets: off})
		require.NoError(t, err)
		return map[string]Window{"x": {Kind: "rowwindow", Spec: spec}}
	}
	r := &Recipe{Seed: 5, BatchSize: 32, Components: []Component{
		{Project: "p", Table: "a", Weight: 1, Windows: win(offsets[0])},
		{Project: "p", Table: "bb", Weight: 2, Windows: win(offsets[1])},
	}}
	run, err := en.e.Resolve(ctx, r)
	require.NoError(t, err)
	rec := run.Record()
	require.Equal(t, []string{"id"}, rec.Components[0].Columns, "x is the window's, not a column")
	require.JSONEq(t, `{"x":{"kind":"rowwindow","offsets":[-1,0,2,40]}}`, mustJSON(t, rec.Components[1].Windows))
	require.Contains(t, string(run.JSON()), `"windows":{"x":{"kind":"rowwindow","offsets":[-3,0,1,7]}}`)
	require.Equal(t, []string{"id", "x", "x_is_pad", ComponentColumn, RowColumn}, fieldNames(run.Schema()))

	// Every step, at W = 1 and W = 2, matches the brute-force window.
	check := func(batch arrow.RecordBatch) int {
		t.Helper()
		got := checkWindow(t, batch, truth, offsets)
		batch.Release()
		return got
	}
	var pads int
	for st, err := range en.e.Steps(ctx, run, 0, 1, 0, 0) {
		require.NoError(t, err)
		pads += check(st.Batch)
	}
	require.Positive(t, pads, "some windows reach past a table edge")
	for rank := range 2 {
		for st, err := range en.e.Steps(ctx, run, rank, 2, 3, 9) {
			require.NoError(t, err)
			check(st.Batch)
		}
	}

	// The windows are part of the run: the same recipe without them, or
	// with other offsets, is another run.
	plain := &Recipe{Seed: 5, BatchSize: 32, Components: []Component{{Project: "p", Table: "a", Weight: 1}, {Project: "p", Table: "bb", Weight: 2}}}
	prun, err := en.e.Prepare(ctx, plain)
	require.NoError(t, err)
	require.NotEqual(t, run.ID(), prun.ID())
	require.NotContains(t, string(prun.JSON()), "windows")
	other := *r
	other.Components = slices.Clone(r.Components)
	other.Components[1].Windows = win([]int64{-1, 0, 2, 41})
	orun, err := en.e.Prepare(ctx, &other)
	require.NoError(t, err)
	require.NotEqual(t, run.ID(), orun.ID())

	// The Parquet rows kind serves a window too: the column as is.
	pr := &Recipe{Seed: 5, BatchSize: 32, Steps: 3, Components: []Component{
		{Project: "p", Table: "a", Weight: 1, Windows: map[string]Window{"x": {Kind: KindParquet}}},
		{Project: "p", Table: "bb", Weight: 2}}}
	prun, err = en.e.Resolve(ctx, pr)
	require.NoError(t, err)
	require.Equal(t, []string{"id", "x", ComponentColumn, RowColumn}, fieldNames(prun.Schema()))
	for st, err := range en.e.Steps(ctx, prun, 0, 1, 0, 0) {
		require.NoError(t, err)
		sc := st.Batch.Schema()
		comps := st.Batch.Column(sc.FieldIndices(ComponentColumn)[0]).(*array.Int32)
		rows := st.Batch.Column(sc.FieldIndices(RowColumn)[0]).(*array.Int64)
		xs := st.Batch.Column(sc.FieldIndices("x")[0]).(*array.Int64)
		for i := range xs.Len() {
			require.Equal(t, truth[comps.Value(i)][rows.Value(i)], xs.Value(i))
		}
		st.Batch.Release()
	}

	// Another server with the kind serves the stored run identically; one
	// without it says which kind it lacks.
	fresh := en.engine(withKind)
	loaded, err := fresh.Load(ctx, run.ID(), "")
	require.NoError(t, err)
	for st, err := range fresh.Steps(ctx, loaded, 1, 4, 0, 0) {
		require.NoError(t, err)
		check(st.Batch)
	}
	_, err = en.engine(nil).Load(ctx, run.ID(), "")
	require.ErrorIs(t, err, ErrUnknownKind)
	require.ErrorContains(t, err, `no materializer of kind "rowwindow"`)

	// Cancelling a stream releases every prefetched step.
	cctx, cancel := context.WithCancel(ctx)
	for st, err := range en.e.Steps(cctx, run, 0, 1, 0, 0) {
		if err != nil {
			break
		}
		st.Batch.Release()
		cancel()
	}
	cancel()
	require.Zero(t, kind.live.Load(), "steps prefetched and never released")

	// Specs the kind or the engine rejects.
	for _, tc := range []struct {
		name string
		edit func(*Recipe)
		kind error
		msg  string
	}{
		{"kind rejects the spec", func(r *Recipe) { r.Components[0].Windows = map[string]Window{"x": {Kind: "rowwindow"}} }, ErrBadWindow, `component 0: a row window is {"offsets"`},
		{"no such column", func(r *Recipe) {
			r.Components[0].Windows = win(offsets[0])
			r.Components[1].Windows = nil
			r.Components[0].Windows["y"] = r.Components[0].Windows["x"]
			delete(r.Components[0].Windows, "x")
		}, ErrBadWindow, `"y"`},
		{"unknown kind", func(r *Recipe) {
			r.Components[1].Windows = nil
			r.Components[0].Windows = map[string]Window{"x": {Kind: "video"}}
		}, ErrUnknownKind, `window "x": this server has no materializer of kind "video" (it has: parquet, rowwindow)`},
		{"other keys", func(r *Recipe) { r.Components[1].Windows = map[string]Window{"id": {Kind: "rowwindow"}} }, ErrBadWindow, "component 1 (p/bb): windows [id] differ from component 0's [x]"},
		{"column and window", func(r *Recipe) { r.Components[0].Columns = []string{"id", "x"} }, ErrBadWindow, `"x" is both a column and a window`},
		{"reserved", func(r *Recipe) {
			r.Components[0].Windows = map[string]Window{"_row": {Kind: "rowwindow"}}
			r.Components[1].Windows = nil
		}, ErrBadWindow, "reserved"},
		{"lengths differ", func(r *Recipe) { r.Components[1].Windows = win([]int64{1}) }, ErrBadWindow, "component 1 has 1 offsets"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := *r
			bad.Components = slices.Clone(r.Components)
			for i := range bad.Components {
				bad.Components[i].Windows = maps.Clone(bad.Components[i].Windows)
			}
			tc.edit(&bad)
			_, err := en.e.Prepare(ctx, &bad)
			require.ErrorIs(t, err, tc.kind)
			require.ErrorIs(t, err, ErrBadRecipe)
			require.ErrorContains(t, err, tc.msg)
		})
	}
}

// checkWindow checks each row's x and x_is_pad against the brute-force
// window of its (component, row), and returns how many offsets were pads.
func checkWindow(t *testing.T, rec arrow.RecordBatch, truth, offsets [][]int64) int {
	t.Helper()
	sc := rec.Schema()
	comps := rec.Column(sc.FieldIndices(ComponentColumn)[0]).(*array.Int32)
	rows := rec.Column(sc.FieldIndices(RowColumn)[0]).(*array.Int64)
	ids := rec.Column(sc.FieldIndices("id")[0]).(*array.Int64)
	xs := rec.Column(sc.FieldIndices("x")[0]).(*array.FixedSizeList)
	pads := rec.Column(sc.FieldIndices("x_is_pad")[0]).(*array.FixedSizeList)
	xv, pv := xs.ListValues().(*array.Int64), pads.ListValues().(*array.Boolean)
	n := 0
	for i := range int(rec.NumRows()) {
		c, row := comps.Value(i), rows.Value(i)
		require.Equal(t, row, ids.Value(i))
		table := truth[c]
		for j, k := range offsets[c] {
			want, pad := row+k, false
			if want < 0 {
				want, pad = 0, true
			}
			if want >= int64(len(table)) {
				want, pad = int64(len(table))-1, true
			}
			at := i*len(offsets[c]) + j
			require.Equal(t, table[want], xv.Value(at), "component %d, row %d, offset %d", c, row, k)
			require.Equal(t, pad, pv.Value(at), "component %d, row %d, offset %d: pad", c, row, k)
			if pad {
				n++
			}
		}
	}
	return n
}

func fieldNames(s *arrow.Schema) []string {
	var out []string
	for _, f := range s.Fields() {
		out = append(out, f.Name)
	}
	return out
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

var _ Kind = (*rowWindowKind)(nil)
