package tables_test

import (
	"bytes"
	"context"
	"errors"
	"math/rand"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/weftdata/weft/bucket"
	"github.com/weftdata/weft/errdefs"
	"github.com/weftdata/weft/internal/membudget"
	"github.com/weftdata/weft/tables"
	"github.com/weftdata/weft/versions"
)

// fuzzSchema has a column of every read path: top-level binary and string
// (binary.go), numbers and fixed-size lists (fixedlist.go, with nulls
// sending a block through pqarrow), and lists, structs and dictionaries
// (always pqarrow).
var fuzzSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "x", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "emb", Type: arrow.FixedSizeListOf(3, arrow.PrimitiveTypes.Float32), Nullable: true},
	{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "blob", Type: arrow.BinaryTypes.Binary},
	{Name: "tags", Type: arrow.ListOf(arrow.PrimitiveTypes.Int32), Nullable: true},
	{Name: "pt", Type: arrow.StructOf(arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int32}, arrow.Field{Name: "b", Type: arrow.BinaryTypes.String, Nullable: true}), Nullable: true},
	{Name: "cat", Type: &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}, Nullable: true},
}, nil)

func fuzzBatch(mem memory.Allocator, start, n int64) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, fuzzSchema)
	defer b.Release()
	for id := start; id < start+n; id++ {
		b.Field(0).(*array.Int64Builder).Append(id)
		if id%5 == 2 {
			b.Field(1).AppendNull()
		} else {
			b.Field(1).(*array.Float64Builder).Append(float64(id) / 3)
		}
		emb := b.Field(2).(*array.FixedSizeListBuilder)
		emb.Append(true)
		for k := range 3 {
			if id%6 == 1 {
				emb.ValueBuilder().AppendNull() // a block with a null goes through pqarrow
			} else {
				emb.ValueBuilder().(*array.Float32Builder).Append(float32(id + int64(k)))
			}
		}
		b.Field(3).(*array.StringBuilder).Append("n" + string(rune('a'+id%26)))
		b.Field(4).(*array.BinaryBuilder).Append(bytes.Repeat([]byte{byte(id)}, int(id%9)))
		tags := b.Field(5).(*array.ListBuilder)
		if id%4 == 1 {
			tags.AppendNull()
		} else {
			tags.Append(true)
			for k := range id % 4 {
				tags.ValueBuilder().(*array.Int32Builder).Append(int32(id * k))
			}
		}
		pt := b.Field(6).(*array.StructBuilder)
		pt.Append(true)
		pt.FieldBuilder(0).(*array.Int32Builder).Append(int32(id))
		pt.FieldBuilder(1).(*array.StringBuilder).Append("p")
		require.NoError(nil, b.Field(7).(*array.BinaryDictionaryBuilder).AppendString([]string{"red", "green", "blue"}[id%3]))
	}
	return b.NewRecordBatch()
}

// fuzzTable writes a small table of fuzzSchema (two files, several row
// groups each) into a fresh Mem bucket and returns the bucket, the
// version and the keys of its data files.
func fuzzTable(tb testing.TB) (*bucket.Mem, *tables.Version, []string) {
	tb.Helper()
	ctx := context.Background()
	b := bucket.NewMem()
	v, err := versions.New(b, versions.DefaultOptions())
	require.NoError(tb, err)
	_, err = v.CreateProject(ctx, "p")
	require.NoError(tb, err)
	opts := tables.DefaultOptions()
	opts.RowGroupRows = 16
	s, err := tables.New(v, opts)
	require.NoError(tb, err)
	for f := range int64(2) {
		rec := fuzzBatch(memory.DefaultAllocator, f*40, 40)
		rr, err := array.NewRecordReader(fuzzSchema, []arrow.RecordBatch{rec})
		require.NoError(tb, err)
		rec.Release()
		_, err = s.Append(ctx, "p", "main", "t", rr, "")
		rr.Release()
		require.NoError(tb, err)
	}
	tv, err := s.Table(ctx, "p", "main", "t")
	require.NoError(tb, err)
	var keys []string
	for _, f := range tv.Manifest.Files {
		keys = append(keys, versions.DataFileKey("p", f.Path))
	}
	return b, tv, keys
}

