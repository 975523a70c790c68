package tables

import (
	"context"
	"fmt"
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

// TestMeterRefusalThroughRecover: arrow-go recovers panics in some of the
// calls a read makes with the meter's allocator (array.Concatenate, which
// nextBatch and readColumn call on a column of several chunks) and
// returns them as errors. A refusal of the budget, or the read's context
// ending while the meter waits for it, must keep its kind there: it is
// not the file's damage (Corrupt).
func TestMeterRefusalThroughRecover(t *testing.T) {
	mem := memory.NewGoAllocator()
	chunk := func() arrow.Array {
		b := array.NewInt64Builder(mem)
		defer b.Release()
		b.AppendValues(make([]int64, 1<<10), nil)
		return b.NewArray()
	}
	a, b := chunk(), chunk()
	defer a.Release()
	defer b.Release()
	concat := func(m *readMeter) error {
		defer m.close()
		return guarded(nil, "k", func() error {
			out, err := array.Concatenate([]arrow.Array{a, b}, m.wrap(mem))
			if out != nil {
				out.Release()
			}
			return err
		})
	}
	t.Run("refused", func(t *testing.T) {
		budget, err := membudget.New(membudget.Options{Total: 1 << 10, MaxWait: time.Millisecond})
		require.NoError(t, err)
		err = concat(newReadMeter(context.Background(), budget, 0, "a test read"))
		require.ErrorIs(t, err, membudget.ErrExhausted)
		require.ErrorIs(t, err, errdefs.ErrResourceExhausted)
		require.NotErrorIs(t, err, errdefs.ErrCorrupt)
		require.Contains(t, err.Error(), "a test read")
	})
	t.Run("cancelled", func(t *testing.T) {
		budget, err := membudget.New(membudget.Options{Total: 1 << 20, MaxWait: time.Minute})
		require.NoError(t, err)
		held, err := budget.Acquire(context.Background(), 1<<20, "another read")
		require.NoError(t, err)
		defer held.Release()
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		err = concat(newReadMeter(ctx, budget, 0, "a test read"))
		require.ErrorIs(t, err, context.Canceled)
		require.NotErrorIs(t, err, errdefs.ErrCorrupt)
	})
}

// TestMeterLeaseAfterClose: an allocation that passed the meter's check
// of its end and then waited for the budget while the read ended (close,
// on another goroutine) kept the lease it got in a list nothing would
// return again: the budget lost those bytes for good.
func TestMeterLeaseAfterClose(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		take func(m *readMeter)
	}{
		{"charge", func(m *readMeter) { m.charge(8 << 20) }},
		{"reserve", func(m *readMeter) { require.NoError(t, m.reserve(8<<20)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			budget, err := membudget.New(membudget.Options{Total: 64 << 20, MaxWait: time.Minute})
			require.NoError(t, err)
			held, err := budget.Acquire(ctx, 64<<20, "another read")
			require.NoError(t, err)
			m := newReadMeter(ctx, budget, 0, "a test read")
			done := make(chan struct{})
			go func() {
				defer close(done)
				tc.take(m) // waits for the budget
			}()
			for budget.Stats().Waits == 0 {
				time.Sleep(time.Millisecond) // until it waits (no timing asserted)
			}
			m.close()
			held.Release()
			<-done
			require.Zero(t, budget.Stats().Used, "the lease taken after close is returned")
		})
	}
}

// BenchmarkMeteredAllocator: what the meter adds to an allocation and
// its free (a mutex, a map entry), alone and from the goroutines of
// several columns at once, against the allocator it wraps.
func BenchmarkMeteredAllocator(b *testing.B) {
	budget, err := membudget.New(membudget.Options{Total: 1 << 40, MaxWait: time.Minute})
	require.NoError(b, err)
	for _, size := range []int{512, 64 << 10} {
		for _, tc := range []struct {
			name string
			mem  func() (memory.Allocator, func())
		}{
			{"go", func() (memory.Allocator, func()) { return memory.NewGoAllocator(), func() {} }},
			{"metered", func() (memory.Allocator, func()) {
				m := newReadMeter(context.Background(), budget, readAllowance, "a benchmark")
				return m.wrap(memory.NewGoAllocator()), m.close
			}},
		} {
			b.Run(fmt.Sprintf("%s/%d", tc.name, size), func(b *testing.B) {
				mem, done := tc.mem()
				defer done()
				for b.Loop() {
					mem.Free(mem.Allocate(size))
				}
			})
			b.Run(fmt.Sprintf("%s/%d/parallel", tc.name, size), func(b *testing.B) {
				mem, done := tc.mem()
				defer done()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						mem.Free(mem.Allocate(size))
					}
				})
			})
		}
	}
}

// TestMeterIsNotQueuedBehindNewWork: a read that holds a lease and needs
// 4 MiB more, with 16 MiB free, waited behind a new stream that waited
// for 20 MiB (the budget was first come, first served), which waited for
// the read to end: both were refused after the budget's wait. The read
// grows past waiting new work now; the stream gets its bytes once the
// read ends.
func TestMeterIsNotQueuedBehindNewWork(t *testing.T) {
	ctx := context.Background()
	budget, err := membudget.New(membudget.Options{Total: 64 << 20, MaxWait: 5 * time.Second})
	require.NoError(t, err)
	stream, err := budget.Acquire(ctx, 40<<20, "a rank stream")
	require.NoError(t, err)
	defer stream.Release()
	m := newReadMeter(ctx, budget, 0, "a block read")
	m.charge(8 << 20) // 48 of 64 leased
	admitted := make(chan error, 1)
	go func() {
		l, err := budget.Acquire(ctx, 20<<20, "a new scan stream")
		l.Release()
		admitted <- err
	}()
	for budget.Stats().Waits == 0 {
		time.Sleep(time.Millisecond) // until the stream waits (no timing asserted)
	}
	var err2 error
	func() {
		defer parseGuard(nil, "k", &err2)
		m.charge(4 << 20) // 16 MiB are free
	}()
	require.NoError(t, err2, "the read's next 4 MiB")
	m.close()
	require.NoError(t, <-admitted, "the new stream, once the read ended")
	require.Equal(t, int64(40<<20), budget.Stats().Used)
}

// TestMeterTrim: a scan's meter kept every lease its row groups took
// until the end of the file; trim returns those its live bytes no longer
// need, last taken first, and keeps what reserve took.
func TestMeterTrim(t *testing.T) {
	ctx := context.Background()
	budget, err := membudget.New(membudget.Options{Total: 256 << 20, MaxWait: time.Millisecond})
	require.NoError(t, err)
	mem := memory.NewGoAllocator()
	m := newReadMeter(ctx, budget, 8<<20, "a test scan")
	defer m.close()
	a := m.wrap(mem)
	require.NoError(t, m.reserve(16<<20)) // 8 leased
	chunks := a.Allocate(64 << 20)        // a row group's chunks
	batch := a.Allocate(4 << 20)
	require.Equal(t, int64(60<<20), budget.Stats().Used, "8 reserved, 52 grown")
	a.Free(chunks) // the row group is done
	m.trim()
	require.Equal(t, int64(8<<20), budget.Stats().Used, "what reserve took stays")
	a.Free(batch)
	m.trim()
	require.Equal(t, int64(8<<20), budget.Stats().Used)
	m.close()
	require.Zero(t, budget.Stats().Used)
}
