package mix

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/stretchr/testify/require"

	"github.com/weftdata/weft/bucket"
)

// countingBucket counts the bytes read through Open.
type countingBucket struct {
	bucket.Bucket
	read atomic.Int64
}

func (c *countingBucket) Open(ctx context.Context, key string) (bucket.Reader, error) {
	r, err := c.Bucket.Open(ctx, key)
	if err != nil {
		return nil, err
	}
	return &countingReader{Reader: r, n: &c.read}, nil
}

type countingReader struct {
	bucket.Reader
	n *atomic.Int64
}

func (r *countingReader) ReadAt(p []byte, off int64) (int, error) {
	n, err := r.Reader.ReadAt(p, off)
	r.n.Add(int64(n))
	return n, err
}

// TestWideRows: row groups of wide rows are cut into blocks at page
// boundaries, a block read fetches about its own pages rather than its
// row group, the rows are right, and the default shuffle window shrinks
// to a bounded number of bytes.
func TestWideRows(t *testing.T) {
	t.Parallel()
	cb := &countingBucket{Bucket: newFS(t)}
	en := newEnv(t, cb, envOpts{rowGroupRows: 4096})
	en.e.layout.MinBytes, en.e.layout.MaxBytes, en.e.windowBytes = 1<<20, 1<<20, 1<<20
	en.project("p")
	en.appendRows("p", "main", "wide", 0, 8192, 8192, 2048)
	ctx := context.Background()
	run, err := en.e.Resolve(ctx, &Recipe{Seed: 1, BatchSize: 32, Components: []Component{{Project: "p", Table: "wide", Weight: 1}}})
	require.NoError(t, err)
	rec := run.Record()
	// 2 KiB values are written in pages of about 128 KiB (tables sizes the
	// writer's batch by row width), so blocks are cut at page starts: at
	// most ~1 MiB of rows each, within each 4096-row row group.
	blocks := rec.Components[0].Blocks
	var total, inGroup int64
	for _, n := range blocks {
		require.LessOrEqual(t, n, int64(1024), "blocks %v", blocks)
		total += n
		inGroup += n
		require.LessOrEqual(t, inGroup, int64(4096), "a block crosses a row group: %v", blocks)
		if inGroup == 4096 {
			inGroup = 0
		}
	}
	require.EqualValues(t, 8192, total)
	require.GreaterOrEqual(t, len(blocks), 8)
	require.InDelta(t, (1<<20)/2048, rec.Shuffle.BufferRows, 20, "window of about 1 MiB of rows")

	rows := run.mats[0].(*parquetRows)
	c := rows.comps[0]
	fileSize := c.version.Manifest.Files[0].Size
	before := cb.read.Load()
	blk, err := en.e.reader.ReadBlock(ctx, c.version, c.blocks[5], rows.data)
	require.NoError(t, err)
	got := cb.read.Load() - before
	var first int64
	for _, n := range blocks[:5] {
		first += n
	}
	require.EqualValues(t, blocks[5], blk.NumRows())
	checkRows(t, blk, first)
	blk.Release()
	require.Less(t, got, fileSize/4, "a block read fetched %d bytes of a %d byte file", got, fileSize)

	_, batches := collect(t, en.e.Steps(ctx, run, 1, 2, 0, 0))
	require.Len(t, batches, int(run.Steps()))
}

// checkRows checks that rec holds consecutive rows from first.
func checkRows(t *testing.T, rec arrow.RecordBatch, first int64) {
	t.Helper()
	ids := rec.Column(0).(*array.Int64)
	for i := range ids.Len() {
		require.Equal(t, first+int64(i), ids.Value(i))
	}
}
