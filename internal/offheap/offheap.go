package offheap

import (
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// DefaultMin is the size from which buffers are mapped: below it a mapping
// costs more than the garbage it saves.
const DefaultMin = 1 << 20

// Allocator maps buffers of at least min bytes, and takes the others from
// base. Safe for concurrent use.
type Allocator struct {
	base memory.Allocator
	min  int
	mu   struct {
		sync.Mutex
		maps map[uintptr]int // mapped buffers: first byte → mapped length
	}
	mapped atomic.Int64
	watch  struct {
		sync.Mutex
		f func(mapped int64)
	}
}

var _ memory.Allocator = (*Allocator)(nil)

// New returns an Allocator that maps buffers of min bytes or more (0:
// DefaultMin) and takes smaller ones from base (nil:
// memory.DefaultAllocator).
func New(base memory.Allocator, min int) *Allocator {
	if base == nil {
		base = memory.DefaultAllocator
	}
	if min <= 0 {
		min = DefaultMin
	}
	a := &Allocator{base: base, min: min}
	a.mu.maps = make(map[uintptr]int)
	return a
}

// Mapped is the number of bytes mapped now (buffers allocated and not
// freed, rounded up to pages).
func (a *Allocator) Mapped() int64 { return a.mapped.Load() }

// Watch calls f with Mapped after every change of it (a buffer mapped,
// grown or unmapped), one call at a time, and once now; f must be quick.
// The Go runtime does not count mapped memory: flightd lowers its soft
// memory limit by it (runtime/debug.SetMemoryLimit), so that the heap
// leaves room for what is mapped. Watch replaces an earlier f; nil stops.
func (a *Allocator) Watch(f func(mapped int64)) {
	a.watch.Lock()
	defer a.watch.Unlock()
	a.watch.f = f
	if f != nil {
		f(a.mapped.Load())
	}
}

// changed tells the watcher, if any, the current Mapped.
func (a *Allocator) changed() {
	a.watch.Lock()
	defer a.watch.Unlock()
	if a.watch.f != nil {
		a.watch.f(a.mapped.Load())
	}
}

func (a *Allocator) Allocate(size int) []byte {
	if size < a.min || !supported {
		return a.base.Allocate(size)
	}
	b, err := mapBytes(size)
	if err != nil {
		return a.base.Allocate(size) // out of mappings: the heap may still have room
	}
	a.track(b)
	a.changed()
	return b[:size]
}

func (a *Allocator) Reallocate(size int, b []byte) []byte {
	n, ours := a.lookup(b)
	switch {
	case !ours && (size < a.min || !supported):
		return a.base.Reallocate(size, b)
	case !ours:
		nb := a.Allocate(size)
		copy(nb, b)
		a.base.Free(b)
		return nb
	case size <= n:
		return b[:cap(b)][:size]
	}
	a.untrack(b, n)
	nb, err := remapBytes(b[:cap(b)], n, size)
	if err != nil {
		// The old mapping is intact: copy out of it into the heap.
		a.track(b[:cap(b)])
		hb := a.base.Allocate(size)
		copy(hb, b)
		a.Free(b)
		return hb
	}
	a.track(nb)
	a.changed()
	return nb[:size]
}

func (a *Allocator) Free(b []byte) {
	n, ours := a.lookup(b)
	if !ours {
		a.base.Free(b)
		return
	}
	a.untrack(b, n)
	if err := unmapBytes(b[:cap(b)], n); err != nil {
		panic("offheap: unmap: " + err.Error())
	}
	a.changed()
}

func (a *Allocator) lookup(b []byte) (int, bool) {
	if cap(b) < a.min || !supported {
		return 0, false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	n, ok := a.mu.maps[uintptr(unsafe.Pointer(unsafe.SliceData(b)))]
	return n, ok
}

func (a *Allocator) track(b []byte) {
	a.mu.Lock()
	a.mu.maps[uintptr(unsafe.Pointer(unsafe.SliceData(b)))] = cap(b)
	a.mu.Unlock()
	a.mapped.Add(int64(cap(b)))
}

func (a *Allocator) untrack(b []byte, n int) {
	a.mu.Lock()
	delete(a.mu.maps, uintptr(unsafe.Pointer(unsafe.SliceData(b))))
	a.mu.Unlock()
	a.mapped.Add(-int64(n))
}
