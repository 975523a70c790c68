package gpu

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/weftdata/weft/internal/shmfile"
)

// ShmMemory is the CPU fake of device memory for DeviceRing: each region is
// a file in Dir (default /dev/shm), mapped; its "IPC handle" is the file's
// path, which another process maps to read the slot, as a CUDA client
// opens a cudaIpcMemHandle_t. Events are counters (the fake's writes are
// done when Publish runs). It lets CI test the ring and the descriptor
// protocol end to end without a GPU. Its files are named dslotPrefix + 16
// hex digits and held by their creator's owner lock (internal/shmfile);
// those of a process that died before it freed them (a killed test or
// server) are removed by Sweep.
//
// It also checks the order CUDA needs at the end of an exchange: an
// importer holds a shared flock on the slot's file while its handle is
// open (OpenShmHandle; the Python loader's fake mapping), and Free of a
// region whose file another process still holds so fails with
// ErrStillOpen (after freeing it all the same) and counts it in
// StillOpen: on CUDA that free would be undefined behaviour.
type ShmMemory struct {
	Dir string

	mu        sync.Mutex
	maps      map[uint64]shmRegion
	events    map[uint64]int
	nextEv    uint64
	opened    map[uint64][]byte // OpenEvent's mappings of clients' fake events, by address
	stillOpen int
}

// dslotPrefix starts the name of each ShmMemory file.
const dslotPrefix = "weft-dslot-"

type shmRegion struct {
	file *shmfile.File
	mem  []byte
}

// NewShmMemory makes the fake in dir ("" for /dev/shm).
func NewShmMemory(dir string) *ShmMemory {
	if dir == "" {
		dir = "/dev/shm"
	}
	return &ShmMemory{Dir: dir, maps: map[uint64]shmRegion{}, events: map[uint64]int{}, opened: map[uint64][]byte{}}
}

// Alloc creates and maps a file of n bytes (internal/shmfile, as the host
// ring's file is made).
func (m *ShmMemory) Alloc(n int64) (Region, error) {
	file, err := shmfile.Create(m.Dir, dslotPrefix, n)
	if err != nil {
		return Region{}, fmt.Errorf("gpu: fake device memory: %w", err)
	}
	p := uint64(uintptr(unsafe.Pointer(&file.Mem[0])))
	m.mu.Lock()
	m.maps[p] = shmRegion{file: file, mem: file.Mem}
	m.mu.Unlock()
	return Region{Ptr: p, Size: n}, nil
}

// Sweep removes the ShmMemory files in Dir whose owner is gone (a process
// that died without freeing its regions: SIGKILL, a crash, a test
// binary's timeout), as slots.Sweep does for host rings; files of any
// live process, this one's included, stay. It returns the files and bytes
// removed. Call it once when the fake is made (flightd's
// --gpu-fake-memory does).
func (m *ShmMemory) Sweep() (files int, bytes int64, err error) {
	return shmfile.Sweep(m.Dir, dslotPrefix)
}

// Bytes is the region's memory (the fake's "device" side, for writing).
func (m *ShmMemory) Bytes(r Region) []byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.maps[r.Ptr].mem
}

// Free unmaps and removes the region's file. When an importer still
// holds the file (its handle open: see ShmMemory), the file is removed
// all the same and Free returns ErrStillOpen.
func (m *ShmMemory) Free(r Region) error {
	m.mu.Lock()
	s, ok := m.maps[r.Ptr]
	delete(m.maps, r.Ptr)
	m.mu.Unlock()
	if !ok {
		return fmt.Errorf("%w: free of unknown region %#x", ErrInvalidSegment, r.Ptr)
	}
	var err error
	unshared, lerr := s.file.Unshared()
	switch {
	case lerr != nil:
		err = lerr
	case !unshared:
		m.mu.Lock()
		m.stillOpen++
		m.mu.Unlock()
		err = fmt.Errorf("%w: %s", ErrStillOpen, s.file.Path)
	}
	return errors.Join(err, s.file.Remove())
}

// StillOpen counts the frees that found the region's handle still open in
// another process (ErrStillOpen).
func (m *ShmMemory) StillOpen() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.stillOpen
}

