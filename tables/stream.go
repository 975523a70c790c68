package tables

import (
	"context"
	"fmt"
	"iter"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
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
	f, err := s.openFile(ctx, v, fi, s.mem)
	if err != nil {
		yield(nil, err)
		return false
	}
	defer f.Close()
	md := f.pf.MetaData()
	leaves := leafColumns(md, projected)
	groups := make([]int, len(blocks))
	var want, rawBytes int64
	for k, b := range blocks {
		groups[k] = b.RowGroup
		want += b.Rows
		rg := md.RowGroup(b.RowGroup)
		for _, c := range leaves {
			if cc, err := rg.ColumnChunk(c); err == nil {
				rawBytes += cc.TotalUncompressedSize()
			}
		}
	}
	// Not Parallel: pqarrow's parallel reads run goroutines that do not
	// recover, and a damaged page must not end the process; the reads
	// run here, under parseGuard.
	fr, err := pqarrow.NewFileReader(f.pf, pqarrow.ArrowReadProperties{
		BatchSize: max(1, batchBytes*want/max(1, rawBytes)), PreAllocBinaryData: true}, s.mem)
	if err != nil {
		yield(nil, corrupt(f.key, fmt.Errorf("open parquet %s: %w", f.key, err)))
		return false
	}
	var rr pqarrow.RecordReader
	err = guarded(f.key, func() (err error) {
		rr, err = fr.GetRecordReader(ctx, leaves, groups)
		return err
	})
	if err != nil {
		yield(nil, fmt.Errorf("read %s@%s file %d: %w", v.Table, v.Commit.Short(), fi, err))
		return false
	}
	defer rr.Release()
	var got int64
	for {
		var more bool
		err := guarded(f.key, func() error {
			more = rr.Next()
			return rr.Err()
		})
		if err != nil {
			yield(nil, fmt.Errorf("read %s@%s file %d: %w", v.Table, v.Commit.Short(), fi, err))
			return false
		}
		if !more {
			break
		}
		rec, err := Reorder(rr.RecordBatch(), projected)
		if err != nil {
			yield(nil, err)
			return false
		}
		got += rec.NumRows()
		if !yield(rec, nil) {
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
