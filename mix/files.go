package mix

import (
	"context"
	"fmt"
	"io"
	"sort"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/weftdata/weft/bucket"
	"github.com/weftdata/weft/tables"
	"github.com/weftdata/weft/versions"
)

// Block layout constants. They decide the blocks recorded in a run record,
// and so its run id: changing one changes the id of every new run (old
// runs keep the blocks their records name).
const (
	// blockBytes and maxBlockBytes bound the target size of a block (the
	// projected columns' uncompressed Parquet bytes): blockRows rows, but
	// at least blockBytes and at most maxBlockBytes. A row group up to 5/4
	// of the target is one block; a larger one is cut at page boundaries
	// of its widest column into about ⌈bytes/target⌉ blocks (see doc.go,
	// "Blocks"). Small blocks make a resumed run's first batch cheap; the
	// row floor and the byte cap keep the number of reads (S3 requests)
	// per epoch low for wide rows.
	blockBytes    = 1 << 20
	maxBlockBytes = 8 << 20
	blockRows     = 1024
	// windowBytes bounds the default shuffle window: buffer_rows is
	// sampler.DefaultBufferRows rows, or fewer so that a window of the
	// component with the widest rows holds about this many bytes (and at
	// least minWindowRows rows).
	windowBytes   = 64 << 20
	minWindowRows = 64
)

// readBufferBytes is the read size of the Parquet page stream: reads of a
// block fetch the pages it needs, in pieces of at least this size.
const readBufferBytes = 256 << 10

// dataFile is an open data file.
type dataFile struct {
	r     bucket.Reader
	pf    *file.Reader
	props *parquet.ReaderProperties // read when a column's page stream is made
}

func (f *dataFile) Close() error { return f.r.Close() }

// openFile opens the data file at key, with its footer from the cache.
func (e *Engine) openFile(ctx context.Context, key string) (*dataFile, error) {
	r, err := e.bucket.Open(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("open data file %s: %w", key, err)
	}
	props := parquet.NewReaderProperties(e.scratch)
	props.BufferedStreamEnabled = true
	props.BufferSize = readBufferBytes
	opts := []file.ReadOption{file.WithReadProps(props)}
	md := e.footers.get(key)
	if md != nil {
		opts = append(opts, file.WithMetadata(md))
	}
	pf, err := file.NewParquetReader(io.NewSectionReader(r, 0, r.Size()), opts...)
	if err != nil {
		r.Close()
		return nil, fmt.Errorf("read parquet footer of %s: %w", key, err)
	}
	if md == nil {
		e.footers.put(key, pf.MetaData())
	}
	return &dataFile{r: r, pf: pf, props: props}, nil
}

// fileKey is the bucket key of data file fi of v.
func fileKey(v *tables.Version, fi int) string {
	return versions.ProjectKey(v.Project) + v.Manifest.Files[fi].Path
}

// fileLayout cuts the row groups of data file fi of v into blocks for the
// projection, and returns their row counts and the projection's
// uncompressed bytes in the file.
func (e *Engine) fileLayout(ctx context.Context, v *tables.Version, fi int, projected *arrow.Schema) ([]int64, int64, error) {
	key := fileKey(v, fi)
	f, err := e.openFile(ctx, key)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	md := f.pf.MetaData()
	want := v.Manifest.Files[fi].RowGroups
	// The manifest lists the file's non-empty row groups; a writer may end
	// a file with an empty one.
	for g := len(want); g < md.NumRowGroups(); g++ {
		if md.RowGroup(g).NumRows() != 0 {
			return nil, 0, fmt.Errorf("%w: data file %s has %d row groups, its manifest says %d", versions.ErrCorrupt, key, md.NumRowGroups(), len(want))
		}
	}
	if md.NumRowGroups() < len(want) {
		return nil, 0, fmt.Errorf("%w: data file %s has %d row groups, its manifest says %d", versions.ErrCorrupt, key, md.NumRowGroups(), len(want))
	}
	leaves := tables.LeafColumns(md, projected)
	pages := f.pf.GetPageIndexReader()
	var blocks []int64
	var total int64
	for g := range len(want) {
		rg := md.RowGroup(g)
		rows := rg.NumRows()
		if rows != want[g] {
			return nil, 0, fmt.Errorf("%w: row group %d of %s has %d rows, its manifest says %d", versions.ErrCorrupt, g, key, rows, want[g])
		}
		var bytes, widest int64
		wideLeaf := -1
		for _, c := range leaves {
			cc, err := rg.ColumnChunk(c)
			if err != nil {
				return nil, 0, fmt.Errorf("%w: row group %d of %s: %w", versions.ErrCorrupt, g, key, err)
			}
			n := cc.TotalUncompressedSize()
			bytes += n
			if n > widest {
				widest, wideLeaf = n, c
			}
		}
		total += bytes
		var starts []int64 // page starts of the widest column
		if bytes > e.blockBytes*5/4 && pages != nil && wideLeaf >= 0 {
			if rgi, err := pages.RowGroup(g); err == nil && rgi != nil {
				if oi, err := rgi.GetOffsetIndex(wideLeaf); err == nil && oi != nil {
					for _, loc := range oi.GetPageLocations() {
						starts = append(starts, loc.FirstRowIndex)
					}
				}
			}
		}
		blocks = append(blocks, cutRowGroup(rows, bytes, starts, e.blockTarget(rows, bytes))...)
	}
	return blocks, total, nil
}

