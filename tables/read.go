package tables

import (
	"context"
	"fmt"
	"io"
	"iter"
	"slices"
	"sort"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/weftdata/weft/errdefs"
	"github.com/weftdata/weft/versions"
)

// Block is one row group of a table version: the unit of reading.
type Block struct {
	File     int   // index into the manifest's files
	RowGroup int   // row group within that file
	FirstRow int64 // ordinal of its first row in the version
	Rows     int64
}

// Version is a table pinned at a commit. It is immutable and safe for
// concurrent use.
type Version struct {
	Project  versions.ProjectName
	Commit   versions.CommitID
	Table    versions.TableName
	Manifest *versions.Manifest
	Schema   *arrow.Schema
	blocks   []Block
}

// Rows is the number of rows in the version.
func (v *Version) Rows() int64 { return v.Manifest.Rows() }

// Blocks lists the version's row groups in ordinal order.
func (v *Version) Blocks() []Block { return v.blocks }

// BlockOf returns the index of the block holding row ordinal row.
func (v *Version) BlockOf(row int64) (int, error) {
	if row < 0 || row >= v.Rows() {
		return 0, fmt.Errorf("%w: row %d of %s@%s, which has %d rows", ErrRowOutOfRange, row, v.Table, v.Commit.Short(), v.Rows())
	}
	i := sort.Search(len(v.blocks), func(i int) bool { return v.blocks[i].FirstRow+v.blocks[i].Rows > row })
	return i, nil
}

// Projection returns the schema of the named columns, in the order given;
// nil or empty means every column. Unknown or repeated names are an error
// that lists the table's columns.
func (v *Version) Projection(columns []string) (*arrow.Schema, error) {
	if len(columns) == 0 {
		return v.Schema, nil
	}
	fields := make([]arrow.Field, 0, len(columns))
	seen := make(map[string]bool, len(columns))
	for _, c := range columns {
		idx := v.Schema.FieldIndices(c)
		if len(idx) == 0 {
			return nil, fmt.Errorf("%w: %s is not a column of %s; columns are: %s", ErrColumnNotFound, errdefs.Quote(c), v.Table, fieldList(v.Schema))
		}
		if seen[c] {
			return nil, fmt.Errorf("%w: column %s is requested twice", ErrBadColumns, errdefs.Quote(c))
		}
		seen[c] = true
		fields = append(fields, v.Schema.Field(idx[0]))
	}
	return arrow.NewSchema(fields, nil), nil
}

// Table resolves table t of project p at ref.
func (s *Store) Table(ctx context.Context, p versions.ProjectName, ref string, t versions.TableName) (*Version, error) {
	if _, err := versions.ParseTableName(string(t)); err != nil {
		return nil, err
	}
	id, err := s.v.Resolve(ctx, p, ref)
	if err != nil {
		return nil, err
	}
	return s.TableAt(ctx, p, id, t)
}

// TableAt returns table t as of commit id.
func (s *Store) TableAt(ctx context.Context, p versions.ProjectName, id versions.CommitID, t versions.TableName) (*Version, error) {
	c, err := s.v.GetCommit(ctx, p, id)
	if err != nil {
		return nil, err
	}
	mid, ok := c.Tables[t]
	if !ok {
		names := make([]string, 0, len(c.Tables))
		for n := range c.Tables {
			names = append(names, string(n))
		}
		slices.Sort(names)
		return nil, fmt.Errorf("%w: %q in project %q at commit %s; tables there: %s", ErrTableNotFound, t, p, id.Short(), errdefs.List(names))
	}
	m, err := s.v.GetManifest(ctx, p, mid)
	if err != nil {
		return nil, err
	}
	schema, err := DecodeSchema(m.Schema)
	if err != nil {
		return nil, err
	}
	if err := checkTypes(schema); err != nil {
		return nil, s.unreadable(ctx, p, id, t, err)
	}
	v := &Version{Project: p, Commit: id, Table: t, Manifest: m, Schema: schema}
	var first int64
	for fi, f := range m.Files {
		for gi, n := range f.RowGroups {
			v.blocks = append(v.blocks, Block{File: fi, RowGroup: gi, FirstRow: first, Rows: n})
			first += n
		}
	}
	return v, nil
}

// parquetFile is an open data file.
type parquetFile struct {
	fr    *pqarrow.FileReader
	close func() error
}

