package tables_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/stretchr/testify/require"

	"github.com/weftdata/weft/bucket"
	"github.com/weftdata/weft/errdefs"
	"github.com/weftdata/weft/tables"
	"github.com/weftdata/weft/versions"
)

func smallGroups() tables.Options {
	o := tables.DefaultOptions()
	o.RowGroupRows = 256
	return o
}

func TestAppendAndScan(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newProjectEnv(t, bucket.NewMem(), smallGroups())

	res := e.append(t, "p", "main", "t", 0, 1000, 300)
	require.Equal(t, int64(1000), res.Rows)
	require.Equal(t, []int64{256, 256, 256, 232}, res.File.RowGroups, "row groups bounded by rows, across batch boundaries")
	res2 := e.append(t, "p", "main", "t", 1000, 10, 10)
	require.Equal(t, res.Commit.ID, res2.Commit.Parent)

	v, err := e.s.Table(ctx, "p", "main", "t")
	require.NoError(t, err)
	require.Equal(t, int64(1010), v.Rows())
	require.Len(t, v.Blocks(), 5)
	require.True(t, v.Schema.Equal(testSchema))
	require.Equal(t, seq(0, 1010), e.readAll(t, v))

	bi, err := v.BlockOf(1005)
	require.NoError(t, err)
	require.Equal(t, 4, bi)
	_, err = v.BlockOf(1010)
	require.ErrorIs(t, err, tables.ErrRowOutOfRange)
}

func TestRowGroupsBoundedByBytes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	o := tables.DefaultOptions()
	o.RowGroupBytes = 16 << 10 // rows are ~60 B in Arrow: a few hundred rows a group
	e := newProjectEnv(t, bucket.NewMem(), o)
	res := e.append(t, "p", "main", "t", 0, 5000, 5000)
	require.Greater(t, len(res.File.RowGroups), 5)
	for _, n := range res.File.RowGroups[:len(res.File.RowGroups)-1] {
		require.Less(t, n, int64(1000))
	}
	v, err := e.s.Table(ctx, "p", "main", "t")
	require.NoError(t, err)
	require.Equal(t, seq(0, 5000), e.readAll(t, v))
}

func TestProjection(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newProjectEnv(t, bucket.NewMem(), smallGroups())
	e.append(t, "p", "main", "t", 0, 600, 600)
	v, err := e.s.Table(ctx, "p", "main", "t")
	require.NoError(t, err)

	rd := e.s.NewReader(nil)
	defer rd.Close()
	proj, err := v.Projection([]string{"name", "emb", "id"})
	require.NoError(t, err)
	rec, err := rd.ReadBlock(ctx, v, v.Blocks()[1], proj)
	require.NoError(t, err)
	defer rec.Release()
	require.Equal(t, []string{"name", "emb", "id"}, []string{rec.Schema().Field(0).Name, rec.Schema().Field(1).Name, rec.Schema().Field(2).Name})
	require.Equal(t, int64(256), rec.NumRows())
	require.Equal(t, int64(256), rec.Column(2).(*array.Int64).Value(0))
	require.Equal(t, "row-300", rec.Column(0).(*array.String).Value(44))

	_, err = v.Projection([]string{"nope"})
	require.ErrorIs(t, err, tables.ErrColumnNotFound)
	require.ErrorIs(t, err, errdefs.ErrInvalidArgument)
	require.Contains(t, err.Error(), "columns are: id int64")
	_, err = v.Projection([]string{"id", "id"})
	require.ErrorIs(t, err, tables.ErrBadColumns)
	_, err = rd.ReadBlock(ctx, v, tables.Block{File: len(v.Manifest.Files), Rows: 1}, v.Schema)
	require.ErrorIs(t, err, tables.ErrBlockOutOfRange)
}

