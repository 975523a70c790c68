package tables_test

import (
	"context"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/weftdata/weft/bucket"
	"github.com/weftdata/weft/tables"
)

// poisonAllocator is a Go allocator that overwrites every buffer it frees,
// as an unmapped buffer of internal/offheap would fault: a value read
// after its batch's release reads 0xff bytes instead of its own.
type poisonAllocator struct{ memory.Allocator }

func (a poisonAllocator) Free(b []byte) {
	for i := range b[:cap(b)] {
		b[:cap(b)][i] = 0xff
	}
	a.Allocator.Free(b)
}

func (a poisonAllocator) Reallocate(size int, b []byte) []byte {
	nb := a.Allocate(size)
	copy(nb, b)
	a.Free(b)
	return nb
}

// releasingReader hands out recs one at a time and releases each one when
// the consumer moves past it, as flight's put stream (an ipc.Reader) does.
type releasingReader struct {
	schema *arrow.Schema
	recs   []arrow.RecordBatch
	cur    arrow.RecordBatch
	refs   int64
}

func (r *releasingReader) Retain() { r.refs++ }
func (r *releasingReader) Release() {
	if r.refs--; r.refs == 0 {
		r.drop()
		for _, rec := range r.recs {
			rec.Release()
		}
		r.recs = nil
	}
}
func (r *releasingReader) drop() {
	if r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
}
func (r *releasingReader) Schema() *arrow.Schema          { return r.schema }
func (r *releasingReader) Record() arrow.RecordBatch      { return r.cur }
func (r *releasingReader) RecordBatch() arrow.RecordBatch { return r.cur }
func (r *releasingReader) Err() error                     { return nil }
func (r *releasingReader) Next() bool {
	r.drop()
	if len(r.recs) == 0 {
		return false
	}
	r.cur, r.recs = r.recs[0], r.recs[1:]
	return true
}

// fileRows is one batch of a table with a file column: row i names
// shas[i % len(shas)].
func fileRows(mem memory.Allocator, schema *arrow.Schema, n int, shas ...string) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	for i := range n {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		b.Field(1).(*array.StringBuilder).Append(shas[i%len(shas)])
	}
	return b.NewRecordBatch()
}

// TestAppendMediaOutlivesBatches: the digests an append's video and file
// columns name are still right at commit time after every batch was
// released and its memory reused (flight's DoPut unmaps a batch's body
// once it is stored: a digest aliasing it crashed flightd at the commit).
func TestAppendMediaOutlivesBatches(t *testing.T) {
	fileSchema := arrow.NewSchema([]arrow.Field{
		{Name: "step", Type: arrow.PrimitiveTypes.Int64},
		{Name: "weights", Type: arrow.BinaryTypes.String, Nullable: true,
			Metadata: arrow.NewMetadata([]string{tables.KindKey}, []string{tables.KindFile})},
	}, nil)
	cases := []struct {
		name   string
		schema *arrow.Schema
		rows   func(mem memory.Allocator, schema *arrow.Schema, n int, shas ...string) arrow.RecordBatch
	}{
		{"video column", videoSchema(), videoRows},
		{"file column", fileSchema, fileRows},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newProjectEnv(t, bucket.NewMem(), tables.DefaultOptions())
			ctx := context.Background()
			a := e.putMedia(t, []byte("media a "+c.name))
			b := e.putMedia(t, []byte("media b "+c.name))
			mem := poisonAllocator{e.mem}
			for i, shas := range [][]string{{a}, {b, a}} {
				r := &releasingReader{schema: c.schema, refs: 1, recs: []arrow.RecordBatch{
					c.rows(mem, c.schema, 4, shas[0]),
					c.rows(mem, c.schema, 4, shas...),
				}}
				_, err := e.s.Append(ctx, "p", "main", "t", r, "")
				r.Release()
				require.NoError(t, err, "append %d", i)
			}
			want := []string{a, b}
			slices.Sort(want)
			require.Equal(t, want, shas(e.manifest(t, "t")))
		})
	}
}
