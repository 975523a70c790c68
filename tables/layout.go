package tables

import (
	"context"
	"fmt"
	"sort"

	"github.com/apache/arrow-go/v18/arrow"
	"golang.org/x/sync/errgroup"

	"github.com/weftdata/weft/versions"
)

// Layout decides how row groups are cut into blocks (see Store.Layout).
// Its values are part of the run format: the blocks a layout gives are
// recorded in run records and change run ids, so changing a default
// changes the id of every new run (old runs keep the blocks their records
// name).
type Layout struct {
	// TargetRows, MinBytes and MaxBytes set the target size of a block
	// (the projected columns' uncompressed Parquet bytes): TargetRows
	// rows' worth, but at least MinBytes and at most MaxBytes. Small
	// blocks make a resumed run's first batch cheap; the row floor and the
	// byte cap keep the number of reads (S3 requests) per epoch low for
	// wide rows.
	TargetRows         int64
	MinBytes, MaxBytes int64
}

// DefaultLayout: 1,024 rows' worth, within [1 MiB, 8 MiB].
func DefaultLayout() Layout {
	return Layout{TargetRows: 1024, MinBytes: 1 << 20, MaxBytes: 8 << 20}
}

// target is the block size for a row group of rows rows and bytes bytes.
func (l Layout) target(rows, bytes int64) int64 {
	perRow := max(1, bytes/max(1, rows))
	return min(max(perRow*l.TargetRows, l.MinBytes), max(l.MaxBytes, l.MinBytes))
}

// Layout cuts the row groups of v into blocks for the projection and
// returns their row counts, in row order, and the projection's
// uncompressed bytes in the version. A row group up to 5/4 of its target
// size is one block; a larger one is cut into about ⌈bytes/target⌉ blocks
// at the page starts (offset index) of its widest column nearest to an
// even split, so that reading a block decodes only its own pages. Version.Split
// maps the counts back to blocks.
func (s *Store) Layout(ctx context.Context, v *Version, projected *arrow.Schema, l Layout) ([]int64, int64, error) {
	files := v.Manifest.Files
	per := make([][]int64, len(files))
	bytes := make([]int64, len(files))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for fi := range files {
		g.Go(func() error {
			var err error
			per[fi], bytes[fi], err = s.fileLayout(gctx, v, fi, projected, l)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, 0, err
	}
	var blocks []int64
	var total int64
	for fi := range files {
		blocks = append(blocks, per[fi]...)
		total += bytes[fi]
	}
	return blocks, total, nil
}

// fileLayout cuts the row groups of data file fi of v into blocks.
func (s *Store) fileLayout(ctx context.Context, v *Version, fi int, projected *arrow.Schema, l Layout) (_ []int64, _ int64, err error) {
	defer parseGuard(s.log, v.fileKey(fi), &err)
	f, err := s.openFile(ctx, v, fi, s.mem)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	key := f.key
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
	leaves := leafColumns(md, projected)
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
		if bytes > l.MinBytes*5/4 && pages != nil && wideLeaf >= 0 {
			if rgi, err := pages.RowGroup(g); err == nil && rgi != nil {
				if oi, err := rgi.GetOffsetIndex(wideLeaf); err == nil && oi != nil {
					for _, loc := range oi.GetPageLocations() {
						starts = append(starts, loc.FirstRowIndex)
					}
				}
			}
		}
		blocks = append(blocks, cutRowGroup(rows, bytes, starts, l.target(rows, bytes))...)
	}
	return blocks, total, nil
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

// Split maps block sizes (row counts in row order, as Layout returns them
// and run records keep them) to blocks of v: each block lies inside one
// row group, and the blocks of a row group cover it.
func (v *Version) Split(sizes []int64) ([]Block, error) {
	out := make([]Block, 0, len(sizes))
	next := 0
	var row int64
	for _, g := range v.blocks {
		var off int64
		for off < g.Rows {
			if next == len(sizes) || sizes[next] < 1 || sizes[next] > g.Rows-off {
				return nil, fmt.Errorf("%w: blocks do not fit the row groups of %s@%s", versions.ErrCorrupt, v.Table, v.Commit.Short())
			}
			out = append(out, Block{File: g.File, RowGroup: g.RowGroup, Offset: off, Rows: sizes[next], FirstRow: row})
			off += sizes[next]
			row += sizes[next]
			next++
		}
	}
	if next != len(sizes) {
		return nil, fmt.Errorf("%w: %d blocks for the row groups of %s@%s, which hold %d", versions.ErrCorrupt, len(sizes), v.Table, v.Commit.Short(), next)
	}
	return out, nil
}

// BlockID identifies the rows of a block across versions and tables: the
// data file (by its store key), row group, first row within it, and rows.
// Data files are immutable, so what a BlockID names never changes; it is
// a cache key.
type BlockID struct {
	File     string
	RowGroup int
	Offset   int64
	Rows     int64
}

// ID returns the identity of block b of v.
func (v *Version) ID(b Block) BlockID {
	return BlockID{File: v.fileKey(b.File), RowGroup: b.RowGroup, Offset: b.Offset, Rows: b.Rows}
}
