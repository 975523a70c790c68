package gpu

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"sync"

	"github.com/weftdata/weft/internal/membudget"
	"github.com/weftdata/weft/internal/slottable"
	"github.com/weftdata/weft/video/pixnorm"
)

// Region is a run of device memory (or, in the CPU fake, of a mapping).
type Region struct {
	Ptr  uint64
	Size int64
}

// Memory is where a DeviceRing's slots live and how they are handed to
// another process: CUDA device memory exported with cuIpcGetMemHandle and
// interprocess events (Device.Memory), or ShmMemory, the CPU fake that CI
// tests the ring and the descriptors with.
type Memory interface {
	Alloc(n int64) (Region, error)
	Free(Region) error
	// ExportMem is the handle another process opens the region with
	// (cudaIpcMemHandle_t's 64 bytes; the fake: a file path).
	ExportMem(Region) ([]byte, error)
	// NewEvent makes an interprocess event and its exported handle.
	NewEvent() (event uint64, handle []byte, err error)
	// Record records the event after the work queued so far (the step's
	// decode and conversion): the client waits on it before reading.
	Record(event uint64) error
	DestroyEvent(event uint64) error
	// OpenEvent opens a client's interprocess event by its handle
	// (cuIpcOpenEventHandle; the fake: a ShmEvent's path): the event a
	// client records on its stream when it releases a slot, which the
	// decode waits on (DecodeOptions.Wait) before it writes the slot
	// again. CloseEvent lets it go (cuEventDestroy).
	OpenEvent(handle []byte) (event uint64, err error)
	CloseEvent(event uint64) error
	// DeviceUUID names the device ("GPU-…"), so a client opens the handle
	// on the same GPU.
	DeviceUUID() string
}

// RingOptions size a DeviceRing.
type RingOptions struct {
	Slots     int
	SlotBytes int64 // a multiple of 256 (CUDA allocation alignment is at least that)
	// FirstSlot is the index of the ring's first slot: 0, or, for a ring
	// that replaces another within one exchange, the old ring's
	// FirstSlot+Slots, so that an index never names two rings' memory
	// (a client keeps what it opened per index).
	FirstSlot int
	// Budget is --gpu-memory-limit, a membudget.Budget of its own (not
	// --memory-limit's); nil is unlimited. The ring's bytes are taken with
	// TryAcquire: a ring that does not fit now fails at once with
	// ErrOverLimit (the caller tries fewer slots); it never waits.
	Budget *membudget.Budget
	// Events is shared by the device rings whose events must not be
	// taken for one another: every ring of one device (Device.RingEvents:
	// all of flightd's exchanges, each with its first ring and each larger
	// one); nil: the ring's own. A release event is refused when it opens
	// as any event there (RingEvents).
	Events *RingEvents
}

// RingEvents is the one place that knows the events of the device rings
// that share it (every ring of one Device: Device.RingEvents): each ring's
// own events (its slots' ready events, whose handles go out in
// descriptors) and the release events opened for its slots
// (ReleaseAfter). A handle of one of these that a client sends as a
// slot's release event (its own exchange's, or another's: a descriptor's
// event, another client's release event) may open as that very event (the
// fake driver's cuIpcOpenEventHandle of this process's own event does;
// CUDA's is not specified): taken, flightd would wait on an event it does
// not own and destroy it twice. So a release event that opens as one of
// them is ErrBadEvent, whichever ring it belongs to. The set's lock is
// held across the driver call that makes, opens or destroys an event and
// the set's change with it, so that an event destroyed by one ring and
// its identifier reused by the driver for another ring's new event is
// never mistaken for the old one. The rings sharing a set use one Memory
// (events of two Memories are not told apart). The zero value is not
// usable: NewRingEvents.
type RingEvents struct {
	mu sync.Mutex
	m  map[uint64]struct{}
}

// NewRingEvents makes an empty set, for RingOptions.Events.
func NewRingEvents() *RingEvents { return &RingEvents{m: map[uint64]struct{}{}} }

// create makes one of a ring's own events (Memory.NewEvent) and adds it.
func (e *RingEvents) create(mem Memory) (uint64, []byte, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	ev, h, err := mem.NewEvent()
	if err != nil {
		return 0, nil, err
	}
	e.m[ev] = struct{}{} // a new event: not in the set (destroyed ones left it)
	return ev, h, nil
}