func (s *Store) openFile(ctx context.Context, v *Version, fi int) (*parquetFile, error) {
	key := versions.ProjectKey(v.Project) + v.Manifest.Files[fi].Path
	r, err := s.b.Open(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("open data file %s: %w", key, err)
	}
	opts := []file.ReadOption{file.WithReadProps(parquet.NewReaderProperties(s.mem))}
	md := s.cachedFooter(key)
	if md != nil {
		opts = append(opts, file.WithMetadata(md))
	}
	pf, err := file.NewParquetReader(io.NewSectionReader(r, 0, r.Size()), opts...)
	if err != nil {
		r.Close()
		return nil, fmt.Errorf("read parquet footer of %s: %w", key, err)
	}
	if md == nil {
		s.cacheFooter(key, pf.MetaData())
	}
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{Parallel: true}, s.mem)
	if err != nil {
		r.Close()
		return nil, fmt.Errorf("open parquet %s: %w", key, err)
	}
	return &parquetFile{fr: fr, close: r.Close}, nil
}

func (s *Store) cachedFooter(key string) *metadata.FileMetaData {
	s.footers.Lock()
	defer s.footers.Unlock()
	return s.footers.m[key]
}

func (s *Store) cacheFooter(key string, md *metadata.FileMetaData) {
	if s.opts.FooterCacheEntries == 0 {
		return
	}
	s.footers.Lock()
	defer s.footers.Unlock()
	if len(s.footers.m) >= s.opts.FooterCacheEntries {
		for k := range s.footers.m { // evict an arbitrary entry
			delete(s.footers.m, k)
			break
		}
	}
	s.footers.m[key] = md
}

// LeafColumns maps a projection to the Parquet leaf column indices that
// pqarrow reads take (a nested column has several leaves).
func LeafColumns(md *metadata.FileMetaData, projected *arrow.Schema) []int {
	want := make(map[string]bool, projected.NumFields())
	for _, f := range projected.Fields() {
		want[f.Name] = true
	}
	var leaves []int
	for i := range md.Schema.NumColumns() {
		if want[md.Schema.Column(i).ColumnPath()[0]] {
			leaves = append(leaves, i)
		}
	}
	return leaves
}

// ReadBlock reads block i of v with the named columns (nil: all), as one
// record batch in the projection's column order. The caller releases it.
func (s *Store) ReadBlock(ctx context.Context, v *Version, i int, columns []string) (arrow.RecordBatch, error) {
	projected, err := v.Projection(columns)
	if err != nil {
		return nil, err
	}
	if i < 0 || i >= len(v.blocks) {
		return nil, fmt.Errorf("%w: block %d of %s@%s, which has %d", ErrBlockOutOfRange, i, v.Table, v.Commit.Short(), len(v.blocks))
	}
	b := v.blocks[i]
	f, err := s.openFile(ctx, v, b.File)
	if err != nil {
		return nil, err
	}
	defer f.close()
	tbl, err := f.fr.ReadRowGroups(ctx, LeafColumns(f.fr.ParquetReader().MetaData(), projected), []int{b.RowGroup})
	if err != nil {
		return nil, fmt.Errorf("read block %d of %s@%s: %w", i, v.Table, v.Commit.Short(), err)
	}
	defer tbl.Release()
	rec, err := tableToRecord(s.mem, tbl, projected)
	if err != nil {
		return nil, err
	}
	if rec.NumRows() != b.Rows {
		rec.Release()
		return nil, fmt.Errorf("%w: block %d of %s@%s has %d rows, manifest says %d", versions.ErrCorrupt, i, v.Table, v.Commit.Short(), rec.NumRows(), b.Rows)
	}
	return rec, nil
}

