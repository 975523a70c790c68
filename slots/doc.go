// Package slots is the server's side of host-slot delivery (issue 14): a
// bounded ring of shared-memory slots into which flightd writes a step's
// Arrow IPC record batch, so that a trainer on the same host maps the
// bytes instead of receiving them through gRPC. Device slots (issue 15)
// are to reuse the same protocol with GPU memory.
//
// A Ring is one file in Options.Dir (default /dev/shm) named
// weft-ring-<random hex>, created with O_EXCL and mode 0600 (readable by
// the server's user only), its Slots*SlotBytes bytes allocated up front
// (fallocate: a full tmpfs is an error at NewRing, never a SIGBUS at a
// write) and mapped read-write by the server. Slot i is the bytes
// [i*SlotBytes, (i+1)*SlotBytes) of the file; SlotBytes is a multiple of
// SlotAlign (4 KiB) so every slot starts on a page boundary and no page
// holds bytes of two slots: a step's bytes never share a page with
// another step's. Close unmaps and unlinks the file
// (a client's existing mapping, read-only or copy-on-write, stays valid
// until it unmaps).
//
// The ring's promises:
//
//   - Acquire hands out a free slot, blocking (until ctx ends or the ring
//     closes) while all are held. A slot is never handed out again before
//     its release: its bytes are the holder's until then.
//   - Each hand-out of a slot has a new Generation (1, 2, …, per slot); a
//     release names (index, generation), so a release of an earlier use
//     (stale generation), of an unknown index, or of a slot that is not
//     held (a double release) is refused with an error and changes
//     nothing.
//   - ReleaseAll frees every held slot: what the server calls when the
//     client that held them disconnected or died.
//   - The ring's bytes are leased from Options.Budget (issue 8's
//     --memory-limit) at NewRing and returned at Close.
//
// The slot table behind these promises is internal/slottable, shared with
// gpu.DeviceRing (device slots), and the file is made by internal/shmfile,
// shared with gpu.ShmMemory.
//
// Ring is safe for concurrent use. A Slot's Bytes belong to whoever holds
// the slot; they must not be touched after the slot's release or the
// ring's Close (Close unmaps them): the caller stops its writers first.
//
// WriteRecordBatch writes one Arrow IPC encapsulated record-batch message
// (schema sent separately, as in a Flight stream) into a slot, its body
// 64-byte aligned, and returns where it lies in the slot; Slot.Descriptor
// turns that into the client.SlotDescriptor sent to the client, who reads
// it with pyarrow.ipc.read_record_batch on its mapping, copy-free.
// Encode encodes a batch once as that message: its sizes (Message.Bytes,
// the slot it needs; Message.HeaderRoom, an arena's header room) and its
// write (Message.WriteAt), for a producer that sizes its ring from the
// first step and then writes that step.
//
// An Arena instead lays a batch out in a slot as it is built: it is a
// memory.Allocator carving 64-byte aligned buffers from the slot after
// room for the header (a step's gather writes its columns there), and its
// WriteRecordBatch writes only the header in front of them, copying just
// the buffers that came from elsewhere.
//
// The wire protocol (DoExchange: descriptors down, releases up), served by
// package flight, is in docs/flight.md, "Host slots".
package slots
