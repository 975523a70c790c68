package slots

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/weftdata/weft/client"
	"github.com/weftdata/weft/internal/membudget"
)

// SlotAlign is the alignment of every slot's start in the ring's file:
// SlotBytes must be a multiple of it.
const SlotAlign = 64

// Options configure a Ring.
type Options struct {
	// Dir is where the ring's file is created; "" means /dev/shm.
	Dir string
	// Slots is the number of slots (how many steps a client may hold).
	Slots int
	// SlotBytes is the size of each slot, a multiple of SlotAlign.
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
// See the package documentation for its promises.
type Ring struct {
	opts  Options
	path  string
	mem   []byte
	lease *membudget.Lease

	free    chan int      // indices of free slots; capacity Slots
	waiters atomic.Int32  // Acquires blocked on free (for tests)
	done    chan struct{} // closed by Close

	mu struct {
		sync.Mutex
		gen    []uint64 // current generation per slot (0: never handed out)
		held   []bool
		closed bool
	}
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
	defer func() {
		if err != nil {
			lease.Release()
		}
	}()
	var suffix [8]byte
	if _, err := rand.Read(suffix[:]); err != nil {
		return nil, fmt.Errorf("slots: ring name: %w", err)
	}
	path := filepath.Join(opts.Dir, "weft-ring-"+hex.EncodeToString(suffix[:]))
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("slots: create %s: %w", path, err)
	}
	defer func() {
		err = errors.Join(err, f.Close())
		if err != nil {
			_ = os.Remove(path)
		}
	}()
	if err := f.Chmod(0o600); err != nil { // whatever the umask
		return nil, fmt.Errorf("slots: chmod %s: %w", path, err)
	}
	if err := unix.Fallocate(int(f.Fd()), 0, 0, size); err != nil {
		if !errors.Is(err, unix.EOPNOTSUPP) {
			return nil, fmt.Errorf("%w: allocate %d bytes in %s: %w", ErrNoSpace, size, path, err)
		}
		// A file system without fallocate: the pages come at first write.
		if err := f.Truncate(size); err != nil {
			return nil, fmt.Errorf("slots: truncate %s: %w", path, err)
		}
	}
	mem, err := unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("slots: map %s: %w", path, err)
	}
	r = &Ring{
		opts:  opts,
		path:  path,
		mem:   mem,
		lease: lease,
		free:  make(chan int, opts.Slots),
		done:  make(chan struct{}),
	}
	r.mu.gen = make([]uint64, opts.Slots)
	r.mu.held = make([]bool, opts.Slots)
	for i := range opts.Slots {
		r.free <- i
	}
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
	select {
	case <-r.done:
		return nil, ErrClosed
	default:
	}
	var i int
	select {
	case i = <-r.free:
	default:
		r.waiters.Add(1)
		select {
		case <-ctx.Done():
			r.waiters.Add(-1)
			return nil, ctx.Err()
		case <-r.done:
			r.waiters.Add(-1)
			return nil, ErrClosed
		case i = <-r.free:
			r.waiters.Add(-1)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.mu.closed {
		return nil, ErrClosed
	}
	r.mu.gen[i]++
	r.mu.held[i] = true
	off := int64(i) * r.opts.SlotBytes
	end := off + r.opts.SlotBytes
	return &Slot{r: r, index: i, gen: r.mu.gen[i], bytes: r.mem[off:end:end]}, nil
}

// Release frees the slot index held under generation gen, so that
// Acquire may hand it out again. It refuses (and changes nothing) an index
// outside the ring (ErrUnknownSlot), a generation other than the slot's
// current one (ErrStaleGeneration), a slot that is not held (ErrNotHeld)
// and a closed ring (ErrClosed).
func (r *Ring) Release(index int, gen uint64) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.mu.closed:
		return ErrClosed
	case index < 0 || index >= r.opts.Slots:
		return fmt.Errorf("%w: %d; the ring has slots 0 to %d", ErrUnknownSlot, index, r.opts.Slots-1)
	case gen != r.mu.gen[index]:
		return fmt.Errorf("%w: slot %d is at generation %d, not %d", ErrStaleGeneration, index, r.mu.gen[index], gen)
	case !r.mu.held[index]:
		return fmt.Errorf("%w: slot %d generation %d was released already", ErrNotHeld, index, gen)
	}
	r.releaseLocked(index)
	return nil
}

// ReleaseAll frees every held slot (the client that held them is gone) and
// returns how many it freed. Releases of those hand-outs are then refused.
func (r *Ring) ReleaseAll() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.mu.closed {
		return 0
	}
	n := 0
	for i, held := range r.mu.held {
		if held {
			r.releaseLocked(i)
			n++
		}
	}
	return n
}

func (r *Ring) releaseLocked(i int) {
	r.mu.held[i] = false
	r.free <- i // never blocks: at most Slots indices are ever free
}

// Held is the number of slots held now.
func (r *Ring) Held() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, h := range r.mu.held {
		if h {
			n++
		}
	}
	return n
}

// Waiting is the number of Acquires blocked now, waiting for a release
// (for tests and metrics).
func (r *Ring) Waiting() int { return int(r.waiters.Load()) }

// Close wakes waiting Acquires (ErrClosed), unmaps and unlinks the ring's
// file and returns its bytes to the budget. It is idempotent. Writers must
// have stopped using slot bytes before Close.
func (r *Ring) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.mu.closed {
		return nil
	}
	r.mu.closed = true
	close(r.done)
	err := unix.Munmap(r.mem)
	r.mem = nil
	if rerr := os.Remove(r.path); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
		err = errors.Join(err, rerr)
	}
	r.lease.Release()
	if err != nil {
		return fmt.Errorf("slots: close %s: %w", r.path, err)
	}
	return nil
}
