package tables

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/weftdata/weft/versions"
)

// Scan yields the rows of row groups [first, end) of v (indices into
// v.Blocks()) in ordinal order, with the named columns (nil: all), as
// record batches of about batchBytes of Arrow data each (estimated from the
// Parquet column chunks' uncompressed sizes; a batch never spans two data
// files). It streams: a row group is decoded batch by batch, so the first
// rows come out before it is read and memory stays at a few batches. Each
// column chunk is one ranged read. The consumer releases each batch;
// stopping early is fine.
func (s *Store) Scan(ctx context.Context, v *Version, columns []string, first, end int, batchBytes int64) iter.Seq2[arrow.RecordBatch, error] {
	return func(yield func(arrow.RecordBatch, error) bool) {
		projected, err := v.Projection(columns)
		if err != nil {
			yield(nil, err)
			return
		}
		if err := v.checkBlocks(first, end); err != nil {
			yield(nil, err)
			return
		}
		for i := first; i < end; {
			j := i
			for j < end && v.blocks[j].File == v.blocks[i].File {
				j++
			}
			if !s.streamFile(ctx, v, projected, v.blocks[i:j], max(1, batchBytes), yield) {
				return
			}
			i = j
		}
	}
}

// streamFile yields the rows of blocks, all of one file, in batches. It
// returns false when it yielded an error or the consumer stopped.
func (s *Store) streamFile(ctx context.Context, v *Version, projected *arrow.Schema, blocks []Block, batchBytes int64, yield func(arrow.RecordBatch, error) bool) bool {
	fi := blocks[0].File
	key := versions.DataFileKey(v.Project, v.Manifest.Files[fi].Path)
	var want int64
	for _, b := range blocks {
		want += b.Rows
	}
	// The read's allocations are metered (meter.go); the stream leases
	// the batch being decoded, the meter the rest (page buffers).
	m := newReadMeter(ctx, s.opts.Budget, readAllowance+batchBytes, fmt.Sprintf("scanning %d rows of %d columns of data file %s", want, projected.NumFields(), key))
	defer m.close()
	mem := m.wrap(s.mem)
	f, err := s.openFile(ctx, v, fi, mem)
	if err != nil {
		yield(nil, err)
		return false
	}
	defer f.Close()
	md := f.pf.MetaData()
	leaves := leafColumns(md, projected)
	groups := make([]int, len(blocks))
	var rawBytes int64
	for k, b := range blocks {
		if b.RowGroup >= md.NumRowGroups() || b.Offset+b.Rows > md.RowGroup(b.RowGroup).NumRows() {
			yield(nil, fmt.Errorf("%w: %s has no rows %d..%d in row group %d", versions.ErrCorrupt, f.key, b.Offset, b.Offset+b.Rows, b.RowGroup))
			return false
		}
		groups[k] = b.RowGroup
		rg := md.RowGroup(b.RowGroup)
		for _, c := range leaves {
			if cc, err := rg.ColumnChunk(c); err == nil {
				rawBytes += cc.TotalUncompressedSize()
			}
		}
	}
	// Rows per batch: batchBytes of the Parquet bytes per row, or of the
	// rows' fixed widths when those are more (a row group of constant
	// values is a few bytes of pages for any number of rows).
	perRow := max(float64(rawBytes)/float64(max(want, 1)), rowBytes(projected))
	rows := int64(max(1, min(float64(want), float64(batchBytes)/perRow)))
	if err := m.reserve(decodedBytes(projected, rows)); err != nil {
		yield(nil, fmt.Errorf("read %s@%s file %d: %w", v.Table, v.Commit.Short(), fi, err))
		return false
	}
	f.capPages(groups, leaves)
	fr, err := pqarrow.NewFileReader(f.pf, pqarrow.ArrowReadProperties{PreAllocBinaryData: true}, mem)
	if err != nil {
		yield(nil, corrupt(f.key, fmt.Errorf("open parquet %s: %w", f.key, err)))
		return false
	}
	var (
		readers []*pqarrow.ColumnReader
		sc      *arrow.Schema
	)
	err = guarded(s.log, f.key, func() (err error) {
		readers, sc, err = fr.GetFieldReaders(ctx, leaves, groups)
		return err
	})
	if err != nil {
		yield(nil, fmt.Errorf("read %s@%s file %d: %w", v.Table, v.Commit.Short(), fi, err))
		return false
	}
	defer func() {
		for _, cr := range readers {
			cr.Release()
		}
	}()
	if len(readers) != projected.NumFields() {
		// Another tool's file, with other columns (nextBatch needs one).
		yield(nil, fmt.Errorf("%w: data file %s has %d of the %d columns read (%s)", versions.ErrCorrupt, f.key, len(readers), projected.NumFields(), fieldList(projected)))
		return false
	}
	var got int64
	for {
		rec, err := nextBatch(s.log, f.key, readers, sc, rows, mem)
		if err != nil {
			yield(nil, fmt.Errorf("read %s@%s file %d: %w", v.Table, v.Commit.Short(), fi, err))
			return false
		}
		if rec == nil {
			break
		}
		out, err := Reorder(rec, projected)
		rec.Release()
		if err != nil {
			yield(nil, err)
			return false
		}
		m.handOff(out) // the consumer's now
		got += out.NumRows()
		if !yield(out, nil) {
			return false
		}
		if err := ctx.Err(); err != nil {
			yield(nil, err)
			return false
		}
	}
	if got != want {
		yield(nil, fmt.Errorf("%w: %s@%s file %d gave %d rows for row groups %v, manifest says %d", versions.ErrCorrupt, v.Table, v.Commit.Short(), fi, got, groups, want))
		return false
	}
	return true
}

