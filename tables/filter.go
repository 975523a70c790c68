package tables

import (
	"context"
	"fmt"
	"iter"
	"maps"
	"math"
	"slices"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"golang.org/x/sync/errgroup"

	"github.com/weftdata/weft/errdefs"
	"github.com/weftdata/weft/filter"
)

// Filtered reads (package filter). A row group whose column statistics
// show that no row can match is never read; for the others the filter's
// columns are read first, and the other projected columns only when some
// row matches. Matches lists a version's matching rows once, cached per
// (data files, filter) in a byte-bounded cache.

// Filter compiles a filter's text against v's schema (filter.Compile with
// the default limits).
func (v *Version) Filter(text string) (*filter.Filter, error) {
	return filter.Compile(text, v.Schema, filter.DefaultLimits())
}

// rowGroupStats gives the statistics of row group g of a file, for the
// columns of schema (top-level leaves only).
func rowGroupStats(md *metadata.FileMetaData, g int, schema *arrow.Schema) filter.Stats {
	rg := md.RowGroup(g)
	return func(col string) (filter.ColumnStats, bool) {
		idx := schema.FieldIndices(col)
		if len(idx) == 0 {
			return filter.ColumnStats{}, false
		}
		leaf := md.Schema.ColumnIndexByName(col)
		if leaf < 0 {
			return filter.ColumnStats{}, false
		}
		cc, err := rg.ColumnChunk(leaf)
		if err != nil {
			return filter.ColumnStats{}, false
		}
		st, err := cc.Statistics()
		if err != nil || st == nil {
			return filter.ColumnStats{}, false
		}
		out := filter.ColumnStats{Rows: rg.NumRows(), Nulls: -1}
		if st.HasNullCount() {
			out.Nulls = st.NullCount()
		}
		if st.HasMinMax() {
			out.Min, out.Max, out.HasMinMax = statValue(st, schema.Field(idx[0]).Type, true), statValue(st, schema.Field(idx[0]).Type, false), true
			if out.Min == nil || out.Max == nil {
				out.HasMinMax = false
			}
		}
		return out, true
	}
}

// statValue is the min (or max) of st as filter.ColumnStats holds it for
// an Arrow column of type dt; nil when this reader does not trust it
// (unsigned columns: their order in the file depends on the writer).
func statValue(st metadata.TypedStatistics, dt arrow.DataType, min bool) any {
	switch s := st.(type) {
	case *metadata.Int32Statistics:
		switch dt.ID() {
		case arrow.INT8, arrow.INT16, arrow.INT32, arrow.DATE32:
			if min {
				return int64(s.Min())
			}
			return int64(s.Max())
		}
	case *metadata.Int64Statistics:
		switch dt.ID() {
		case arrow.INT64, arrow.TIMESTAMP:
			if min {
				return s.Min()
			}
			return s.Max()
		}
	case *metadata.Float32Statistics:
		if dt.ID() == arrow.FLOAT32 {
			v := s.Max()
			if min {
				v = s.Min()
			}
			if math.IsNaN(float64(v)) {
				return nil
			}
			return float64(v)
		}
	case *metadata.Float64Statistics:
		if dt.ID() == arrow.FLOAT64 {
			v := s.Max()
			if min {
				v = s.Min()
			}
			if math.IsNaN(v) {
				return nil
			}
			return v
		}
	case *metadata.BooleanStatistics:
		if dt.ID() == arrow.BOOL {
			v := s.Max()
			if min {
				v = s.Min()
			}
			if v {
				return int64(1)
			}
			return int64(0)
		}
	case *metadata.ByteArrayStatistics:
		switch dt.ID() {
		case arrow.STRING, arrow.LARGE_STRING, arrow.BINARY, arrow.LARGE_BINARY:
			if min {
				return string(s.Min())
			}
			return string(s.Max())
		}
	}
	return nil
}

