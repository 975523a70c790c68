package tables_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"log/slog"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/stretchr/testify/require"

	"github.com/weftdata/weft/bucket"
	"github.com/weftdata/weft/errdefs"
	"github.com/weftdata/weft/internal/membudget"
	"github.com/weftdata/weft/tables"
	"github.com/weftdata/weft/versions"
)

// editFooter rewrites the footer of the data file at key with edit and
// returns the file's new size.
func editFooter(t *testing.T, b bucket.Bucket, key string, edit func(md *metadata.FileMetaData)) int64 {
	t.Helper()
	ctx := context.Background()
	data, _, err := b.Get(ctx, key)
	require.NoError(t, err)
	n := int(binary.LittleEndian.Uint32(data[len(data)-8:]))
	start := len(data) - 8 - n
	md, err := metadata.NewFileMetaData(data[start:len(data)-8], nil)
	require.NoError(t, err)
	edit(md)
	footer, err := md.Serialize(ctx)
	require.NoError(t, err)
	out := append(bytes.Clone(data[:start]), footer...)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(footer)))
	out = append(out, "PAR1"...)
	_, err = b.Put(ctx, key, bytes.NewReader(out), int64(len(out)))
	require.NoError(t, err)
	return int64(len(out))
}

// recommit commits, as another tool would (ids recomputed), the manifest
// of table t of project p at main as edit changes it.
func recommit(t *testing.T, vs *versions.Store, p versions.ProjectName, tbl versions.TableName, edit func(m *versions.Manifest)) {
	t.Helper()
	ctx := context.Background()
	id, err := vs.Resolve(ctx, p, "main")
	require.NoError(t, err)
	c, err := vs.GetCommit(ctx, p, id)
	require.NoError(t, err)
	m, err := vs.GetManifest(ctx, p, c.Tables[tbl])
	require.NoError(t, err)
	bad := *m
	bad.Files = append([]versions.DataFile(nil), m.Files...)
	for i := range bad.Files {
		bad.Files[i].RowGroups = append([]int64(nil), m.Files[i].RowGroups...)
	}
	edit(&bad)
	mid, err := vs.PutManifest(ctx, p, &bad)
	require.NoError(t, err)
	_, err = vs.Commit(ctx, p, "main", "another tool", func(context.Context, *versions.Commit) (map[versions.TableName]versions.ManifestID, error) {
		return map[versions.TableName]versions.ManifestID{tbl: mid}, nil
	})
	require.NoError(t, err)
}

// budgetStore opens a store over b with a memory budget of total bytes
// and a checked allocator.
func budgetStore(t *testing.T, b bucket.Bucket, total int64, log *slog.Logger) (*tables.Store, *membudget.Budget, memory.Allocator) {
	t.Helper()
	vs, err := versions.New(b, versions.DefaultOptions())
	require.NoError(t, err)
	budget, err := membudget.New(membudget.Options{Total: total, MaxWait: 10 * time.Millisecond})
	require.NoError(t, err)
	opts := tables.DefaultOptions()
	opts.Budget = budget
	opts.FooterCacheBytes = 0 // leases nothing: what a read leases shows
	opts.Logger = log
	mem := &peakAllocator{base: memory.NewGoAllocator()}
	opts.Allocator = mem
	s, err := tables.New(vs, opts)
	require.NoError(t, err)
	return s, budget, mem
}

// peakAllocator records the most bytes it had handed out at once.
type peakAllocator struct {
	base       memory.Allocator
	live, peak atomic.Int64
}

func (a *peakAllocator) add(n int64) {
	cur := a.live.Add(n)
	for {
		p := a.peak.Load()
		if cur <= p || a.peak.CompareAndSwap(p, cur) {
			return
		}
	}
}

func (a *peakAllocator) Allocate(n int) []byte {
	b := a.base.Allocate(n)
	a.add(int64(cap(b)))
	return b
}

