package tables

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/weftdata/weft/errdefs"
	"github.com/weftdata/weft/internal/membudget"
)

// TestReadMeter: a meter lets a read hold its allowance unleased, leases
// the rest as live bytes grow (frees make room again), refuses what the
// budget cannot give with a panic parseGuard turns into the budget's
// error, stops counting what it hands off, and returns every lease when
// the read ends.
func TestReadMeter(t *testing.T) {
	ctx := context.Background()
	budget, err := membudget.New(membudget.Options{Total: 64 << 20, MaxWait: time.Millisecond})
	require.NoError(t, err)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)

	m := newReadMeter(ctx, budget, 8<<20, "a test read")
	a := m.wrap(mem)
	small := a.Allocate(6 << 20)
	require.Zero(t, budget.Stats().Used, "within the allowance")
	big := a.Allocate(10 << 20)
	require.Equal(t, int64(8<<20), budget.Stats().Used, "the 8 MiB past the allowance")
	a.Free(small)
	again := a.Allocate(6 << 20)
	require.Equal(t, int64(8<<20), budget.Stats().Used, "room freed is reused")
	big = a.Reallocate(12<<20, big)
	require.Equal(t, int64(12<<20), budget.Stats().Used, "a leaseStep more")

	var refused error
	func() {
		defer parseGuard(nil, "k", &refused)
		a.Allocate(100 << 20)
	}()
	require.ErrorIs(t, refused, membudget.ErrExhausted)
	require.ErrorIs(t, refused, errdefs.ErrResourceExhausted)
	require.Contains(t, refused.Error(), "a test read")

	// What a scan hands off leaves the meter.
	bld := array.NewInt64Builder(a)
	bld.AppendValues(make([]int64, 1<<20), nil)
	col := bld.NewArray()
	bld.Release()
	rec := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64}}, nil), []arrow.Array{col}, 1<<20)
	col.Release()
	m.mu.Lock()
	before := m.mu.used
	m.mu.Unlock()
	m.handOff(rec)
	m.mu.Lock()
	require.LessOrEqual(t, m.mu.used, before-8<<20)
	m.mu.Unlock()

	m.close()
	require.Zero(t, budget.Stats().Used, "leases returned")
	rec.Release() // frees after the read pass through
	a.Free(big)
	a.Free(again)
	a.Free(a.Allocate(1 << 30)) // no budget once closed

	// The fixed widths of rows, saturated.
	require.Equal(t, int64(math.MaxInt64), decodedBytes(arrow.NewSchema([]arrow.Field{{Name: "e", Type: arrow.FixedSizeListOf(1<<30, arrow.PrimitiveTypes.Float64)}}, nil), 1<<40))
	require.InDelta(t, 8.125+4.125+0.25, rowBytes(arrow.NewSchema([]arrow.Field{
		{Name: "a", Type: arrow.PrimitiveTypes.Int64}, {Name: "b", Type: arrow.BinaryTypes.String}, {Name: "c", Type: arrow.FixedWidthTypes.Boolean},
	}, nil)), 1e-9)
}