// MayMatch reports whether row group block bi of v (an index into
// v.Blocks()) can hold a row matching f, from its statistics alone: false
// means it need not be read.
func (s *Store) MayMatch(ctx context.Context, v *Version, bi int, f *filter.Filter) (_ bool, err error) {
	b := v.blocks[bi]
	defer parseGuard(s.log, v.fileKey(b.File), &err)
	file, err := s.openFile(ctx, v, b.File, s.mem)
	if err != nil {
		return false, err
	}
	defer file.Close()
	return f.MayMatch(rowGroupStats(file.pf.MetaData(), b.RowGroup, v.Schema)), nil
}

// matchBlock evaluates f on row group block b of v and returns its
// matching rows as runs of consecutive offsets within the block, adding
// their bytes to *used and failing once that passes limit. Pieces that
// statistics or the page index rule out are not read.
func (r *Reader) matchBlock(ctx context.Context, v *Version, b Block, f *filter.Filter, used *atomic.Int64, limit int64) ([]matchRun, error) {
	pieces, err := r.s.candidatePieces(ctx, v, b, f)
	if err != nil || len(pieces) == 0 {
		return nil, err
	}
	proj, err := v.Projection(f.Columns())
	if err != nil {
		return nil, err
	}
	var out []matchRun
	for _, pc := range pieces {
		rec, err := r.ReadBlock(ctx, v, pc, proj)
		if err != nil {
			return nil, err
		}
		keep, err := f.Eval(rec, nil)
		rec.Release()
		if err != nil {
			return nil, fmt.Errorf("filter %s on %s@%s: %w", f, v.Table, v.Commit.Short(), err)
		}
		before := len(out)
		for i, k := range keep {
			if k {
				out = appendMatch(out, pc.Offset-b.Offset+int64(i), 1)
			}
		}
		if n := used.Add(int64(len(out)-before) * matchRunBytes); n > limit {
			return nil, fmt.Errorf("%w: the rows of %s@%s matching filter %s need more than %d bytes (%d-byte runs of consecutive rows): use a more selective filter, or a filtered scan without shards", errdefs.ErrResourceExhausted, v.Table, v.Commit.Short(), f, limit, matchRunBytes)
		}
	}
	return out, nil
}

// matchRunBytes is what one run of consecutive matching rows holds in a
// Matches (the run and its cumulative count).
const matchRunBytes = 24

// appendMatch adds n consecutive rows from first to runs, extending the
// last run when they follow it.
func appendMatch(runs []matchRun, first, n int64) []matchRun {
	if k := len(runs) - 1; k >= 0 && runs[k].first+runs[k].n == first {
		runs[k].n += n
		return runs
	}
	return append(runs, matchRun{first, n})
}

// Matches are the ordinals of a version's rows that match a filter, in
// order, kept as runs of consecutive ordinals. Immutable.
type Matches struct {
	runs []matchRun
	cum  []int64 // cum[i]: matches before runs[i]
	n    int64
}

type matchRun struct{ first, n int64 }

// Len is the number of matching rows.
func (m *Matches) Len() int64 { return m.n }

// Ordinal returns the row ordinal of the k-th matching row (0 ≤ k < Len).
func (m *Matches) Ordinal(k int64) int64 {
	i := sort.Search(len(m.cum), func(i int) bool { return m.cum[i] > k }) - 1
	return m.runs[i].first + k - m.cum[i]
}

// Rank returns the number of matching rows with ordinal < row.
func (m *Matches) Rank(row int64) int64 {
	i := sort.Search(len(m.runs), func(i int) bool { return m.runs[i].first+m.runs[i].n > row })
	if i == len(m.runs) {
		return m.n
	}
	return m.cum[i] + max(0, row-m.runs[i].first)
}

// bytes is the memory m holds.
func (m *Matches) bytes() int64 { return int64(len(m.runs))*matchRunBytes + 64 }

