package tables

import (
	"context"
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/weftdata/weft/versions"
)

// scratchBytes bounds each pool of recycled buffers a Reader keeps:
// Parquet page buffers and gathered batches' buffers in one, the value
// buffers of wide binary columns of blocks in the other.
const scratchBytes = 128 << 20

// Reader reads blocks and gathers rows, with memory from one allocator and
// recycled buffers. A long-lived reader (one per engine) makes repeated
// reads cheap: page buffers and the value buffers of released blocks are
// reused instead of faulted in afresh. Safe for concurrent use; Close it
// when done to return the pooled buffers.
type Reader struct {
	s       *Store
	mem     memory.Allocator
	scratch *scratchPool // Parquet page buffers, fetched ranges, gathered buffers
	values  *scratchPool // value buffers of wide binary columns of blocks
	// noPrefetch (tests) reads a block's pages through the page streams'
	// own ranged reads, column by column, as before coalescing.
	noPrefetch bool
}

// NewReader returns a Reader whose blocks and batches are allocated from
// mem (nil: the store's allocator).
func (s *Store) NewReader(mem memory.Allocator) *Reader {
	if mem == nil {
		mem = s.mem
	}
	r := &Reader{s: s, mem: mem, scratch: newScratchPool(mem, scratchBytes), values: newScratchPool(mem, scratchBytes)}
	r.values.granule = 1 << 20
	return r
}

// Close returns the pooled buffers to the allocator. Arrays the reader
// made stay valid.
func (r *Reader) Close() {
	r.scratch.drain()
	r.values.drain()
}

// Allocator is the allocator of recycled buffers that gathers fill: for
// callers that build arrays they fill completely (it does not zero).
func (r *Reader) Allocator() memory.Allocator { return r.scratch }

