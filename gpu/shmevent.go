package gpu

import (
	"errors"
	"fmt"
	"os"
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
// opens it once (Memory.OpenEvent) and its decode stream waits on it
// (cuStreamWaitEvent) before it writes the slot again.
//
// The fake event is a file of ShmEventBytes bytes (in /dev/shm); its
// handle is the file's path. Its words, little-endian uint64 at 8-byte
// offsets (the Python loader's fake, python/weft/_device.py, and the fake
// driver, gpu/testdata/fakedriver, read and write the same words):
//
//	0  "WEFTEVT1"  magic
//	8  recorded    records so far (the client's cuEventRecord)
//	16 completed   records whose work has completed
//	24 waits       stream waits put on it (the fake driver's cuStreamWaitEvent)
//	32 blocked     writes that found it incomplete and waited (the fake driver)
//
// A record completes at once (the fake's work is done when it returns)
// unless it is held: the stand-in for a kernel still running on the
// client's stream. A fake stream wait takes the count recorded when it is
// put on the stream; the next work on that stream (a kernel, a copy, a
// synchronize) waits until that many records completed: the write the
// wait guards cannot happen before the event completes. (A wait that
// lasts past $MOCK_EVENT_WAIT_MS, 60000 by default, fails the work
// loudly.)
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

// NewShmEvent makes a fake event file in dir ("" for /dev/shm).
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

// openShmEvent maps a fake event by its handle (read-write: the fake
// driver counts its waits in it).
func openShmEvent(handle []byte) ([]byte, error) {
	f, err := os.OpenFile(string(handle), os.O_RDWR|unix.O_NOFOLLOW, 0)
	if err != nil {
		return nil, fmt.Errorf("%w: open fake event: %w", ErrBadEvent, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("gpu: fake event: %w", err)
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