// open opens a client's release event (Memory.OpenEvent) and adds it. An
// event that opens as one in the set is not added, and not closed
// (closing it would destroy the other's event, which its ring destroys
// again): known is true.
func (e *RingEvents) open(mem Memory, handle []byte) (ev uint64, known bool, err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if ev, err = mem.OpenEvent(handle); err != nil {
		return 0, false, err
	}
	if _, ok := e.m[ev]; ok {
		return ev, true, nil
	}
	e.m[ev] = struct{}{}
	return ev, false, nil
}

// drop frees ev (free: Memory.DestroyEvent or CloseEvent) and removes it.
func (e *RingEvents) drop(ev uint64, free func(uint64) error) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.m, ev)
	return free(ev)
}

// Validate reports unusable options.
func (o RingOptions) Validate() error {
	switch {
	case o.Slots < 1:
		return fmt.Errorf("%w: Slots is %d; it must be 1 or more", ErrInvalidOptions, o.Slots)
	case o.SlotBytes < 256 || o.SlotBytes%256 != 0:
		return fmt.Errorf("%w: SlotBytes is %d; it must be a positive multiple of 256", ErrInvalidOptions, o.SlotBytes)
	case o.FirstSlot < 0:
		return fmt.Errorf("%w: FirstSlot is %d; it must be 0 or more", ErrInvalidOptions, o.FirstSlot)
	case int64(o.Slots) > math.MaxInt64/o.SlotBytes:
		return fmt.Errorf("%w: %d slots of %d bytes overflow", ErrInvalidOptions, o.Slots, o.SlotBytes)
	}
	return nil
}

// DeviceRing is a bounded ring of device buffers for one client (one
// exchange): each slot one allocation, exported once, with its own
// interprocess event. Its slot table is the host ring's (package slots;
// both are internal/slottable), so are its promises: a slot is not handed
// out again before its release; every hand-out has a new generation; a
// release of an unknown slot, an earlier generation or a slot not held is
// refused and changes nothing; ReleaseAll frees every held slot (the client
// died or left). The ring's bytes count against RingOptions.Budget from
// NewDeviceRing to Close.
type DeviceRing struct {
	mem   Memory
	opts  RingOptions
	table *slottable.Table
	lease *membudget.Lease
	known *RingEvents // opts.Events, or the ring's own set

	// Per slot (by index - FirstSlot); set by NewDeviceRing, freed by Close.
	regions  []Region
	events   []uint64
	evHandle [][]byte

	mu struct {
		sync.Mutex
		exported []bool // the slot's handle went out in a descriptor
		closed   bool
		// after[i] is the client's release event of slot i, opened at
		// the slot's first release that carried one (0: none), and
		// afterHandle[i] its handle.
		after       []uint64
		afterHandle [][]byte
	}
}

// NewDeviceRing allocates the ring's slots in mem.
func NewDeviceRing(mem Memory, opts RingOptions) (r *DeviceRing, err error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	total := opts.SlotBytes * int64(opts.Slots)
	lease, ok := opts.Budget.TryAcquire(total)
	if !ok {
		st := opts.Budget.Stats()
		return nil, fmt.Errorf("%w: %d slots of %d bytes asked, %d of %d bytes in use", ErrOverLimit, opts.Slots, opts.SlotBytes, st.Used, st.Total)
	}
	r = &DeviceRing{mem: mem, opts: opts, lease: lease, known: opts.Events}
	if r.known == nil {
		r.known = NewRingEvents()
	}
	defer func() {
		if err != nil {
			_ = r.freeAll()
			lease.Release()
		}
	}()
	for range opts.Slots {
		reg, err := mem.Alloc(opts.SlotBytes)
		if err != nil {
			return nil, err
		}
		r.regions = append(r.regions, reg)
		ev, h, err := r.known.create(mem)
		if err != nil {
			return nil, err
		}
		r.events = append(r.events, ev)
		r.evHandle = append(r.evHandle, h)
	}
	r.table = slottable.New("gpu: device ring", opts.FirstSlot, opts.Slots)
	r.mu.exported = make([]bool, opts.Slots)
	r.mu.after = make([]uint64, opts.Slots)
	r.mu.afterHandle = make([][]byte, opts.Slots)
	return r, nil
}

