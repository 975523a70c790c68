package gpu

import (
	"context"
	"encoding/base64"
	"fmt"
	"sync"
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
	// DeviceUUID names the device ("GPU-…"), so a client opens the handle
	// on the same GPU.
	DeviceUUID() string
}

// Budget is --gpu-memory-limit: device memory the server's rings may hold
// together. Safe for concurrent use; a nil *Budget is unlimited.
type Budget struct {
	mu          sync.Mutex
	limit, used int64
}

// NewBudget limits rings to limit bytes in all (0: unlimited).
func NewBudget(limit int64) *Budget { return &Budget{limit: limit} }

func (b *Budget) take(n int64) error {
	if b == nil {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.limit > 0 && b.used+n > b.limit {
		return fmt.Errorf("%w: %d bytes asked, %d of %d in use", ErrOverLimit, n, b.used, b.limit)
	}
	b.used += n
	return nil
}

func (b *Budget) give(n int64) {
	if b == nil {
		return
	}
	b.mu.Lock()
	b.used -= n
	b.mu.Unlock()
}

// Used is the bytes rings hold now.
func (b *Budget) Used() int64 {
	if b == nil {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// RingOptions size a DeviceRing.
type RingOptions struct {
	Slots     int
	SlotBytes int64 // a multiple of 256 (CUDA allocation alignment is at least that)
	Budget    *Budget
}

// Validate reports unusable options.
func (o RingOptions) Validate() error {
	switch {
	case o.Slots < 1:
		return fmt.Errorf("%w: Slots is %d; it must be 1 or more", ErrInvalidOptions, o.Slots)
	case o.SlotBytes < 256 || o.SlotBytes%256 != 0:
		return fmt.Errorf("%w: SlotBytes is %d; it must be a positive multiple of 256", ErrInvalidOptions, o.SlotBytes)
	}
	return nil
}

// DeviceRing is a bounded ring of device buffers for one client (one
// exchange): each slot one allocation, exported once, with its own
// interprocess event. The promises are the host ring's (package slots):
// a slot is not handed out again before its release; every hand-out has a
// new generation; a release of an unknown slot, an earlier generation or a
// slot not held is refused and changes nothing; ReleaseAll frees every
// held slot (the client died or left); the ring's bytes count against the
// Budget from NewDeviceRing to Close.
type DeviceRing struct {
	mem  Memory
	opts RingOptions
	free chan int
	done chan struct{}

	mu       sync.Mutex
	regions  []Region
	events   []uint64
	evHandle [][]byte
	gen      []uint64
	held     []bool
	exported []bool // the slot's handle went out in a descriptor
	closed   bool
}

// NewDeviceRing allocates the ring's slots in mem.
func NewDeviceRing(mem Memory, opts RingOptions) (r *DeviceRing, err error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	total := opts.SlotBytes * int64(opts.Slots)
	if err := opts.Budget.take(total); err != nil {
		return nil, err
	}
	r = &DeviceRing{mem: mem, opts: opts, free: make(chan int, opts.Slots), done: make(chan struct{}),
		gen: make([]uint64, opts.Slots), held: make([]bool, opts.Slots), exported: make([]bool, opts.Slots)}
	defer func() {
		if err != nil {
			r.freeAll()
			opts.Budget.give(total)
		}
	}()
	for i := 0; i < opts.Slots; i++ {
		reg, err := mem.Alloc(opts.SlotBytes)
		if err != nil {
			return nil, err
		}
		r.regions = append(r.regions, reg)
		ev, h, err := mem.NewEvent()
		if err != nil {
			return nil, err
		}
		r.events = append(r.events, ev)
		r.evHandle = append(r.evHandle, h)
		r.free <- i
	}
	return r, nil
}

func (r *DeviceRing) freeAll() {
	for _, reg := range r.regions {
		_ = r.mem.Free(reg)
	}
	for _, ev := range r.events {
		_ = r.mem.DestroyEvent(ev)
	}
	r.regions, r.events = nil, nil
}

// Slots is the ring's slot count; SlotBytes each slot's size.
func (r *DeviceRing) Slots() int       { return r.opts.Slots }
func (r *DeviceRing) SlotBytes() int64 { return r.opts.SlotBytes }

// SlotUse is one hand-out of a slot.
type SlotUse struct {
	Index      int
	Generation uint64
	Region     Region
}

// Acquire hands out a free slot, waiting while all are held.
func (r *DeviceRing) Acquire(ctx context.Context) (SlotUse, error) {
	select {
	case <-ctx.Done():
		return SlotUse{}, context.Cause(ctx)
	case <-r.done:
		return SlotUse{}, ErrRingClosed
	case i := <-r.free:
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.closed {
			return SlotUse{}, ErrRingClosed
		}
		r.gen[i]++
		r.held[i] = true
		return SlotUse{Index: i, Generation: r.gen[i], Region: r.regions[i]}, nil
	}
}

// Release frees slot i's use gen.
func (r *DeviceRing) Release(i int, gen uint64) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.closed:
		return ErrRingClosed
	case i < 0 || i >= len(r.gen):
		return fmt.Errorf("%w: slot %d of %d", ErrUnknownSlot, i, len(r.gen))
	case gen != r.gen[i]:
		return fmt.Errorf("%w: slot %d is at generation %d, the release names %d", ErrStaleGeneration, i, r.gen[i], gen)
	case !r.held[i]:
		return fmt.Errorf("%w: slot %d generation %d was released already", ErrNotHeld, i, gen)
	}
	r.held[i] = false
	r.free <- i
	return nil
}

// ReleaseAll frees every held slot (the client is gone); it returns how many.
func (r *DeviceRing) ReleaseAll() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for i, h := range r.held {
		if h && !r.closed {
			r.held[i] = false
			r.free <- i
			n++
		}
	}
	return n
}

