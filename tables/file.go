package tables

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"golang.org/x/sync/errgroup"

	"github.com/weftdata/weft/bucket"
	"github.com/weftdata/weft/versions"
)

// Reads of data files. A data file's footer and page index sit at its end;
// both are read once, in one or two ranged reads of the file's tail, and
// kept in the Store's footer cache (byte-bounded, shared by every reader).
// A block read then needs only the byte ranges of its own pages: it
// computes them from the offset index for every projected column,
// coalesces ranges less than coalesceGap apart, and fetches each merged
// range with one ranged read (one S3 GET), in parallel. The Parquet page
// readers read from those buffers; anything outside them (a reader peeking
// past the block's last page) falls back to the bucket.

const (
	// tailBytes is the first read of a file's tail: the footer and page
	// index of most files fit, so opening a file costs one read.
	tailBytes = 64 << 10
	// coalesceGap: ranges closer than this are fetched as one read (the
	// bytes between them are read and dropped: cheaper than a request).
	coalesceGap = 64 << 10
	// readBufferBytes is the read size of the Parquet page streams.
	readBufferBytes = 256 << 10
	// maxFooterBytes bounds a footer and page index we are willing to read.
	maxFooterBytes = 64 << 20
)

// fileMeta is what the footer cache keeps of a data file: its parsed
// footer and the bytes of its tail (footer and page index).
type fileMeta struct {
	md      *metadata.FileMetaData
	size    int64
	tail    []byte
	tailOff int64
}

// bytes estimates the memory a fileMeta holds: the tail, and the parsed
// footer at a few times its serialized size.
func (m *fileMeta) bytes() int64 { return int64(len(m.tail)) + 4*int64(m.md.Size()) + 1024 }

// dataFile is an open data file: a bucket reader, a Parquet reader over the
// ranges that were fetched, and the footer.
type dataFile struct {
	key string
	r   bucket.Reader
	rr  *rangeReader
	pf  *file.Reader
	pr  *parquet.ReaderProperties
	// mem and values allocate the arrays of a read (a block's direct
	// columns: values from the pool of block buffers).
	mem, values memory.Allocator
}

func (f *dataFile) Close() error {
	f.rr.free()
	return f.r.Close()
}

// openFile opens data file fi of v, with its footer from the cache. The
// Parquet reader allocates page buffers from mem.
func (s *Store) openFile(ctx context.Context, v *Version, fi int, mem memory.Allocator) (_ *dataFile, err error) {
	key := v.fileKey(fi)
	defer parseGuard(s.log, key, &err)
	br, err := s.b.Open(ctx, key)
	if errors.Is(err, bucket.ErrNotFound) {
		// The manifest names it: the store's damage, not a missing thing
		// the caller named.
		return nil, fmt.Errorf("%w: data file %s is missing: %w", versions.ErrCorrupt, key, err)
	}
	if err != nil {
		return nil, fmt.Errorf("open data file %s: %w", key, err)
	}
	r := bucketReader{br}
	// The loader runs on the cache's goroutine: it guards itself.
	h, err := s.footers.Get(ctx, key, func(context.Context) (m *fileMeta, size int64, err error) {
		defer parseGuard(s.log, key, &err)
		if m, err = readFooter(r, key); err != nil {
			return nil, 0, err
		}
		pinSchema(m.md, v.Manifest.Schema)
		return m, m.bytes(), nil
	})
	if err != nil {
		r.Close()
		return nil, err
	}
	// The footer's parsed metadata and tail bytes are immutable, so they
	// stay valid after the handle goes (the garbage collector frees them).
	m := h.Value()
	h.Release()
	rr := &rangeReader{fallback: r, size: r.Size(), mem: mem}
	rr.add(m.tailOff, m.tail, false)
	props := parquet.NewReaderProperties(mem)
	pf, err := file.NewParquetReader(io.NewSectionReader(rr, 0, rr.size), file.WithReadProps(props), file.WithMetadata(m.md))
	if err != nil {
		r.Close()
		return nil, fmt.Errorf("%w: open parquet %s: %w", versions.ErrCorrupt, key, err)
	}
	return &dataFile{key: key, r: r, rr: rr, pf: pf, pr: props, mem: mem, values: mem}, nil
}

