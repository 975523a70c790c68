package tables_test

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/stretchr/testify/require"

	"github.com/weftdata/weft/bucket"
	"github.com/weftdata/weft/errdefs"
	"github.com/weftdata/weft/filter"
	"github.com/weftdata/weft/tables"
)

// readLog is a bucket that records every ranged read of an opened object.
type readLog struct {
	bucket.Bucket
	mu    sync.Mutex
	reads map[string][][2]int64 // key -> [off, end)
}

func (l *readLog) Open(ctx context.Context, key string) (bucket.Reader, error) {
	r, err := l.Bucket.Open(ctx, key)
	if err != nil {
		return nil, err
	}
	return &loggedReader{Reader: r, l: l, key: key}, nil
}

func (l *readLog) reset() {
	l.mu.Lock()
	l.reads = map[string][][2]int64{}
	l.mu.Unlock()
}

type loggedReader struct {
	bucket.Reader
	l   *readLog
	key string
}

func (r *loggedReader) ReadAt(p []byte, off int64) (int, error) {
	r.l.mu.Lock()
	r.l.reads[r.key] = append(r.l.reads[r.key], [2]int64{off, off + int64(len(p))})
	r.l.mu.Unlock()
	return r.Reader.ReadAt(p, off)
}

// rowGroupsRead maps the logged reads of v's data files to the row
// groups (indices into v.Blocks()) whose column chunks they touch; reads
// of a file's tail (footer and page index) are left out.
func rowGroupsRead(t *testing.T, ctx context.Context, l *readLog, v *tables.Version) map[int]bool {
	t.Helper()
	out := map[int]bool{}
	bi := 0
	for _, f := range v.Manifest.Files {
		key := "projects/" + string(v.Project) + "/" + f.Path
		r, err := l.Bucket.Open(ctx, key)
		require.NoError(t, err)
		pf, err := file.NewParquetReader(io.NewSectionReader(r, 0, r.Size()))
		require.NoError(t, err)
		md := pf.MetaData()
		var ranges [][2]int64
		tail := r.Size()
		for g := range len(f.RowGroups) {
			rg := md.RowGroup(g)
			lo, hi := int64(-1), int64(0)
			for c := range rg.NumColumns() {
				cc, err := rg.ColumnChunk(c)
				require.NoError(t, err)
				start := cc.DataPageOffset()
				if cc.HasDictionaryPage() && cc.DictionaryPageOffset() > 0 && cc.DictionaryPageOffset() < start {
					start = cc.DictionaryPageOffset()
				}
				if lo < 0 || start < lo {
					lo = start
				}
				hi = max(hi, start+cc.TotalCompressedSize())
				if oi := cc.GetOffsetIndexLocation(); oi != nil {
					tail = min(tail, oi.Offset)
				}
				if ci := cc.GetColumnIndexLocation(); ci != nil {
					tail = min(tail, ci.Offset)
				}
			}
			ranges = append(ranges, [2]int64{lo, hi})
		}
		size := r.Size()
		pf.Close()
		r.Close()
		l.mu.Lock()
		for _, rd := range l.reads[key] {
			if rd[1] == size || rd[0] >= tail {
				continue // the footer's read
			}
			for g, rg := range ranges {
				if rd[0] < rg[1] && rd[1] > rg[0] {
					out[bi+g] = true
				}
			}
		}
		l.mu.Unlock()
		bi += len(f.RowGroups)
	}
	return out
}