// tableToRecord flattens tbl into one record batch with projected's columns
// in projected's order.
func tableToRecord(mem memory.Allocator, tbl arrow.Table, projected *arrow.Schema) (arrow.RecordBatch, error) {
	cols := make([]arrow.Array, 0, projected.NumFields())
	defer func() {
		for _, c := range cols {
			c.Release()
		}
	}()
	for _, f := range projected.Fields() {
		idx := tbl.Schema().FieldIndices(f.Name)
		if len(idx) != 1 {
			return nil, fmt.Errorf("%w: data file lacks column %q", versions.ErrCorrupt, f.Name)
		}
		chunks := tbl.Column(idx[0]).Data().Chunks()
		var col arrow.Array
		switch len(chunks) {
		case 0:
			col = array.MakeArrayOfNull(mem, f.Type, 0)
		case 1:
			col = chunks[0]
			col.Retain()
		default:
			var err error
			if col, err = array.Concatenate(chunks, mem); err != nil {
				return nil, fmt.Errorf("concatenate column %q: %w", f.Name, err)
			}
		}
		if !arrow.TypeEqual(col.DataType(), f.Type) {
			col.Release()
			return nil, fmt.Errorf("%w: column %q is %s in the data file, %s in the manifest", versions.ErrCorrupt, f.Name, col.DataType(), f.Type)
		}
		cols = append(cols, col)
	}
	return array.NewRecordBatch(projected, cols, tbl.NumRows()), nil
}

// Scan yields blocks [first, end) of v in order, each as one record batch
// with the named columns. The consumer releases each batch. Stopping early
// is fine.
func (s *Store) Scan(ctx context.Context, v *Version, columns []string, first, end int) iter.Seq2[arrow.RecordBatch, error] {
	return func(yield func(arrow.RecordBatch, error) bool) {
		if first < 0 || end > len(v.blocks) || first > end {
			yield(nil, fmt.Errorf("%w: blocks [%d, %d) of %s@%s, which has %d", ErrBlockOutOfRange, first, end, v.Table, v.Commit.Short(), len(v.blocks)))
			return
		}
		for i := first; i < end; i++ {
			rec, err := s.ReadBlock(ctx, v, i, columns)
			if !yield(rec, err) || err != nil {
				return
			}
		}
	}
}

// Gather returns the rows of v with the given ordinals, in that order
// (repeats allowed), with the named columns. The caller releases it.
func (s *Store) Gather(ctx context.Context, v *Version, rows []int64, columns []string) (arrow.RecordBatch, error) {
	projected, err := v.Projection(columns)
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return emptyRecord(s.mem, projected), nil
	}
	// Read each needed block once; index rows into their concatenation.
	var need []int
	where := make(map[int]int64) // block -> offset in concatenation
	for _, r := range rows {
		bi, err := v.BlockOf(r)
		if err != nil {
			return nil, err
		}
		if _, ok := where[bi]; !ok {
			where[bi] = -1
			need = append(need, bi)
		}
	}
	slices.Sort(need)
	recs := make([]arrow.RecordBatch, 0, len(need))
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	var offset int64
	for _, bi := range need {
		rec, err := s.ReadBlock(ctx, v, bi, columns)
		if err != nil {
			return nil, err
		}
		recs = append(recs, rec)
		where[bi] = offset
		offset += rec.NumRows()
	}
	idxB := array.NewInt64Builder(s.mem)
	defer idxB.Release()
	for _, r := range rows {
		bi, _ := v.BlockOf(r)
		idxB.Append(where[bi] + r - v.blocks[bi].FirstRow)
	}
	idx := idxB.NewInt64Array()
	defer idx.Release()

	out := make([]arrow.Array, projected.NumFields())
	defer func() {
		for _, c := range out {
			if c != nil {
				c.Release()
			}
		}
	}()
	ctx = compute.WithAllocator(ctx, s.mem)
	for c := range projected.NumFields() {
		chunks := make([]arrow.Array, len(recs))
		for i, r := range recs {
			chunks[i] = r.Column(c)
		}
		var all arrow.Array
		if len(chunks) == 1 {
			all = chunks[0]
			all.Retain()
		} else if all, err = array.Concatenate(chunks, s.mem); err != nil {
			return nil, fmt.Errorf("gather: concatenate %q: %w", projected.Field(c).Name, err)
		}
		out[c], err = compute.TakeArray(ctx, all, idx)
		all.Release()
		if err != nil {
			return nil, fmt.Errorf("gather: take %q: %w", projected.Field(c).Name, err)
		}
	}
	return array.NewRecordBatch(projected, out, int64(len(rows))), nil
}

func emptyRecord(mem memory.Allocator, schema *arrow.Schema) arrow.RecordBatch {
	cols := make([]arrow.Array, schema.NumFields())
	for i, f := range schema.Fields() {
		cols[i] = array.MakeArrayOfNull(mem, f.Type, 0)
		defer cols[i].Release()
	}
	return array.NewRecordBatch(schema, cols, 0)
}