func (a *peakAllocator) Reallocate(n int, b []byte) []byte {
	old := cap(b)
	nb := a.base.Reallocate(n, b)
	a.add(int64(cap(nb) - old))
	return nb
}

func (a *peakAllocator) Free(b []byte) {
	a.add(-int64(cap(b)))
	a.base.Free(b)
}

// TestHugeRowClaimsFailCleanly: a hand-made manifest and footer that
// agree that a row group holds 2^40 rows (or 2^22) made a block read and
// a scan size their buffers by that count: 8 TB, a fatal out of memory.
// Every read of it now fails (ResourceExhausted when the rows' fixed
// widths alone pass the budget, else Corrupt when the pages run out),
// allocates within the budget and returns its leases.
func TestHugeRowClaimsFailCleanly(t *testing.T) {
	for _, claim := range []int64{1 << 40, 1 << 22} {
		t.Run(strconv.FormatInt(claim, 10), func(t *testing.T) {
			b := bucket.NewMem()
			opts := tables.DefaultOptions()
			opts.RowGroupRows = 100
			e := newProjectEnv(t, b, opts)
			e.append(t, "p", "main", "t", 0, 300, 300)
			v, err := e.s.Table(context.Background(), "p", "main", "t")
			require.NoError(t, err)
			key := versions.DataFileKey("p", v.Manifest.Files[0].Path)
			size := editFooter(t, b, key, func(md *metadata.FileMetaData) {
				md.NumRows += claim - md.RowGroups[0].NumRows
				md.RowGroups[0].NumRows = claim
			})
			recommit(t, e.v, "p", "t", func(m *versions.Manifest) {
				f := &m.Files[0]
				f.Rows += claim - f.RowGroups[0]
				f.RowGroups[0] = claim
				f.Size = size
			})

			const total = 256 << 20
			s, budget, mem := budgetStore(t, b, total, nil)
			ctx := context.Background()
			hv, err := s.Table(ctx, "p", "main", "t")
			require.NoError(t, err)
			require.Equal(t, claim, hv.Blocks()[0].Rows)
			check := func(what string, err error) {
				t.Helper()
				require.Error(t, err, what)
				if claim == 1<<40 {
					require.ErrorIs(t, err, errdefs.ErrResourceExhausted, what)
				} else {
					require.ErrorIs(t, err, errdefs.ErrCorrupt, what)
				}
				require.Zero(t, budget.Stats().Used, "%s: leases returned", what)
			}
			r := s.NewReader(nil)
			defer r.Close()
			projections := []*arrow.Schema{testSchema}
			for _, f := range testSchema.Fields() {
				projections = append(projections, arrow.NewSchema([]arrow.Field{f}, nil))
			}
			for _, proj := range projections {
				_, err := r.ReadBlock(ctx, hv, hv.Blocks()[0], proj)
				check("ReadBlock "+proj.String(), err)
			}
			_, err = r.GatherRows(ctx, hv, []int64{5}, testSchema)
			check("GatherRows", err)
			var scanErr error
			for rec, err := range s.Scan(ctx, hv, nil, 0, len(hv.Blocks()), 1<<20) {
				if err != nil {
					scanErr = err
					break
				}
				rec.Release()
			}
			// The scan reads batches of the rows' width: the file's real
			// rows, then finds them short of the claim.
			require.ErrorIs(t, scanErr, errdefs.ErrCorrupt)
			require.Zero(t, budget.Stats().Used)
			require.LessOrEqual(t, mem.(*peakAllocator).peak.Load(), int64(total+16<<20+1<<20), "peak bytes")
		})
	}
}