// TestFilteredScanPushdown: a selective filter on a sorted column reads
// only the row groups that can match, on fs and MinIO, and yields
// exactly the rows a brute-force evaluation keeps.
func TestFilteredScanPushdown(t *testing.T) {
	for _, backend := range []struct {
		name string
		b    func(t *testing.T) bucket.Bucket
	}{
		{"fs", func(t *testing.T) bucket.Bucket {
			b, err := bucket.NewFS(t.TempDir())
			require.NoError(t, err)
			return b
		}},
		{"minio", func(t *testing.T) bucket.Bucket { return newMinIOBucket(t) }},
	} {
		t.Run(backend.name, func(t *testing.T) {
			ctx := context.Background()
			log := &readLog{Bucket: backend.b(t), reads: map[string][][2]int64{}}
			opts := tables.DefaultOptions()
			opts.RowGroupRows = 2000
			e := newProjectEnv(t, log, opts)
			const rows = 40_000
			for start := int64(0); start < rows; start += 10_000 {
				r := reader(t, makeBatch(e.mem, start, 10_000))
				_, err := e.s.Append(ctx, "p", "main", "t", r, "")
				r.Release()
				require.NoError(t, err)
			}
			v, err := e.s.Table(ctx, "p", "main", "t")
			require.NoError(t, err)
			require.Len(t, v.Blocks(), 20)
			for _, c := range []struct {
				filter string
				want   func(id int64) bool
				groups []int // row groups read; nil: every one
			}{
				{"id >= 12345 AND id < 12385", func(id int64) bool { return id >= 12345 && id < 12385 }, []int{6}},
				{"id IN (5, 39999) OR name = 'row-20001'", func(id int64) bool { return id == 5 || id == 39999 || id == 20001 }, []int{0, 1, 10, 19}},
				{"x IS NULL AND id < 4000", func(id int64) bool { return id%7 == 3 && id < 4000 }, []int{0, 1}},
				{"x != 1", func(id int64) bool { return id%7 != 3 && id != 2 }, nil},
				{"id IN (5, 39999)", func(id int64) bool { return id == 5 || id == 39999 }, []int{0, 19}},
				{"id BETWEEN 1999 AND 2000 AND x IS NOT NULL", func(id int64) bool { return (id == 1999 || id == 2000) && id%7 != 3 }, []int{0, 1}},
				{"id < 0", func(int64) bool { return false }, []int{}},
				{"NOT id >= 2000", func(id int64) bool { return id < 2000 }, []int{0}},
				{"x > 19990 AND name LIKE 'row-3999%'", func(id int64) bool { return id%7 != 3 && float64(id)*0.5 > 19990 && id >= 39990 }, []int{19}},
			} {
				t.Run(c.filter, func(t *testing.T) {
					f, err := v.Filter(c.filter)
					require.NoError(t, err)
					log.reset()
					var got []int64
					for rec, err := range e.s.ScanFiltered(ctx, v, nil, f, 0, len(v.Blocks()), 0, rows) {
						require.NoError(t, err)
						for i := range int(rec.NumRows()) {
							id := rec.Column(0).(*array.Int64).Value(i)
							checkRow(t, rec, i, id)
							got = append(got, id)
						}
						rec.Release()
					}
					var want []int64
					for id := range int64(rows) {
						if c.want(id) {
							want = append(want, id)
						}
					}
					require.Equal(t, want, got)
					read := rowGroupsRead(t, ctx, log, v)
					if c.groups != nil {
						wantRead := map[int]bool{}
						for _, g := range c.groups {
							wantRead[g] = true
						}
						require.Equal(t, wantRead, read, "row groups read")
					} else {
						require.Len(t, read, len(v.Blocks()))
					}
					m, err := e.s.Matches(ctx, v, f)
					require.NoError(t, err)
					require.Equal(t, int64(len(want)), m.Len())
					for k, id := range want {
						require.Equal(t, id, m.Ordinal(int64(k)))
						require.Equal(t, int64(k), m.Rank(id))
					}
					require.Equal(t, m.Len(), m.Rank(rows))
				})
			}
		})
	}
}

// TestFilteredScanRange: the ordinal range and projection of a filtered
// scan; a projection without the filter's columns.
func TestFilteredScanRange(t *testing.T) {
	ctx := context.Background()
	opts := tables.DefaultOptions()
	opts.RowGroupRows = 100
	e := newProjectEnv(t, bucket.NewMem(), opts)
	r := reader(t, makeBatch(e.mem, 0, 1000))
	_, err := e.s.Append(ctx, "p", "main", "t", r, "")
	r.Release()
	require.NoError(t, err)
	v, err := e.s.Table(ctx, "p", "main", "t")
	require.NoError(t, err)
	f, err := v.Filter("id % 1 = 0 OR x IS NULL")
	require.Error(t, err) // no arithmetic
	f, err = v.Filter("x IS NULL")
	require.NoError(t, err)
	var names []string
	for rec, err := range e.s.ScanFiltered(ctx, v, []string{"name"}, f, 2, 8, 250, 600) {
		require.NoError(t, err)
		require.Equal(t, []string{"name"}, []string{rec.Schema().Field(0).Name})
		for i := range int(rec.NumRows()) {
			names = append(names, rec.Column(0).(*array.String).Value(i))
		}
		rec.Release()
	}
	var want []string
	for id := 250; id < 600; id++ {
		if id%7 == 3 {
			want = append(want, fmt.Sprintf("row-%d", id))
		}
	}
	require.Equal(t, want, names)

	// Stopping early, and a cancelled context, release everything (the
	// checked allocator of newProjectEnv proves it at the end).
	all, err := v.Filter("id >= 0")
	require.NoError(t, err)
	for _, f := range []*filter.Filter{all, nil} {
		n := 0
		for rec, err := range e.s.ScanFiltered(ctx, v, nil, f, 0, len(v.Blocks()), 0, v.Rows()) {
			require.NoError(t, err)
			rec.Release()
			if n++; n == 2 {
				break
			}
		}
		require.Equal(t, 2, n)
		cctx, cancel := context.WithCancel(ctx)
		var last error
		for rec, err := range e.s.ScanFiltered(cctx, v, nil, f, 0, len(v.Blocks()), 0, v.Rows()) {
			if err != nil {
				last = err
				break
			}
			rec.Release()
			cancel()
		}
		cancel()
		require.ErrorIs(t, last, context.Canceled)
	}
	// Without a filter: every row of the range, in order.
	var ids []int64
	for rec, err := range e.s.ScanFiltered(ctx, v, []string{"id"}, nil, 0, len(v.Blocks()), 150, 420) {
		require.NoError(t, err)
		for i := range int(rec.NumRows()) {
			ids = append(ids, rec.Column(0).(*array.Int64).Value(i))
		}
		rec.Release()
	}
	require.Equal(t, seqIDs(150, 420), ids)
	_ = arrow.PrimitiveTypes.Int64
}

