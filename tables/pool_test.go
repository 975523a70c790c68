package tables

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"
)

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