// Reorder returns rec's columns in projected's order, as a new batch the
// caller owns; a column missing from rec or of another type than projected
// says is ErrCorrupt (the data file disagrees with its manifest).
func Reorder(rec arrow.RecordBatch, projected *arrow.Schema) (arrow.RecordBatch, error) {
	cols := make([]arrow.Array, projected.NumFields())
	for i, f := range projected.Fields() {
		idx := rec.Schema().FieldIndices(f.Name)
		if len(idx) != 1 {
			return nil, fmt.Errorf("%w: data file lacks column %q", versions.ErrCorrupt, f.Name)
		}
		cols[i] = rec.Column(idx[0])
		if !arrow.TypeEqual(cols[i].DataType(), f.Type) {
			return nil, fmt.Errorf("%w: column %q is %s in the data file, %s in the manifest", versions.ErrCorrupt, f.Name, cols[i].DataType(), f.Type)
		}
	}
	return array.NewRecordBatch(projected, cols, rec.NumRows()), nil
}

// checkBlocks says whether [first, end) is a range of v's blocks.
func (v *Version) checkBlocks(first, end int) error {
	if first < 0 || end > len(v.blocks) || first > end {
		return fmt.Errorf("%w: blocks [%d, %d) of %s@%s, which has %d", ErrBlockOutOfRange, first, end, v.Table, v.Commit.Short(), len(v.blocks))
	}
	return nil
}

// nextBatch reads the next rows (at most) of every column of a file's
// field readers, one goroutine per column (each guards itself: pqarrow's
// own Parallel reads run goroutines that do not, and a panic there on a
// damaged page would end the process). It returns nil at the end of the
// readers' row groups; columns that end at different rows are ErrCorrupt.
func nextBatch(log *slog.Logger, key string, readers []*pqarrow.ColumnReader, sc *arrow.Schema, rows int64, mem memory.Allocator) (arrow.RecordBatch, error) {
	cols := make([]arrow.Array, len(readers))
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	errs := make([]error, len(readers))
	var wg sync.WaitGroup
	for i, cr := range readers {
		wg.Go(func() {
			errs[i] = guarded(log, key, func() error {
				ch, err := cr.NextBatch(rows)
				if err != nil {
					return err
				}
				defer ch.Release()
				if err := checkChunks(ch); err != nil {
					return err
				}
				switch len(ch.Chunks()) {
				case 0:
				case 1:
					cols[i] = ch.Chunk(0)
					cols[i].Retain()
				default:
					cols[i], err = array.Concatenate(ch.Chunks(), mem)
				}
				return err
			})
			if errs[i] != nil {
				errs[i] = fmt.Errorf("column %q: %w", sc.Field(i).Name, errs[i])
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	n := func(a arrow.Array) int {
		if a == nil {
			return 0
		}
		return a.Len()
	}
	for i := range cols {
		if n(cols[i]) != n(cols[0]) {
			return nil, fmt.Errorf("%w: data file %s: column %q gave %d rows, column %q %d", versions.ErrCorrupt, key, sc.Field(0).Name, n(cols[0]), sc.Field(i).Name, n(cols[i]))
		}
	}
	if n(cols[0]) == 0 {
		return nil, nil
	}
	return array.NewRecordBatch(sc, cols, int64(n(cols[0]))), nil
}
