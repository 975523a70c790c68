package flight_test

import (
	"encoding/json"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/stretchr/testify/require"

	"github.com/weftdata/weft/bucket"
	"github.com/weftdata/weft/client"
)

// TestRowsWindowServed: a server built like flightd serves the episodes
// kinds: a "rows" window over a table with an episode column comes back
// as fixed-size lists clamped to each episode, with _is_pad.
func TestRowsWindowServed(t *testing.T) {
	b, err := bucket.NewFS(t.TempDir())
	require.NoError(t, err)
	e := newEnv(t, b, envOpts{})
	e.createProject("p")
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "episode_index", Type: arrow.PrimitiveTypes.Int64},
		{Name: "x", Type: arrow.PrimitiveTypes.Int64},
	}, nil)
	bld := array.NewRecordBuilder(e.cmem, schema)
	const n = 40 // episodes of 7 rows
	for i := range int64(n) {
		bld.Field(0).(*array.Int64Builder).Append(i / 7)
		bld.Field(1).(*array.Int64Builder).Append(i * 3)
	}
	rec := bld.NewRecordBatch()
	bld.Release()
	rr, err := array.NewRecordReader(schema, []arrow.RecordBatch{rec})
	require.NoError(t, err)
	rec.Release()
	_, err = e.c.Put(ctxT(t), client.PutDescriptor{Project: "p", Branch: "main", Table: "t"}, rr)
	rr.Release()
	require.NoError(t, err)

	r := client.Recipe{Seed: 1, BatchSize: 8, Components: []client.Component{{Project: "p", Table: "t", Weight: 1,
		Windows: map[string]client.Window{"x": {Kind: "rows", Spec: json.RawMessage(`{"offsets":[-1,0,2],"pad":true}`)}}}}}
	plan, err := e.c.Resolve(ctxT(t), r, 1)
	require.NoError(t, err)
	raw, err := json.Marshal(plan.Record.Components[0].Windows)
	require.NoError(t, err)
	require.JSONEq(t, `{"x":{"kind":"rows","offsets":[-1,0,2]}}`, string(raw), "the record holds the canonical spec")
	var seen int
	for st, err := range e.c.ReadRank(ctxT(t), plan.Ranks[0]) {
		require.NoError(t, err)
		batch := st.Batch
		sc := batch.Schema()
		rows := batch.Column(sc.FieldIndices("_row")[0]).(*array.Int64)
		xs := batch.Column(sc.FieldIndices("x")[0]).(*array.FixedSizeList)
		pads := batch.Column(sc.FieldIndices("x_is_pad")[0]).(*array.FixedSizeList)
		vals, pv := xs.ListValues().(*array.Int64), pads.ListValues().(*array.Boolean)
		for i := range int(batch.NumRows()) {
			row := rows.Value(i)
			first, last := row/7*7, min(row/7*7+6, n-1)
			for k, off := range []int64{-1, 0, 2} {
				want := min(max(row+off, first), last)
				require.Equal(t, want*3, vals.Value(i*3+k), "row %d offset %d", row, off)
				require.Equal(t, want != row+off, pv.Value(i*3+k))
			}
			seen++
		}
	}
	require.Positive(t, seen)
}
