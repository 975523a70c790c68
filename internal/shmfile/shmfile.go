package shmfile

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// File is a shared-memory file made by Create: its path, its mapping, and
// the open descriptor that holds its owner lock until Remove.
type File struct {
	Path string
	Mem  []byte
	f    *os.File
}

// nameLen is the random part of a name: 16 hex digits.
const nameLen = 16

// newInfix marks a file Create has not finished (renamed once allocated).
// Create locks it before it allocates, so Sweep takes one only when it is
// not empty and its lock can be taken: its creator died between the
// allocation and the rename. An empty one (a creator that died before it
// allocated, or one not yet holding its lock) is left: it holds no memory.
const newInfix = "new-"

// Create makes, allocates and maps a new file of size bytes (size ≥ 1) in
// dir, named prefix + 16 random hex digits, and holds a shared flock on it
// until Remove (or the process's end): the owner lock Sweep tests. The
// file is made under a temporary name and renamed once locked, so Sweep
// never sees an owned file unlocked. It leaves nothing behind when it
// fails.
func Create(dir, prefix string, size int64) (file *File, err error) {
	if size < 1 {
		return nil, fmt.Errorf("shmfile: a file of %d bytes", size)
	}
	var suffix [nameLen / 2]byte
	if _, err := rand.Read(suffix[:]); err != nil {
		return nil, fmt.Errorf("shmfile: name: %w", err)
	}
	name := hex.EncodeToString(suffix[:])
	tmp := filepath.Join(dir, prefix+newInfix+name)
	path := filepath.Join(dir, prefix+name)
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("shmfile: create %s: %w", tmp, err)
	}
	var mem []byte
	at := tmp
	defer func() {
		if err != nil {
			if mem != nil {
				_ = unix.Munmap(mem)
			}
			_ = os.Remove(at)
			_ = f.Close()
		}
	}()
	if err := f.Chmod(0o600); err != nil { // whatever the umask
		return nil, fmt.Errorf("shmfile: chmod %s: %w", tmp, err)
	}
	if err := LockShared(f); err != nil { // before the file holds any memory (newInfix)
		return nil, fmt.Errorf("shmfile: lock %s: %w", tmp, err)
	}
	if err := unix.Fallocate(int(f.Fd()), 0, 0, size); err != nil {
		if !errors.Is(err, unix.EOPNOTSUPP) {
			return nil, fmt.Errorf("%w: allocate %d bytes in %s: %w", ErrNoSpace, size, tmp, err)
		}
		// A file system without fallocate: the pages come at first write.
		if err := f.Truncate(size); err != nil {
			return nil, fmt.Errorf("shmfile: truncate %s: %w", tmp, err)
		}
	}
	mem, err = unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("shmfile: map %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return nil, fmt.Errorf("shmfile: rename %s: %w", tmp, err)
	}
	at = path
	return &File{Path: path, Mem: mem, f: f}, nil
}

// LockShared takes f's shared flock, waiting while a Sweep holds its
// exclusive one (a signal's interruption retried): the owner's lock, and
// a reader's that holds the file while it has it open (gpu.OpenShmHandle).
func LockShared(f *os.File) error {
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_SH)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

// Unshared says whether no other open file of the file holds a flock on
// it: the owner lock is made exclusive without waiting. A reader that
// holds a shared flock while it has the file open (the fake's importer of
// a device slot, gpu.OpenShmHandle and python/weft/_device.py: the CPU
// fake of an open CUDA IPC handle) makes it false. Either way the owner
// lock is shared again when it returns (Linux drops the shared lock before
// it tries the exclusive one: it is taken again, waiting, which a Sweep
// cannot make long, as it never waits for its own lock).
func (x *File) Unshared() (bool, error) {
	if x.f == nil {
		return false, fmt.Errorf("shmfile: %s is removed", x.Path)
	}
	err := unix.Flock(int(x.f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	if err != nil && !errors.Is(err, unix.EWOULDBLOCK) {
		return false, fmt.Errorf("shmfile: lock %s: %w", x.Path, err)
	}
	if serr := LockShared(x.f); serr != nil {
		return false, fmt.Errorf("shmfile: lock %s again: %w", x.Path, serr)
	}
	return err == nil, nil
}

// Remove unmaps and unlinks the file and drops its owner lock. A reader's
// own mapping stays valid until it unmaps.
func (x *File) Remove() error {
	var err error
	if x.Mem != nil {
		err = unix.Munmap(x.Mem)
		x.Mem = nil
	}
	if rerr := os.Remove(x.Path); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
		err = errors.Join(err, rerr)
	}
	if x.f != nil {
		err = errors.Join(err, x.f.Close())
		x.f = nil
	}
	if err != nil {
		return fmt.Errorf("shmfile: remove %s: %w", x.Path, err)
	}
	return nil
}

// Sweep removes the files of dir that Create made with prefix and whose
// owner is gone: a process that died (SIGKILL, a crash) before it could
// remove them, its memory left on the tmpfs; files Create had not
// finished too (see newInfix). A file is its owner's while
// the owner's shared flock holds; Sweep takes an exclusive one without
// waiting, and only a file it can lock is removed (a lock is released
// when its holder dies, whatever its PID namespace; readers that merely
// map a file hold none, and a reader that holds a shared flock, the fake's
// open IPC handle, keeps the file until it lets go). It returns the files
// and bytes removed.
func Sweep(dir, prefix string) (files int, bytes int64, err error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0, 0, fmt.Errorf("shmfile: sweep %s: %w", dir, err)
	}
	for _, e := range ents {
		name := e.Name()
		rest, ok := strings.CutPrefix(name, prefix)
		rest = strings.TrimPrefix(rest, newInfix)
		if !ok || len(rest) != nameLen || !e.Type().IsRegular() {
			continue // not ours
		}
		if _, err := hex.DecodeString(rest); err != nil {
			continue
		}
		n, removed, rerr := sweepOne(filepath.Join(dir, name), len(rest) != len(name)-len(prefix))
		if rerr != nil {
			err = errors.Join(err, rerr)
			continue
		}
		if removed {
			files++
			bytes += n
		}
	}
	return files, bytes, err
}

// sweepOne removes path if its owner is gone; an unfinished one (newInfix)
// only if it is not empty.
func sweepOne(path string, unfinished bool) (size int64, removed bool, err error) {
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NOFOLLOW, 0)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return 0, false, nil // its owner removed it meanwhile
		}
		return 0, false, fmt.Errorf("shmfile: sweep %s: %w", path, err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && unfinished && fi.Size() == 0 {
		return 0, false, nil // its creator may not hold its lock yet: never lock it
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		if errors.Is(err, unix.EWOULDBLOCK) {
			return 0, false, nil // owned
		}
		return 0, false, fmt.Errorf("shmfile: sweep %s: lock: %w", path, err)
	}
	fi, err := f.Stat()
	if err != nil {
		return 0, false, fmt.Errorf("shmfile: sweep %s: %w", path, err)
	}
	if unfinished && fi.Size() == 0 {
		return 0, false, nil
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return 0, false, fmt.Errorf("shmfile: sweep %s: %w", path, err)
	}
	return fi.Size(), true, nil
}
