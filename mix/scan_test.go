package mix

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/stretchr/testify/require"

	"github.com/weftdata/weft/versions"
)

// TestScanSteps: a windowed scan of one version streams any row range in
// row order, in steps of at most N rows, each row with the window a run
// gives it (checked against the brute-force truth), through the seam
// test's row-window kind; stopping early releases everything (the
// checked allocator and the kind's live-step count say so).
func TestScanSteps(t *testing.T) {
	t.Parallel()
	kind := &rowWindowKind{}
	en := newEnv(t, newFS(t), envOpts{rowGroupRows: 64, engine: func(o *Options) { o.Kinds = map[string]Kind{"rowwindow": kind} }})
	en.project("p")
	truth := windowTable(t, en.tables, "p", "a", 300)
	ctx := context.Background()
	v, err := en.tables.Table(ctx, "p", "main", versions.TableName("a"))
	require.NoError(t, err)
	spec := json.RawMessage(`{"offsets":[-3,0,1,7]}`)
	sc, err := en.e.PrepareScan(ctx, v, nil, map[string]Window{"x": {Kind: "rowwindow", Spec: spec}})
	require.NoError(t, err)
	require.Equal(t, []string{"id"}, sc.Columns(), "x is the window's, not a column")
	require.Equal(t, []string{"id", "x", "x_is_pad", RowColumn}, fieldNames(sc.Schema()))

	for _, tc := range []struct {
		lo, hi int64
		n      int
	}{{0, 300, 7}, {0, 300, 1000}, {60, 131, 5}, {299, 300, 3}} {
		var rows []int64
		var step int64
		for st, err := range sc.Steps(ctx, tc.lo, tc.hi, tc.n) {
			require.NoError(t, err)
			require.Equal(t, step, st.Step)
			require.LessOrEqual(t, st.Batch.NumRows(), int64(tc.n))
			// checkWindow reads _component: a scan's batch has none, so
			// add it (component 0) to reuse the run's check.
			cb := array.NewInt32Builder(en.mem)
			cb.AppendValues(make([]int32, st.Batch.NumRows()), nil)
			comp := cb.NewArray()
			cb.Release()
			last := int(st.Batch.NumCols()) - 1
			fields := append(st.Batch.Schema().Fields()[:last:last], arrow.Field{Name: ComponentColumn, Type: arrow.PrimitiveTypes.Int32}, st.Batch.Schema().Field(last))
			cols := append(st.Batch.Columns()[:last:last], comp, st.Batch.Column(last))
			withComp := array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, st.Batch.NumRows())
			comp.Release()
			checkWindow(t, withComp, [][]int64{truth}, [][]int64{{-3, 0, 1, 7}})
			withComp.Release()
			rows = append(rows, st.Batch.Column(int(st.Batch.NumCols())-1).(*array.Int64).Int64Values()...)
			st.Batch.Release()
			step++
		}
		want := make([]int64, 0, tc.hi-tc.lo)
		for r := tc.lo; r < tc.hi; r++ {
			want = append(want, r)
		}
		require.Equal(t, want, rows, "rows [%d, %d) in steps of %d", tc.lo, tc.hi, tc.n)
	}

	// Stopping after the first step releases what was prefetched.
	for st, err := range sc.Steps(ctx, 0, 300, 4) {
		require.NoError(t, err)
		st.Batch.Release()
		break
	}
	require.Zero(t, kind.live.Load())

	for _, bad := range [][3]int64{{-1, 10, 4}, {10, 10, 4}, {0, 301, 4}, {0, 10, 0}, {0, 10, MaxScanStepRows + 1}} {
		for _, err := range sc.Steps(ctx, bad[0], bad[1], int(bad[2])) {
			require.ErrorIs(t, err, ErrStepRange)
		}
	}
	for name, ws := range map[string]map[string]Window{
		"unknown kind": {"x": {Kind: "nope"}},
		"bad spec":     {"x": {Kind: "rowwindow", Spec: json.RawMessage(`{"offsets":[]}`)}},
		"reserved":     {RowColumn: {Kind: "rowwindow", Spec: spec}},
		"no kind":      {"x": {}},
		"none":         nil,
	} {
		_, err := en.e.PrepareScan(ctx, v, nil, ws)
		require.ErrorIs(t, err, ErrBadWindow, name)
	}
	_, err = en.e.PrepareScan(ctx, v, []string{"id", "x"}, map[string]Window{"x": {Kind: "rowwindow", Spec: spec}})
	require.ErrorContains(t, err, "both a column and a window")
}
