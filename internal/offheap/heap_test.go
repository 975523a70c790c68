package offheap_test

import (
	"math"
	"runtime/debug"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftdata/weft/internal/offheap"
)

// TestHeapLimiter: the runtime's soft limit follows the mappings, and
// mappings grown by a step make the heap give its free memory back.
func TestHeapLimiter(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))
	const limit, step = 1 << 30, 64 << 20
	h := offheap.NewHeapLimiter(limit, step)
	require.Equal(t, int64(limit), debug.SetMemoryLimit(-1))
	for _, tc := range []struct {
		name     string
		mapped   int64
		limit    int64
		releases int64
	}{
		{"small mappings: limit lowered, nothing given back", 16 << 20, limit - 16<<20, 0},
		{"grown by a step: given back", 80 << 20, limit - 80<<20, 1},
		{"less than a step more: not again", 120 << 20, limit - 120<<20, 1},
		{"unmapped", 0, limit, 1},
		{"a step again", 64 << 20, limit - 64<<20, 2},
		{"more than half the limit mapped: half", 900 << 20, limit / 2, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h.Update(tc.mapped)
			require.Equal(t, tc.limit, debug.SetMemoryLimit(-1))
			require.Eventually(t, func() bool { return h.Releases() == tc.releases }, time.Minute, time.Millisecond)
		})
	}
}
