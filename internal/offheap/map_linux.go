//go:build linux

package offheap

import (
	"os"

	"golang.org/x/sys/unix"
)

const supported = true

var pageSize = os.Getpagesize()

func roundPage(n int) int { return (n + pageSize - 1) / pageSize * pageSize }

// mapBytes maps n bytes (rounded up to pages) of zeroed memory.
func mapBytes(n int) ([]byte, error) {
	return unix.Mmap(-1, 0, roundPage(n), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
}

// remapBytes grows the mapping b (of n bytes) to hold size bytes, in
// place or moved by the kernel; on error b is unchanged.
func remapBytes(b []byte, n, size int) ([]byte, error) {
	return unix.Mremap(b[:n], roundPage(size), unix.MREMAP_MAYMOVE)
}

func unmapBytes(b []byte, n int) error { return unix.Munmap(b[:n]) }
