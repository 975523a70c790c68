package tables

import (
	"context"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/weftdata/weft/internal/membudget"
)

// Reads of data files are bounded by the memory budget (Options.Budget)
// before they allocate. A file's footer and its manifest say how many rows
// a block holds, and a page's header how large the page is, but a row
// group of constant values compresses to almost nothing, so no byte count
// of the file bounds them: a hand-made manifest and footer can claim 2^40
// rows, and one page 256 MiB (arrow-go's cap) for every column read in
// parallel. Every allocation of one read (a block, or a scan of one file)
// therefore goes through a readMeter: it lets the read hold unleased
// bytes (what the read's callers count: a block's or batch's worth, and
// its page buffers), leases more from the budget as the read's live bytes
// grow past that, and refuses, with the budget's ErrExhausted (kind
// ResourceExhausted), the allocation the budget cannot give; so a read
// never allocates first and fails after. Before it opens the file, a
// read reserves the bytes its rows need at their fixed widths (rowBytes),
// so a claim of 2^40 rows is refused at once, with its numbers.
//
// The refusal of an allocation made inside the Parquet reader is a panic
// (an allocator cannot return an error), recovered by the read's
// parseGuard and returned as the budget's error (exhaustedPanic).
//
// Without a budget, reads are not bounded (a nil *membudget.Budget is
// unlimited).

// readAllowance is what one read may hold unleased beyond the rows it
// reserves: the Parquet page buffers of a few columns (the store writes
// pages of about 1 MiB) and the block of up to DefaultLayout's MaxBytes
// that rank streams already lease (flight's streamCost).
const readAllowance = 16 << 20

// leaseStep is the least a meter leases at a time.
const leaseStep = 4 << 20

// readMeter counts the live bytes of one read's allocations (those made
// through its allocators and not freed yet) against an allowance and what
// it has leased from the budget. Safe for concurrent use (a read's
// columns are decoded on several goroutines).
type readMeter struct {
	ctx    context.Context
	budget *membudget.Budget
	what   string // what the read is, for the budget's error
	closed atomic.Bool
	mu     struct {
		sync.Mutex
		live   map[unsafe.Pointer]int64 // allocations not freed, by address
		used   int64
		limit  int64 // allowance plus leased bytes
		floor  int64 // the allowance and what reserve leased: trim keeps it
		leases []*membudget.Lease
	}
}

// exhaustedPanic is what a meter's allocator panics with when the budget
// refuses the bytes: parseGuard returns its error. It is an error itself
// that wraps the budget's (or the context's): arrow-go recovers the
// panics of some calls given the allocator (array.Concatenate) and
// returns an error value it panics with wrapped (%w), so the refusal
// keeps its kind there and is not taken for the file's damage.
type exhaustedPanic struct{ err error }

func (p *exhaustedPanic) Error() string { return p.err.Error() }
func (p *exhaustedPanic) Unwrap() error { return p.err }

func newReadMeter(ctx context.Context, budget *membudget.Budget, allowance int64, what string) *readMeter {
	m := &readMeter{ctx: ctx, budget: budget, what: what}
	m.mu.live = make(map[unsafe.Pointer]int64)
	m.mu.limit, m.mu.floor = allowance, allowance
	return m
}

// reserve makes sure the read may hold n bytes, leasing what the
// allowance lacks; it fails with the budget's error (kind
// ResourceExhausted) when the budget cannot give them.
func (m *readMeter) reserve(n int64) error {
	m.mu.Lock()
	short := n - m.mu.limit
	m.mu.Unlock()
	if short <= 0 || m.budget == nil {
		return nil
	}
	l, err := m.budget.Acquire(m.ctx, short, m.what)
	if err != nil {
		return err
	}
	if m.keep(l) {
		m.mu.Lock()
		m.mu.floor = max(m.mu.floor, m.mu.limit)
		m.mu.Unlock()
	}
	return nil
}

// trim returns the leases the read's live bytes no longer need, last
// taken first, keeping what reserve leased: a scan calls it after each
// row group, whose column chunks it has freed, so that a scan of a long
// file holds no more than its largest row group needs while the next one
// is fetched.
func (m *readMeter) trim() {
	m.mu.Lock()
	var back []*membudget.Lease
	for k := len(m.mu.leases) - 1; k >= 0; k-- {
		l := m.mu.leases[k]
		if m.mu.limit-l.Bytes() < max(m.mu.used, m.mu.floor) {
			break
		}
		m.mu.limit -= l.Bytes()
		m.mu.leases = m.mu.leases[:k]
		back = append(back, l)
	}
	m.mu.Unlock()
	for _, l := range back {
		l.Release()
	}
}

// keep adds lease l to the read's and reports true, or returns it at
// once and reports false when the read has ended meanwhile (an
// allocation that began before close, on another goroutine, waited for
// it): close returned the leases it had, and nothing else would.
func (m *readMeter) keep(l *membudget.Lease) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed.Load() {
		l.Release()
		return false
	}
	m.mu.leases = append(m.mu.leases, l)
	m.mu.limit += l.Bytes()
	return true
}

