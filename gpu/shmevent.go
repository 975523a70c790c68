package gpu

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/weftdata/weft/internal/shmfile"
)

// The CPU fake of an interprocess CUDA event (cuEventCreate with
// CU_EVENT_INTERPROCESS, its cuIpcGetEventHandle), for the release
// direction of a device slot (docs/gpu.md, "Releases after the trainer's
// work"): the client records its event on the stream that read the slot
// and sends the event's handle with the slot's first release; flightd
// opens it once (Memory.OpenEvent) and its decode waits for it to
// complete (polling cuEventQuery on the host) before it writes the slot
// again.
//
// The fake event is a file of ShmEventBytes bytes (in /dev/shm); its
// handle is the file's path. Its words, little-endian uint64 at 8-byte
// offsets (the Python loader's fake, python/weft/_device.py, and the fake
// driver, gpu/testdata/fakedriver, read and write the same words):
//
//	0  "WEFTEVT1"  magic
//	8  recorded    records so far (the client's cuEventRecord)
//	16 completed   records whose work has completed
//	24 waits       queries of it (the fake driver's cuEventQuery; also its cuStreamWaitEvent)
//	32 blocked     queries that found it incomplete (a write waiting for it)
//
// A record completes at once (the fake's work is done when it returns)
// unless it is held: the stand-in for a kernel still running on the
// client's stream. The fake driver's cuEventQuery says complete once
// completed >= recorded (read at the query) and CUDA_ERROR_NOT_READY
// before: the decode, which polls it before its first write into the
// slot, cannot write before the event completes.
const (
	ShmEventBytes  = 64
	shmEventMagic  = "WEFTEVT1"
	shmEventPrefix = "weft-devent-"
)

// EventState is a fake event's words.
type EventState struct {
	Recorded, Completed, Waits, Blocked uint64
}

// ShmEvent is a client's fake interprocess event (the Go counterpart of
// the Python loader's), for tests: NewShmEvent makes one, Handle is what a
// release carries, Record records it.
type ShmEvent struct {
	file *shmfile.File
}

// NewShmEvent makes a fake event file in dir ("" for /dev/shm). flightd
// (ShmMemory.OpenEvent) opens only /dev/shm's: another dir is for tests
// of the refusal.
func NewShmEvent(dir string) (*ShmEvent, error) {
	if dir == "" {
		dir = "/dev/shm"
	}
	f, err := shmfile.Create(dir, shmEventPrefix, ShmEventBytes)
	if err != nil {
		return nil, fmt.Errorf("gpu: fake event: %w", err)
	}
	copy(f.Mem, shmEventMagic)
	return &ShmEvent{file: f}, nil
}

// Handle is the event's "IPC handle" (its file's path).
func (e *ShmEvent) Handle() []byte { return []byte(e.file.Path) }

// Record records the event (cuEventRecord); with hold, the record stays
// incomplete until Complete (a kernel still running). Record, Complete and
// State must not be called after Close.
func (e *ShmEvent) Record(hold bool) {
	n := word(e.file.Mem, 1).Add(1)
	if !hold {
		word(e.file.Mem, 2).Store(n)
	}
}

// Complete completes every record so far (the held kernels finish).
func (e *ShmEvent) Complete() { word(e.file.Mem, 2).Store(word(e.file.Mem, 1).Load()) }

// State reads the event's words.
func (e *ShmEvent) State() EventState { return eventState(e.file.Mem) }

// Close removes the event's file (an opener's mapping stays valid).
func (e *ShmEvent) Close() error { return e.file.Remove() }

// word is the event's i-th 8-byte word (the mapping is page-aligned).
func word(mem []byte, i int) *atomic.Uint64 {
	return (*atomic.Uint64)(unsafe.Pointer(&mem[8*i]))
}

func eventState(mem []byte) EventState {
	return EventState{Recorded: word(mem, 1).Load(), Completed: word(mem, 2).Load(), Waits: word(mem, 3).Load(), Blocked: word(mem, 4).Load()}
}

// shmEventDir is where flightd opens clients' fake events (the Python
// loader's and NewShmEvent("")'s directory).
const shmEventDir = "/dev/shm"

// openShmEvent maps a fake event by its handle (read-write: the fake
// driver counts its waits in it). The handle is a client's: only a
// regular file named /dev/shm/weft-devent-* is opened (checked with Lstat
// first, opened O_NOFOLLOW|O_NONBLOCK, and the opened file must be the
// one checked), never a link, a device, a FIFO or another path.
func openShmEvent(handle []byte) ([]byte, error) {
	path := string(handle)
	if filepath.Clean(path) != path || filepath.Dir(path) != shmEventDir || !strings.HasPrefix(filepath.Base(path), shmEventPrefix) {
		return nil, fmt.Errorf("%w: fake event %q is not a %s/%s* file", ErrBadEvent, path, shmEventDir, shmEventPrefix)
	}
	li, err := os.Lstat(path)
	if err != nil {
		return nil, fmt.Errorf("%w: fake event: %w", ErrBadEvent, err)
	}
	if !li.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: fake event %s is not a regular file (%s)", ErrBadEvent, path, li.Mode().Type())
	}
	f, err := os.OpenFile(path, os.O_RDWR|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("%w: open fake event: %w", ErrBadEvent, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("gpu: fake event: %w", err)
	}
	if !os.SameFile(li, fi) {
		return nil, fmt.Errorf("%w: fake event %s changed while it was opened", ErrBadEvent, path)
	}
	if fi.Size() != ShmEventBytes {
		return nil, fmt.Errorf("%w: fake event %s is %d bytes, not %d", ErrBadEvent, f.Name(), fi.Size(), ShmEventBytes)
	}
	mem, err := unix.Mmap(int(f.Fd()), 0, ShmEventBytes, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("gpu: map fake event %s: %w", f.Name(), err)
	}
	if string(mem[:8]) != shmEventMagic {
		return nil, errors.Join(fmt.Errorf("%w: %s is not a fake event", ErrBadEvent, f.Name()), unix.Munmap(mem))
	}
	return mem, nil
}