// ReadBlock reads block b of v with the columns of projected (a projection
// of v's schema), as one record batch in projected's column order. The
// block's pages are fetched with as few ranged reads as their byte layout
// allows; top-level binary and string columns are read straight from the
// column chunk (binary.go), so are number columns and fixed-size lists of
// numbers without nulls in the block (fixedlist.go), the others through
// pqarrow. The caller releases the batch.
func (r *Reader) ReadBlock(ctx context.Context, v *Version, b Block, projected *arrow.Schema) (_ arrow.RecordBatch, err error) {
	if b.File < 0 || b.File >= len(v.Manifest.Files) || b.Rows < 1 || b.Offset < 0 {
		return nil, fmt.Errorf("%w: block %+v of %s@%s", ErrBlockOutOfRange, b, v.Table, v.Commit.Short())
	}
	key := v.fileKey(b.File)
	defer parseGuard(r.s.log, key, &err)
	// Everything the read allocates is metered (meter.go); the rows'
	// fixed widths are reserved once the footer agrees with the manifest.
	m := newReadMeter(ctx, r.s.opts.Budget, readAllowance, blockWhat(key, b, projected))
	defer m.close()
	f, err := r.s.openFile(ctx, v, b.File, m.wrap(r.scratch))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	f.mem, f.values = m.wrap(r.mem), m.wrap(r.values)
	md := f.pf.MetaData()
	if b.RowGroup >= md.NumRowGroups() || b.Offset+b.Rows > md.RowGroup(b.RowGroup).NumRows() {
		return nil, fmt.Errorf("%w: %s has no rows %d..%d in row group %d", versions.ErrCorrupt, f.key, b.Offset, b.Offset+b.Rows, b.RowGroup)
	}
	if err := m.reserve(decodedBytes(projected, b.Rows)); err != nil {
		return nil, fmt.Errorf("read block %+v of %s@%s: %w", b, v.Table, v.Commit.Short(), err)
	}
	leaves := leafColumns(md, projected)
	f.capPages([]int{b.RowGroup}, leaves)
	if !r.noPrefetch {
		if err := f.prefetch(ctx, b, leaves); err != nil {
			return nil, err
		}
	}
	f.pr.BufferedStreamEnabled = true
	f.pr.BufferSize = readBufferBytes
	cols := make([]arrow.Array, projected.NumFields())
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	var rest []arrow.Field // columns for pqarrow
	for i, fd := range projected.Fields() {
		if leaf := fixedLeaf(md, fd); leaf >= 0 {
			cols[i], err = r.readFixedColumn(ctx, f, b, leaf, fd)
			switch {
			case errors.Is(err, errNotDirect):
				rest = append(rest, fd)
			case err != nil:
				return nil, err
			}
			continue
		}
		leaf := directLeaf(md, fd)
		if leaf < 0 {
			rest = append(rest, fd)
			continue
		}
		if cols[i], err = r.readBinary(ctx, f, b, leaf, fd); err != nil {
			return nil, err
		}
	}
	if len(rest) > 0 {
		rec, err := r.readRecords(ctx, f, b, arrow.NewSchema(rest, nil))
		if err != nil {
			return nil, err
		}
		defer rec.Release()
		k := 0
		for i := range cols {
			if cols[i] == nil {
				cols[i] = rec.Column(k)
				cols[i].Retain()
				k++
			}
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return array.NewRecordBatch(projected, cols, b.Rows), nil
}

// readRecords reads block b's rows of the columns of data through pqarrow,
// one guarded goroutine per column (readColumns).
func (r *Reader) readRecords(ctx context.Context, f *dataFile, b Block, data *arrow.Schema) (arrow.RecordBatch, error) {
	key := f.key
	leaves := leafColumns(f.pf.MetaData(), data)
	fr, err := pqarrow.NewFileReader(f.pf, pqarrow.ArrowReadProperties{BatchSize: b.Rows, PreAllocBinaryData: preallocOK(f.pf.MetaData(), []int{b.RowGroup}, leaves)}, f.mem)
	if err != nil {
		return nil, fmt.Errorf("open parquet %s: %w", key, err)
	}
	var (
		readers []*pqarrow.ColumnReader
		sc      *arrow.Schema
	)
	err = guarded(r.s.log, key, func() (err error) {
		readers, sc, err = fr.GetFieldReaders(ctx, leaves, []int{b.RowGroup})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read %s row group %d: %w", key, b.RowGroup, err)
	}
	defer func() {
		for _, c := range readers {
			c.Release()
		}
	}()
	cols, err := readColumns(r.s.log, key, readers, sc, func(cr *pqarrow.ColumnReader) (arrow.Array, error) {
		return readColumn(cr, b, f.mem)
	})
	if err != nil {
		return nil, fmt.Errorf("read %s row group %d: %w", key, b.RowGroup, err)
	}
	defer releaseAll(cols)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	rec := array.NewRecordBatch(sc, cols, b.Rows)
	defer rec.Release()
	out, err := Reorder(rec, data)
	if err != nil {
		return nil, fmt.Errorf("%s row group %d: %w", key, b.RowGroup, err)
	}
	return out, nil
}

// readColumn reads block b's rows of one field as one array.
func readColumn(cr *pqarrow.ColumnReader, b Block, mem memory.Allocator) (arrow.Array, error) {
	if b.Offset > 0 {
		if err := cr.SeekToRow(b.Offset); err != nil {
			return nil, fmt.Errorf("seek to row %d: %w", b.Offset, err)
		}
	}
	ch, err := cr.NextBatch(b.Rows)
	if err != nil {
		return nil, err
	}
	defer ch.Release()
	if int64(ch.Len()) != b.Rows {
		return nil, fmt.Errorf("%w: %d rows from row %d, want %d", versions.ErrCorrupt, ch.Len(), b.Offset, b.Rows)
	}
	return joinChunks(ch, mem)
}

// Gather builds the columns of schema from the rows that spans name in
// blocks (each block a batch with schema's columns, as ReadBlock returns
// them): column k of the result is the concatenation, in order, of the
// spans' rows of column k of the blocks, copied once into buffers from the
// reader's recycled memory. This is the Parquet-rows materializer of a
// training step: the step's samples, located in decoded blocks, become
// Arrow arrays. The caller releases the arrays.
func (r *Reader) Gather(schema *arrow.Schema, blocks []arrow.RecordBatch, spans []Span) ([]arrow.Array, error) {
	return r.GatherInto(r.scratch, schema, blocks, spans)
}

// GatherInto is Gather with the buffers of the copied columns from mem
// (a host slot's arena: the step is gathered straight into the memory it
// is delivered from). mem's buffers need not be zeroed: the gather writes
// every byte of them that a reader reads. Columns of types the gather
// does not copy itself are concatenated with the reader's allocator.
func (r *Reader) GatherInto(mem memory.Allocator, schema *arrow.Schema, blocks []arrow.RecordBatch, spans []Span) ([]arrow.Array, error) {
	cols := make([]arrow.Array, 0, schema.NumFields())
	srcs := make([]arrow.ArrayData, len(blocks))
	for k, f := range schema.Fields() {
		for i, b := range blocks {
			srcs[i] = b.Column(k).Data()
		}
		d, err := gatherArray(r.mem, mem, f.Type, srcs, spans)
		if err != nil {
			for _, c := range cols {
				c.Release()
			}
			return nil, fmt.Errorf("column %q: %w", f.Name, err)
		}
		cols = append(cols, array.MakeFromData(d))
		d.Release()
	}
	return cols, nil
}

// GatherRows returns the rows of v with the given ordinals, in that order
// (repeats allowed), with the columns of projected, reading each row
// group they touch once (no cache). The caller releases the batch.
func (r *Reader) GatherRows(ctx context.Context, v *Version, rows []int64, projected *arrow.Schema) (arrow.RecordBatch, error) {
	var (
		blocks []arrow.RecordBatch
		spans  []Span
	)
	defer func() {
		for _, b := range blocks {
			b.Release()
		}
	}()
	src := make(map[int]int32) // row group block -> index in blocks
	for _, row := range rows {
		bi, err := v.BlockOf(row)
		if err != nil {
			return nil, err
		}
		k, ok := src[bi]
		if !ok {
			rec, err := r.ReadBlock(ctx, v, v.blocks[bi], projected)
			if err != nil {
				return nil, err
			}
			k = int32(len(blocks))
			src[bi] = k
			blocks = append(blocks, rec)
		}
		spans = AppendSpan(spans, k, row-v.blocks[bi].FirstRow)
	}
	cols, err := r.Gather(projected, blocks, spans)
	if err != nil {
		return nil, err
	}
	defer func() {
		for _, c := range cols {
			c.Release()
		}
	}()
	return array.NewRecordBatch(projected, cols, int64(len(rows))), nil
}
