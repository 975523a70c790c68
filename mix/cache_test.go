package mix

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/weftdata/weft/bucket"
	"github.com/weftdata/weft/tables"
)

func TestCacheSingleFlight(t *testing.T) {
	t.Parallel()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	c := newBlockCache(1<<20, 4)
	defer c.purge()
	var loads atomic.Int64
	release := make(chan struct{})
	load := func(ctx context.Context) (arrow.RecordBatch, error) {
		loads.Add(1)
		select {
		case <-release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		rec := makeBatch(mem, "t", 0, 10, 8)
		return rec, nil
	}
	k := blockKey{file: "f", rows: 10}

	// Eight callers, one load; one caller gives up, the others still get
	// the block.
	var wg sync.WaitGroup
	gotten := make(chan arrow.RecordBatch, 8)
	quitter, quit := context.WithCancel(context.Background())
	for i := range 8 {
		ctx := context.Background()
		if i == 0 {
			ctx = quitter
		}
		wg.Go(func() {
			rec, err := c.get(ctx, k, load)
			if i == 0 {
				require.ErrorIs(t, err, context.Canceled)
				return
			}
			require.NoError(t, err)
			gotten <- rec
		})
	}
	require.Eventually(t, func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.mu.flights[k] != nil && c.mu.flights[k].waiters == 8
	}, 5*time.Second, time.Millisecond)
	quit()
	time.Sleep(10 * time.Millisecond)
	close(release)
	wg.Wait()
	close(gotten)
	n := 0
	for rec := range gotten {
		require.EqualValues(t, 10, rec.NumRows())
		rec.Release()
		n++
	}
	require.Equal(t, 7, n)
	require.EqualValues(t, 1, loads.Load())
	require.EqualValues(t, 1, c.decodes.Load())
	require.EqualValues(t, 7, c.joins.Load())
	// Now cached.
	rec := c.peek(k)
	require.NotNil(t, rec)
	rec.Release()

	// When every caller gives up, the load is cancelled and the next
	// caller starts a new one.
	k2 := blockKey{file: "g", rows: 10}
	block := make(chan struct{})
	var cancelled atomic.Bool
	slow := func(ctx context.Context) (arrow.RecordBatch, error) {
		<-ctx.Done()
		cancelled.Store(true)
		close(block)
		return nil, ctx.Err()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err := c.get(ctx, k2, slow)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	<-block
	require.True(t, cancelled.Load())
	rec, err = c.get(context.Background(), k2, func(context.Context) (arrow.RecordBatch, error) {
		return makeBatch(mem, "t", 0, 3, 8), nil
	})
	require.NoError(t, err)
	require.EqualValues(t, 3, rec.NumRows())
	rec.Release()

	// A failed load reaches its callers and is not cached.
	boom := errors.New("boom")
	_, err = c.get(context.Background(), blockKey{file: "h"}, func(context.Context) (arrow.RecordBatch, error) { return nil, boom })
	require.ErrorIs(t, err, boom)
	require.Nil(t, c.peek(blockKey{file: "h"}))
}

func TestCacheEvictsByBytes(t *testing.T) {
	t.Parallel()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	one := makeBatch(mem, "t", 0, 100, 64)
	size := tables.RecordBytes(one)
	one.Release()
	c := newBlockCache(3*size+size/2, 2)
	defer c.purge()
	for i := range 10 {
		rec, err := c.get(context.Background(), blockKey{file: "f", rg: i}, func(context.Context) (arrow.RecordBatch, error) {
			return makeBatch(mem, "t", 0, 100, 64), nil
		})
		require.NoError(t, err)
		_, bytes := c.size()
		require.LessOrEqual(t, bytes, c.capacity)
		if i == 5 {
			// Held past its eviction: still valid.
			defer func() {
				require.EqualValues(t, 100, rec.NumRows())
				rec.Release()
			}()
			continue
		}
		rec.Release()
	}
	n, _ := c.size()
	require.Equal(t, 3, n)
	require.EqualValues(t, 7, c.evictions.Load())
	// The most recent three stay.
	for i := 7; i < 10; i++ {
		rec := c.peek(blockKey{file: "f", rg: i})
		require.NotNil(t, rec)
		rec.Release()
	}
	// A block larger than the cache is served but not kept.
	big, err := c.get(context.Background(), blockKey{file: "big"}, func(context.Context) (arrow.RecordBatch, error) {
		return makeBatch(mem, "t", 0, 1000, 64), nil
	})
	require.NoError(t, err)
	big.Release()
	require.Nil(t, c.peek(blockKey{file: "big"}))
}

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
	v := run.comps[1].version
	require.NoError(t, b.Delete(ctx, fileKey(v, 0)))
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

func TestScratchPool(t *testing.T) {
	t.Parallel()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	p := newScratchPool(mem, 3<<20)
	small := p.Allocate(100) // below the pooled size: straight from base
	require.Len(t, small, 100)
	p.Free(small)

	a := p.Allocate(1 << 20)
	require.Len(t, a, 1<<20)
	a[0] = 7
	p.Free(a)
	b := p.Allocate(1<<20 - 5) // same class: the same buffer, not zeroed
	require.Equal(t, byte(7), b[0])
	require.Equal(t, &a[0], &b[0])
	b = p.Reallocate(3<<20, b) // grows into the 4 MiB class, keeping content
	require.Equal(t, byte(7), b[0])
	require.Len(t, b, 3<<20)
	c := p.Allocate(1 << 20) // the 1 MiB buffer freed by Reallocate
	p.Free(b)                // 4 MiB: above the 3 MiB bound, back to base
	p.Free(c)
	p.mu.Lock()
	require.EqualValues(t, 1<<20, p.mu.bytes)
	p.mu.Unlock()
	p.drain()
}
