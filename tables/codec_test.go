package tables

import (
	"bytes"
	"context"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/weftdata/weft/bucket"
	"github.com/weftdata/weft/versions"
)

func TestIncompressibleColumns(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	random := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	}
	text := bytes.Repeat([]byte("a caption that repeats "), 2000)
	window := random(1 << 20)
	for _, tc := range []struct {
		name  string
		value func(i int) []byte // nil: a null
		want  []string
	}{
		{"random bytes", func(int) []byte { return random(100 << 10) }, []string{"b", "s.bytes"}},
		{"text", func(int) []byte { return text }, nil},
		{"all null", func(int) []byte { return nil }, nil},
		// Windows of one buffer repeat within a page: zstd shrinks them.
		{"overlapping windows", func(i int) []byte { return window[i*7919 : i*7919+100<<10] }, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
			defer mem.AssertSize(t, 0)
			schema := arrow.NewSchema([]arrow.Field{
				{Name: "b", Type: arrow.BinaryTypes.Binary, Nullable: true},
				{Name: "s", Type: arrow.StructOf(arrow.Field{Name: "bytes", Type: arrow.BinaryTypes.Binary, Nullable: true}), Nullable: true},
				{Name: "n", Type: arrow.PrimitiveTypes.Int64},
			}, nil)
			rb := array.NewRecordBuilder(mem, schema)
			defer rb.Release()
			for i := range 12 {
				v := tc.value(i)
				sb := rb.Field(1).(*array.StructBuilder)
				sb.Append(true)
				if v == nil {
					rb.Field(0).AppendNull()
					sb.FieldBuilder(0).AppendNull()
				} else {
					rb.Field(0).(*array.BinaryBuilder).Append(v)
					sb.FieldBuilder(0).(*array.BinaryBuilder).Append(v)
				}
				rb.Field(2).(*array.Int64Builder).Append(int64(i))
			}
			rec := rb.NewRecordBatch()
			defer rec.Release()
			require.Equal(t, tc.want, incompressibleColumns(schema, rec))
		})
	}
}

// TestSkipIncompressibleRoundTrip: a file written with SkipIncompressible
// (its random binary column uncompressed) reads back exactly.
func TestSkipIncompressibleRoundTrip(t *testing.T) {
	ctx := context.Background()
	fsb, err := bucket.NewFS(t.TempDir())
	require.NoError(t, err)
	v, err := versions.New(fsb, versions.DefaultOptions())
	require.NoError(t, err)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	opts := DefaultOptions()
	opts.Allocator = mem
	s, err := New(v, opts)
	require.NoError(t, err)
	_, err = v.CreateProject(ctx, "p")
	require.NoError(t, err)

	rng := rand.New(rand.NewPCG(3, 4))
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "blob", Type: arrow.BinaryTypes.Binary, Nullable: true},
	}, nil)
	var blobs [][]byte
	rb := array.NewRecordBuilder(mem, schema)
	for i := range 40 {
		b := make([]byte, 1000+rng.IntN(60000))
		for k := range b {
			b[k] = byte(rng.Uint32())
		}
		if i%9 == 4 {
			b = nil
			rb.Field(1).AppendNull()
		} else {
			rb.Field(1).(*array.BinaryBuilder).Append(b)
		}
		rb.Field(0).(*array.Int64Builder).Append(int64(i))
		blobs = append(blobs, b)
	}
	rec := rb.NewRecordBatch()
	rb.Release()
	require.Equal(t, []string{"blob"}, incompressibleColumns(schema, rec))
	rr, err := array.NewRecordReader(schema, []arrow.RecordBatch{rec})
	require.NoError(t, err)
	rec.Release()
	pf, err := s.WriteFile(ctx, "p", versions.MainBranch, "t", rr, WriteOptions{SkipIncompressible: true})
	rr.Release()
	require.NoError(t, err)
	_, err = s.CommitFiles(ctx, "p", versions.MainBranch, "m", []*PendingFile{pf})
	require.NoError(t, err)
	tv, err := s.Table(ctx, "p", string(versions.MainBranch), "t")
	require.NoError(t, err)
	var got [][]byte
	for rec, err := range s.Scan(ctx, tv, nil, 0, len(tv.Blocks()), 1<<30) {
		require.NoError(t, err)
		col := rec.Column(1).(*array.Binary)
		for i := range col.Len() {
			if col.IsNull(i) {
				got = append(got, nil)
			} else {
				got = append(got, bytes.Clone(col.Value(i)))
			}
		}
		rec.Release()
	}
	require.Equal(t, blobs, got)
}