func TestGather(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newProjectEnv(t, bucket.NewMem(), smallGroups())
	e.append(t, "p", "main", "t", 0, 700, 700)
	e.append(t, "p", "main", "t", 700, 300, 100)
	v, err := e.s.Table(ctx, "p", "main", "t")
	require.NoError(t, err)

	rng := rand.New(rand.NewPCG(1, 2))
	rows := []int64{999, 0, 0, 255, 256, 700}
	for range 200 {
		rows = append(rows, rng.Int64N(1000))
	}
	rd := e.s.NewReader(nil)
	defer rd.Close()
	rec, err := rd.GatherRows(ctx, v, rows, v.Schema)
	require.NoError(t, err)
	defer rec.Release()
	require.Equal(t, int64(len(rows)), rec.NumRows())
	for i, r := range rows {
		checkRow(t, rec, i, r)
	}

	proj, err := v.Projection([]string{"id"})
	require.NoError(t, err)
	empty, err := rd.GatherRows(ctx, v, nil, proj)
	require.NoError(t, err)
	require.Equal(t, int64(0), empty.NumRows())
	empty.Release()
	_, err = rd.GatherRows(ctx, v, []int64{1000}, v.Schema)
	require.ErrorIs(t, err, tables.ErrRowOutOfRange)
}

func TestPinnedVersionNeverChanges(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newProjectEnv(t, bucket.NewMem(), smallGroups())
	x := e.append(t, "p", "main", "t", 0, 500, 500).Commit.ID
	pinned, err := e.s.Table(ctx, "p", string(x[:10]), "t")
	require.NoError(t, err)
	before := e.readAll(t, pinned)

	e.append(t, "p", "main", "t", 500, 500, 250)
	_, err = e.v.CreateBranch(ctx, "p", "dev", "main")
	require.NoError(t, err)
	e.append(t, "p", "dev", "t", 1000, 100, 100)

	again, err := e.s.Table(ctx, "p", string(x), "t")
	require.NoError(t, err)
	require.Equal(t, before, e.readAll(t, again))
	require.Equal(t, seq(0, 500), before)

	mainV, err := e.s.Table(ctx, "p", "main", "t")
	require.NoError(t, err)
	require.Equal(t, int64(1000), mainV.Rows())
	devV, err := e.s.Table(ctx, "p", "dev", "t")
	require.NoError(t, err)
	require.Equal(t, int64(1100), devV.Rows())
}

func TestBadInput(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := bucket.NewMem()
	e := newProjectEnv(t, b, smallGroups())
	e.append(t, "p", "main", "t", 0, 10, 10)
	head, err := e.v.Head(ctx, "p", "main")
	require.NoError(t, err)
	objects := countObjects(t, b)

	other := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "x", Type: arrow.PrimitiveTypes.Int32},
	}, nil)
	bb := array.NewRecordBuilder(e.mem, other)
	bb.Field(0).(*array.Int64Builder).Append(1)
	bb.Field(1).(*array.Int32Builder).Append(1)
	rec := bb.NewRecordBatch()
	bb.Release()
	otherReader, err := array.NewRecordReader(other, []arrow.RecordBatch{rec})
	require.NoError(t, err)
	rec.Release()
	defer otherReader.Release()

	emptyReader := reader(t)
	defer emptyReader.Release()
	oneRow := func() array.RecordReader {
		r := reader(t, makeBatch(e.mem, 0, 1))
		t.Cleanup(r.Release) // runs before the allocator check of newEnv
		return r
	}

	cases := []struct {
		name string
		run  func() error
		want error
		msg  string
	}{
		{"schema mismatch", func() error {
			_, err := e.s.Append(ctx, "p", "main", "t", otherReader, "")
			return err
		}, tables.ErrSchemaMismatch, `column 1 is "x" float64 in the table but "x" int32`},
		{"empty append", func() error {
			_, err := e.s.Append(ctx, "p", "main", "t", emptyReader, "")
			return err
		}, tables.ErrEmptyAppend, "send at least one row"},
		{"invalid table name", func() error {
			_, err := e.s.Append(ctx, "p", "main", "a/b", oneRow(), "")
			return err
		}, versions.ErrInvalidName, "must be 1 to 128 characters"},
		{"unknown project", func() error {
			_, err := e.s.Append(ctx, "q", "main", "t", oneRow(), "")
			return err
		}, versions.ErrProjectNotFound, "create it first"},
		{"unknown branch", func() error {
			_, err := e.s.Append(ctx, "p", "dev", "t", oneRow(), "")
			return err
		}, versions.ErrBranchNotFound, `"dev"`},
		{"unknown table", func() error {
			_, err := e.s.Table(ctx, "p", "main", "nope")
			return err
		}, tables.ErrTableNotFound, `tables there: "t"`},
		{"unknown ref", func() error {
			_, err := e.s.Table(ctx, "p", "nope", "t")
			return err
		}, versions.ErrRefNotFound, "neither a branch"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.run()
			require.ErrorIs(t, err, c.want)
			require.Contains(t, err.Error(), c.msg)
			for _, other := range []error{tables.ErrSchemaMismatch, tables.ErrEmptyAppend, versions.ErrInvalidName, versions.ErrProjectNotFound, versions.ErrBranchNotFound, tables.ErrTableNotFound, versions.ErrRefNotFound} {
				if other != c.want {
					require.False(t, errors.Is(err, other), "%v is also %v", err, other)
				}
			}
		})
	}
	after, err := e.v.Head(ctx, "p", "main")
	require.NoError(t, err)
	require.Equal(t, head, after, "rejected appends moved the branch")
	require.Equal(t, objects, countObjects(t, b), "rejected appends left objects behind")
}

