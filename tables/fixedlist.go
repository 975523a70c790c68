package tables

import (
	"context"
	"fmt"
	"io"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"

	"github.com/weftdata/weft/versions"
)

// Fixed-size lists of numbers (embeddings, actions, states), and flat
// number columns, are read directly too. pqarrow reads a fixed-size list
// as a list (delimiting records from the repetition levels, building
// offsets and validity, growing its buffers, then casting), which costs
// more than decoding the values. When a block's rows are all present
// and hold all their elements (no null lists, no null elements: what the
// column chunk's statistics say), every Parquet level is one value and
// row k's values are levels [kN, kN+N), so the values decode straight into
// the Arrow child buffer and the levels only need checking. A flat column
// is the case N = 1 without repetition levels.

// fixedLeaf returns the Parquet leaf index of field f when it is a
// top-level fixed-size list of float32, float64, int32 or int64 stored as
// one repeated leaf of the matching physical type, or a top-level column
// of one of those types stored as one flat leaf; -1 otherwise.
func fixedLeaf(md *metadata.FileMetaData, f arrow.Field) int {
	elem, depth, rep := f.Type, 1, int16(0)
	if fl, ok := f.Type.(*arrow.FixedSizeListType); ok {
		if fl.Len() < 1 {
			return -1
		}
		elem, depth, rep = fl.Elem(), 3, 1
	}
	var want parquet.Type
	switch elem.ID() {
	case arrow.FLOAT32:
		want = parquet.Types.Float
	case arrow.FLOAT64:
		want = parquet.Types.Double
	case arrow.INT32:
		want = parquet.Types.Int32
	case arrow.INT64:
		want = parquet.Types.Int64
	default:
		return -1
	}
	leaf := soleLeaf(md, f.Name)
	if leaf < 0 {
		return -1
	}
	if c := md.Schema.Column(leaf); len(c.ColumnPath()) != depth || c.PhysicalType() != want || c.MaxRepetitionLevel() != rep {
		return -1
	}
	return leaf
}

// levelReader is a typed Parquet column chunk reader.
type levelReader[T any] interface {
	ReadBatch(batchSize int64, values []T, defLvls, repLvls []int16) (int64, int, error)
	SeekToRow(row int64) error
}

// readFixedColumn reads rows [b.Offset, b.Offset+b.Rows) of field, a
// fixed-size list or flat number column (leaf: fixedLeaf's answer), or
// fails with errNotDirect when some value of them is null or a row is
// short.
func (r *Reader) readFixedColumn(ctx context.Context, f *dataFile, b Block, leaf int, field arrow.Field) (arrow.Array, error) {
	rg := f.pf.MetaData().RowGroup(b.RowGroup)
	cc, err := rg.ColumnChunk(leaf)
	if err != nil {
		return nil, fmt.Errorf("read %s row group %d column %q: %w", f.key, b.RowGroup, field.Name, err)
	}
	if ok, err := cc.StatsSet(); err != nil || !ok {
		return nil, errNotDirect
	}
	if st, err := cc.Statistics(); err != nil || st == nil || !st.HasNullCount() || st.NullCount() != 0 {
		return nil, errNotDirect
	}
	cr, err := f.pf.RowGroup(b.RowGroup).Column(leaf)
	if err != nil {
		return nil, fmt.Errorf("read %s row group %d column %q: %w", f.key, b.RowGroup, field.Name, err)
	}
	if c, ok := cr.(io.Closer); ok {
		defer c.Close()
	}
	maxDef := cr.Descriptor().MaxDefinitionLevel()
	switch rd := cr.(type) {
	case *file.Float32ColumnChunkReader:
		return readFixed[float32](ctx, rd, f, b, field, maxDef)
	case *file.Float64ColumnChunkReader:
		return readFixed[float64](ctx, rd, f, b, field, maxDef)
	case *file.Int32ColumnChunkReader:
		return readFixed[int32](ctx, rd, f, b, field, maxDef)
	case *file.Int64ColumnChunkReader:
		return readFixed[int64](ctx, rd, f, b, field, maxDef)
	}
	return nil, fmt.Errorf("%w: %s column %q has reader %T", versions.ErrCorrupt, f.key, field.Name, cr)
}

// fixedLevels is how many levels readFixed reads at a time.
const fixedLevels = 16 << 10