// wideTable writes table "w" of cols binary columns, each with one row of
// a value of size zero bytes: one page each, of size bytes uncompressed
// and a few KiB compressed (what a row group of constant values looks
// like, and what a hostile page header may claim).
func wideTable(t *testing.T, b bucket.Bucket, cols, size int) *versions.Store {
	t.Helper()
	ctx := context.Background()
	vs, err := versions.New(b, versions.DefaultOptions())
	require.NoError(t, err)
	_, err = vs.CreateProject(ctx, "p")
	require.NoError(t, err)
	s, err := tables.New(vs, tables.DefaultOptions())
	require.NoError(t, err)
	var fields []arrow.Field
	for c := range cols {
		fields = append(fields, arrow.Field{Name: string(rune('a' + c)), Type: arrow.BinaryTypes.Binary})
	}
	schema := arrow.NewSchema(fields, nil)
	bld := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer bld.Release()
	zero := make([]byte, size)
	for c := range cols {
		bld.Field(c).(*array.BinaryBuilder).Append(zero)
	}
	rec := bld.NewRecordBatch()
	rr, err := array.NewRecordReader(schema, []arrow.RecordBatch{rec})
	require.NoError(t, err)
	rec.Release()
	defer rr.Release()
	_, err = s.Append(ctx, "p", "main", "w", rr, "")
	require.NoError(t, err)
	return vs
}

// TestPagesAreMetered: pages that decompress to many times their size,
// read in parallel (one goroutine per column) or one after the other,
// allocated what their headers claim (up to arrow-go's 256 MiB each)
// outside any budget. Every read's allocations are now counted against
// the budget: a read that needs more than it can give fails with
// ResourceExhausted without allocating it, and one that fits succeeds
// and returns its leases.
func TestPagesAreMetered(t *testing.T) {
	const cols, size = 3, 24 << 20 // 72 MiB of values, 144 MiB with their pages
	b := bucket.NewMem()
	wideTable(t, b, cols, size)
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		total int64
		fits  bool
	}{
		{"budget too small", 32 << 20, false},
		{"budget fits", 512 << 20, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, budget, mem := budgetStore(t, b, tc.total, nil)
			v, err := s.Table(ctx, "p", "main", "w")
			require.NoError(t, err)
			r := s.NewReader(nil)
			defer r.Close()
			// Through the direct binary path (a block), through pqarrow
			// (a scan), one column, all columns.
			reads := map[string]func() error{
				"ReadBlock": func() error {
					rec, err := r.ReadBlock(ctx, v, v.Blocks()[0], v.Schema)
					if err == nil {
						require.Equal(t, size, len(rec.Column(2).(*array.Binary).Value(0)))
						rec.Release()
					}
					return err
				},
				"Scan": func() error {
					for rec, err := range s.Scan(ctx, v, nil, 0, 1, 1<<20) {
						if err != nil {
							return err
						}
						require.Equal(t, size, len(rec.Column(1).(*array.Binary).Value(0)))
						rec.Release()
					}
					return nil
				},
			}
			for name, read := range reads {
				p := mem.(*peakAllocator)
				start := p.live.Load() // what the reader's pools keep
				p.peak.Store(start)
				err := read()
				if tc.fits {
					require.NoError(t, err, name)
				} else {
					require.ErrorIs(t, err, errdefs.ErrResourceExhausted, name)
					require.ErrorIs(t, err, membudget.ErrExhausted, name)
					// What the read may hold unleased (16 MiB, plus the
					// scan's batch) and the budget.
					require.LessOrEqual(t, p.peak.Load()-start, tc.total+17<<20+1<<20, "%s: peak bytes", name)
				}
				require.Zero(t, budget.Stats().Used, "%s: leases returned", name)
			}
		})
	}
}

