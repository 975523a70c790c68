package episodes

import (
	"context"
	"fmt"
	"sort"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/weftdata/weft/errdefs"
	"github.com/weftdata/weft/tables"
	"github.com/weftdata/weft/versions"
)

// EpisodeIndex maps the rows of a table version to their episodes: the
// maximal runs of equal values of its episode column. It holds the first
// row and the value of each episode, nothing per row. Immutable.
type EpisodeIndex struct {
	// Column is the episode column.
	Column string
	starts []int64  // first row of each episode, ascending; starts[0] == 0
	values []string // each episode's value, as text
	rows   int64
}

// Len is the number of episodes.
func (x *EpisodeIndex) Len() int { return len(x.starts) }

// Rows is the number of rows indexed.
func (x *EpisodeIndex) Rows() int64 { return x.rows }

// Episode returns the episode of row (an index in [0, Len())), and its
// first and last rows.
func (x *EpisodeIndex) Episode(row int64) (e int, first, last int64) {
	e = sort.Search(len(x.starts), func(i int) bool { return x.starts[i] > row }) - 1
	return e, x.starts[e], x.last(e)
}

// Span returns the first and last rows of episode e.
func (x *EpisodeIndex) Span(e int) (first, last int64) { return x.starts[e], x.last(e) }

func (x *EpisodeIndex) last(e int) int64 {
	if e+1 < len(x.starts) {
		return x.starts[e+1] - 1
	}
	return x.rows - 1
}

// Value is episode e's value as text, for messages.
func (x *EpisodeIndex) Value(e int) string { return x.values[e] }

// bytes is the index's memory, for the cache.
func (x *EpisodeIndex) bytes() int64 {
	n := int64(64 + 8*len(x.starts) + 16*len(x.values))
	for _, v := range x.values {
		n += int64(len(v))
	}
	return n
}

// episodeKey names an episode index: a manifest's rows by one column.
type episodeKey struct {
	manifest versions.ManifestID
	column   string
}

// episodeValues reads an episode column's values one at a time.
type episodeValues struct {
	ints func(i int) int64 // integer columns
	strs func(i int) string
}

func valuesOf(col arrow.Array) (episodeValues, bool) {
	switch a := col.(type) {
	case *array.Int8:
		return episodeValues{ints: func(i int) int64 { return int64(a.Value(i)) }}, true
	case *array.Int16:
		return episodeValues{ints: func(i int) int64 { return int64(a.Value(i)) }}, true
	case *array.Int32:
		return episodeValues{ints: func(i int) int64 { return int64(a.Value(i)) }}, true
	case *array.Int64:
		return episodeValues{ints: a.Value}, true
	case *array.Uint8:
		return episodeValues{ints: func(i int) int64 { return int64(a.Value(i)) }}, true
	case *array.Uint16:
		return episodeValues{ints: func(i int) int64 { return int64(a.Value(i)) }}, true
	case *array.Uint32:
		return episodeValues{ints: func(i int) int64 { return int64(a.Value(i)) }}, true
	case *array.Uint64:
		return episodeValues{ints: func(i int) int64 { return int64(a.Value(i)) }}, true
	case *array.String:
		return episodeValues{strs: a.Value}, true
	case *array.LargeString:
		return episodeValues{strs: a.Value}, true
	}
	return episodeValues{}, false
}

// buildEpisodeIndex reads column of v, block by block.
func buildEpisodeIndex(ctx context.Context, r *tables.Reader, v *tables.Version, column string) (*EpisodeIndex, error) {
	proj, err := v.Projection([]string{column})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoEpisodes, err)
	}
	x := &EpisodeIndex{Column: column, rows: v.Rows()}
	var (
		lastInt int64
		lastStr string
	)
	for _, b := range v.Blocks() {
		rec, err := r.ReadBlock(ctx, v, b, proj)
		if err != nil {
			return nil, fmt.Errorf("episode column %s: %w", errdefs.Quote(column), err)
		}
		col := rec.Column(0)
		vals, ok := valuesOf(col)
		if !ok {
			rec.Release()
			return nil, fmt.Errorf("%w: episode column %s is %s; it must be an integer or a string column", ErrNoEpisodes, errdefs.Quote(column), col.DataType())
		}
		for i := range col.Len() {
			row := b.FirstRow + int64(i)
			if col.IsNull(i) {
				rec.Release()
				return nil, fmt.Errorf("%w: row %d: episode column %s is null; every row needs an episode", ErrNoEpisodes, row, errdefs.Quote(column))
			}
			if vals.ints != nil {
				n := vals.ints(i)
				if row == 0 || n != lastInt {
					x.starts = append(x.starts, row)
					x.values = append(x.values, strconv.FormatInt(n, 10))
					lastInt = n
				}
			} else {
				s := vals.strs(i)
				if row == 0 || s != lastStr {
					x.starts = append(x.starts, row)
					x.values = append(x.values, s)
					lastStr = s
				}
			}
		}
		rec.Release()
	}
	if len(x.starts) == 0 {
		return nil, fmt.Errorf("%w: %s@%s has no rows", ErrNoEpisodes, v.Table, v.Commit.Short())
	}
	return x, nil
}