func countObjects(t *testing.T, b bucket.Bucket) int {
	t.Helper()
	n := 0
	for _, err := range b.List(context.Background(), "") {
		require.NoError(t, err)
		n++
	}
	return n
}

// faultBucket fails every ref move: a writer that "crashes" after its data
// files and manifest are stored but before its branch moves.
type faultBucket struct{ bucket.Bucket }

var errCrash = errors.New("injected crash before the ref moves")

func (f faultBucket) CompareAndSwap(ctx context.Context, key string, old bucket.ETag, data []byte) (bucket.ETag, error) {
	if strings.Contains(key, "/refs/") {
		return "", errCrash
	}
	return f.Bucket.CompareAndSwap(ctx, key, old, data)
}

func TestCrashBeforeRefMoveLeavesBranch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := bucket.NewMem()
	e := newProjectEnv(t, b, smallGroups())
	e.append(t, "p", "main", "t", 0, 100, 100)
	head, err := e.v.Head(ctx, "p", "main")
	require.NoError(t, err)

	crashing := newEnv(t, faultBucket{b}, smallGroups())
	r := reader(t, makeBatch(crashing.mem, 100, 50))
	defer r.Release()
	_, err = crashing.s.Append(ctx, "p", "main", "t", r, "")
	require.ErrorIs(t, err, errCrash)

	// The data file and manifest were written...
	var dataFiles int
	for info, err := range b.List(ctx, "projects/p/data/t/") {
		require.NoError(t, err)
		require.NotEmpty(t, info.Key)
		dataFiles++
	}
	require.Equal(t, 2, dataFiles)
	// ...but the branch did not move, and readers see the previous commit.
	after, err := e.v.Head(ctx, "p", "main")
	require.NoError(t, err)
	require.Equal(t, head, after)
	v, err := e.s.Table(ctx, "p", "main", "t")
	require.NoError(t, err)
	require.Equal(t, seq(0, 100), e.readAll(t, v))
	// The next writer commits normally on top of the previous commit.
	res := e.append(t, "p", "main", "t", 100, 50, 50)
	require.Equal(t, head, res.Commit.Parent)
}

// cancellingReader cancels its context after handing out its first batch.
type cancellingReader struct {
	array.RecordReader
	cancel context.CancelFunc
	n      int
}

func (c *cancellingReader) Next() bool {
	if c.n == 1 {
		c.cancel()
	}
	c.n++
	return c.RecordReader.Next()
}

func TestCancelledAppendCommitsNothing(t *testing.T) {
	t.Parallel()
	b := bucket.NewMem()
	e := newProjectEnv(t, b, smallGroups())
	before := countObjects(t, b)

	ctx, cancel := context.WithCancel(context.Background())
	r := &cancellingReader{RecordReader: reader(t, makeBatch(e.mem, 0, 100), makeBatch(e.mem, 100, 100), makeBatch(e.mem, 200, 100)), cancel: cancel}
	defer r.Release()
	_, err := e.s.Append(ctx, "p", "main", "t", r, "")
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, before, countObjects(t, b), "a cancelled append left objects")
	_, err = e.s.Table(context.Background(), "p", "main", "t")
	require.ErrorIs(t, err, tables.ErrTableNotFound)
}
