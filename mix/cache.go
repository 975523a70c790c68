package mix

import (
	"container/list"
	"context"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/weftdata/weft/tables"
)

// blockKey names a decoded block: a row range of a row group of a data
// file, with a column set. Data files are immutable, so a key's content
// never changes.
type blockKey struct {
	file    string // bucket key of the data file
	rg      int
	offset  int64
	rows    int64
	columns string // the projected column names, joined
}

// blockCache is a byte-bounded LRU of decoded blocks shared by every stream
// of an Engine, with single-flight loading: concurrent requests for one
// block decode it once. A block larger than the whole capacity is decoded
// for its requesters but not kept.
//
// Entries are record batches; the cache holds one reference to each, and
// every get hands its caller a reference of its own, so an evicted block
// stays alive until its last user releases it. Memory is therefore the
// capacity plus the blocks that streams hold for the steps they are
// building.
type blockCache struct {
	capacity int64
	limit    chan struct{}  // bounds concurrent decodes, engine-wide
	running  sync.WaitGroup // loads in flight

	mu struct {
		sync.Mutex
		lru     *list.List // of *cacheEntry, most recent first
		entries map[blockKey]*list.Element
		flights map[blockKey]*flight
		bytes   int64
	}

	decodes, decodedBytes, hits, joins, evictions atomic.Int64
}

type cacheEntry struct {
	key   blockKey
	rec   arrow.RecordBatch
	bytes int64
}

// flight is one load in progress.
type flight struct {
	done    chan struct{}
	cancel  context.CancelFunc
	waiters int // callers waiting; each gets a reference on success
	over    bool
	rec     arrow.RecordBatch
	err     error
}

func newBlockCache(capacity int64, decoders int) *blockCache {
	c := &blockCache{capacity: capacity, limit: make(chan struct{}, decoders)}
	c.mu.lru = list.New()
	c.mu.entries = make(map[blockKey]*list.Element)
	c.mu.flights = make(map[blockKey]*flight)
	return c
}

// peek returns a reference to the cached block k, or nil.
func (c *blockCache) peek(k blockKey) arrow.RecordBatch {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el := c.mu.entries[k]; el != nil {
		c.mu.lru.MoveToFront(el)
		e := el.Value.(*cacheEntry)
		e.rec.Retain()
		c.hits.Add(1)
		return e.rec
	}
	return nil
}

// get returns a reference to block k, loading it with load if no one has.
// The load runs on a context of its own, cancelled when every caller
// waiting for it has given up, so one caller's cancellation never fails
// another's request.
func (c *blockCache) get(ctx context.Context, k blockKey, load func(context.Context) (arrow.RecordBatch, error)) (arrow.RecordBatch, error) {
	c.mu.Lock()
	if el := c.mu.entries[k]; el != nil {
		c.mu.lru.MoveToFront(el)
		e := el.Value.(*cacheEntry)
		e.rec.Retain()
		c.mu.Unlock()
		c.hits.Add(1)
		return e.rec, nil
	}
	f := c.mu.flights[k]
	if f == nil {
		lctx, cancel := context.WithCancel(context.Background())
		f = &flight{done: make(chan struct{}), cancel: cancel}
		c.mu.flights[k] = f
		c.running.Go(func() { c.run(lctx, k, f, load) })
	} else {
		c.joins.Add(1)
	}
	f.waiters++
	c.mu.Unlock()

	select {
	case <-f.done:
		return f.rec, f.err
	case <-ctx.Done():
	}
	c.mu.Lock()
	if f.over {
		// The load finished as we gave up: we hold a reference.
		c.mu.Unlock()
		if f.rec != nil {
			f.rec.Release()
		}
		return nil, ctx.Err()
	}
	f.waiters--
	if f.waiters == 0 {
		f.cancel()
		if c.mu.flights[k] == f {
			delete(c.mu.flights, k)
		}
	}
	c.mu.Unlock()
	return nil, ctx.Err()
}

func (c *blockCache) run(ctx context.Context, k blockKey, f *flight, load func(context.Context) (arrow.RecordBatch, error)) {
	defer f.cancel()
	var (
		rec arrow.RecordBatch
		err error
	)
	select {
	case c.limit <- struct{}{}:
		rec, err = load(ctx)
		<-c.limit
	case <-ctx.Done():
		err = ctx.Err()
	}
	var evicted []arrow.RecordBatch
	c.mu.Lock()
	f.over = true
	if c.mu.flights[k] == f {
		delete(c.mu.flights, k)
	}
	if err != nil {
		f.err = err
	} else {
		n := tables.RecordBytes(rec)
		c.decodes.Add(1)
		c.decodedBytes.Add(n)
		for range f.waiters {
			rec.Retain()
		}
		f.rec = rec
		if _, dup := c.mu.entries[k]; !dup && n <= c.capacity {
			// The cache takes the load's own reference.
			c.mu.entries[k] = c.mu.lru.PushFront(&cacheEntry{key: k, rec: rec, bytes: n})
			c.mu.bytes += n
			evicted = c.evictLocked()
		} else {
			evicted = append(evicted, rec)
		}
	}
	c.mu.Unlock()
	close(f.done)
	for _, r := range evicted {
		r.Release()
	}
}

// evictLocked drops least recently used entries until the cache fits its
// capacity, returning their records for the caller to release unlocked.
func (c *blockCache) evictLocked() []arrow.RecordBatch {
	var out []arrow.RecordBatch
	for c.mu.bytes > c.capacity {
		el := c.mu.lru.Back()
		if el == nil {
			break
		}
		e := c.mu.lru.Remove(el).(*cacheEntry)
		delete(c.mu.entries, e.key)
		c.mu.bytes -= e.bytes
		c.evictions.Add(1)
		out = append(out, e.rec)
	}
	return out
}

// purge cancels the loads in flight, waits for them, and drops every
// entry (blocks in use stay alive until released).
func (c *blockCache) purge() {
	c.mu.Lock()
	for _, f := range c.mu.flights {
		f.cancel()
	}
	c.mu.Unlock()
	c.running.Wait()
	c.mu.Lock()
	var out []arrow.RecordBatch
	for el := c.mu.lru.Front(); el != nil; el = el.Next() {
		out = append(out, el.Value.(*cacheEntry).rec)
	}
	c.mu.lru.Init()
	clear(c.mu.entries)
	c.mu.bytes = 0
	c.mu.Unlock()
	for _, r := range out {
		r.Release()
	}
}

func (c *blockCache) size() (entries int, bytes int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.mu.entries), c.mu.bytes
}
