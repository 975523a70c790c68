package offheap

import (
	"runtime/debug"
	"sync/atomic"
)

// HeapLimiter keeps the Go runtime's soft memory limit at limit minus
// what an Allocator maps (use Update as its Watch function), and when
// the mappings have grown by step since the heap last gave its free
// memory back to the system, has it do so again (debug.FreeOSMemory, in
// the background, one at a time). Without that, memory the heap frees
// (a stream's batches, once sent) stays the heap's, for its own next
// allocations, until its scavenger slowly returns it: a put that maps
// its buffers then takes new memory from the system on top, where a put
// allocating from the heap reused that memory, and heap and mappings
// together pass the limit (bench/abuse-results.md: 1140-1151 MiB peaks
// under a 1 GiB limit).
type HeapLimiter struct {
	limit, step int64
	freed       atomic.Int64 // mapped when the heap last gave memory back
	releasing   atomic.Bool
	releases    atomic.Int64
}

// NewHeapLimiter sets the runtime's soft memory limit to limit; step is
// the growth of mappings that makes the heap give back its free memory.
func NewHeapLimiter(limit, step int64) *HeapLimiter {
	debug.SetMemoryLimit(limit)
	return &HeapLimiter{limit: limit, step: step}
}

// Update sets the runtime's limit for mapped bytes mapped.
func (h *HeapLimiter) Update(mapped int64) {
	debug.SetMemoryLimit(max(h.limit-mapped, h.limit/2))
	if mapped < h.freed.Load() {
		h.freed.Store(mapped)
		return
	}
	if mapped-h.freed.Load() < h.step || !h.releasing.CompareAndSwap(false, true) {
		return
	}
	h.freed.Store(mapped)
	go func() {
		debug.FreeOSMemory()
		h.releasing.Store(false)
		h.releases.Add(1)
	}()
}

// Releases counts the times the heap was made to give memory back.
func (h *HeapLimiter) Releases() int64 { return h.releases.Load() }