// readFooter reads and parses the tail of a data file: the footer and,
// when the file has one, the page index before it.
func readFooter(r bucket.Reader, key string) (*fileMeta, error) {
	size := r.Size()
	if size < 12 {
		return nil, fmt.Errorf("%w: data file %s has %d bytes, too few for Parquet", versions.ErrCorrupt, key, size)
	}
	off := max(0, size-tailBytes)
	buf := make([]byte, size-off)
	if _, err := r.ReadAt(buf, off); err != nil && err != io.EOF {
		return nil, fmt.Errorf("read footer of %s: %w", key, err)
	}
	if string(buf[len(buf)-4:]) != "PAR1" {
		return nil, fmt.Errorf("%w: data file %s does not end in PAR1", versions.ErrCorrupt, key)
	}
	footerLen := int64(binary.LittleEndian.Uint32(buf[len(buf)-8:]))
	if footerLen+8 > size || footerLen > maxFooterBytes {
		return nil, fmt.Errorf("%w: data file %s has a footer of %d bytes", versions.ErrCorrupt, key, footerLen)
	}
	need := size - 8 - footerLen
	var err error
	if need < off {
		if buf, err = readBefore(r, buf, need, off); err != nil {
			return nil, fmt.Errorf("read footer of %s: %w", key, err)
		}
		off = need
	}
	md, err := metadata.NewFileMetaData(buf[need-off:size-8-off], nil)
	if err != nil {
		return nil, fmt.Errorf("%w: footer of %s: %w", versions.ErrCorrupt, key, err)
	}
	md.SetSourceFileSize(size)
	// The page index (offset and column indexes) lies before the footer.
	start := need
	for g := range md.NumRowGroups() {
		rg := md.RowGroup(g)
		if rg.NumRows() < 0 {
			return nil, fmt.Errorf("%w: footer of %s: row group %d has %d rows", versions.ErrCorrupt, key, g, rg.NumRows())
		}
		for c := range rg.NumColumns() {
			cc, err := rg.ColumnChunk(c)
			if err != nil {
				return nil, fmt.Errorf("%w: footer of %s: %w", versions.ErrCorrupt, key, err)
			}
			if err := checkChunk(cc, need); err != nil {
				return nil, fmt.Errorf("%w: footer of %s: row group %d column %d: %w", versions.ErrCorrupt, key, g, c, err)
			}
			for _, loc := range []*metadata.IndexLocation{cc.GetOffsetIndexLocation(), cc.GetColumnIndexLocation()} {
				if loc != nil && loc.Offset >= 0 && loc.Offset < start {
					start = loc.Offset
				}
			}
		}
	}
	if need-start > maxFooterBytes {
		start = need // a page index this large is read on demand instead
	}
	// Keep only from the page index on (the first read may hold data).
	if start < off {
		if buf, err = readBefore(r, buf, start, off); err != nil {
			return nil, fmt.Errorf("read page index of %s: %w", key, err)
		}
	} else {
		buf = slices.Clone(buf[start-off:])
	}
	return &fileMeta{md: md, size: size, tail: buf, tailOff: start}, nil
}

// readBefore returns the bytes [from, off+len(buf)) of r: buf holds those
// from off on, the rest is read into one buffer of the final size (a
// footer read again under memory pressure is a few MiB: no copies beyond
// it).
func readBefore(r bucket.Reader, buf []byte, from, off int64) ([]byte, error) {
	all := make([]byte, off-from+int64(len(buf)))
	if _, err := r.ReadAt(all[:off-from], from); err != nil {
		return nil, err
	}
	copy(all[off-from:], buf)
	return all, nil
}

// arrowSchemaKey is the footer key under which pqarrow stores the Arrow
// schema of a file (base64 of the IPC stream EncodeSchema writes).
const arrowSchemaKey = "ARROW:schema"

// pinSchema makes the Arrow schema stored in md's footer the manifest's
// (schema: EncodeSchema's bytes, which the manifest's id covers and
// TableAt has decoded). pqarrow decodes that stored schema without
// bounds checks: a damaged one can claim a field with billions of
// children, which it allocates (a fatal out of memory, not a panic). The
// file's own copy is the same bytes for every file the store wrote; a
// file whose columns differ from the manifest's still fails, as Corrupt,
// when its columns are read (Reorder).
func pinSchema(md *metadata.FileMetaData, schema []byte) {
	for _, kv := range md.KeyValueMetadata() {
		if kv != nil && kv.Key == arrowSchemaKey {
			v := base64.StdEncoding.EncodeToString(schema)
			kv.Value = &v
		}
	}
}

