package slots

import (
	"context"
	"fmt"
	"math"
	"os"
	"sync"

	"github.com/weftdata/weft/client"
	"github.com/weftdata/weft/internal/membudget"
	"github.com/weftdata/weft/internal/shmfile"
	"github.com/weftdata/weft/internal/slottable"
)

// SlotAlign is the alignment of every slot's start in the ring's file:
// SlotBytes must be a multiple of it. It is a 4 KiB page, so every slot
// starts on a page boundary and is a whole number of pages: a step's
// message lies in its slot, so its bytes never share a page with another
// step's (a client that drops the pages it wrote in a step at the step's
// release drops nothing of a step it still holds). On a host whose pages
// are larger (arm64 kernels with 16 or 64 KiB pages) the caller rounds
// SlotBytes up to its page size to keep that promise (flight does).
const SlotAlign = 4096

// Options configure a Ring.
type Options struct {
	// Dir is where the ring's file is created; "" means /dev/shm.
	Dir string
	// Slots is the number of slots (how many steps a client may hold).
	Slots int
	// SlotBytes is the size of each slot, a multiple of SlotAlign (whole
	// 4 KiB pages).
	SlotBytes int64
	// Budget, if not nil, is leased Slots*SlotBytes bytes for the ring's
	// life.
	Budget *membudget.Budget
}

// DefaultDir is where rings live by default.
const DefaultDir = "/dev/shm"

// DefaultOptions returns 4 slots of 32 MiB in /dev/shm, without a budget.
func DefaultOptions() Options {
	return Options{Dir: DefaultDir, Slots: 4, SlotBytes: 32 << 20}
}

// Validate reports an unusable option.
func (o Options) Validate() error {
	switch {
	case o.Slots < 1:
		return fmt.Errorf("%w: Slots is %d; it must be 1 or more", ErrInvalidOptions, o.Slots)
	case o.SlotBytes < SlotAlign || o.SlotBytes%SlotAlign != 0:
		return fmt.Errorf("%w: SlotBytes is %d; it must be a positive multiple of %d", ErrInvalidOptions, o.SlotBytes, SlotAlign)
	case int64(o.Slots) > math.MaxInt/o.SlotBytes:
		return fmt.Errorf("%w: %d slots of %d bytes overflow", ErrInvalidOptions, o.Slots, o.SlotBytes)
	}
	return nil
}

// Ring is a bounded ring of host shared-memory slots backed by one file.
// See the package documentation for its promises; its slot table is
// internal/slottable's, the one gpu.DeviceRing uses too.
type Ring struct {
	opts  Options
	path  string
	file  *shmfile.File
	lease *membudget.Lease
	table *slottable.Table

	mu struct {
		sync.Mutex
		mem []byte // nil once closed
	}
}

// ringPrefix names ring files: ringPrefix + 16 hex digits.
const ringPrefix = "weft-ring-"

// Sweep removes from dir ("" for DefaultDir) the ring files of servers
// that died without removing them (their owner lock is gone; see
// internal/shmfile): a SIGKILLed or crashed flightd leaves its rings'
// memory on the tmpfs otherwise. Rings of live servers, whatever their
// PID namespace, are kept. It returns the files and bytes removed.
func Sweep(dir string) (files int, bytes int64, err error) {
	if dir == "" {
		dir = DefaultDir
	}
	return shmfile.Sweep(dir, ringPrefix)
}

// NewRing creates the ring's file, allocates and maps it, and leases its
// bytes from opts.Budget (waiting as membudget.Budget.Acquire does).
func NewRing(ctx context.Context, opts Options) (r *Ring, err error) {
	if opts.Dir == "" {
		opts.Dir = DefaultDir
	}
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if fi, err := os.Stat(opts.Dir); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("%w: %s is not a directory (stat: %v); use plain Flight delivery", ErrNoSharedMemory, opts.Dir, err)
	}
	size := opts.SlotBytes * int64(opts.Slots)
	lease, err := opts.Budget.Acquire(ctx, size, "a shared-memory slot ring")
	if err != nil {
		return nil, fmt.Errorf("slots: lease %d bytes: %w", size, err)
	}
	file, err := shmfile.Create(opts.Dir, ringPrefix, size)
	if err != nil {
		lease.Release()
		return nil, fmt.Errorf("slots: ring file: %w", err)
	}
	r = &Ring{opts: opts, path: file.Path, file: file, lease: lease, table: slottable.New("slots", 0, opts.Slots)}
	r.mu.mem = file.Mem
	return r, nil
}