// TestPageLargerThanItsChunkIsCorrupt: a page whose header claims more
// uncompressed bytes than its whole column chunk does in the footer
// cannot be in a file any Parquet writer makes: it fails as Corrupt
// before its buffer is allocated.
func TestPageLargerThanItsChunkIsCorrupt(t *testing.T) {
	b := bucket.NewMem()
	vs := wideTable(t, b, 1, 8<<20)
	ctx := context.Background()
	id, err := vs.Resolve(ctx, "p", "main")
	require.NoError(t, err)
	c, err := vs.GetCommit(ctx, "p", id)
	require.NoError(t, err)
	m, err := vs.GetManifest(ctx, "p", c.Tables["w"])
	require.NoError(t, err)
	editFooter(t, b, versions.DataFileKey("p", m.Files[0].Path), func(md *metadata.FileMetaData) {
		md.RowGroups[0].Columns[0].MetaData.TotalUncompressedSize = 64 << 10
	})
	s, _, _ := budgetStore(t, b, 1<<30, nil)
	v, err := s.Table(ctx, "p", "main", "w")
	require.NoError(t, err)
	r := s.NewReader(nil)
	defer r.Close()
	_, err = r.ReadBlock(ctx, v, v.Blocks()[0], v.Schema)
	require.ErrorIs(t, err, errdefs.ErrCorrupt)
	require.Contains(t, err.Error(), "exceeds configured limit")
	for _, err := range s.Scan(ctx, v, nil, 0, 1, 1<<20) {
		require.ErrorIs(t, err, errdefs.ErrCorrupt)
		require.Contains(t, err.Error(), "exceeds configured limit")
		break
	}
}

// TestReaderPanicIsLogged: a panic of the Parquet reader on a damaged
// file (a page without a header: a nil dereference in arrow-go v18.8.0)
// fails the read as Corrupt and logs its stack, once, so that a bug of
// ours or arrow-go's is visible.
func TestReaderPanicIsLogged(t *testing.T) {
	data := fuzzInput(t, filepath.Join("testdata", "fuzz", "FuzzReadDataFile", "nil_page_header"))
	b, v, keys := fuzzTable(t)
	ctx := context.Background()
	_, err := b.Put(ctx, keys[0], bytes.NewReader(data), int64(len(data)))
	require.NoError(t, err)
	logs := &lockedBuffer{}
	s, _, _ := budgetStore(t, b, 1<<30, slog.New(slog.NewTextHandler(logs, nil)))
	r := s.NewReader(nil)
	defer r.Close()
	var errs []error
	for _, blk := range v.Blocks()[:len(v.Manifest.Files[0].RowGroups)] {
		_, err := r.ReadBlock(ctx, v, blk, v.Schema)
		errs = append(errs, err)
	}
	err = errors.Join(errs...)
	require.ErrorIs(t, err, errdefs.ErrCorrupt)
	require.Contains(t, err.Error(), "the Parquet reader failed on it")
	require.NotContains(t, err.Error(), "goroutine ", "the stack is logged, not returned")
	out := logs.String()
	require.Contains(t, out, "the Parquet reader panicked")
	require.Contains(t, out, "goroutine ")
	require.Contains(t, out, "github.com/apache/arrow-go")
	require.Equal(t, strings.Count(err.Error(), "the Parquet reader failed on it"), strings.Count(out, "the Parquet reader panicked"), "one log line per panic")
}

// fuzzInput reads a "go test fuzz v1" file of one []byte.
func fuzzInput(t *testing.T, path string) []byte {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		line := sc.Text()
		if q, ok := strings.CutPrefix(line, "[]byte("); ok {
			s, err := strconv.Unquote(strings.TrimSuffix(q, ")"))
			require.NoError(t, err)
			return []byte(s)
		}
	}
	t.Fatalf("%s holds no []byte", path)
	return nil
}

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// TestFileWithoutTheColumns: a data file whose columns have other names
// than its manifest's (another tool's file under the manifest's path)
// fails every read as Corrupt; a scan of it indexed an empty column list.
func TestFileWithoutTheColumns(t *testing.T) {
	b := bucket.NewMem()
	opts := tables.DefaultOptions()
	opts.RowGroupRows = 100
	e := newProjectEnv(t, b, opts)
	e.append(t, "p", "main", "t", 0, 300, 300)
	v, err := e.s.Table(context.Background(), "p", "main", "t")
	require.NoError(t, err)
	editFooter(t, b, versions.DataFileKey("p", v.Manifest.Files[0].Path), func(md *metadata.FileMetaData) {
		for _, el := range md.FileMetaData.Schema[1:] {
			el.Name = "other_" + el.Name
		}
	})
	s, _, _ := budgetStore(t, b, 1<<30, nil)
	ctx := context.Background()
	r := s.NewReader(nil)
	defer r.Close()
	for _, cols := range [][]string{nil, {"id"}, {"blob", "x"}} {
		proj, err := v.Projection(cols)
		require.NoError(t, err)
		_, err = r.ReadBlock(ctx, v, v.Blocks()[0], proj)
		require.ErrorIs(t, err, errdefs.ErrCorrupt, "ReadBlock %v", cols)
		var scanErr error
		for rec, err := range s.Scan(ctx, v, cols, 0, len(v.Blocks()), 1<<20) {
			if err != nil {
				scanErr = err
				break
			}
			rec.Release()
		}
		require.ErrorIs(t, scanErr, errdefs.ErrCorrupt, "Scan %v", cols)
	}
}

