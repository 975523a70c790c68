// Package offheap is a memory.Allocator for large buffers that live for
// a moment and are freed explicitly: a put's decoded message bodies and
// the Parquet writer's buffered row group. Buffers of at least Min bytes
// are mapped from the operating system outside the Go heap (Linux:
// anonymous mmap), grown in place or moved by the kernel without a copy
// (mremap), and unmapped the moment they are freed: their memory goes
// back to the system at once, instead of becoming garbage that only the
// collector reclaims (late, when the machine is loaded). Smaller buffers
// come from the base allocator.
//
// The price: a buffer used after Free faults (the process crashes) rather
// than reading stale bytes; only code that releases its Arrow objects
// exactly (every Retain matched, no slice kept past Release) may use it.
// Buffers are zeroed, as memory.GoAllocator's are. On other systems every
// buffer comes from the base allocator.
package offheap