// Held is how many slots are handed out now.
func (r *DeviceRing) Held() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, h := range r.held {
		if h {
			n++
		}
	}
	return n
}

// DeviceSlot is a step's descriptor on the exchange (delivery "cuda-ipc"):
// the tensor [B/W, T, H, W, 3] (dtype "uint8") at Offset bytes into slot
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
// descriptor for a uint8 tensor of shape at offset (row-major strides).
func (r *DeviceRing) Publish(u SlotUse, offset int64, shape []int) (DeviceSlot, error) {
	n := int64(1)
	for _, s := range shape {
		n *= int64(s)
	}
	if offset < 0 || offset+n > r.opts.SlotBytes {
		return DeviceSlot{}, fmt.Errorf("%w: a %v uint8 tensor at offset %d does not fit a %d-byte slot", ErrInvalidSegment, shape, offset, r.opts.SlotBytes)
	}
	strides := make([]int64, len(shape))
	st := int64(1)
	for i := len(shape) - 1; i >= 0; i-- {
		strides[i] = st
		st *= int64(shape[i])
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return DeviceSlot{}, ErrRingClosed
	}
	if !r.held[u.Index] || r.gen[u.Index] != u.Generation {
		return DeviceSlot{}, fmt.Errorf("%w: slot %d generation %d", ErrNotHeld, u.Index, u.Generation)
	}
	if err := r.mem.Record(r.events[u.Index]); err != nil {
		return DeviceSlot{}, err
	}
	d := DeviceSlot{Slot: u.Index, Generation: u.Generation, Event: base64.StdEncoding.EncodeToString(r.evHandle[u.Index]),
		Offset: offset, Shape: append([]int(nil), shape...), DType: "uint8", Strides: strides, Device: r.mem.DeviceUUID()}
	if !r.exported[u.Index] {
		h, err := r.mem.ExportMem(r.regions[u.Index])
		if err != nil {
			return DeviceSlot{}, err
		}
		d.IPCHandle = base64.StdEncoding.EncodeToString(h)
		r.exported[u.Index] = true
	}
	return d, nil
}

// Close frees the slots (a client's open handles stay valid on CUDA until
// it closes them) and returns the bytes to the budget.
func (r *DeviceRing) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	close(r.done)
	r.freeAll()
	r.mu.Unlock()
	r.opts.Budget.give(r.opts.SlotBytes * int64(r.opts.Slots))
	return nil
}
