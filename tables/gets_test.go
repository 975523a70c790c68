package tables

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/weftdata/weft/bucket"
	"github.com/weftdata/weft/internal/benchdata"
	"github.com/weftdata/weft/versions"
)

// countingBucket counts opens (a HEAD on S3) and ranged reads (a GET each
// on S3) of the objects it opens.
type countingBucket struct {
	bucket.Bucket
	opens, reads atomic.Int64
}

func (c *countingBucket) Open(ctx context.Context, key string) (bucket.Reader, error) {
	r, err := c.Bucket.Open(ctx, key)
	if err != nil {
		return nil, err
	}
	c.opens.Add(1)
	return &countingReader{Reader: r, n: &c.reads}, nil
}

type countingReader struct {
	bucket.Reader
	n *atomic.Int64
}

func (r *countingReader) ReadAt(p []byte, off int64) (int, error) {
	r.n.Add(1)
	return r.Reader.ReadAt(p, off)
}

// TestBlockReadGETs: a block of the small-row benchmark table (five
// columns, one 64Ki-row row group) is read with one ranged read per
// coalesced range of its pages (3-4: the columns' chunks lie far apart in
// the file) and no other read once the footer is cached, where reading
// each column's pages through its own stream takes 8-10; and the rows are
// right.
func TestBlockReadGETs(t *testing.T) {
	t.Parallel()
	cb := &countingBucket{Bucket: bucket.NewMem()}
	v, err := versions.New(cb, versions.DefaultOptions())
	require.NoError(t, err)
	s, err := New(v, DefaultOptions())
	require.NoError(t, err)
	ctx := context.Background()
	_, err = v.CreateProject(ctx, "p")
	require.NoError(t, err)
	gen := benchdata.NewReader(65536)
	_, err = s.Append(ctx, "p", "main", "small", gen, "")
	gen.Release()
	require.NoError(t, err)
	ver, err := s.Table(ctx, "p", "main", "small")
	require.NoError(t, err)
	sizes, _, err := s.Layout(ctx, ver, ver.Schema, DefaultLayout())
	require.NoError(t, err)
	blocks, err := ver.Split(sizes)
	require.NoError(t, err)
	require.Greater(t, len(blocks), 8, "sizes %v", sizes)

	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	count := func(r *Reader, b Block) (opens, reads int64) {
		t.Helper()
		o, n := cb.opens.Load(), cb.reads.Load()
		rec, err := r.ReadBlock(ctx, ver, b, ver.Schema)
		require.NoError(t, err)
		defer rec.Release()
		require.EqualValues(t, b.Rows, rec.NumRows())
		ids := rec.Column(0).(*array.Int64)
		for i := range ids.Len() {
			require.Equal(t, b.FirstRow+int64(i), ids.Value(i))
		}
		return cb.opens.Load() - o, cb.reads.Load() - n
	}
	r := s.NewReader(mem)
	defer r.Close()
	old := s.NewReader(mem)
	defer old.Close()
	old.noPrefetch = true
	f, err := s.openFile(ctx, ver, 0, mem)
	require.NoError(t, err)
	defer f.Close()
	for _, i := range []int{len(blocks) / 2, 1, len(blocks) - 1} {
		b := blocks[i]
		ranges, err := blockRanges(f.pf, b, leafColumns(f.pf.MetaData(), ver.Schema))
		require.NoError(t, err)
		merged := coalesce(ranges, coalesceGap)
		t.Logf("block %d: page ranges %v, coalesced %v", i, ranges, merged)
		opens, reads := count(r, b)
		_, perColumn := count(old, b)
		t.Logf("block %d (%d rows): %d open, %d ranged reads coalesced; %d reads column by column", i, b.Rows, opens, reads, perColumn)
		require.EqualValues(t, 1, opens)
		require.EqualValues(t, len(merged), reads, "one read per coalesced range, none outside them")
		require.LessOrEqual(t, reads, int64(4))
		require.Greater(t, perColumn, reads)
	}
}