// checkChunk checks that a column chunk's pages lie within the first
// dataEnd bytes of its file (before the footer). The Parquet reader
// trusts these numbers: it sizes buffers by them (a negative length
// panics, on a goroutine of pqarrow's own, where nothing recovers it) and
// prefetch allocates the ranges they span.
func checkChunk(cc *metadata.ColumnChunkMetaData, dataEnd int64) error {
	start, n := cc.DataPageOffset(), cc.TotalCompressedSize()
	if cc.HasDictionaryPage() && cc.DictionaryPageOffset() > 0 && cc.DictionaryPageOffset() < start {
		start = cc.DictionaryPageOffset()
	}
	if start < 0 || n < 0 || n > dataEnd || start > dataEnd-n || cc.TotalUncompressedSize() < 0 || cc.NumValues() < 0 {
		return fmt.Errorf("pages at bytes %d..%d+%d (%d uncompressed, %d values) are not within the file's %d bytes of data", start, start, n, cc.TotalUncompressedSize(), cc.NumValues(), dataEnd)
	}
	return nil
}

// capPages bounds the page sizes the Parquet reader accepts from page
// headers by the given column chunks of row groups: a page cannot hold
// more bytes, compressed or not, than the largest of the chunks does in
// all (a chunk's total sizes count every page of it, headers included, in
// every file a Parquet writer makes; checkChunk has bounded the
// compressed total by the file). A page over them is the file's damage
// (Corrupt) and is not allocated. This replaces arrow-go's own caps (64
// MiB compressed, 256 MiB uncompressed), which refused the page of one
// value larger than those, a file the store writes; the read's memory is
// bounded by the budget instead (meter.go). Call it before reading any
// column.
func (f *dataFile) capPages(groups, leaves []int) {
	md := f.pf.MetaData()
	var compressed, uncompressed int64
	for _, g := range groups {
		rg := md.RowGroup(g)
		for _, c := range leaves {
			if cc, err := rg.ColumnChunk(c); err == nil {
				compressed = max(compressed, cc.TotalCompressedSize())
				uncompressed = max(uncompressed, cc.TotalUncompressedSize())
			}
		}
	}
	f.pr.MaxCompressedPageSize = max(compressed, 1)
	f.pr.MaxUncompressedPageSize = max(uncompressed, 1)
}

// byteRange is [off, end) of a file.
type byteRange struct{ off, end int64 }

// blockRanges returns the byte ranges of the pages that hold rows
// [b.Offset, b.Offset+b.Rows) of row group b.RowGroup, for the given leaf
// columns: from the offset index where the file has one (plus a column's
// dictionary page), else the whole column chunks.
func blockRanges(pf *file.Reader, b Block, leaves []int) ([]byteRange, error) {
	md := pf.MetaData()
	rg := md.RowGroup(b.RowGroup)
	var rgi *metadata.RowGroupPageIndexReader
	if pir := pf.GetPageIndexReader(); pir != nil {
		rgi, _ = pir.RowGroup(b.RowGroup)
	}
	var out []byteRange
	for _, leaf := range leaves {
		cc, err := rg.ColumnChunk(leaf)
		if err != nil {
			return nil, err
		}
		start := cc.DataPageOffset()
		if cc.HasDictionaryPage() && cc.DictionaryPageOffset() > 0 && cc.DictionaryPageOffset() < start {
			start = cc.DictionaryPageOffset()
		}
		whole := byteRange{start, start + cc.TotalCompressedSize()}
		var pages []metadata.PageLocation
		if rgi != nil {
			if oi, err := rgi.GetOffsetIndex(leaf); err == nil && oi != nil {
				for _, p := range oi.GetPageLocations() {
					pages = append(pages, *p)
				}
			}
		}
		if len(pages) == 0 {
			out = append(out, whole)
			continue
		}
		first := sort.Search(len(pages), func(i int) bool { return pages[i].FirstRowIndex > b.Offset }) - 1
		last := sort.Search(len(pages), func(i int) bool { return pages[i].FirstRowIndex >= b.Offset+b.Rows }) - 1
		first = max(first, 0)
		// One page beyond the block: readers look at the next page's
		// header when they finish a page.
		end := whole.end
		if last+1 < len(pages) {
			end = pages[last+1].Offset + int64(pages[last+1].CompressedPageSize)
			end = min(end, whole.end)
		}
		if pages[0].Offset > start {
			out = append(out, byteRange{start, pages[0].Offset}) // dictionary page
		}
		out = append(out, byteRange{pages[first].Offset, end})
	}
	return out, nil
}