// FuzzReadDataFile puts hostile bytes where a table's data file should be
// (a half-written upload, a bit flip, another tool's file) and reads the
// table every way the server does: each block through ReadBlock (every
// column, and each column alone), the whole table through Scan, and the
// layout. None may panic (in any goroutine: a panic in one that pqarrow
// starts kills the fuzzer), leak Arrow memory, or fail with any kind but
// Corrupt (or ResourceExhausted, by the memory budget, when the file's
// claims need more than it has).
func FuzzReadDataFile(f *testing.F) {
	b, v, keys := fuzzTable(f)
	ctx := context.Background()
	for _, key := range keys[:1] {
		data, _, err := b.Get(ctx, key)
		require.NoError(f, err)
		f.Add(data)
		rng := rand.New(rand.NewSource(int64(len(data))))
		for _, cut := range []int{len(data) / 2, len(data) - 1, len(data) - 9, 4} {
			f.Add(bytes.Clone(data[:cut]))
		}
		for range 16 {
			m := bytes.Clone(data)
			for range 1 + rng.Intn(4) {
				m[rng.Intn(len(m))] ^= byte(1 + rng.Intn(255))
			}
			f.Add(m)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		_, err := b.Put(ctx, keys[0], bytes.NewReader(data), int64(len(data)))
		require.NoError(t, err)
		readHostile(t, b, v)
	})
}

// readHostile reads every block of v from a fresh store over b (no footer
// cache carried over), and checks that what fails fails as Corrupt.
func readHostile(t *testing.T, b bucket.Bucket, v *tables.Version) {
	t.Helper()
	ctx := context.Background()
	vs, err := versions.New(b, versions.DefaultOptions())
	require.NoError(t, err)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	opts := tables.DefaultOptions()
	opts.Allocator = mem
	// Reads are bounded by a budget (what a hostile file's claims may
	// take): one over it is refused by the budget, as ResourceExhausted.
	budget, err := membudget.New(membudget.Options{Total: 256 << 20})
	require.NoError(t, err)
	opts.Budget = budget
	s, err := tables.New(vs, opts)
	require.NoError(t, err)
	failed := false
	check := func(what string, err error) {
		failed = failed || err != nil
		if err != nil && !errors.Is(err, errdefs.ErrCorrupt) && !errors.Is(err, membudget.ErrExhausted) {
			t.Fatalf("%s: an error of another kind than Corrupt: %v", what, err)
		}
	}
	r := s.NewReader(mem)
	projections := []*arrow.Schema{v.Schema}
	for _, fd := range v.Schema.Fields() {
		projections = append(projections, arrow.NewSchema([]arrow.Field{fd}, nil))
	}
	for _, blk := range v.Blocks() {
		for _, proj := range projections {
			rec, err := r.ReadBlock(ctx, v, blk, proj)
			check("ReadBlock", err)
			if err == nil {
				require.Equal(t, blk.Rows, rec.NumRows())
				// What a block read returns is sound: the mix builder
				// gathers from it on a goroutine nothing recovers.
				for i, c := range rec.Columns() {
					require.NoError(t, validateFull(c), "column %s", proj.Field(i).Name)
				}
				spans := []tables.Span{{Src: 0, Start: blk.Rows - 1, N: 1}, {Src: 0, Start: 0, N: blk.Rows}}
				cols, err := r.Gather(proj, []arrow.RecordBatch{rec}, spans)
				require.NoError(t, err)
				for _, c := range cols {
					require.NoError(t, validateFull(c))
					c.Release()
				}
				rec.Release()
			}
		}
	}
	for rec, err := range s.Scan(ctx, v, nil, 0, len(v.Blocks()), 1<<10) {
		check("Scan", err)
		if err != nil {
			break
		}
		rec.Release()
	}
	_, _, err = s.Layout(ctx, v, v.Schema, tables.DefaultLayout())
	check("Layout", err)
	r.Close()
	// Every read's leases are returned: what is left is the footer
	// cache's (a few KiB here; reads lease MiBs).
	require.Less(t, budget.Stats().Used, int64(1<<20), "leases returned")
	// pqarrow leaks page buffers when a page fails to decode (arrow-go
	// v18.8.0: a leaf reader that fails in newLeafReader is never
	// released); with Go's allocator the garbage collector takes them.
	// Reads that all succeed must give back everything.
	if !failed {
		mem.AssertSize(t, 0)
	}
}

// validateFull runs arrow-go's full validation of an array that has one.
func validateFull(a arrow.Array) error {
	if v, ok := a.(interface{ ValidateFull() error }); ok {
		return v.ValidateFull()
	}
	return nil
}
