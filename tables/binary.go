package tables

import (
	"context"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"

	"github.com/weftdata/weft/versions"
)

// Wide binary columns (images, audio) are most of what a mix of them
// moves, so blocks read them directly: the Parquet column chunk reader
// yields each page's values as views of the decompressed page, and they are
// copied once into the block's buffers. pqarrow would zero a preallocated
// buffer and then copy the values in, costing another pass over every byte.

// directLeaf returns the Parquet leaf index of field f when it can be read
// directly: a top-level binary or string column stored as one BYTE_ARRAY
// leaf. It returns -1 otherwise.
func directLeaf(md *metadata.FileMetaData, f arrow.Field) int {
	switch f.Type.ID() {
	case arrow.BINARY, arrow.STRING:
	default:
		return -1
	}
	leaf := soleLeaf(md, f.Name)
	if leaf < 0 {
		return -1
	}
	if c := md.Schema.Column(leaf); len(c.ColumnPath()) != 1 || c.PhysicalType() != parquet.Types.ByteArray || c.MaxRepetitionLevel() != 0 || c.MaxDefinitionLevel() > 1 {
		return -1
	}
	return leaf
}

// soleLeaf returns the index of the one Parquet leaf of top-level column
// name; -1 when it has none or several.
func soleLeaf(md *metadata.FileMetaData, name string) int {
	leaf := -1
	for i := range md.Schema.NumColumns() {
		if md.Schema.Column(i).ColumnPath()[0] != name {
			continue
		}
		if leaf >= 0 {
			return -1
		}
		leaf = i
	}
	return leaf
}

// maxBinaryGuess caps the size a binary column's values buffer starts at.
const maxBinaryGuess = 256 << 20

// readBinary reads rows [b.Offset, b.Offset+b.Rows) of a direct binary
// column.
func (r *Reader) readBinary(ctx context.Context, f *dataFile, b Block, leaf int, field arrow.Field) (arrow.Array, error) {
	key := f.key
	cr, err := f.pf.RowGroup(b.RowGroup).Column(leaf)
	if err != nil {
		return nil, fmt.Errorf("read %s row group %d column %q: %w", key, b.RowGroup, field.Name, err)
	}
	if c, ok := cr.(io.Closer); ok {
		defer c.Close()
	}
	br, ok := cr.(*file.ByteArrayColumnChunkReader)
	if !ok {
		return nil, fmt.Errorf("%w: %s column %q is not BYTE_ARRAY", versions.ErrCorrupt, key, field.Name)
	}
	if b.Offset > 0 {
		if err := br.SeekToRow(b.Offset); err != nil {
			return nil, fmt.Errorf("seek %s row group %d column %q to row %d: %w", key, b.RowGroup, field.Name, b.Offset, err)
		}
	}
	nullable := br.Descriptor().MaxDefinitionLevel() > 0

	// The block's share of the chunk's uncompressed bytes sizes the values
	// buffer; it grows if that falls short.
	capacity := int64(64 << 10)
	if cc, err := f.pf.MetaData().RowGroup(b.RowGroup).ColumnChunk(leaf); err == nil {
		if rows := f.pf.MetaData().RowGroup(b.RowGroup).NumRows(); rows > 0 {
			// A damaged footer may claim any size: the guess is capped
			// (the buffer grows past it when the values need it).
			capacity += int64(float64(min(max(cc.TotalUncompressedSize(), 0), maxBinaryGuess)) * float64(b.Rows) / float64(rows))
		}
	}
	// The values come from the pool of block buffers (recycled when blocks
	// leave the cache, so reads do not fault in fresh memory), the rest
	// from the engine's allocator.
	out := binaryBuilder{mem: f.mem, dataMem: f.values}
	defer out.release()
	out.offsets = f.mem.Allocate(int(b.Rows+1) * 4)
	out.data = f.values.Allocate(int(capacity))
	if nullable {
		out.valid = f.mem.Allocate(int(bitutil.BytesForBits(b.Rows)))
	}
	const chunk = 1024
	values := make([]parquet.ByteArray, chunk)
	var defs []int16
	if nullable {
		defs = make([]int16, chunk)
	}
	var row, pos int64
	offs := arrow.Int32Traits.CastFromBytes(out.offsets)
	offs[0] = 0
	for row < b.Rows {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		n, _, err := br.ReadBatchInPage(min(chunk, b.Rows-row), values, defs, nil)
		if err != nil {
			return nil, fmt.Errorf("read %s row group %d column %q: %w", key, b.RowGroup, field.Name, err)
		}
		if n == 0 {
			return nil, fmt.Errorf("%w: %s row group %d column %q ends at row %d of %d", versions.ErrCorrupt, key, b.RowGroup, field.Name, b.Offset+row, b.Offset+b.Rows)
		}
		v := 0
		for k := range n {
			if nullable && defs[k] == 0 {
				bitutil.ClearBit(out.valid, int(row+k))
				out.nulls++
			} else {
				val := values[v]
				v++
				if pos+int64(len(val)) > int64(len(out.data)) {
					out.grow(pos + int64(len(val)))
				}
				copy(out.data[pos:], val)
				pos += int64(len(val))
				if nullable {
					bitutil.SetBit(out.valid, int(row+k))
				}
			}
			if pos > int64(^uint32(0)>>1) {
				return nil, fmt.Errorf("%w: column %q holds over 2 GiB in one block of %s", ErrTooLarge, field.Name, key)
			}
			offs[row+k+1] = int32(pos)
		}
		row += n
	}
	return out.array(field.Type, b.Rows, pos), nil
}

// binaryBuilder owns the buffers of a binary array being read.
type binaryBuilder struct {
	mem, dataMem         memory.Allocator
	offsets, data, valid []byte
	nulls                int
}

func (o *binaryBuilder) grow(need int64) {
	o.data = o.dataMem.Reallocate(int(max(need, 2*int64(len(o.data)))), o.data)
}

// array hands the buffers to an Arrow array (data cut to size bytes).
func (o *binaryBuilder) array(dt arrow.DataType, rows, size int64) arrow.Array {
	bufs := []*memory.Buffer{nil,
		memory.NewBufferWithAllocator(o.offsets, o.mem),
		memory.NewBufferWithAllocator(o.data, o.dataMem)}
	bufs[2].ResizeNoShrink(int(size))
	if o.valid != nil {
		bufs[0] = memory.NewBufferWithAllocator(o.valid, o.mem)
	}
	o.offsets, o.data, o.valid = nil, nil, nil
	d := array.NewData(dt, int(rows), bufs, nil, o.nulls, 0)
	for _, b := range bufs {
		if b != nil {
			b.Release()
		}
	}
	defer d.Release()
	return array.MakeFromData(d)
}

// release frees buffers not handed to an array.
func (o *binaryBuilder) release() {
	for _, b := range [][]byte{o.offsets, o.valid} {
		if b != nil {
			o.mem.Free(b)
		}
	}
	if o.data != nil {
		o.dataMem.Free(o.data)
	}
}
