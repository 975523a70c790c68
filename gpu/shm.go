package gpu

import (
	"fmt"
	"sync"
	"unsafe"

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
type ShmMemory struct {
	Dir string

	mu     sync.Mutex
	maps   map[uint64]shmRegion
	events map[uint64]int
	nextEv uint64
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
	return &ShmMemory{Dir: dir, maps: map[uint64]shmRegion{}, events: map[uint64]int{}}
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

// Free unmaps and removes the region's file.
func (m *ShmMemory) Free(r Region) error {
	m.mu.Lock()
	s, ok := m.maps[r.Ptr]
	delete(m.maps, r.Ptr)
	m.mu.Unlock()
	if !ok {
		return fmt.Errorf("%w: free of unknown region %#x", ErrInvalidSegment, r.Ptr)
	}
	return s.file.Remove()
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

// DeviceUUID names the fake.
func (m *ShmMemory) DeviceUUID() string { return "GPU-00000000-0000-0000-0000-00000000fake" }
