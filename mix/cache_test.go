package mix

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftdata/weft/bucket"
	"github.com/weftdata/weft/versions"
)

// TestSharedCache: four ranks served at once by one engine decode each
// block once, and the run's blocks are exactly those decoded.
func TestSharedCache(t *testing.T) {
	t.Parallel()
	en := newEnv(t, newFS(t), envOpts{rowGroupRows: 100})
	twoTables(en, "p", 900, 1500)
	ctx := context.Background()
	run, err := en.e.Resolve(ctx, recipe("p", 3, 64, 1, 1))
	require.NoError(t, err)
	e := en.engine(nil)
	var wg sync.WaitGroup
	for r := range 4 {
		wg.Go(func() { collect(t, e.Steps(ctx, run, r, 4, 0, 0)) })
	}
	wg.Wait()
	st := e.Stats()
	blocks := len(run.Record().Components[0].Blocks) + len(run.Record().Components[1].Blocks)
	require.EqualValues(t, blocks, st.Decodes, "%+v", st)
	require.Equal(t, blocks, st.CachedBlocks)
	require.Zero(t, st.Evictions)
}

// TestStreamCancel: cancelling the context or leaving the loop stops the
// stream's work and releases everything it held (the checked allocator and
// goleak in TestMain prove it), also with a cache too small to keep blocks.
func TestStreamCancel(t *testing.T) {
	t.Parallel()
	en := newEnv(t, bucket.NewMem(), envOpts{rowGroupRows: 50, engine: func(o *Options) { o.CacheBytes = 1 << 10 }})
	twoTables(en, "p", 2000, 3000)
	run, err := en.e.Resolve(context.Background(), recipe("p", 3, 64, 1, 1))
	require.NoError(t, err)

	for _, after := range []int{0, 1, 5} {
		ctx, cancel := context.WithCancel(context.Background())
		n := 0
		var last error
		for st, err := range en.e.Steps(ctx, run, 1, 2, 0, 0) {
			if err != nil {
				last = err
				break
			}
			st.Batch.Release()
			n++
			if n == after+1 {
				cancel()
			}
		}
		cancel()
		require.ErrorIs(t, last, context.Canceled)
		require.Less(t, n, int(run.Steps()))
	}
	// Leaving the loop early.
	n := 0
	for st, err := range en.e.Steps(context.Background(), run, 0, 4, 3, 0) {
		require.NoError(t, err)
		st.Batch.Release()
		if n++; n == 2 {
			break
		}
	}
	// An already cancelled context.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, err := range en.e.Steps(ctx, run, 0, 1, 0, 0) {
		require.ErrorIs(t, err, context.Canceled)
	}
}

// TestLoadErrorEndsStream: a block that cannot be read ends the stream with
// an error that names the component and block.
func TestLoadErrorEndsStream(t *testing.T) {
	t.Parallel()
	b := bucket.NewMem()
	en := newEnv(t, b, envOpts{rowGroupRows: 100})
	twoTables(en, "p", 300, 300)
	ctx := context.Background()
	run, err := en.e.Resolve(ctx, recipe("p", 3, 16, 1, 1))
	require.NoError(t, err)
	// Lose a data file of b.
	v := run.versions[1]
	require.NoError(t, b.Delete(ctx, versions.DataFileKey(v.Project, v.Manifest.Files[0].Path)))
	fresh := en.engine(nil)
	var last error
	for st, err := range fresh.Steps(ctx, run, 0, 1, 0, 0) {
		if err != nil {
			last = err
			break
		}
		st.Batch.Release()
	}
	require.ErrorIs(t, last, bucket.ErrNotFound)
	require.ErrorContains(t, last, "component 1 (p/b@")
}
