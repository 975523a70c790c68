package tables

import (
	"math/bits"
	"sync"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// scratchPool is a memory.Allocator that recycles large buffers: the
// Parquet reader's page buffers (compressed page, decompressed page) that
// every block read allocates, fills completely and frees, and the buffers
// gather fills for each step's batch, freed once the batch is sent.
// Recycling skips the Go runtime's zeroing of each fresh multi-MiB
// allocation and the copies of growing buffers. Buffers handed out are NOT
// zeroed: only code that writes every byte it later reads may use this
// allocator. It keeps at most max bytes; the rest goes back to base. Safe
// for concurrent use.
type scratchPool struct {
	base memory.Allocator
	max  int64
	// granule, when set, makes size classes multiples of it instead of
	// powers of two: tighter, for long-lived buffers of similar sizes.
	granule int

	mu struct {
		sync.Mutex
		free  map[int][][]byte // by capacity (a power of two)
		bytes int64
		// drained: buffers freed after drain (by arrays that outlive
		// their reader) go straight back to base.
		drained bool
	}
}

// minPooled: smaller buffers are cheap to allocate and go straight to base.
const minPooled = 64 << 10

func newScratchPool(base memory.Allocator, max int64) *scratchPool {
	p := &scratchPool{base: base, max: max}
	p.mu.free = make(map[int][][]byte)
	return p
}

func (p *scratchPool) class(n int) int {
	if n <= minPooled {
		return minPooled
	}
	if p.granule > 0 {
		return (n + p.granule - 1) / p.granule * p.granule
	}
	return 1 << bits.Len(uint(n-1))
}

func (p *scratchPool) isClass(c int) bool {
	if c < minPooled {
		return false
	}
	if p.granule > 0 {
		return c%p.granule == 0
	}
	return c&(c-1) == 0
}

func (p *scratchPool) Allocate(size int) []byte {
	if size < minPooled {
		return p.base.Allocate(size)
	}
	class := p.class(size)
	p.mu.Lock()
	if l := p.mu.free[class]; len(l) > 0 {
		b := l[len(l)-1]
		p.mu.free[class] = l[:len(l)-1]
		p.mu.bytes -= int64(class)
		p.mu.Unlock()
		return b[:size]
	}
	p.mu.Unlock()
	return p.base.Allocate(class)[:size]
}

func (p *scratchPool) Reallocate(size int, b []byte) []byte {
	if cap(b) >= size {
		return b[:size]
	}
	nb := p.Allocate(size)
	copy(nb, b)
	p.Free(b)
	return nb
}

func (p *scratchPool) Free(b []byte) {
	c := cap(b)
	if !p.isClass(c) {
		p.base.Free(b)
		return
	}
	p.mu.Lock()
	if !p.mu.drained && p.mu.bytes+int64(c) <= p.max {
		p.mu.free[c] = append(p.mu.free[c], b[:c])
		p.mu.bytes += int64(c)
		p.mu.Unlock()
		return
	}
	p.mu.Unlock()
	p.base.Free(b[:c])
}

// drain returns every pooled buffer to base.
func (p *scratchPool) drain() {
	p.mu.Lock()
	free := p.mu.free
	p.mu.free = make(map[int][][]byte)
	p.mu.bytes = 0
	p.mu.drained = true
	p.mu.Unlock()
	for _, l := range free {
		for _, b := range l {
			p.base.Free(b)
		}
	}
}
