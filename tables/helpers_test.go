package tables_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/weftdata/weft/bucket"
	"github.com/weftdata/weft/tables"
	"github.com/weftdata/weft/versions"
)

// testSchema: the kinds of columns Weft tables hold.
var testSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "x", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "emb", Type: arrow.FixedSizeListOf(4, arrow.PrimitiveTypes.Float32), Nullable: true},
	{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "blob", Type: arrow.BinaryTypes.Binary, Nullable: true},
}, nil)

// makeBatch builds rows [start, start+n) of a deterministic test table:
// every column is a function of id, so any row can be checked on its own.
func makeBatch(mem memory.Allocator, start, n int64) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, testSchema)
	defer b.Release()
	ids := b.Field(0).(*array.Int64Builder)
	xs := b.Field(1).(*array.Float64Builder)
	emb := b.Field(2).(*array.FixedSizeListBuilder)
	embv := emb.ValueBuilder().(*array.Float32Builder)
	names := b.Field(3).(*array.StringBuilder)
	blobs := b.Field(4).(*array.BinaryBuilder)
	for id := start; id < start+n; id++ {
		ids.Append(id)
		if id%7 == 3 {
			xs.AppendNull()
		} else {
			xs.Append(float64(id) * 0.5)
		}
		emb.Append(true)
		for k := range 4 {
			embv.Append(float32(id) + float32(k)/4)
		}
		names.Append(fmt.Sprintf("row-%d", id))
		blobs.Append(blobFor(id))
	}
	return b.NewRecordBatch()
}

func blobFor(id int64) []byte {
	out := make([]byte, 8+id%13)
	for i := range out {
		out[i] = byte(id>>uint(i%8*8)) ^ byte(i)
	}
	return out
}

// checkRow asserts that row i of rec (with all columns) is the row with id.
func checkRow(t *testing.T, rec arrow.RecordBatch, i int, id int64) {
	t.Helper()
	require.Equal(t, id, rec.Column(0).(*array.Int64).Value(i))
	x := rec.Column(1).(*array.Float64)
	if id%7 == 3 {
		require.True(t, x.IsNull(i))
	} else {
		require.Equal(t, float64(id)*0.5, x.Value(i))
	}
	emb := rec.Column(2).(*array.FixedSizeList)
	vals := emb.ListValues().(*array.Float32)
	start, _ := emb.ValueOffsets(i)
	for k := range 4 {
		require.Equal(t, float32(id)+float32(k)/4, vals.Value(int(start)+k))
	}
	require.Equal(t, fmt.Sprintf("row-%d", id), rec.Column(3).(*array.String).Value(i))
	require.Equal(t, blobFor(id), rec.Column(4).(*array.Binary).Value(i))
}

// reader wraps batches as a RecordReader (it takes ownership).
func reader(t *testing.T, recs ...arrow.RecordBatch) array.RecordReader {
	t.Helper()
	r, err := array.NewRecordReader(testSchema, recs)
	require.NoError(t, err)
	for _, rec := range recs {
		rec.Release()
	}
	return r
}

type env struct {
	b   bucket.Bucket
	v   *versions.Store
	s   *tables.Store
	mem *memory.CheckedAllocator
}

func newEnv(t *testing.T, b bucket.Bucket, opts tables.Options) *env {
	t.Helper()
	v, err := versions.New(b, versions.DefaultOptions())
	require.NoError(t, err)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	opts.Allocator = mem
	s, err := tables.New(v, opts)
	require.NoError(t, err)
	return &env{b: b, v: v, s: s, mem: mem}
}

// newProjectEnv is newEnv with project "p" created.
func newProjectEnv(t *testing.T, b bucket.Bucket, opts tables.Options) *env {
	t.Helper()
	e := newEnv(t, b, opts)
	_, err := e.v.CreateProject(context.Background(), "p")
	require.NoError(t, err)
	return e
}

// append adds rows [start, start+n) in batches of at most per rows.
func (e *env) append(t *testing.T, p versions.ProjectName, br versions.BranchName, tbl versions.TableName, start, n, per int64) *tables.AppendResult {
	t.Helper()
	var recs []arrow.RecordBatch
	for off := int64(0); off < n; off += per {
		recs = append(recs, makeBatch(e.mem, start+off, min(per, n-off)))
	}
	r := reader(t, recs...)
	defer r.Release()
	res, err := e.s.Append(context.Background(), p, br, tbl, r, "")
	require.NoError(t, err)
	return res
}

// readAll scans every block of v and returns the ids in order, checking each row.
func (e *env) readAll(t *testing.T, v *tables.Version) []int64 {
	t.Helper()
	var ids []int64
	for rec, err := range e.s.Scan(context.Background(), v, nil, 0, len(v.Blocks()), 1<<30) {
		require.NoError(t, err)
		for i := range int(rec.NumRows()) {
			id := rec.Column(0).(*array.Int64).Value(i)
			checkRow(t, rec, i, id)
			ids = append(ids, id)
		}
		rec.Release()
	}
	return ids
}

func seq(start, n int64) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = start + int64(i)
	}
	return out
}
