package shmfile

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// Create makes, allocates and maps a new file of size bytes (size ≥ 1) in
// dir, named prefix + 16 random hex digits. It leaves nothing behind when
// it fails.
func Create(dir, prefix string, size int64) (path string, mem []byte, err error) {
	if size < 1 {
		return "", nil, fmt.Errorf("shmfile: a file of %d bytes", size)
	}
	var suffix [8]byte
	if _, err := rand.Read(suffix[:]); err != nil {
		return "", nil, fmt.Errorf("shmfile: name: %w", err)
	}
	path = filepath.Join(dir, prefix+hex.EncodeToString(suffix[:]))
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", nil, fmt.Errorf("shmfile: create %s: %w", path, err)
	}
	defer func() {
		err = errors.Join(err, f.Close())
		if err != nil {
			if mem != nil {
				_ = unix.Munmap(mem)
				mem = nil
			}
			_ = os.Remove(path)
			path = ""
		}
	}()
	if err := f.Chmod(0o600); err != nil { // whatever the umask
		return path, nil, fmt.Errorf("shmfile: chmod %s: %w", path, err)
	}
	if err := unix.Fallocate(int(f.Fd()), 0, 0, size); err != nil {
		if !errors.Is(err, unix.EOPNOTSUPP) {
			return path, nil, fmt.Errorf("%w: allocate %d bytes in %s: %w", ErrNoSpace, size, path, err)
		}
		// A file system without fallocate: the pages come at first write.
		if err := f.Truncate(size); err != nil {
			return path, nil, fmt.Errorf("shmfile: truncate %s: %w", path, err)
		}
	}
	mem, err = unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return path, nil, fmt.Errorf("shmfile: map %s: %w", path, err)
	}
	return path, mem, nil
}

// Remove unmaps mem and unlinks path (a file already gone is no error).
func Remove(path string, mem []byte) error {
	var err error
	if mem != nil {
		err = unix.Munmap(mem)
	}
	if rerr := os.Remove(path); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
		err = errors.Join(err, rerr)
	}
	if err != nil {
		return fmt.Errorf("shmfile: remove %s: %w", path, err)
	}
	return nil
}
