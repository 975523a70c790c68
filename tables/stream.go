package tables

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"math"
	"sort"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/weftdata/weft/versions"
)

// Scan yields the rows of row groups [first, end) of v (indices into
// v.Blocks()) in ordinal order, with the named columns (nil: all), as
// record batches of at most about batchBytes of Arrow data each (estimated
// from the Parquet column chunks' uncompressed sizes). A batch never spans
// two row groups: each row group is cut into batches of equal rows (the
// last smaller), so a batchBytes above a row group's size gives one batch
// per row group. It streams: a row group's column chunks are fetched (one
// ranged read per coalesced byte range, into buffers counted against
// Options.Budget) and decoded batch by batch, so memory stays at one row
// group's compressed chunks and a few batches. The consumer releases each
// batch; stopping early is fine.
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
	key := v.fileKey(fi)
	var want int64
	for _, b := range blocks {
		want += b.Rows
	}
	// The read's allocations are metered (meter.go); the stream leases
	// the batch being decoded, the meter the rest (the row group's column
	// chunks and page buffers).
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
	plan := make([]batchPlan, len(blocks))
	var first int64
	fixed := rowBytes(projected)
	for k, b := range blocks {
		if b.RowGroup >= md.NumRowGroups() || b.Offset+b.Rows > md.RowGroup(b.RowGroup).NumRows() {
			yield(nil, fmt.Errorf("%w: %s has no rows %d..%d in row group %d", versions.ErrCorrupt, f.key, b.Offset, b.Offset+b.Rows, b.RowGroup))
			return false
		}
		groups[k] = b.RowGroup
		var rawBytes int64
		rg := md.RowGroup(b.RowGroup)
		for _, c := range leaves {
			if cc, err := rg.ColumnChunk(c); err == nil {
				rawBytes += cc.TotalUncompressedSize()
			}
		}
		// The rows' fixed widths when those are more than the Parquet
		// bytes (a row group of constant values is a few bytes of pages
		// for any number of rows).
		raw := max(float64(rawBytes), fixed*float64(b.Rows))
		plan[k] = newBatchPlan(first, b.Rows, int64(min(raw, math.MaxInt64/2)), batchBytes)
		first += b.Rows
	}
	var rows int64 // the largest batch planned
	for _, p := range plan {
		rows = max(rows, min(p.per, p.rows))
	}
	if err := m.reserve(decodedBytes(projected, rows)); err != nil {
		yield(nil, fmt.Errorf("read %s@%s file %d: %w", v.Table, v.Commit.Short(), fi, err))
		return false
	}
	f.capPages(groups, leaves)
	// The column chunks of a row group are fetched into buffers of the
	// meter (prefetch) before its rows are decoded, and freed after: the
	// Parquet reader's own unbuffered streams read a whole chunk into a
	// buffer it makes itself, outside any allocator, so outside the
	// budget (every projected chunk of a row group at once, up to the
	// file's size).
	f.pr.BufferedStreamEnabled = true
	f.pr.BufferSize = readBufferBytes
	fr, err := pqarrow.NewFileReader(f.pf, pqarrow.ArrowReadProperties{PreAllocBinaryData: preallocOK(md, groups, leaves)}, mem)
	if err != nil {
		yield(nil, corrupt(f.key, fmt.Errorf("open parquet %s: %w", f.key, err)))
		return false
	}
	var got int64
	for _, b := range blocks {
		more, err := s.streamGroup(ctx, f, fr, b, leaves, projected, plan, &got, m, yield)
		if err != nil {
			yield(nil, fmt.Errorf("read %s@%s file %d: %w", v.Table, v.Commit.Short(), fi, err))
			return false
		}
		if !more {
			return false
		}
	}
	if got != want {
		yield(nil, fmt.Errorf("%w: %s@%s file %d gave %d rows for row groups %v, manifest says %d", versions.ErrCorrupt, v.Table, v.Commit.Short(), fi, got, groups, want))
		return false
	}
	return true
}