// ShmHandle is an importer's open handle of a ShmMemory region (the fake
// of cuIpcOpenMemHandle): the slot's file mapped read-only, and a shared
// flock on it until Close (the fake of cuIpcCloseMemHandle), which the
// owner's Free checks.
type ShmHandle struct {
	Mem []byte
	f   *os.File
}

// OpenShmHandle opens a region by its handle (ExportMem's file path).
func OpenShmHandle(handle []byte) (h *ShmHandle, err error) {
	f, err := os.OpenFile(string(handle), os.O_RDONLY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return nil, fmt.Errorf("gpu: open fake device memory: %w", err)
	}
	defer func() {
		if err != nil {
			_ = f.Close()
		}
	}()
	if err = shmfile.LockShared(f); err != nil {
		return nil, fmt.Errorf("gpu: lock fake device memory %s: %w", f.Name(), err)
	}
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("gpu: fake device memory: %w", err)
	}
	if fi.Size() < 1 {
		return nil, fmt.Errorf("%w: fake device memory %s is empty", ErrInvalidSegment, f.Name())
	}
	mem, err := unix.Mmap(int(f.Fd()), 0, int(fi.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("gpu: map fake device memory %s: %w", f.Name(), err)
	}
	return &ShmHandle{Mem: mem, f: f}, nil
}

// Close unmaps the region and lets go of the file. It is idempotent.
func (h *ShmHandle) Close() error {
	var err error
	if h.Mem != nil {
		err = unix.Munmap(h.Mem)
		h.Mem = nil
	}
	if h.f != nil {
		err = errors.Join(err, h.f.Close())
		h.f = nil
	}
	return err
}

// ExportMem is the region's file path.
func (m *ShmMemory) ExportMem(r Region) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.maps[r.Ptr]
	if !ok {
		return nil, fmt.Errorf("%w: export of unknown region %#x", ErrInvalidSegment, r.Ptr)
	}
	return []byte(s.file.Path), nil
}

// NewEvent is a counter named by its number.
func (m *ShmMemory) NewEvent() (uint64, []byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.nextEv++
	m.events[m.nextEv] = 0
	return m.nextEv, []byte(fmt.Sprintf("fake-event-%d", m.nextEv)), nil
}

// Record counts.
func (m *ShmMemory) Record(ev uint64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.events[ev]; !ok {
		return fmt.Errorf("%w: unknown event %d", ErrInvalidSegment, ev)
	}
	m.events[ev]++
	return nil
}

// DestroyEvent forgets the event.
func (m *ShmMemory) DestroyEvent(ev uint64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.events, ev)
	return nil
}

// OpenEvent maps a client's fake event (ShmEvent; its handle is the
// file's path, a regular file named /dev/shm/weft-devent-*) and returns
// the mapping's address: the fake driver's cuEventQuery reads the event's
// words there.
func (m *ShmMemory) OpenEvent(handle []byte) (uint64, error) {
	mem, err := openShmEvent(handle)
	if err != nil {
		return 0, err
	}
	p := uint64(uintptr(unsafe.Pointer(&mem[0])))
	m.mu.Lock()
	m.opened[p] = mem
	m.mu.Unlock()
	return p, nil
}

// CloseEvent unmaps an event OpenEvent mapped.
func (m *ShmMemory) CloseEvent(ev uint64) error {
	m.mu.Lock()
	mem, ok := m.opened[ev]
	delete(m.opened, ev)
	m.mu.Unlock()
	if !ok {
		return fmt.Errorf("%w: close of unknown event %#x", ErrBadEvent, ev)
	}
	return unix.Munmap(mem)
}

// EventState reads an opened client event's words (tests).
func (m *ShmMemory) EventState(ev uint64) (EventState, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	mem, ok := m.opened[ev]
	if !ok {
		return EventState{}, false
	}
	return eventState(mem), true
}

// DeviceUUID names the fake.
func (m *ShmMemory) DeviceUUID() string { return "GPU-00000000-0000-0000-0000-00000000fake" }