// TestFilteredScanPages: within a large row group, the page index keeps
// a selective filter on a sorted column from reading the pages of other
// rows, of every column.
func TestFilteredScanPages(t *testing.T) {
	ctx := context.Background()
	fsb, err := bucket.NewFS(t.TempDir())
	require.NoError(t, err)
	log := &readLog{Bucket: fsb, reads: map[string][][2]int64{}}
	opts := tables.DefaultOptions()
	opts.RowGroupRows = 200_000
	e := newProjectEnv(t, log, opts)
	r := reader(t, makeBatch(e.mem, 0, 200_000))
	_, err = e.s.Append(ctx, "p", "main", "t", r, "")
	r.Release()
	require.NoError(t, err)
	v, err := e.s.Table(ctx, "p", "main", "t")
	require.NoError(t, err)
	require.Len(t, v.Blocks(), 1)
	f, err := v.Filter("id BETWEEN 30000 AND 30009")
	require.NoError(t, err)
	log.reset()
	var got []int64
	for rec, err := range e.s.ScanFiltered(ctx, v, nil, f, 0, 1, 0, v.Rows()) {
		require.NoError(t, err)
		for i := range int(rec.NumRows()) {
			id := rec.Column(0).(*array.Int64).Value(i)
			checkRow(t, rec, i, id)
			got = append(got, id)
		}
		rec.Release()
	}
	require.Equal(t, seqIDs(30000, 30010), got)
	key := "projects/p/" + v.Manifest.Files[0].Path
	var read int64
	for _, rd := range log.reads[key] {
		if rd[1] != v.Manifest.Files[0].Size {
			read += rd[1] - rd[0]
		}
	}
	size := v.Manifest.Files[0].Size
	t.Logf("read %d of %d bytes: %v", read, size, log.reads[key])
	require.Less(t, read, size/5, "a few pages of a %d-byte file", size)

	m, err := e.s.Matches(ctx, v, f)
	require.NoError(t, err)
	require.Equal(t, int64(10), m.Len())
	require.Equal(t, int64(30000), m.Ordinal(0))
}

// TestMatchesBounded: a filter's matching rows are kept as runs of
// consecutive rows within MatchCacheBytes; a result that needs more is
// ErrResourceExhausted (its computation stops there), whatever the table's size.
func TestMatchesBounded(t *testing.T) {
	ctx := context.Background()
	opts := tables.DefaultOptions()
	opts.RowGroupRows = 1000
	opts.MatchCacheBytes = 24 * 100 // 100 runs
	e := newProjectEnv(t, bucket.NewMem(), opts)
	r := reader(t, makeBatch(e.mem, 0, 5000))
	_, err := e.s.Append(ctx, "p", "main", "t", r, "")
	r.Release()
	require.NoError(t, err)
	v, err := e.s.Table(ctx, "p", "main", "t")
	require.NoError(t, err)
	for _, tc := range []struct {
		filter string
		n      int64 // matches; -1: refused
	}{
		{"id >= 100 AND id < 4900", 4800},         // one run across row groups
		{"id < 150 OR id >= 4850", 300},           // two runs
		{"id IN (" + ids(0, 5000, 50) + ")", 100}, // 100 runs of one row
		{"id IN (" + ids(0, 5000, 49) + ")", -1},  // 103 runs
	} {
		t.Run(tc.filter[:min(len(tc.filter), 30)], func(t *testing.T) {
			f, err := v.Filter(tc.filter)
			require.NoError(t, err)
			m, err := e.s.Matches(ctx, v, f)
			if tc.n < 0 {
				require.ErrorIs(t, err, errdefs.ErrResourceExhausted)
				require.ErrorContains(t, err, "need more than 2400 bytes")
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.n, m.Len())
			for k := int64(0); k < m.Len(); k += 7 {
				require.Equal(t, k, m.Rank(m.Ordinal(k)))
			}
		})
	}
}

