package tables_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/stretchr/testify/require"

	"github.com/weftdata/weft/bucket"
	"github.com/weftdata/weft/tables"
)

// TestWideRowsGetSmallPages: 100 KiB values are written in pages near the
// 128 KiB target, not one page per 1,024 values (~100 MB), so a reader can
// fetch a few rows without reading the whole column chunk.
func TestWideRowsGetSmallPages(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := bucket.NewMem()
	e := newProjectEnv(t, b, tables.DefaultOptions())

	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "image", Type: arrow.BinaryTypes.Binary}}, nil)
	bld := array.NewRecordBuilder(e.mem, schema)
	image := bytes.Repeat([]byte{7}, 100<<10)
	const rows = 200
	for i := range rows {
		bld.Field(0).(*array.Int64Builder).Append(int64(i))
		image[0] = byte(i)
		bld.Field(1).(*array.BinaryBuilder).Append(image)
	}
	rec := bld.NewRecordBatch()
	bld.Release()
	r, err := array.NewRecordReader(schema, []arrow.RecordBatch{rec})
	require.NoError(t, err)
	rec.Release()
	defer r.Release()
	res, err := e.s.Append(ctx, "p", "main", "images", r, "")
	require.NoError(t, err)

	obj, err := b.Open(ctx, "projects/p/"+res.File.Path)
	require.NoError(t, err)
	data, err := bucket.ReadAll(obj)
	require.NoError(t, err)
	pf, err := file.NewParquetReader(bytes.NewReader(data))
	require.NoError(t, err)
	defer pf.Close()
	pages, err := pf.RowGroup(0).GetColumnPageReader(1)
	require.NoError(t, err)
	n := 0
	for pages.Next() {
		n++
	}
	require.NoError(t, pages.Err())
	// 200 values of 100 KiB are ~20 MB: pages of one or two values (a page
	// is flushed at the first write batch that takes it past 128 KiB).
	require.GreaterOrEqual(t, n, 100, "pages of the image column")

	v, err := e.s.Table(ctx, "p", "main", "images")
	require.NoError(t, err)
	rd := e.s.NewReader(nil)
	defer rd.Close()
	proj, err := v.Projection([]string{"image"})
	require.NoError(t, err)
	got, err := rd.GatherRows(ctx, v, []int64{199, 3}, proj)
	require.NoError(t, err)
	defer got.Release()
	require.Equal(t, byte(199), got.Column(0).(*array.Binary).Value(0)[0])
	require.Equal(t, byte(3), got.Column(0).(*array.Binary).Value(1)[0])
}