func (r *DeviceRing) freeAll() error {
	var err error
	for k, ev := range r.mu.after {
		if ev != 0 {
			err = errors.Join(err, r.known.drop(ev, r.mem.CloseEvent))
			r.mu.after[k] = 0
		}
	}
	for _, reg := range r.regions {
		err = errors.Join(err, r.mem.Free(reg))
	}
	for _, ev := range r.events {
		err = errors.Join(err, r.known.drop(ev, r.mem.DestroyEvent))
	}
	r.regions, r.events = nil, nil
	return err
}

// Slots is the ring's slot count; SlotBytes each slot's size; FirstSlot
// the index of its first slot (its slots are FirstSlot, …,
// FirstSlot+Slots-1).
func (r *DeviceRing) Slots() int       { return r.opts.Slots }
func (r *DeviceRing) SlotBytes() int64 { return r.opts.SlotBytes }
func (r *DeviceRing) FirstSlot() int   { return r.opts.FirstSlot }

// Contains says whether index names one of the ring's slots.
func (r *DeviceRing) Contains(index int) bool { return r.table.Contains(index) }

// SlotUse is one hand-out of a slot.
type SlotUse struct {
	Index      int
	Generation uint64
	Region     Region
	// Wait is the client's release event of the slot (ReleaseAfter; 0:
	// none): the work that writes the slot must wait for it first
	// (DecodeOptions.Wait: polled with cuEventQuery before the first
	// write), as the client's kernels queued on the slot's previous use
	// may still run.
	Wait uint64
}

// Acquire hands out a free slot, waiting while all are held. It fails with
// ctx's cause when ctx ends first and with ErrRingClosed when the ring is
// (or gets) closed.
func (r *DeviceRing) Acquire(ctx context.Context) (SlotUse, error) {
	i, gen, err := r.table.Acquire(ctx)
	if err != nil {
		return SlotUse{}, err
	}
	k := i - r.opts.FirstSlot
	r.mu.Lock()
	wait := r.mu.after[k]
	r.mu.Unlock()
	return SlotUse{Index: i, Generation: gen, Region: r.regions[k], Wait: wait}, nil
}

// Release frees slot i's use gen (the slot table's refusals: ErrRingClosed,
// ErrUnknownSlot, ErrStaleGeneration, ErrNotHeld).
func (r *DeviceRing) Release(i int, gen uint64) error { return r.table.Release(i, gen) }

// ReleaseAfter is Release for a client that orders its release after its
// own work on the slot (docs/gpu.md, "Releases after the trainer's
// work"): at each release it records an interprocess event of its own on
// the stream that read the slot, and the slot's first such release
// carries the event's handle (event; nil on later releases, and from a
// client without events). The ring opens that handle once
// (Memory.OpenEvent) and from then on hands the event out with every use
// of the slot (SlotUse.Wait), for the decode to wait on before it writes.
// A slot's event cannot change: another handle is ErrBadEvent, as is one
// that does not open; the release is then refused and the slot stays held.
// The slot table's refusals are Release's, checked first.
func (r *DeviceRing) ReleaseAfter(i int, gen uint64, event []byte) error {
	if event != nil {
		if err := r.table.Check(i, gen); err != nil {
			return err
		}
		if err := r.setAfter(i-r.opts.FirstSlot, event); err != nil {
			return err
		}
	}
	return r.table.Release(i, gen)
}

// setAfter opens slot k's release event, once.
func (r *DeviceRing) setAfter(k int, event []byte) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.mu.closed:
		return fmt.Errorf("gpu: device ring: %w", ErrRingClosed)
	case r.mu.after[k] != 0 && !bytes.Equal(r.mu.afterHandle[k], event):
		return fmt.Errorf("%w: slot %d's release event was given before, and this is another", ErrBadEvent, k+r.opts.FirstSlot)
	case r.mu.after[k] != 0:
		return nil
	}
	// A handle of one of the rings' own events (a descriptor's Event sent
	// back: of this ring, an earlier one of the exchange, another
	// exchange's) or of another slot's release event (of any of them) may
	// open as that very event (the fake driver's does; CUDA's of this
	// process's own is not specified): refused, and not closed, as closing
	// it would destroy the other's event, which its ring's Close destroys
	// again.
	ev, known, err := r.known.open(r.mem, event)
	if err != nil {
		return fmt.Errorf("slot %d's release event: %w", k+r.opts.FirstSlot, err)
	}
	if known {
		return fmt.Errorf("%w: slot %d's release event is one of the device rings' own events or another slot's release event", ErrBadEvent, k+r.opts.FirstSlot)
	}
	r.mu.after[k], r.mu.afterHandle[k] = ev, bytes.Clone(event)
	return nil
}

