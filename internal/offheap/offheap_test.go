package offheap_test

import (
	"bytes"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/weftdata/weft/internal/offheap"
)

func TestAllocator(t *testing.T) {
	base := memory.NewCheckedAllocator(memory.NewGoAllocator())
	a := offheap.New(base, 64<<10)
	for _, tc := range []struct {
		name         string
		first, grown int
		mapped       bool // the first buffer is mapped
	}{
		{"small stays small", 100, 1000, false},
		{"small grows mapped", 1000, 1 << 20, false},
		{"mapped grows", 64 << 10, 3 << 20, true},
		{"mapped grows a lot", 1 << 20, 64 << 20, true},
		{"mapped shrinks", 2 << 20, 1 << 20, true},
		{"mapped shrinks under min", 2 << 20, 100, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := a.Allocate(tc.first)
			require.Len(t, b, tc.first)
			require.Equal(t, make([]byte, tc.first), b, "zeroed")
			if tc.mapped {
				require.GreaterOrEqual(t, a.Mapped(), int64(tc.first))
			}
			for i := range b {
				b[i] = byte(i % 251)
			}
			g := a.Reallocate(tc.grown, b)
			require.Len(t, g, tc.grown)
			keep := min(tc.first, tc.grown)
			for i := range keep {
				if g[i] != byte(i%251) {
					require.Failf(t, "content lost", "byte %d", i)
				}
			}
			require.True(t, bytes.Equal(g[keep:], make([]byte, tc.grown-keep)), "grown part zeroed")
			a.Free(g)
			require.Zero(t, a.Mapped(), "everything unmapped")
		})
	}
	base.AssertSize(t, 0)
}

// TestArrowBuffers: arrow buffers grown and released through the
// allocator, from several goroutines, leave nothing mapped.
func TestArrowBuffers(t *testing.T) {
	a := offheap.New(nil, 0)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			buf := memory.NewResizableBuffer(a)
			for n := 1; n <= 32<<20; n *= 2 {
				buf.Resize(n)
				buf.Bytes()[n-1] = byte(g)
			}
			s := memory.SliceBuffer(buf, 1<<20, 1<<20)
			buf.Release()
			require.Equal(t, byte(g), s.Bytes()[(1<<20)-1])
			s.Release()
		})
	}
	wg.Wait()
	require.Zero(t, a.Mapped())
}

// TestWatch: the watcher sees every change of Mapped, the last one 0.
func TestWatch(t *testing.T) {
	a := offheap.New(nil, 0)
	var seen []int64
	a.Watch(func(m int64) { seen = append(seen, m) })
	b := a.Allocate(1 << 20)
	b = a.Reallocate(4<<20, b)
	small := a.Allocate(100)
	a.Free(small)
	a.Free(b)
	a.Watch(nil)
	require.Equal(t, []int64{0, 1 << 20, 4 << 20, 0}, seen)
}