// TestFooterDisagreesWithManifest: a footer with fewer row groups than
// the manifest lists (a scan indexed past them: a panic on the caller's
// goroutine), or a manifest that claims 2^40 rows of a row group whose
// footer says 100, fails every read as Corrupt, before anything is sized
// by the claim.
func TestFooterDisagreesWithManifest(t *testing.T) {
	cases := []struct {
		name   string
		damage func(t *testing.T, e *env, key string)
	}{
		{"footer drops row groups", func(t *testing.T, e *env, key string) {
			editFooter(t, e.b, key, func(md *metadata.FileMetaData) {
				md.NumRows = md.RowGroups[0].NumRows
				md.RowGroups = md.RowGroups[:1]
			})
		}},
		{"manifest claims 2^40 rows", func(t *testing.T, e *env, key string) {
			recommit(t, e.v, "p", "t", func(m *versions.Manifest) {
				f := &m.Files[0]
				f.Rows += 1<<40 - f.RowGroups[1]
				f.RowGroups[1] = 1 << 40
			})
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := bucket.NewMem()
			opts := tables.DefaultOptions()
			opts.RowGroupRows = 100
			e := newProjectEnv(t, b, opts)
			e.append(t, "p", "main", "t", 0, 300, 300)
			v, err := e.s.Table(context.Background(), "p", "main", "t")
			require.NoError(t, err)
			tc.damage(t, e, versions.DataFileKey("p", v.Manifest.Files[0].Path))
			s, budget, _ := budgetStore(t, b, 256<<20, nil)
			ctx := context.Background()
			hv, err := s.Table(ctx, "p", "main", "t")
			require.NoError(t, err)
			r := s.NewReader(nil)
			defer r.Close()
			_, err = r.ReadBlock(ctx, hv, hv.Blocks()[1], hv.Schema)
			require.ErrorIs(t, err, errdefs.ErrCorrupt)
			require.Contains(t, err.Error(), "has no rows")
			var scanErr error
			for rec, err := range s.Scan(ctx, hv, nil, 0, len(hv.Blocks()), 1<<20) {
				if err != nil {
					scanErr = err
					break
				}
				rec.Release()
			}
			require.ErrorIs(t, scanErr, errdefs.ErrCorrupt)
			require.Contains(t, scanErr.Error(), "has no rows")
			require.Zero(t, budget.Stats().Used)
		})
	}
}

