// Package cache is a generic, byte-bounded LRU cache with single-flight
// loads, pinned entries and a release callback.
//
// # Contract
//
//   - Bytes. Every value has a size in bytes, reported by the loader that
//     made it. The cache keeps at most its capacity of resident bytes; a
//     load that would not fit on its own (size > capacity) is handed to its
//     callers but never kept.
//   - Single flight. Concurrent Gets of one key that is not cached share
//     one load. The load runs on a context of its own, cancelled when every
//     caller waiting for it has given up, so one caller's cancellation never
//     fails another's Get. A failed load is not cached; the next Get tries
//     again.
//   - Pins. Get and Peek return a Handle, which pins its entry: the value
//     stays valid until the Handle is released, even if the entry is
//     evicted meanwhile. Every Handle must be released exactly once.
//   - Release. The release callback (optional) is called once per loaded
//     value, when the value has left the cache (evicted, purged, or never
//     admitted) and no Handle pins it any more. It is called without the
//     cache's lock held, from the goroutine that dropped the last
//     reference.
//   - Memory governor hooks. SetCapacity changes the bound and evicts down
//     to it; Shrink evicts least recently used entries until the resident
//     bytes are at most a target, for a caller that must free memory now.
//     Pinned entries can be evicted (they stop counting as resident); their
//     memory is freed when their last Handle goes.
//   - Budget (optional, UseBudget). Every resident entry holds a lease on
//     its bytes from a membudget.Budget, taken with TryAcquire when it is
//     admitted: when the budget is short, the cache evicts its own least
//     recently used entries first, and a value that still does not fit is
//     handed to its callers but not kept. The lease is returned when the
//     value is released. The cache registers itself as a reclaimer, so
//     that other holders of the budget can make it give memory back.
//
// All methods are safe for concurrent use.
package cache

import (
	"container/list"
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/weftdata/weft/internal/membudget"
)

// Loader makes the value of a key: it returns the value and its size in
// bytes. It runs on a context that ends when nobody waits for it any more.
type Loader[V any] func(ctx context.Context) (V, int64, error)

// Cache is a byte-bounded LRU of values of type V keyed by K. The zero
// value is not usable; call New.
type Cache[K comparable, V any] struct {
	release func(K, V)
	budget  *membudget.Budget // nil: bounded by capacity only
	running sync.WaitGroup    // loads in flight

	mu struct {
		sync.Mutex
		capacity int64
		lru      *list.List // of *entry, most recent first
		entries  map[K]*list.Element
		flights  map[K]*flight[K, V]
		bytes    int64
	}

	hits, misses, joins, loads, loadedBytes, evictions atomic.Int64
}

// entry is one loaded value and the number of handles pinning it.
type entry[K comparable, V any] struct {
	key      K
	val      V
	size     int64
	pins     int  // outstanding handles
	resident bool // in the LRU, counted in bytes
	lease    *membudget.Lease
}

// flight is one load in progress.
type flight[K comparable, V any] struct {
	done    chan struct{}
	cancel  context.CancelFunc
	waiters int // callers waiting; each gets a pin on success
	over    bool
	e       *entry[K, V]
	err     error
}

// New returns a cache of capacity bytes. release, if not nil, is called
// with every value that the cache loaded, once it has left the cache and no
// Handle pins it.
func New[K comparable, V any](capacity int64, release func(K, V)) *Cache[K, V] {
	c := &Cache[K, V]{release: release}
	c.mu.capacity = max(0, capacity)
	c.mu.lru = list.New()
	c.mu.entries = make(map[K]*list.Element)
	c.mu.flights = make(map[K]*flight[K, V])
	return c
}

// Handle pins one cached value until Release.
type Handle[K comparable, V any] struct {
	c        *Cache[K, V]
	e        *entry[K, V]
	released atomic.Bool
}

// Value is the pinned value; valid until Release.
func (h *Handle[K, V]) Value() V { return h.e.val }

// Size is the value's size in bytes, as its loader reported it.
func (h *Handle[K, V]) Size() int64 { return h.e.size }

// Release unpins the value. Calling it twice panics.
func (h *Handle[K, V]) Release() {
	if h.released.Swap(true) {
		panic("cache: Handle released twice")
	}
	h.c.unpin(h.e)
}