func readFixed[T float32 | float64 | int32 | int64](ctx context.Context, rd levelReader[T], f *dataFile, b Block, field arrow.Field, maxDef int16) (arrow.Array, error) {
	fl, list := field.Type.(*arrow.FixedSizeListType)
	n, elem := int64(1), field.Type
	if list {
		n, elem = int64(fl.Len()), fl.Elem()
	}
	total := b.Rows * n
	if b.Offset > 0 {
		if err := rd.SeekToRow(b.Offset); err != nil {
			return nil, fmt.Errorf("seek %s row group %d column %q to row %d: %w", f.key, b.RowGroup, field.Name, b.Offset, err)
		}
	}
	var zero T
	size := int(unsafe.Sizeof(zero))
	// Every byte is written (every level is a value) before the buffer
	// becomes an array, so it may come from the recycling pool.
	raw := f.values.Allocate(int(total) * size)
	handed := false
	defer func() {
		if !handed {
			f.values.Free(raw)
		}
	}()
	vals := unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(raw))), total)
	var defs, reps []int16
	if maxDef > 0 {
		defs = make([]int16, fixedLevels)
	}
	if list {
		reps = make([]int16, fixedLevels)
	}
	for got := int64(0); got < total; {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		want := min(max(fixedLevels/n, 1)*n, total-got) // whole rows

		levels, nvals, err := rd.ReadBatch(want, vals[got:got+want], defs, reps)
		if err != nil {
			return nil, fmt.Errorf("read %s row group %d column %q: %w", f.key, b.RowGroup, field.Name, err)
		}
		if levels == 0 {
			return nil, fmt.Errorf("%w: %s row group %d column %q ends at row %d of %d", versions.ErrCorrupt, f.key, b.RowGroup, field.Name, b.Offset+got/n, b.Offset+b.Rows)
		}
		if int64(nvals) != levels {
			return nil, errNotDirect
		}
		if defs != nil && !allEqual16(defs[:levels], maxDef) {
			return nil, errNotDirect
		}
		if reps != nil && !rowStarts(reps[:levels], got%n, n) {
			return nil, errNotDirect
		}
		got += levels
	}
	buf := memory.NewBufferWithAllocator(raw, f.values)
	handed = true
	defer buf.Release()
	child := array.NewData(elem, int(total), []*memory.Buffer{nil, buf}, nil, 0, 0)
	defer child.Release()
	if !list {
		return array.MakeFromData(child), nil
	}
	d := array.NewData(fl, int(b.Rows), []*memory.Buffer{nil}, []arrow.ArrayData{child}, 0, 0)
	defer d.Release()
	return array.MakeFromData(d), nil
}

// allEqual16 says whether every element of s is v (four at a time).
func allEqual16(s []int16, v int16) bool {
	words := len(s) / 4
	if words > 0 {
		pat := uint64(uint16(v)) * 0x0001_0001_0001_0001
		for _, w := range unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(s))), words) {
			if w != pat {
				return false
			}
		}
	}
	for _, x := range s[words*4:] {
		if x != v {
			return false
		}
	}
	return true
}

// rowStarts says whether repetition levels reps (each 0 or 1: the column's
// maximum is 1), the first of which is element first of its row, start a
// row exactly every n levels: reps[i] == 0 iff (first+i) mod n == 0.
func rowStarts(reps []int16, first, n int64) bool {
	if first == 0 && int64(len(reps))%n == 0 {
		// Each row's first level is 0 and the others sum to n-1 per row:
		// with levels in {0, 1}, that is all of them 1.
		rows := int64(len(reps)) / n
		for k := range rows {
			if reps[k*n] != 0 {
				return false
			}
		}
		return sum16(reps) == int64(len(reps))-rows
	}
	for i, rep := range reps {
		if (rep == 0) != ((first+int64(i))%n == 0) {
			return false
		}
	}
	return true
}

// sum16 sums levels in {0, 1}, four at a time (a lane sums at most
// fixedLevels/4 < 2^16 of them between flushes).
func sum16(s []int16) int64 {
	var total int64
	words := len(s) / 4
	ws := unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(s))), words)
	for len(ws) > 0 {
		chunk := ws[:min(len(ws), 1<<14)]
		ws = ws[len(chunk):]
		var acc uint64
		for _, w := range chunk {
			acc += w & 0x0001_0001_0001_0001
			if w&^0x0001_0001_0001_0001 != 0 {
				return -1 // a level above 1
			}
		}
		total += int64(acc&0xffff + acc>>16&0xffff + acc>>32&0xffff + acc>>48)
	}
	for _, x := range s[words*4:] {
		if x&^1 != 0 {
			return -1
		}
		total += int64(x)
	}
	return total
}