// ids is "a, a+step, …" below b.
func ids(a, b, step int64) string {
	var parts []string
	for i := a; i < b; i += step {
		parts = append(parts, strconv.FormatInt(i, 10))
	}
	return strings.Join(parts, ", ")
}

func seqIDs(a, b int64) []int64 {
	var out []int64
	for i := a; i < b; i++ {
		out = append(out, i)
	}
	return out
}

// TestMillionRowsSelectiveFilter: 1 M rows in 20 row groups, a filter
// matching 0.08 % (a range of the sorted id, and a tag that only the id
// bound prunes): listing the matches and scanning 16 balanced shards of
// them read only the 6 row groups that can match, on fs and MinIO; the
// shards' counts differ by at most one and hold every match once.
func TestMillionRowsSelectiveFilter(t *testing.T) {
	if testing.Short() {
		t.Skip("1 M rows")
	}
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "tag", Type: arrow.BinaryTypes.String}}, nil)
	for _, backend := range []struct {
		name string
		b    func(t *testing.T) bucket.Bucket
	}{
		{"fs", func(t *testing.T) bucket.Bucket {
			b, err := bucket.NewFS(t.TempDir())
			require.NoError(t, err)
			return b
		}},
		{"minio", func(t *testing.T) bucket.Bucket { return newMinIOBucket(t) }},
	} {
		t.Run(backend.name, func(t *testing.T) {
			ctx := context.Background()
			log := &readLog{Bucket: backend.b(t), reads: map[string][][2]int64{}}
			opts := tables.DefaultOptions()
			opts.RowGroupRows = 50_000
			e := newProjectEnv(t, log, opts)
			const n = 1_000_000
			bld := array.NewRecordBuilder(e.mem, schema)
			var want []int64
			for id := range int64(n) {
				bld.Field(0).(*array.Int64Builder).Append(id)
				tag := "miss"
				if id&4095 == 17 {
					tag = "hit"
				}
				bld.Field(1).(*array.StringBuilder).Append(tag)
				if id >= 500_000 && id < 500_750 || tag == "hit" && id < 250_000 {
					want = append(want, id)
				}
			}
			rec := bld.NewRecordBatch()
			bld.Release()
			rr, err := array.NewRecordReader(schema, []arrow.RecordBatch{rec})
			require.NoError(t, err)
			rec.Release()
			_, err = e.s.Append(ctx, "p", "main", "t", rr, "")
			rr.Release()
			require.NoError(t, err)
			v, err := e.s.Table(ctx, "p", "main", "t")
			require.NoError(t, err)
			require.Len(t, v.Blocks(), 20)
			f, err := v.Filter("(id >= 500000 AND id < 500750) OR (tag = 'hit' AND id < 250000)")
			require.NoError(t, err)
			canMatch := map[int]bool{0: true, 1: true, 2: true, 3: true, 4: true, 10: true}

			log.reset()
			m, err := e.s.Matches(ctx, v, f)
			require.NoError(t, err)
			require.Equal(t, int64(len(want)), m.Len())
			require.Equal(t, canMatch, rowGroupsRead(t, ctx, log, v))

			log.reset()
			const shards = 16
			total := m.Len()
			var all []int64
			var counts []int
			for j := range int64(shards) {
				k0, k1 := j*total/shards, (j+1)*total/shards
				lo, hi := int64(0), v.Rows()
				if j > 0 {
					lo = m.Ordinal(k0)
				}
				if k1 < total {
					hi = m.Ordinal(k1)
				}
				c := 0
				for rec, err := range e.s.ScanFiltered(ctx, v, []string{"id"}, f, 0, len(v.Blocks()), lo, hi) {
					require.NoError(t, err)
					for i := range int(rec.NumRows()) {
						all = append(all, rec.Column(0).(*array.Int64).Value(i))
					}
					c += int(rec.NumRows())
					rec.Release()
				}
				counts = append(counts, c)
			}
			require.Equal(t, want, all)
			require.LessOrEqual(t, slices.Max(counts)-slices.Min(counts), 1, "%v", counts)
			require.Equal(t, canMatch, rowGroupsRead(t, ctx, log, v))
		})
	}
}