// TestLargeValueRoundTrips: a value larger than arrow-go's default page
// caps (64 MiB compressed) is one page of the file the store writes; it
// reads back (it failed as Corrupt: "compressed page size exceeds
// configured limit").
func TestLargeValueRoundTrips(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: writes and reads a 72 MiB value")
	}
	const size = 72 << 20
	b := bucket.NewMem()
	ctx := context.Background()
	vs, err := versions.New(b, versions.DefaultOptions())
	require.NoError(t, err)
	_, err = vs.CreateProject(ctx, "p")
	require.NoError(t, err)
	s, err := tables.New(vs, tables.DefaultOptions())
	require.NoError(t, err)
	schema := arrow.NewSchema([]arrow.Field{{Name: "v", Type: arrow.BinaryTypes.Binary}}, nil)
	bld := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	val := make([]byte, size)
	rand.New(rand.NewSource(1)).Read(val) // incompressible
	bld.Field(0).(*array.BinaryBuilder).Append(val)
	rec := bld.NewRecordBatch()
	bld.Release()
	rr, err := array.NewRecordReader(schema, []arrow.RecordBatch{rec})
	require.NoError(t, err)
	rec.Release()
	_, err = s.Append(ctx, "p", "main", "w", rr, "")
	rr.Release()
	require.NoError(t, err)

	rs, _, _ := budgetStore(t, b, 1<<30, nil)
	v, err := rs.Table(ctx, "p", "main", "w")
	require.NoError(t, err)
	r := rs.NewReader(nil)
	defer r.Close()
	got, err := r.ReadBlock(ctx, v, v.Blocks()[0], v.Schema)
	require.NoError(t, err)
	require.True(t, bytes.Equal(val, got.Column(0).(*array.Binary).Value(0)))
	got.Release()
	for rec, err := range rs.Scan(ctx, v, nil, 0, 1, 1<<20) {
		require.NoError(t, err)
		require.True(t, bytes.Equal(val, rec.Column(0).(*array.Binary).Value(0)))
		rec.Release()
	}
}

// TestReadBlockHugeBinaryClaim: a footer claiming a terabyte for a binary
// column that block reads decode through pqarrow (a struct's string) is
// not believed for preallocation: without a budget to refuse it, pqarrow
// reserved the claimed size (a fatal out of memory, not a panic); the
// block now reads, its buffers growing as values come.
func TestReadBlockHugeBinaryClaim(t *testing.T) {
	ctx := context.Background()
	b, v, keys := fuzzTable(t)
	editFooter(t, b, keys[0], func(md *metadata.FileMetaData) {
		c := md.Schema.ColumnIndexByName("pt.b")
		require.GreaterOrEqual(t, c, 0)
		for _, rg := range md.RowGroups {
			rg.Columns[c].MetaData.TotalUncompressedSize = 1 << 40
		}
	})
	vs, err := versions.New(b, versions.DefaultOptions())
	require.NoError(t, err)
	s, err := tables.New(vs, tables.DefaultOptions()) // no budget
	require.NoError(t, err)
	r := s.NewReader(nil)
	defer r.Close()
	n := 0
	for _, blk := range v.Blocks() {
		if blk.File != 0 {
			continue
		}
		rec, err := r.ReadBlock(ctx, v, blk, v.Schema)
		require.NoError(t, err)
		require.Equal(t, blk.Rows, rec.NumRows())
		rec.Release()
		n++
	}
	require.Positive(t, n)
}

