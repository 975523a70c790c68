package tables_test

import (
	"context"
	"encoding/json"
	"flag"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/stretchr/testify/require"

	"github.com/weftdata/weft/bucket"
	"github.com/weftdata/weft/tables"
)

var updateLayout = flag.Bool("update", false, "rewrite golden files")

// layoutSchema: a small-row part (id, 32 float32 features, label) and a
// 1 KiB binary column, so that one table has a narrow and a wide
// projection.
var layoutSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "features", Type: arrow.FixedSizeListOf(32, arrow.PrimitiveTypes.Float32)},
	{Name: "label", Type: arrow.PrimitiveTypes.Int64},
	{Name: "blob", Type: arrow.BinaryTypes.Binary},
}, nil)

// layoutGolden is testdata/layout.json.
type layoutGolden struct {
	Rows      int64                       `json:"rows"`
	RowGroups []int64                     `json:"row_groups"`
	Layouts   map[string]projectionLayout `json:"layouts"`
}

type projectionLayout struct {
	Columns []string `json:"columns"`
	Bytes   int64    `json:"bytes"`  // uncompressed Parquet bytes of the projection
	Blocks  []int64  `json:"blocks"` // Store.Layout with DefaultLayout
}

// TestGoldenLayout pins the block layout (Store.Layout with
// DefaultLayout) of a deterministic table written with fixed options, for
// a narrow-row and a wide-row projection, in testdata/layout.json. Block
// sizes are recorded in run records and change run ids, so a change to
// the layout rule, its constants or the Parquet writer's page cuts shows
// here, in review. Rewrite with go test -run TestGoldenLayout -update.
func TestGoldenLayout(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newProjectEnv(t, bucket.NewMem(), tables.Options{RowGroupRows: 10_000, RowGroupBytes: 128 << 20, FooterCacheBytes: 1 << 20})
	const rows = 25_000
	rng := rand.New(rand.NewPCG(12, 9))
	b := array.NewRecordBuilder(e.mem, layoutSchema)
	fv := b.Field(1).(*array.FixedSizeListBuilder)
	blob := make([]byte, 1024)
	for i := range int64(rows) {
		b.Field(0).(*array.Int64Builder).Append(i)
		fv.Append(true)
		for range 32 {
			fv.ValueBuilder().(*array.Float32Builder).Append(float32(rng.NormFloat64()))
		}
		b.Field(2).(*array.Int64Builder).Append(int64(rng.IntN(1000)))
		for j := range blob {
			blob[j] = byte(rng.Uint32())
		}
		b.Field(3).(*array.BinaryBuilder).Append(blob)
	}
	rec := b.NewRecordBatch()
	b.Release()
	r, err := array.NewRecordReader(layoutSchema, []arrow.RecordBatch{rec})
	require.NoError(t, err)
	_, err = e.s.Append(ctx, "p", "main", "t", r, "")
	r.Release()
	rec.Release()
	require.NoError(t, err)
	v, err := e.s.Table(ctx, "p", "main", "t")
	require.NoError(t, err)

	got := layoutGolden{Rows: v.Rows(), Layouts: map[string]projectionLayout{}}
	for _, f := range v.Manifest.Files {
		got.RowGroups = append(got.RowGroups, f.RowGroups...)
	}
	for name, cols := range map[string][]string{"narrow": {"id", "features", "label"}, "wide": {"id", "blob"}} {
		proj, err := v.Projection(cols)
		require.NoError(t, err)
		blocks, bytes, err := e.s.Layout(ctx, v, proj, tables.DefaultLayout())
		require.NoError(t, err)
		got.Layouts[name] = projectionLayout{Columns: cols, Bytes: bytes, Blocks: blocks}
	}
	data, err := json.MarshalIndent(got, "", " ")
	require.NoError(t, err)
	data = append(data, '\n')
	path := filepath.Join("testdata", "layout.json")
	if *updateLayout {
		require.NoError(t, os.WriteFile(path, data, 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "no golden layout: run go test -run TestGoldenLayout -update ./tables/")
	require.Equal(t, string(want), string(data), "the block layout changed: new run ids for every new run; if intended, rewrite %s with -update and say so in the commit", path)
}