// charge counts n more live bytes, leasing what the limit lacks; it
// panics with an exhaustedPanic when the budget refuses.
func (m *readMeter) charge(n int64) {
	for {
		m.mu.Lock()
		if m.budget == nil || m.mu.used+n <= m.mu.limit {
			m.mu.used += n
			m.mu.Unlock()
			return
		}
		short := m.mu.used + n - m.mu.limit
		m.mu.Unlock()
		// Lease outside the lock: the budget may wait for other
		// holders, and this read's other goroutines may free meanwhile.
		// A running read grows (membudget's Grow): it is not queued
		// behind new work waiting for bytes, which waits for it.
		l, ok := m.budget.TryGrow(max(short, leaseStep))
		if !ok {
			var err error
			if l, err = m.budget.Grow(m.ctx, short, m.what); err != nil {
				panic(&exhaustedPanic{err: err})
			}
		}
		if !m.keep(l) {
			return // the read ended: allocations pass through
		}
	}
}

// track records live allocation b of n bytes (charged already).
func (m *readMeter) track(b []byte, n int64) {
	if n == 0 || cap(b) == 0 {
		m.uncharge(n)
		return
	}
	m.mu.Lock()
	if m.mu.live != nil { // not closed
		m.mu.live[unsafe.Pointer(unsafe.SliceData(b))] = n
	}
	m.mu.Unlock()
}

func (m *readMeter) uncharge(n int64) {
	m.mu.Lock()
	m.mu.used -= n
	m.mu.Unlock()
}

// forget stops counting allocation b (freed, or handed to the caller) and
// returns its size (0: not one of the meter's).
func (m *readMeter) forget(b []byte) int64 {
	if cap(b) == 0 || m.closed.Load() {
		return 0
	}
	p := unsafe.Pointer(unsafe.SliceData(b))
	m.mu.Lock()
	defer m.mu.Unlock()
	n, ok := m.mu.live[p]
	if ok {
		delete(m.mu.live, p)
		m.mu.used -= n
	}
	return n
}

// handOff stops counting the buffers of rec's columns: a scan yields it
// to a consumer, whose stream leases its batches.
func (m *readMeter) handOff(rec arrow.RecordBatch) {
	var walk func(d arrow.ArrayData)
	walk = func(d arrow.ArrayData) {
		for _, b := range d.Buffers() {
			if b != nil {
				m.forget(b.Buf())
			}
		}
		for _, c := range d.Children() {
			walk(c)
		}
		if d.DataType().ID() == arrow.DICTIONARY {
			walk(d.Dictionary())
		}
	}
	for _, c := range rec.Columns() {
		walk(c.Data())
	}
}

// close ends the read: its leases go back to the budget (what it returns
// is the caller's to count: a cache leases its blocks), and its
// allocators pass straight through from now on.
func (m *readMeter) close() {
	m.mu.Lock()
	if m.closed.Swap(true) {
		m.mu.Unlock()
		return
	}
	leases := m.mu.leases
	m.mu.leases, m.mu.live = nil, nil
	m.mu.Unlock()
	for _, l := range leases {
		l.Release()
	}
}

// wrap returns base as an allocator whose allocations the meter counts
// while the read runs.
func (m *readMeter) wrap(base memory.Allocator) memory.Allocator {
	return &meteredAllocator{m: m, base: base}
}

type meteredAllocator struct {
	m    *readMeter
	base memory.Allocator
}

func (a *meteredAllocator) Allocate(size int) []byte {
	if a.m.closed.Load() || size <= 0 {
		return a.base.Allocate(size)
	}
	a.m.charge(int64(size))
	b := a.base.Allocate(size)
	a.m.track(b, int64(size))
	return b
}

func (a *meteredAllocator) Reallocate(size int, b []byte) []byte {
	if a.m.closed.Load() {
		return a.base.Reallocate(size, b)
	}
	a.m.forget(b) // uncounted: charged again at its new size
	a.m.charge(int64(size))
	nb := a.base.Reallocate(size, b)
	a.m.track(nb, int64(size))
	return nb
}

func (a *meteredAllocator) Free(b []byte) {
	a.m.forget(b)
	a.base.Free(b)
}

// rowBytes is the least a row of schema's columns takes decoded: the
// fixed widths of its values, offsets and validity bits (binary values
// and list elements count nothing: their sizes are in the pages).
func rowBytes(schema *arrow.Schema) float64 {
	var n float64
	for _, f := range schema.Fields() {
		n += typeBytes(f.Type)
	}
	return n
}

func typeBytes(dt arrow.DataType) float64 {
	const validity = 1.0 / 8
	switch t := dt.(type) {
	case *arrow.BooleanType:
		return 2 * validity
	case *arrow.DictionaryType:
		return typeBytes(t.IndexType)
	case *arrow.FixedSizeListType:
		return validity + float64(t.Len())*typeBytes(t.Elem())
	case *arrow.StructType:
		n := validity
		for _, f := range t.Fields() {
			n += typeBytes(f.Type)
		}
		return n
	case arrow.OffsetsDataType:
		return validity + float64(t.OffsetTypeTraits().BytesRequired(1))
	case arrow.FixedWidthDataType:
		return validity + float64(t.BitWidth())/8
	}
	return validity
}

// decodedBytes is the least rows rows of schema take decoded, in bytes,
// saturated at MaxInt64 (a damaged manifest may claim any row count).
func decodedBytes(schema *arrow.Schema, rows int64) int64 {
	n := rowBytes(schema) * float64(rows)
	if n >= math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(n)
}

// blockWhat names a block read for the budget's error.
func blockWhat(key string, b Block, schema *arrow.Schema) string {
	return fmt.Sprintf("reading %d rows of %d columns (at least %d bytes decoded) of row group %d of data file %s", b.Rows, schema.NumFields(), decodedBytes(schema, b.Rows), b.RowGroup, key)
}