// Matches returns the rows of v that match f, reading only the filter's
// columns of the row groups whose statistics allow a match (eight row
// groups at a time). The result is cached per (table version's data
// files, filter text) within Options.MatchCacheBytes, which also bounds
// one result (ErrResourceExhausted past it).
func (s *Store) Matches(ctx context.Context, v *Version, f *filter.Filter) (*Matches, error) {
	key := string(v.Project) + "\x00" + string(v.Commit) + "\x00" + string(v.Table) + "\x00" + f.String()
	h, err := s.matches.Get(ctx, key, func(ctx context.Context) (*Matches, int64, error) {
		m, err := s.computeMatches(ctx, v, f)
		if err != nil {
			return nil, 0, err
		}
		return m, m.bytes(), nil
	})
	if err != nil {
		return nil, err
	}
	m := h.Value() // immutable: valid after the handle goes
	h.Release()
	return m, nil
}

func (s *Store) computeMatches(ctx context.Context, v *Version, f *filter.Filter) (*Matches, error) {
	r := s.NewReader(nil)
	defer r.Close()
	limit := s.opts.MatchCacheBytes
	if limit == 0 {
		limit = DefaultOptions().MatchCacheBytes
	}
	var used atomic.Int64
	per := make([][]matchRun, len(v.blocks))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for i, b := range v.blocks {
		g.Go(func() error {
			var err error
			per[i], err = r.matchBlock(gctx, v, b, f, &used, limit)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	m := &Matches{}
	for i, runs := range per {
		for _, run := range runs {
			k := len(m.runs)
			if m.runs = appendMatch(m.runs, v.blocks[i].FirstRow+run.first, run.n); len(m.runs) > k {
				m.cum = append(m.cum, m.n)
			}
			m.n += run.n
		}
	}
	return m, nil
}

// ScanFiltered yields the rows of row groups [first, end) of v (indices
// into v.Blocks()) whose ordinals lie in [lo, hi) and that match f, in
// ordinal order, with the named columns (nil: all), at most one batch per
// row group. Row groups that statistics rule out are not read; for the
// others the filter's columns are read first and the rest only when a row
// matches. A nil f keeps every row in [lo, hi). The consumer releases each
// batch; stopping early is fine.
func (s *Store) ScanFiltered(ctx context.Context, v *Version, columns []string, f *filter.Filter, first, end int, lo, hi int64) iter.Seq2[arrow.RecordBatch, error] {
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
		var fcols *arrow.Schema
		if f != nil {
			if fcols, err = v.Projection(f.Columns()); err != nil {
				yield(nil, err)
				return
			}
		} else {
			fcols = arrow.NewSchema(nil, nil)
		}
		// The projection's columns that the filter batch already holds.
		rest := make([]arrow.Field, 0, projected.NumFields())
		for _, fd := range projected.Fields() {
			if len(fcols.FieldIndices(fd.Name)) == 0 {
				rest = append(rest, fd)
			}
		}
		var todo []Block
		for _, b := range v.blocks[first:end] {
			if b.FirstRow+b.Rows > lo && b.FirstRow < hi {
				todo = append(todo, b)
			}
		}
		r := s.NewReader(nil)
		defer r.Close()
		// Pieces of the blocks (at most FilterPieceBytes each) are read
		// and filtered filterParallel at a time; their batches come out in
		// order, a piece's slot freed as its batch is yielded.
		ctx, cancel := context.WithCancel(ctx)
		type result struct {
			rec arrow.RecordBatch
			err error
		}
		queue := make(chan chan result, filterParallel)
		slots := make(chan struct{}, filterParallel)
		var wg sync.WaitGroup
		wg.Go(func() {
			defer close(queue)
			for _, b := range todo {
				pieces, err := s.scanPieces(ctx, v, b, f, lo, hi)
				if err != nil {
					ch := make(chan result, 1)
					ch <- result{err: err}
					select {
					case queue <- ch:
					case <-ctx.Done():
					}
					return
				}
				for _, pc := range pieces {
					select {
					case slots <- struct{}{}:
					case <-ctx.Done():
						return
					}
					ch := make(chan result, 1)
					select {
					case queue <- ch:
					case <-ctx.Done():
						<-slots
						return
					}
					wg.Go(func() {
						rec, err := r.readPiece(ctx, v, pc, f, fcols, projected, rest, lo, hi)
						ch <- result{rec, err}
					})
				}
			}
		})
		defer func() {
			cancel()
			for ch := range queue {
				if res := <-ch; res.rec != nil {
					res.rec.Release()
				}
			}
			wg.Wait()
		}()
		for ch := range queue {
			res := <-ch
			<-slots
			if res.err != nil {
				yield(nil, res.err)
				return
			}
			if res.rec == nil {
				continue
			}
			if !yield(res.rec, nil) {
				return
			}
		}
		if err := ctx.Err(); err != nil {
			yield(nil, err)
		}
	}
}

// filterParallel is how many pieces a filtered scan reads and filters at
// once.
const filterParallel = 4

// scanPieces are the pieces of row group block b that a filtered scan
// reads: candidatePieces (all of b when f is nil, cut to FilterPieceBytes),
// clipped to the ordinals [lo, hi).
func (s *Store) scanPieces(ctx context.Context, v *Version, b Block, f *filter.Filter, lo, hi int64) ([]Block, error) {
	pieces, err := s.candidatePieces(ctx, v, b, f)
	if err != nil {
		return nil, err
	}
	out := pieces[:0]
	for _, pc := range pieces {
		a, z := max(pc.FirstRow, lo), min(pc.FirstRow+pc.Rows, hi)
		if a >= z {
			continue
		}
		pc.Offset += a - pc.FirstRow
		pc.Rows, pc.FirstRow = z-a, a
		out = append(out, pc)
	}
	return out, nil
}

// readPiece reads piece pc's rows that match f (every row when f is nil)
// and lie in [lo, hi), with the columns of projected; nil when none does.
func (r *Reader) readPiece(ctx context.Context, v *Version, pc Block, f *filter.Filter, fcols, projected *arrow.Schema, rest []arrow.Field, lo, hi int64) (arrow.RecordBatch, error) {
	if f == nil {
		return r.ReadBlock(ctx, v, pc, projected)
	}
	src, spans, n, err := r.filterPiece(ctx, v, pc, f, fcols, projected, rest, lo, hi, 0)
	if err != nil || src == nil {
		return nil, err
	}
	defer src.Release()
	if len(spans) == 1 { // one run of rows: a zero-copy slice
		return src.NewSlice(spans[0].Start, spans[0].Start+spans[0].N), nil
	}
	out, err := r.Gather(projected, []arrow.RecordBatch{src}, spans)
	if err != nil {
		return nil, err
	}
	defer func() {
		for _, c := range out {
			c.Release()
		}
	}()
	return array.NewRecordBatch(projected, out, n), nil
}

// filterPiece evaluates f on piece pc (a block) and, when some of its rows
// in [lo, hi) match, returns the piece with the columns of projected and
// the spans (of source src) of its matching rows.
func (r *Reader) filterPiece(ctx context.Context, v *Version, pc Block, f *filter.Filter, fcols, projected *arrow.Schema, rest []arrow.Field, lo, hi int64, src int32) (arrow.RecordBatch, []Span, int64, error) {
	frec, err := r.ReadBlock(ctx, v, pc, fcols)
	if err != nil {
		return nil, nil, 0, err
	}
	defer frec.Release()
	keep, err := f.Eval(frec, nil)
	if err != nil {
		return nil, nil, 0, fmt.Errorf("filter %s on %s@%s: %w", f, v.Table, v.Commit.Short(), err)
	}
	var spans []Span
	var n int64
	for i, k := range keep {
		if row := pc.FirstRow + int64(i); k && row >= lo && row < hi {
			spans = AppendSpan(spans, src, int64(i))
			n++
		}
	}
	if n == 0 {
		return nil, nil, 0, nil
	}
	var rrec arrow.RecordBatch
	if len(rest) > 0 {
		if rrec, err = r.ReadBlock(ctx, v, pc, arrow.NewSchema(rest, nil)); err != nil {
			return nil, nil, 0, err
		}
		defer rrec.Release()
	}
	cols := make([]arrow.Array, projected.NumFields())
	for i, fd := range projected.Fields() {
		if k := fcols.FieldIndices(fd.Name); len(k) > 0 {
			cols[i] = frec.Column(k[0])
		} else {
			cols[i] = rrec.Column(rrec.Schema().FieldIndices(fd.Name)[0])
		}
	}
	return array.NewRecordBatch(projected, cols, pc.Rows), spans, n, nil
}

// candidatePieces cuts row group block b into the pieces that can hold a
// row matching f: none when the row group's statistics rule it out; else
// the runs of rows whose pages (page index: every filter column's page
// holding the row) do not rule it out; b whole when there is no page
// index.
func (s *Store) candidatePieces(ctx context.Context, v *Version, b Block, f *filter.Filter) (_ []Block, err error) {
	defer parseGuard(s.log, v.fileKey(b.File), &err)
	file, err := s.openFile(ctx, v, b.File, s.mem)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	md := file.pf.MetaData()
	if f != nil && !f.MayMatch(rowGroupStats(md, b.RowGroup, v.Schema)) {
		return nil, nil
	}
	// Pieces of at most about FilterPieceBytes of Arrow data (all
	// columns), so that a filtered scan's memory stays bounded.
	maxRows := b.Rows
	if tb := md.RowGroup(b.RowGroup).TotalByteSize(); tb > FilterPieceBytes {
		maxRows = max(1, md.RowGroup(b.RowGroup).NumRows()*FilterPieceBytes/tb)
	}
	pieces := []Block{b}
	if f != nil {
		if pieces, err = s.pagePieces(md, file, b, f, v); err != nil {
			return nil, err
		}
	}
	var out []Block
	for _, pc := range pieces {
		for off := int64(0); off < pc.Rows; off += maxRows {
			n := min(maxRows, pc.Rows-off)
			out = append(out, Block{File: pc.File, RowGroup: pc.RowGroup, Offset: pc.Offset + off, Rows: n, FirstRow: pc.FirstRow + off})
		}
	}
	return out, nil
}

// FilterPieceBytes bounds the Arrow data (all columns, uncompressed) of
// one piece of a row group that a filtered read decodes at once; a
// filtered scan holds at most FilterScanBytes of pieces.
const FilterPieceBytes = 8 << 20

// FilterScanBytes is about the most memory a filtered scan (ScanFiltered)
// holds beyond the batches it has yielded: filterParallel pieces being
// read, with their filter and other columns.
const FilterScanBytes = filterParallel * 2 * FilterPieceBytes

// pagePieces cuts row group block b into the runs of rows whose pages
// allow a match (see candidatePieces).
func (s *Store) pagePieces(md *metadata.FileMetaData, file *dataFile, b Block, f *filter.Filter, v *Version) ([]Block, error) {
	whole := []Block{b}
	pir := file.pf.GetPageIndexReader()
	if pir == nil || b.Offset != 0 {
		return whole, nil
	}
	rgi, err := pir.RowGroup(b.RowGroup)
	if err != nil || rgi == nil {
		return whole, nil
	}
	type colPages struct {
		starts []int64 // first row of each page
		ci     metadata.ColumnIndex
		dt     arrow.DataType
	}
	cols := map[string]*colPages{}
	cuts := map[int64]bool{0: true, b.Rows: true}
	for _, name := range f.Columns() {
		leaf := md.Schema.ColumnIndexByName(name)
		if leaf < 0 {
			continue
		}
		oi, err := rgi.GetOffsetIndex(leaf)
		if err != nil || oi == nil {
			continue
		}
		ci, err := rgi.GetColumnIndex(leaf)
		if err != nil || ci == nil {
			continue
		}
		cp := &colPages{ci: ci, dt: v.Schema.Field(v.Schema.FieldIndices(name)[0]).Type}
		for _, loc := range oi.GetPageLocations() {
			cp.starts = append(cp.starts, loc.FirstRowIndex)
			cuts[loc.FirstRowIndex] = true
		}
		if len(cp.starts) == 0 || len(cp.starts) != len(ci.GetNullPages()) {
			continue
		}
		cols[name] = cp
	}
	if len(cols) == 0 {
		return whole, nil
	}
	bounds := slices.Sorted(maps.Keys(cuts))
	var out []Block
	for i := 0; i+1 < len(bounds); i++ {
		a, z := bounds[i], bounds[i+1]
		if a >= b.Rows {
			break
		}
		st := func(col string) (filter.ColumnStats, bool) {
			cp := cols[col]
			if cp == nil {
				return filter.ColumnStats{}, false
			}
			p := sort.Search(len(cp.starts), func(k int) bool { return cp.starts[k] > a }) - 1
			if p < 0 {
				return filter.ColumnStats{}, false
			}
			end := b.Rows
			if p+1 < len(cp.starts) {
				end = cp.starts[p+1]
			}
			out := filter.ColumnStats{Rows: end - cp.starts[p], Nulls: -1}
			if cp.ci.IsSetNullCounts() {
				out.Nulls = cp.ci.GetNullCounts()[p]
			}
			if cp.ci.GetNullPages()[p] {
				out.Nulls = out.Rows
				return out, true
			}
			out.Min, out.Max = pageValue(cp.ci, cp.dt, p, true), pageValue(cp.ci, cp.dt, p, false)
			out.HasMinMax = out.Min != nil && out.Max != nil
			return out, true
		}
		if !f.MayMatch(st) {
			continue
		}
		if k := len(out) - 1; k >= 0 && out[k].Offset+out[k].Rows == a {
			out[k].Rows += z - a
			continue
		}
		out = append(out, Block{File: b.File, RowGroup: b.RowGroup, Offset: a, Rows: z - a, FirstRow: b.FirstRow + a})
	}
	return out, nil
}

// pageValue is page p's min (or max) in ci, as filter.ColumnStats holds
// it for a column of type dt; nil when unusable.
func pageValue(ci metadata.ColumnIndex, dt arrow.DataType, p int, min bool) any {
	pick := func(n int) bool { return p < n }
	switch ci := ci.(type) {
	case *metadata.TypedColumnIndex[int32]:
		vals := ci.MaxValues()
		if min {
			vals = ci.MinValues()
		}
		switch dt.ID() {
		case arrow.INT8, arrow.INT16, arrow.INT32, arrow.DATE32:
			if pick(len(vals)) {
				return int64(vals[p])
			}
		}
	case *metadata.TypedColumnIndex[int64]:
		vals := ci.MaxValues()
		if min {
			vals = ci.MinValues()
		}
		switch dt.ID() {
		case arrow.INT64, arrow.TIMESTAMP:
			if pick(len(vals)) {
				return vals[p]
			}
		}
	case *metadata.TypedColumnIndex[float32]:
		vals := ci.MaxValues()
		if min {
			vals = ci.MinValues()
		}
		if dt.ID() == arrow.FLOAT32 && pick(len(vals)) && !math.IsNaN(float64(vals[p])) {
			return float64(vals[p])
		}
	case *metadata.TypedColumnIndex[float64]:
		vals := ci.MaxValues()
		if min {
			vals = ci.MinValues()
		}
		if dt.ID() == arrow.FLOAT64 && pick(len(vals)) && !math.IsNaN(vals[p]) {
			return vals[p]
		}
	case *metadata.TypedColumnIndex[bool]:
		vals := ci.MaxValues()
		if min {
			vals = ci.MinValues()
		}
		if dt.ID() == arrow.BOOL && pick(len(vals)) {
			if vals[p] {
				return int64(1)
			}
			return int64(0)
		}
	case *metadata.TypedColumnIndex[parquet.ByteArray]:
		vals := ci.MaxValues()
		if min {
			vals = ci.MinValues()
		}
		switch dt.ID() {
		case arrow.STRING, arrow.LARGE_STRING, arrow.BINARY, arrow.LARGE_BINARY:
			if pick(len(vals)) {
				return string(vals[p])
			}
		}
	}
	return nil
}

// matchesOf is a helper for tests: the ordinals of m in order.
func (m *Matches) ordinals() []int64 {
	out := make([]int64, 0, m.n)
	for _, r := range m.runs {
		for k := range r.n {
			out = append(out, r.first+k)
		}
	}
	return slices.Clip(out)
}