// TestScanChunksAreMetered: a scan read each column chunk of a row group
// whole into a buffer the Parquet reader made itself (its unbuffered
// streams), outside any allocator and so outside the budget: one row
// group of 64 MiB of values that do not compress was scanned with a
// budget of 1 MiB. The chunks are now fetched through the read's meter,
// a row group at a time: a budget short of them refuses the scan, one
// that fits reads it and gets its leases back.
func TestScanChunksAreMetered(t *testing.T) {
	ctx := context.Background()
	b := bucket.NewMem()
	vs, err := versions.New(b, versions.DefaultOptions())
	require.NoError(t, err)
	_, err = vs.CreateProject(ctx, "p")
	require.NoError(t, err)
	s, err := tables.New(vs, tables.DefaultOptions())
	require.NoError(t, err)
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "img", Type: arrow.BinaryTypes.Binary}}, nil)
	bld := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer bld.Release()
	const rows, size = 8192, 8 << 10 // 64 MiB
	rng := rand.New(rand.NewSource(1))
	val := make([]byte, size)
	for i := range rows {
		bld.Field(0).(*array.Int64Builder).Append(int64(i))
		rng.Read(val)
		bld.Field(1).(*array.BinaryBuilder).Append(val)
	}
	rec := bld.NewRecordBatch()
	rr, err := array.NewRecordReader(schema, []arrow.RecordBatch{rec})
	require.NoError(t, err)
	rec.Release()
	defer rr.Release()
	_, err = s.Append(ctx, "p", "main", "w", rr, "")
	require.NoError(t, err)

	for _, tc := range []struct {
		name  string
		total int64
		fits  bool
	}{
		{"budget too small", 32 << 20, false},
		{"budget fits", 256 << 20, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, budget, mem := budgetStore(t, b, tc.total, nil)
			v, err := s.Table(ctx, "p", "main", "w")
			require.NoError(t, err)
			require.Len(t, v.Blocks(), 1, "one row group")
			p := mem.(*peakAllocator)
			var got int64
			for rec, err := range s.Scan(ctx, v, nil, 0, 1, 3<<20) {
				if err != nil {
					require.False(t, tc.fits, "%v", err)
					require.ErrorIs(t, err, membudget.ErrExhausted)
					break
				}
				got += rec.NumRows()
				rec.Release()
			}
			if tc.fits {
				require.Equal(t, int64(rows), got)
				require.Greater(t, p.peak.Load(), int64(rows*size), "the chunk came from the store's allocator")
			} else {
				require.Less(t, got, int64(rows), "refused")
			}
			require.Zero(t, budget.Stats().Used, "leases returned")
			require.Zero(t, p.live.Load(), "all freed")
		})
	}
}

// TestRefusedPrefetchFreesItsBuffers: a block read whose pages come in
// two ranges, the second refused by the budget, started reading the
// first and never freed its buffer (it joined the read's ranges only
// once all were read). Every range is now allocated, and held by the
// read, before any is read.
func TestRefusedPrefetchFreesItsBuffers(t *testing.T) {
	ctx := context.Background()
	b := bucket.NewMem()
	vs, err := versions.New(b, versions.DefaultOptions())
	require.NoError(t, err)
	_, err = vs.CreateProject(ctx, "p")
	require.NoError(t, err)
	s, err := tables.New(vs, tables.DefaultOptions())
	require.NoError(t, err)
	// Columns a and c, 10 MiB each of values that do not compress, with
	// b between them: reading a and c fetches two ranges.
	schema := arrow.NewSchema([]arrow.Field{{Name: "a", Type: arrow.BinaryTypes.Binary}, {Name: "b", Type: arrow.BinaryTypes.Binary}, {Name: "c", Type: arrow.BinaryTypes.Binary}}, nil)
	bld := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer bld.Release()
	rng := rand.New(rand.NewSource(1))
	for c := range 3 {
		val := make([]byte, 10<<20)
		rng.Read(val)
		bld.Field(c).(*array.BinaryBuilder).Append(val)
	}
	rec := bld.NewRecordBatch()
	rr, err := array.NewRecordReader(schema, []arrow.RecordBatch{rec})
	require.NoError(t, err)
	rec.Release()
	defer rr.Release()
	_, err = s.Append(ctx, "p", "main", "w", rr, "")
	require.NoError(t, err)

	s, budget, mem := budgetStore(t, b, 1<<20, nil)
	v, err := s.Table(ctx, "p", "main", "w")
	require.NoError(t, err)
	proj, err := v.Projection([]string{"a", "c"})
	require.NoError(t, err)
	r := s.NewReader(nil)
	defer r.Close()
	p := mem.(*peakAllocator)
	start := p.live.Load()
	_, err = r.ReadBlock(ctx, v, v.Blocks()[0], proj)
	require.ErrorIs(t, err, membudget.ErrExhausted)
	require.Zero(t, budget.Stats().Used)
	// The reader's pool keeps what it was given back; nothing else lives.
	r.Close()
	require.LessOrEqual(t, p.live.Load(), start, "a fetched range was never freed")
}