// blockTarget is the block size for a row group of rows rows and bytes
// bytes: blockRows rows' worth, within [blockBytes, maxBlockBytes].
func (e *Engine) blockTarget(rows, bytes int64) int64 {
	perRow := max(1, bytes/max(1, rows))
	return min(max(perRow*blockRows, e.blockBytes), max(e.maxBlockBytes, e.blockBytes))
}

// cutRowGroup cuts a row group of rows rows and bytes bytes into blocks of
// about target bytes: k = ⌈bytes/target⌉ blocks whose boundaries are the
// page starts nearest to the even split points (or the even split points
// when pages is empty). Pages larger than a block make fewer, larger blocks.
func cutRowGroup(rows, bytes int64, pages []int64, target int64) []int64 {
	if bytes <= target*5/4 || rows < 2 {
		return []int64{rows}
	}
	k := min((bytes+target-1)/target, rows)
	var cuts []int64
	last := int64(0)
	for t := int64(1); t < k; t++ {
		ideal := rows * t / k
		cut := ideal
		if len(pages) > 0 {
			i := sort.Search(len(pages), func(i int) bool { return pages[i] >= ideal })
			switch {
			case i == len(pages):
				cut = pages[i-1]
			case i > 0 && ideal-pages[i-1] < pages[i]-ideal:
				cut = pages[i-1]
			default:
				cut = pages[i]
			}
		}
		if cut > last && cut < rows {
			cuts = append(cuts, cut)
			last = cut
		}
	}
	out := make([]int64, 0, len(cuts)+1)
	prev := int64(0)
	for _, c := range cuts {
		out = append(out, c-prev)
		prev = c
	}
	return append(out, rows-prev)
}