// Path is the ring's file, as clients open it.
func (r *Ring) Path() string { return r.path }

// Slots is the number of slots.
func (r *Ring) Slots() int { return r.opts.Slots }

// SlotBytes is the size of each slot.
func (r *Ring) SlotBytes() int64 { return r.opts.SlotBytes }

// Slot is one hand-out of a slot: its index, its generation and its bytes,
// which belong to the holder until the slot's release.
type Slot struct {
	r     *Ring
	index int
	gen   uint64
	bytes []byte
}

// Index is the slot's index in the ring, 0 ≤ Index < Slots.
func (s *Slot) Index() int { return s.index }

// Generation is the hand-out's generation: 1 for a slot's first use,
// incremented at each reuse.
func (s *Slot) Generation() uint64 { return s.gen }

// Bytes is the slot's memory (SlotBytes long), shared with the ring's file.
// It must not be used after the slot's release or the ring's Close.
func (s *Slot) Bytes() []byte { return s.bytes }

// Offset is where the slot starts in the ring's file.
func (s *Slot) Offset() int64 { return int64(s.index) * s.r.opts.SlotBytes }

// Release releases this hand-out (Ring.Release with its index and
// generation).
func (s *Slot) Release() error { return s.r.Release(s.index, s.gen) }

// Descriptor is what the client is sent for a message at [offset,
// offset+length) of the slot (as WriteRecordBatch returns them); its
// Offset counts from the start of the ring's file.
func (s *Slot) Descriptor(offset, length int64) client.SlotDescriptor {
	return client.SlotDescriptor{
		Ring:       s.r.path,
		Slot:       s.index,
		Generation: s.gen,
		Offset:     s.Offset() + offset,
		Length:     length,
	}
}

// Acquire hands out a free slot, waiting while all are held. It fails with
// ctx's error when ctx ends first and with ErrClosed when the ring is (or
// gets) closed.
func (r *Ring) Acquire(ctx context.Context) (*Slot, error) {
	i, gen, err := r.table.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.mu.mem == nil {
		return nil, ErrClosed
	}
	off := int64(i) * r.opts.SlotBytes
	end := off + r.opts.SlotBytes
	return &Slot{r: r, index: i, gen: gen, bytes: r.mu.mem[off:end:end]}, nil
}

// Release frees the slot index held under generation gen, so that
// Acquire may hand it out again. It refuses (and changes nothing) an index
// outside the ring (ErrUnknownSlot), a generation other than the slot's
// current one (ErrStaleGeneration), a slot that is not held (ErrNotHeld)
// and a closed ring (ErrClosed).
func (r *Ring) Release(index int, gen uint64) error { return r.table.Release(index, gen) }

// ReleaseAll frees every held slot (the client that held them is gone) and
// returns how many it freed. Releases of those hand-outs are then refused.
func (r *Ring) ReleaseAll() int { return r.table.ReleaseAll() }

// Held is the number of slots held now.
func (r *Ring) Held() int { return r.table.Held() }

// Waiting is the number of Acquires blocked now, waiting for a release
// (for tests and metrics).
func (r *Ring) Waiting() int { return r.table.Waiting() }

// Close wakes waiting Acquires (ErrClosed), unmaps and unlinks the ring's
// file and returns its bytes to the budget. It is idempotent. Writers must
// have stopped using slot bytes before Close.
func (r *Ring) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.table.Close() {
		return nil
	}
	err := r.file.Remove()
	r.mu.mem = nil
	r.lease.Release()
	if err != nil {
		return fmt.Errorf("slots: close %s: %w", r.path, err)
	}
	return nil
}
