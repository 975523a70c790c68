// Package shmfile makes the shared-memory files that slot rings live in:
// slots.Ring's ring file (issue 14) and each slot of gpu.ShmMemory, the
// CPU fake of device memory (issue 15).
//
// Create makes a new file named prefix + 16 random hex digits in a
// directory (normally /dev/shm) with O_EXCL and mode 0600 whatever the
// umask (only the server's user may open it), allocates its bytes up front
// (fallocate: a full tmpfs is an error at Create, never a SIGBUS at a
// write; a file system without fallocate gets a truncate) and maps it
// read-write, shared. Remove unmaps and unlinks it; a reader's own mapping
// stays valid until it unmaps.
package shmfile
