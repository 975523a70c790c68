package mix

import (
	"context"
	"fmt"
	"iter"
	"os"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/weftdata/weft/bucket"
	"github.com/weftdata/weft/internal/s3test"
	"github.com/weftdata/weft/tables"
	"github.com/weftdata/weft/versions"
)

func TestMain(m *testing.M) {
	code := s3test.Main(m)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// testSchema: the kinds of columns a training table holds. Every column is
// a function of id, and id is the row's ordinal in its table (appends are
// numbered on).
var testSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "vec", Type: arrow.FixedSizeListOf(3, arrow.PrimitiveTypes.Float32)},
	{Name: "blob", Type: arrow.BinaryTypes.Binary},
	{Name: "ok", Type: arrow.FixedWidthTypes.Boolean},
}, nil)

// makeBatch builds rows [start, start+n) of a test table; tag marks the
// table in name and blob so rows of different tables differ.
func makeBatch(mem memory.Allocator, tag string, start, n int64, blobLen int) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, testSchema)
	defer b.Release()
	blob := make([]byte, blobLen)
	for id := start; id < start+n; id++ {
		b.Field(0).(*array.Int64Builder).Append(id)
		if id%5 == 4 {
			b.Field(1).AppendNull()
		} else {
			b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("%s-%d", tag, id))
		}
		fl := b.Field(2).(*array.FixedSizeListBuilder)
		fl.Append(true)
		for k := range 3 {
			fl.ValueBuilder().(*array.Float32Builder).Append(float32(id) + float32(k)/4)
		}
		fillBlob(blob, id)
		b.Field(3).(*array.BinaryBuilder).Append(blob)
		b.Field(4).(*array.BooleanBuilder).Append(id%3 == 0)
	}
	return b.NewRecordBatch()
}

// fillBlob fills blob with incompressible bytes, a function of id.
func fillBlob(blob []byte, id int64) {
	x := uint64(id) * 0x9E3779B97F4A7C15
	for i := range blob {
		if i%8 == 0 {
			x = x*6364136223846793005 + 1442695040888963407
		}
		blob[i] = byte(x >> (8 * (i % 8)))
	}
}

// env is an engine over one bucket, with the stores behind it.
type env struct {
	t      testing.TB
	b      bucket.Bucket
	v      *versions.Store
	tables *tables.Store
	e      *Engine
	mem    *memory.CheckedAllocator
}

type envOpts struct {
	rowGroupRows int64
	engine       func(*Options)
}

func newEnv(t testing.TB, b bucket.Bucket, o envOpts) *env {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	v, err := versions.New(b, versions.DefaultOptions())
	require.NoError(t, err)
	to := tables.DefaultOptions()
	if o.rowGroupRows > 0 {
		to.RowGroupRows = o.rowGroupRows
	}
	ts, err := tables.New(v, to)
	require.NoError(t, err)
	eo := DefaultOptions()
	eo.Allocator = mem
	if o.engine != nil {
		o.engine(&eo)
	}
	e, err := New(ts, eo)
	require.NoError(t, err)
	en := &env{t: t, b: b, v: v, tables: ts, e: e, mem: mem}
	t.Cleanup(func() {
		e.Close()
		mem.AssertSize(t, 0)
	})
	return en
}

// engine returns another engine over the same bucket (as another server
// would be), sharing the checked allocator.
func (en *env) engine(opts func(*Options)) *Engine {
	eo := DefaultOptions()
	eo.Allocator = en.mem
	if opts != nil {
		opts(&eo)
	}
	e, err := New(en.tables, eo)
	require.NoError(en.t, err)
	en.t.Cleanup(e.Close)
	return e
}

func (en *env) project(p string) {
	en.t.Helper()
	_, err := en.v.CreateProject(context.Background(), versions.ProjectName(p))
	require.NoError(en.t, err)
}

// appendRows appends rows [start, start+n) of table t (in pieces of at most
// per rows, one commit each) to branch br of project p.
func (en *env) appendRows(p, br, t string, start, n, per int64, blobLen int) versions.CommitID {
	en.t.Helper()
	var last versions.CommitID
	for off := start; off < start+n; off += per {
		k := min(per, start+n-off)
		rec := makeBatch(memory.DefaultAllocator, t, off, k, blobLen)
		rr, err := array.NewRecordReader(testSchema, []arrow.RecordBatch{rec})
		require.NoError(en.t, err)
		res, err := en.tables.Append(context.Background(), versions.ProjectName(p), versions.BranchName(br), versions.TableName(t), rr, "")
		rr.Release()
		rec.Release()
		require.NoError(en.t, err)
		last = res.Commit.ID
	}
	return last
}

// collect reads a rank stream into per-step samples, checking every row
// against its table's content, and releases the batches.
func collect(t testing.TB, seq iter.Seq2[Step, error]) (steps []int64, samples [][]sample) {
	t.Helper()
	for st, err := range seq {
		require.NoError(t, err)
		steps = append(steps, st.Step)
		samples = append(samples, checkBatch(t, st.Batch))
		st.Batch.Release()
	}
	return steps, samples
}

type sample struct {
	comp int32
	row  int64
}

// checkBatch checks that every row of a batch is the row its _row names:
// id equals _row, and the other columns follow from id.
func checkBatch(t testing.TB, rec arrow.RecordBatch) []sample {
	t.Helper()
	schema := rec.Schema()
	idx := func(name string) int {
		i := schema.FieldIndices(name)
		require.Len(t, i, 1, name)
		return i[0]
	}
	comps := rec.Column(idx(ComponentColumn)).(*array.Int32)
	rows := rec.Column(idx(RowColumn)).(*array.Int64)
	out := make([]sample, rec.NumRows())
	for i := range out {
		out[i] = sample{comps.Value(i), rows.Value(i)}
	}
	if f := schema.FieldIndices("id"); len(f) == 1 {
		ids := rec.Column(f[0]).(*array.Int64)
		for i := range out {
			require.Equal(t, out[i].row, ids.Value(i), "row %d: id vs _row", i)
		}
	}
	if f := schema.FieldIndices("vec"); len(f) == 1 {
		vec := rec.Column(f[0]).(*array.FixedSizeList)
		vals := vec.ListValues().(*array.Float32)
		for i := range out {
			s, _ := vec.ValueOffsets(i)
			for k := range 3 {
				require.Equal(t, float32(out[i].row)+float32(k)/4, vals.Value(int(s)+k))
			}
		}
	}
	if f := schema.FieldIndices("blob"); len(f) == 1 {
		blobs := rec.Column(f[0]).(*array.Binary)
		for i := range out {
			got := blobs.Value(i)
			want := make([]byte, len(got))
			fillBlob(want, out[i].row)
			require.Equal(t, want, got, "blob of row %d", out[i].row)
		}
	}
	if f := schema.FieldIndices("ok"); len(f) == 1 {
		ok := rec.Column(f[0]).(*array.Boolean)
		for i := range out {
			require.Equal(t, out[i].row%3 == 0, ok.Value(i))
		}
	}
	if f := schema.FieldIndices("name"); len(f) == 1 {
		names := rec.Column(f[0]).(*array.String)
		for i := range out {
			if out[i].row%5 == 4 {
				require.True(t, names.IsNull(i))
			} else {
				require.True(t, names.IsValid(i))
				require.Regexp(t, fmt.Sprintf("^[a-z_]+-%d$", out[i].row), names.Value(i))
			}
		}
	}
	return out
}