// ReleaseAll frees every held slot (the client is gone); it returns how many.
func (r *DeviceRing) ReleaseAll() int { return r.table.ReleaseAll() }

// Held is how many slots are handed out now.
func (r *DeviceRing) Held() int { return r.table.Held() }

// DeviceSlot is a step's descriptor on the exchange (delivery "cuda-ipc"):
// the tensor [B/W, T, H, W, 3] of DType ("uint8", or a normalised window's
// "float32", "float16" or "bfloat16") at Offset bytes into slot
// Slot's buffer, valid from when Event completes until the client
// releases {"slot","generation"}. IPCHandle (base64 of the 64-byte
// cudaIpcMemHandle_t) comes with the first use of a slot in an exchange
// only: the client opens it once and keeps the mapping. Event is the
// base64 cudaIpcEventHandle_t of the slot's interprocess event, recorded
// after the step's conversion: wait on it (cudaStreamWaitEvent on the
// current stream) before reading. Strides are in bytes. Device is the
// GPU's UUID: a client on another GPU (or host) cannot open the handle.
type DeviceSlot struct {
	// Column is the step's video window column the tensor is (set by the
	// server, which publishes one descriptor per column of a step).
	Column     string  `json:"column,omitempty"`
	Slot       int     `json:"slot"`
	Generation uint64  `json:"generation"`
	IPCHandle  string  `json:"ipc_handle,omitempty"`
	Event      string  `json:"event"`
	Offset     int64   `json:"offset"`
	Shape      []int   `json:"shape"`
	DType      string  `json:"dtype"`
	Strides    []int64 `json:"strides"`
	Device     string  `json:"device"`
}

// Publish records the slot's event after the step's work and returns its
// descriptor for a tensor of dtype and shape at offset (row-major strides,
// in bytes).
func (r *DeviceRing) Publish(u SlotUse, offset int64, shape []int, dtype pixnorm.DType) (DeviceSlot, error) {
	es := int64(dtype.Size())
	if es == 0 {
		return DeviceSlot{}, fmt.Errorf("%w: a tensor of dtype %q", ErrInvalidSegment, dtype)
	}
	n := es
	for _, s := range shape {
		n *= int64(s)
	}
	if offset < 0 || offset+n > r.opts.SlotBytes {
		return DeviceSlot{}, fmt.Errorf("%w: a %v %s tensor at offset %d does not fit a %d-byte slot", ErrInvalidSegment, shape, dtype, offset, r.opts.SlotBytes)
	}
	strides := make([]int64, len(shape))
	st := es
	for i := len(shape) - 1; i >= 0; i-- {
		strides[i] = st
		st *= int64(shape[i])
	}
	if err := r.table.Check(u.Index, u.Generation); err != nil {
		return DeviceSlot{}, err
	}
	i := u.Index - r.opts.FirstSlot
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.mu.closed {
		return DeviceSlot{}, fmt.Errorf("gpu: device ring: %w", ErrRingClosed)
	}
	if err := r.mem.Record(r.events[i]); err != nil {
		return DeviceSlot{}, err
	}
	d := DeviceSlot{Slot: u.Index, Generation: u.Generation, Event: base64.StdEncoding.EncodeToString(r.evHandle[i]),
		Offset: offset, Shape: append([]int(nil), shape...), DType: string(dtype), Strides: strides, Device: r.mem.DeviceUUID()}
	if !r.mu.exported[i] {
		h, err := r.mem.ExportMem(r.regions[i])
		if err != nil {
			return DeviceSlot{}, err
		}
		d.IPCHandle = base64.StdEncoding.EncodeToString(h)
		r.mu.exported[i] = true
	}
	return d, nil
}

// Close frees the slots and returns the bytes to the budget. It is
// idempotent. Call it only once the client can no longer use the slots:
// it released them and closed their IPC handles, or its process is gone
// (the exchange ended). On CUDA, freeing memory that another process
// still has open (cuIpcOpenMemHandle) is undefined behaviour
// (docs/gpu.md, "The end of an exchange"); on the CPU fake it is
// ErrStillOpen, and every region is freed all the same.
func (r *DeviceRing) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.table.Close() {
		return nil
	}
	r.mu.closed = true
	err := r.freeAll()
	r.lease.Release()
	if err != nil {
		return fmt.Errorf("gpu: device ring: %w", err)
	}
	return nil
}