// streamGroup yields the rows of block b (a whole row group of f) in
// the batches plan cuts, counting them in *got. It returns false when
// the consumer stopped or ctx ended (its error yielded), and the error
// that ends the scan (unyielded).
func (s *Store) streamGroup(ctx context.Context, f *dataFile, fr *pqarrow.FileReader, b Block, leaves []int, projected *arrow.Schema, plan []batchPlan, got *int64, m *readMeter, yield func(arrow.RecordBatch, error) bool) (bool, error) {
	defer m.trim()
	defer f.rr.drop() // the row group's pages
	var (
		readers []*pqarrow.ColumnReader
		sc      *arrow.Schema
	)
	err := guarded(s.log, f.key, func() (err error) {
		if err := f.prefetch(ctx, b, leaves); err != nil {
			return err
		}
		readers, sc, err = fr.GetFieldReaders(ctx, leaves, []int{b.RowGroup})
		return err
	})
	if err != nil {
		return false, err
	}
	defer func() {
		for _, cr := range readers {
			cr.Release()
		}
	}()
	if len(readers) != projected.NumFields() {
		// Another tool's file, with other columns (nextBatch needs one).
		return false, fmt.Errorf("%w: data file %s has %d of the %d columns read (%s)", versions.ErrCorrupt, f.key, len(readers), projected.NumFields(), fieldList(projected))
	}
	for {
		rec, err := nextBatch(s.log, f.key, readers, sc, nextRows(plan, *got), m.wrap(s.mem))
		if err != nil {
			return false, err
		}
		if rec == nil {
			return true, nil
		}
		out, err := Reorder(rec, projected)
		rec.Release()
		if err != nil {
			return false, err
		}
		m.handOff(out) // the consumer's now
		*got += out.NumRows()
		if !yield(out, nil) {
			return false, nil
		}
		if err := ctx.Err(); err != nil {
			yield(nil, err)
			return false, nil
		}
	}
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

// preallocOK says whether pqarrow may preallocate the values of the binary
// columns among leaves when it reads row groups groups of md
// (ArrowReadProperties.PreAllocBinaryData): it reserves a binary column's
// values buffer from the column chunk's uncompressed size, which a damaged
// footer may claim at any size (a terabyte is a fatal out of memory, not a
// panic anything recovers). Chunks up to maxBinaryGuess are believed;
// with a larger one the buffers grow as values come.
func preallocOK(md *metadata.FileMetaData, groups, leaves []int) bool {
	for _, g := range groups {
		rg := md.RowGroup(g)
		for _, c := range leaves {
			if cc, err := rg.ColumnChunk(c); err == nil && cc.TotalUncompressedSize() > maxBinaryGuess {
				return false
			}
		}
	}
	return true
}

// batchPlan cuts the rows of one row group, which start at row first of
// its file's scan, into batches of about equal size.
type batchPlan struct{ first, rows, per int64 }

// newBatchPlan plans the batches of a row group of rows rows holding
// rawBytes of the read columns (uncompressed Parquet), batches of about
// batchBytes: as many batches as needed to stay under batchBytes, all of
// the same rows (the last smaller), none spanning two row groups.
//
// A batch spanning row groups is slow: pqarrow reserves a binary column's
// values buffer for the rows of the row group a batch starts in and grows
// it by the next row group's share as the batch reaches it, an exact
// resize that copies all the values read so far; a batch spanning the 16
// row groups of the 1 GiB benchmark file copied 7.5 GiB.
func newBatchPlan(first, rows, rawBytes, batchBytes int64) batchPlan {
	if rows < 1 {
		return batchPlan{first: first, rows: max(rows, 0), per: 1}
	}
	per := rows
	if rawBytes > batchBytes && rows > 1 {
		// Floats: a damaged footer may claim sizes whose product
		// overflows.
		per = max(1, int64(float64(rows)*float64(batchBytes)/float64(rawBytes)))
	}
	n := ceilDiv(rows, per)
	return batchPlan{first: first, rows: rows, per: ceilDiv(rows, n)}
}

// ceilDiv is a/b rounded up, for a >= 0 and b > 0 (without overflow).
func ceilDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 {
		q++
	}
	return q
}

// nextRows is the size of the batch that starts at row got of a file's
// scan: up to its row group's next planned cut. Past the planned rows (a
// file holding more rows than its manifest says) it is one row group's
// batch again: the rows are counted and the scan fails as Corrupt.
func nextRows(plan []batchPlan, got int64) int64 {
	i := sort.Search(len(plan), func(i int) bool { return plan[i].first+plan[i].rows > got })
	if i == len(plan) {
		return max(1, plan[len(plan)-1].per)
	}
	p := plan[i]
	at := got - p.first
	return min(p.per-at%p.per, p.rows-at)
}

// checkBlocks says whether [first, end) is a range of v's blocks.
func (v *Version) checkBlocks(first, end int) error {
	if first < 0 || end > len(v.blocks) || first > end {
		return fmt.Errorf("%w: blocks [%d, %d) of %s@%s, which has %d", ErrBlockOutOfRange, first, end, v.Table, v.Commit.Short(), len(v.blocks))
	}
	return nil
}

// nextBatch reads the next rows (at most) of every column of a file's
// field readers, one guarded goroutine per column (readColumns). It
// returns nil at the end of the readers' row groups; columns that end at
// different rows are ErrCorrupt.
func nextBatch(log *slog.Logger, key string, readers []*pqarrow.ColumnReader, sc *arrow.Schema, rows int64, mem memory.Allocator) (arrow.RecordBatch, error) {
	cols, err := readColumns(log, key, readers, sc, func(cr *pqarrow.ColumnReader) (arrow.Array, error) {
		ch, err := cr.NextBatch(rows)
		if err != nil {
			return nil, err
		}
		defer ch.Release()
		return joinChunks(ch, mem)
	})
	if err != nil {
		return nil, err
	}
	defer releaseAll(cols)
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

// readColumns runs read on every column reader, each on a goroutine of
// its own under guarded (pqarrow's own Parallel reads run goroutines that
// do not recover, and a panic there on a damaged page would end the
// process), and returns the columns (nil where read gave none), which the
// caller releases; on an error none.
func readColumns(log *slog.Logger, key string, readers []*pqarrow.ColumnReader, sc *arrow.Schema, read func(*pqarrow.ColumnReader) (arrow.Array, error)) ([]arrow.Array, error) {
	cols := make([]arrow.Array, len(readers))
	errs := make([]error, len(readers))
	var wg sync.WaitGroup
	for i, cr := range readers {
		wg.Go(func() {
			errs[i] = guarded(log, key, func() (err error) {
				cols[i], err = read(cr)
				return err
			})
			if errs[i] != nil {
				errs[i] = fmt.Errorf("column %q: %w", sc.Field(i).Name, errs[i])
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		releaseAll(cols)
		return nil, err
	}
	return cols, nil
}

// releaseAll releases the arrays of cols that are not nil.
func releaseAll(cols []arrow.Array) {
	for _, c := range cols {
		if c != nil {
			c.Release()
		}
	}
}