// readBlock reads block b of a component (version v) with the columns of
// data, as one record batch in data's column order. Wide binary columns are
// read directly (binary.go); the others through pqarrow's record reader.
func (e *Engine) readBlock(ctx context.Context, v *tables.Version, b blockRef, data *arrow.Schema) (arrow.RecordBatch, error) {
	key := fileKey(v, b.File)
	f, err := e.openFile(ctx, key)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	md := f.pf.MetaData()
	f.props.BufferSize = blockReadSize(md, b, data)
	cols := make([]arrow.Array, data.NumFields())
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	var rest []arrow.Field // columns for pqarrow
	for i, fd := range data.Fields() {
		leaf := directLeaf(md, fd)
		if leaf < 0 {
			rest = append(rest, fd)
			continue
		}
		if cols[i], err = e.readBinary(ctx, f, key, b, leaf, fd); err != nil {
			return nil, err
		}
	}
	if len(rest) > 0 {
		rec, err := e.readRecords(ctx, f, key, b, arrow.NewSchema(rest, nil))
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
	return array.NewRecordBatch(data, cols, b.Rows), nil
}

// blockReadSize is the read size of block b's page streams: about the
// block's share of its widest column chunk (compressed), at least
// readBufferBytes and at most maxBlockBytes. Pages are small (128 KiB), so
// a fixed small buffer would fetch a wide block in many small reads, one
// S3 request each.
func blockReadSize(md *metadata.FileMetaData, b blockRef, data *arrow.Schema) int64 {
	rg := md.RowGroup(b.RowGroup)
	var widest int64
	for _, c := range tables.LeafColumns(md, data) {
		if cc, err := rg.ColumnChunk(c); err == nil {
			widest = max(widest, cc.TotalCompressedSize())
		}
	}
	share := widest * b.Rows / max(1, rg.NumRows())
	return min(max(share, readBufferBytes), maxBlockBytes)
}

// readRecords reads block b's rows of the columns of data through pqarrow.
func (e *Engine) readRecords(ctx context.Context, f *dataFile, key string, b blockRef, data *arrow.Schema) (arrow.RecordBatch, error) {
	fr, err := pqarrow.NewFileReader(f.pf, pqarrow.ArrowReadProperties{Parallel: true, BatchSize: b.Rows, PreAllocBinaryData: true}, e.mem)
	if err != nil {
		return nil, fmt.Errorf("open parquet %s: %w", key, err)
	}
	rr, err := fr.GetRecordReader(ctx, tables.LeafColumns(f.pf.MetaData(), data), []int{b.RowGroup})
	if err != nil {
		return nil, fmt.Errorf("read %s row group %d: %w", key, b.RowGroup, err)
	}
	defer rr.Release()
	if b.Offset > 0 {
		if err := rr.SeekToRow(b.Offset); err != nil {
			return nil, fmt.Errorf("seek %s row group %d to row %d: %w", key, b.RowGroup, b.Offset, err)
		}
	}
	var parts []arrow.RecordBatch
	defer func() {
		for _, p := range parts {
			p.Release()
		}
	}()
	var got int64
	for got < b.Rows && rr.Next() {
		rec, err := tables.Reorder(rr.RecordBatch(), data)
		if err != nil {
			return nil, fmt.Errorf("%s row group %d: %w", key, b.RowGroup, err)
		}
		if got+rec.NumRows() > b.Rows {
			part := rec.NewSlice(0, b.Rows-got)
			rec.Release()
			rec = part
		}
		parts = append(parts, rec)
		got += rec.NumRows()
	}
	if err := rr.Err(); err != nil {
		return nil, fmt.Errorf("read %s row group %d: %w", key, b.RowGroup, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if got != b.Rows {
		return nil, fmt.Errorf("%w: %s row group %d gave %d rows from row %d, want %d", versions.ErrCorrupt, key, b.RowGroup, got, b.Offset, b.Rows)
	}
	if len(parts) == 1 {
		rec := parts[0]
		parts = nil
		return rec, nil
	}
	return concatRecords(e, data, parts)
}

func concatRecords(e *Engine, data *arrow.Schema, parts []arrow.RecordBatch) (arrow.RecordBatch, error) {
	cols := make([]arrow.Array, data.NumFields())
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	var rows int64
	for _, p := range parts {
		rows += p.NumRows()
	}
	for i := range cols {
		chunks := make([]arrow.Array, len(parts))
		for j, p := range parts {
			chunks[j] = p.Column(i)
		}
		var err error
		if cols[i], err = array.Concatenate(chunks, e.mem); err != nil {
			return nil, fmt.Errorf("concatenate column %q: %w", data.Field(i).Name, err)
		}
	}
	return array.NewRecordBatch(data, cols, rows), nil
}

// footerCache keeps parsed Parquet footers of data files (immutable, so
// never stale), bounded by entries.
type footerCache struct {
	max int
	mu  struct {
		sync.Mutex
		m map[string]*metadata.FileMetaData
	}
}

func (c *footerCache) get(key string) *metadata.FileMetaData {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mu.m[key]
}

func (c *footerCache) put(key string, md *metadata.FileMetaData) {
	if c.max <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.m == nil {
		c.mu.m = make(map[string]*metadata.FileMetaData)
	}
	if len(c.mu.m) >= c.max {
		for k := range c.mu.m { // evict an arbitrary entry
			delete(c.mu.m, k)
			break
		}
	}
	c.mu.m[key] = md
}