func (c *Cache[K, V]) unpin(e *entry[K, V]) {
	c.mu.Lock()
	e.pins--
	free := e.pins == 0 && !e.resident
	c.mu.Unlock()
	if free {
		c.free(e)
	}
}

func (c *Cache[K, V]) free(e *entry[K, V]) {
	e.lease.Release()
	if c.release != nil {
		c.release(e.key, e.val)
	}
}

func (c *Cache[K, V]) handleLocked(e *entry[K, V]) *Handle[K, V] {
	e.pins++
	return &Handle[K, V]{c: c, e: e}
}

// Peek returns a handle on the cached value of k, or nil when k is not
// cached (a load in flight does not count).
func (c *Cache[K, V]) Peek(k K) *Handle[K, V] {
	c.mu.Lock()
	defer c.mu.Unlock()
	el := c.mu.entries[k]
	if el == nil {
		return nil
	}
	c.mu.lru.MoveToFront(el)
	c.hits.Add(1)
	return c.handleLocked(el.Value.(*entry[K, V]))
}

// Get returns a handle on the value of k, loading it with load unless it
// is cached or being loaded. It returns ctx's error if ctx ends first (the
// load goes on for other waiters, or is cancelled when none is left), and
// the load's error if it fails.
func (c *Cache[K, V]) Get(ctx context.Context, k K, load Loader[V]) (*Handle[K, V], error) {
	c.mu.Lock()
	if el := c.mu.entries[k]; el != nil {
		c.mu.lru.MoveToFront(el)
		h := c.handleLocked(el.Value.(*entry[K, V]))
		c.mu.Unlock()
		c.hits.Add(1)
		return h, nil
	}
	f := c.mu.flights[k]
	if f == nil {
		c.misses.Add(1)
		lctx, cancel := context.WithCancel(context.Background())
		f = &flight[K, V]{done: make(chan struct{}), cancel: cancel}
		c.mu.flights[k] = f
		c.running.Go(func() { c.run(lctx, k, f, load) })
	} else {
		c.joins.Add(1)
	}
	f.waiters++
	c.mu.Unlock()

	select {
	case <-f.done:
		if f.err != nil {
			return nil, f.err
		}
		return &Handle[K, V]{c: c, e: f.e}, nil // pinned by run for us
	case <-ctx.Done():
	}
	c.mu.Lock()
	if f.over {
		// The load finished as we gave up: it pinned the value for us.
		c.mu.Unlock()
		if f.err == nil {
			c.unpin(f.e)
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

// safeLoad runs load, turning a panic into its error: the load runs on
// the cache's goroutine, where a panic would end the process and leave
// the flight's waiters waiting. Loaders should not panic; one that does
// on bad input (a damaged object) fails its Get instead.
func safeLoad[V any](ctx context.Context, load Loader[V]) (val V, size int64, err error) {
	defer func() {
		if p := recover(); p != nil {
			var zero V
			val, size, err = zero, 0, fmt.Errorf("cache load panicked: %v", p)
		}
	}()
	return load(ctx)
}

func (c *Cache[K, V]) run(ctx context.Context, k K, f *flight[K, V], load Loader[V]) {
	defer f.cancel()
	var (
		val  V
		size int64
		err  error
	)
	if err = ctx.Err(); err == nil {
		val, size, err = safeLoad(ctx, load)
	}
	var evicted []*entry[K, V]
	var orphan *entry[K, V]
	c.mu.Lock()
	f.over = true
	if c.mu.flights[k] == f {
		delete(c.mu.flights, k)
	}
	if err != nil {
		f.err = err
	} else {
		c.loads.Add(1)
		c.loadedBytes.Add(size)
		e := &entry[K, V]{key: k, val: val, size: size, pins: f.waiters}
		f.e = e
		if _, dup := c.mu.entries[k]; !dup && size <= c.mu.capacity && c.leaseLocked(e, &evicted) {
			e.resident = true
			c.mu.entries[k] = c.mu.lru.PushFront(e)
			c.mu.bytes += size
			evicted = c.evictLocked(c.mu.capacity)
		} else if e.pins == 0 {
			orphan = e // nobody waits and the cache does not keep it
		}
	}
	c.mu.Unlock()
	close(f.done)
	for _, e := range evicted {
		c.free(e)
	}
	if orphan != nil {
		c.free(orphan)
	}
}

// leaseLocked reserves e's bytes from the budget (always true without
// one), evicting the cache's own least recently used entries while the
// budget is short. The leases of evicted entries that no handle pins are
// returned at once (free returns them again, harmlessly); pinned ones keep
// theirs until released, as their memory stays in use.
func (c *Cache[K, V]) leaseLocked(e *entry[K, V], evicted *[]*entry[K, V]) bool {
	if c.budget == nil {
		return true
	}
	if e.size > c.budget.Stats().Total {
		return false // would never fit: keep what is cached
	}
	for {
		if l, ok := c.budget.TryAcquire(e.size); ok {
			e.lease = l
			return true
		}
		if c.mu.lru.Len() == 0 {
			return false
		}
		for _, old := range c.evictLocked(c.mu.bytes - 1) {
			old.lease.Release()
			*evicted = append(*evicted, old)
		}
	}
}

// UseBudget makes every resident entry lease its bytes from b (see the
// package doc) and registers the cache as b's reclaimer: under pressure it
// evicts about the bytes asked for. Call it once, before the first Get; a
// nil b changes nothing.
func (c *Cache[K, V]) UseBudget(b *membudget.Budget) {
	if b == nil {
		return
	}
	c.budget = b
	b.OnPressure(func(need int64) {
		c.mu.Lock()
		target := c.mu.bytes - need
		c.mu.Unlock()
		c.Shrink(target)
	})
}

// evictLocked drops least recently used entries until the resident bytes
// are at most target, and returns those that no handle pins, for the
// caller to free unlocked.
func (c *Cache[K, V]) evictLocked(target int64) []*entry[K, V] {
	var out []*entry[K, V]
	for c.mu.bytes > target {
		el := c.mu.lru.Back()
		if el == nil {
			break
		}
		e := c.mu.lru.Remove(el).(*entry[K, V])
		delete(c.mu.entries, e.key)
		c.mu.bytes -= e.size
		e.resident = false
		c.evictions.Add(1)
		if e.pins == 0 {
			out = append(out, e)
		}
	}
	return out
}

// SetCapacity sets the cache's bound in bytes and evicts down to it.
func (c *Cache[K, V]) SetCapacity(capacity int64) {
	c.mu.Lock()
	c.mu.capacity = max(0, capacity)
	evicted := c.evictLocked(c.mu.capacity)
	c.mu.Unlock()
	for _, e := range evicted {
		c.free(e)
	}
}

// Shrink evicts least recently used entries until at most target bytes
// are resident, without changing the capacity, and returns the bytes it
// evicted. Memory of evicted entries that are still pinned is freed when
// they are released.
func (c *Cache[K, V]) Shrink(target int64) int64 {
	c.mu.Lock()
	before := c.mu.bytes
	evicted := c.evictLocked(max(0, target))
	freed := before - c.mu.bytes
	c.mu.Unlock()
	for _, e := range evicted {
		c.free(e)
	}
	return freed
}

// Purge cancels the loads in flight, waits for them, and evicts every
// entry. Pinned values stay valid until released.
func (c *Cache[K, V]) Purge() {
	c.mu.Lock()
	for _, f := range c.mu.flights {
		f.cancel()
	}
	c.mu.Unlock()
	c.running.Wait()
	c.mu.Lock()
	evicted := c.evictLocked(-1)
	c.mu.Unlock()
	for _, e := range evicted {
		c.free(e)
	}
}

// Stats are a cache's counters since New and its current size.
type Stats struct {
	Hits        int64 // Gets and Peeks served from the cache
	Misses      int64 // Gets that started a load
	Joins       int64 // Gets that waited for a load in progress
	Loads       int64 // loads that succeeded
	LoadedBytes int64 // their sizes
	Evictions   int64 // entries evicted (by capacity, Shrink or Purge)
	Entries     int   // resident entries
	Bytes       int64 // resident bytes
	Capacity    int64
}

// Stats returns the counters.
func (c *Cache[K, V]) Stats() Stats {
	c.mu.Lock()
	n, b, capacity := len(c.mu.entries), c.mu.bytes, c.mu.capacity
	c.mu.Unlock()
	return Stats{
		Hits: c.hits.Load(), Misses: c.misses.Load(), Joins: c.joins.Load(),
		Loads: c.loads.Load(), LoadedBytes: c.loadedBytes.Load(), Evictions: c.evictions.Load(),
		Entries: n, Bytes: b, Capacity: capacity,
	}
}