// coalesce sorts ranges and merges those less than gap apart.
func coalesce(ranges []byteRange, gap int64) []byteRange {
	slices.SortFunc(ranges, func(a, b byteRange) int { return int(min(max(a.off-b.off, -1), 1)) })
	var out []byteRange
	for _, r := range ranges {
		if r.end <= r.off {
			continue
		}
		if k := len(out) - 1; k >= 0 && r.off <= out[k].end+gap {
			out[k].end = max(out[k].end, r.end)
			continue
		}
		out = append(out, r)
	}
	return out
}

// prefetch fetches the pages of block b for the leaf columns, one ranged
// read per coalesced range, in parallel.
func (f *dataFile) prefetch(ctx context.Context, b Block, leaves []int) error {
	ranges, err := blockRanges(f.pf, b, leaves)
	if err != nil {
		return fmt.Errorf("%w: %s row group %d: %w", versions.ErrCorrupt, f.key, b.RowGroup, err)
	}
	ranges = coalesce(ranges, coalesceGap)
	// The ranges come from the footer: a damaged one may claim pages
	// beyond the file (or terabytes of them), which are not allocated.
	for _, r := range ranges {
		if r.off < 0 || r.end > f.rr.size {
			return fmt.Errorf("%w: %s row group %d: its footer places pages at bytes %d..%d of a %d-byte file", versions.ErrCorrupt, f.key, b.RowGroup, r.off, r.end, f.rr.size)
		}
	}
	// Every buffer is allocated, and held by the reader (which frees
	// it), before any read starts: an allocation the read's meter
	// refuses panics, and must leave no buffer unowned nor a read
	// running.
	bufs := make([][]byte, len(ranges))
	for i, r := range ranges {
		bufs[i] = f.rr.mem.Allocate(int(r.end - r.off))
		f.rr.add(r.off, bufs[i], true)
	}
	g, _ := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for i, r := range ranges {
		g.Go(func() error {
			if _, err := f.r.ReadAt(bufs[i], r.off); err != nil {
				return fmt.Errorf("read %s bytes %d..%d: %w", f.key, r.off, r.end, err)
			}
			return nil
		})
	}
	err = g.Wait()
	f.rr.short = true
	return err
}

// rangeReader is an io.ReaderAt over a file: reads within the ranges it
// holds are served from memory, others from the bucket. In short mode a
// read that starts inside a range and runs past its end returns the bytes
// up to the end of the range and no error, so that the Parquet page
// streams (which fill their buffers with io.ReadAtLeast through an
// io.SectionReader, and accept short reads) stay within the fetched pages.
type rangeReader struct {
	fallback io.ReaderAt
	size     int64
	mem      memory.Allocator // of owned buffers
	short    bool
	ranges   []heldRange // sorted by off, disjoint
}

type heldRange struct {
	off   int64
	buf   []byte
	owned bool // allocated from mem, freed by free
}

func (r *rangeReader) add(off int64, buf []byte, owned bool) {
	r.ranges = append(r.ranges, heldRange{off: off, buf: buf, owned: owned})
	slices.SortFunc(r.ranges, func(a, b heldRange) int { return int(min(max(a.off-b.off, -1), 1)) })
}

// drop frees the ranges it owns (fetched pages) and keeps the others
// (the footer's tail).
func (r *rangeReader) drop() {
	kept := r.ranges[:0]
	for _, h := range r.ranges {
		if h.owned {
			r.mem.Free(h.buf)
		} else {
			kept = append(kept, h)
		}
	}
	clear(r.ranges[len(kept):])
	r.ranges = kept
}

// free frees the ranges it owns and forgets every range.
func (r *rangeReader) free() {
	r.drop()
	r.ranges = nil
}

func (r *rangeReader) ReadAt(p []byte, off int64) (int, error) {
	i := sort.Search(len(r.ranges), func(i int) bool { return r.ranges[i].off > off }) - 1
	if i >= 0 {
		h := r.ranges[i]
		if at := off - h.off; at < int64(len(h.buf)) {
			n := copy(p, h.buf[at:])
			switch {
			case n == len(p):
				return n, nil
			case off+int64(n) >= r.size:
				return n, io.EOF
			case r.short:
				return n, nil
			}
			m, err := r.fallback.ReadAt(p[n:], off+int64(n))
			return n + m, err
		}
	}
	return r.fallback.ReadAt(p, off)
}

// leafColumns maps a projection to the Parquet leaf column indices that
// pqarrow reads take (a nested column has several leaves).
func leafColumns(md *metadata.FileMetaData, projected *arrow.Schema) []int {
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
