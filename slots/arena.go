package slots

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"
	"sync"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/weftdata/weft/errdefs"
)

// Arena lays out one record-batch message in a slot with the batch's
// buffers already in place: it is a memory.Allocator whose buffers are
// carved from the slot, 64-byte aligned, after room kept at the slot's
// start for the message header. A producer builds the batch with it (the
// step's gather writes each column once, into the slot), and
// WriteRecordBatch then writes only the header in front of the body,
// pointing the message's buffers where they already lie; buffers that
// came from elsewhere (a column built with another allocator, an
// allocation the slot had no room for: those come from the base
// allocator) are copied after them.
//
// The arena holds its slot: its holder releases the slot (Slot().Release)
// once the message is described to the client or sent otherwise. Memory
// the arena handed out is freed by the batch's release as usual; freeing
// slot memory does nothing, so a batch may outlive the slot's release as
// long as nobody reads it. An Arena is safe for concurrent use.
type Arena struct {
	slot *Slot
	base memory.Allocator
	body int64 // where the message body starts in the slot (64-aligned)

	mu struct {
		sync.Mutex
		next int64 // the first free byte in the slot
	}
}

// HeaderRoom is the room an Arena keeps for the header of a message of a
// batch like rec (its schema, with rows): the header's length (prefix and
// flatbuffer metadata, which depend only on the schema when the batch has
// rows and a body) plus a margin, rounded up to the body alignment. It
// encodes rec; a caller that also needs MessageBytes, or writes rec,
// encodes it once with Encode (Message.HeaderRoom).
func HeaderRoom(rec arrow.RecordBatch) (int64, error) {
	m, err := Encode(rec)
	if err != nil {
		return 0, err
	}
	defer m.Release()
	return m.HeaderRoom(), nil
}

// NewArena makes the arena of slot, keeping headerRoom bytes (rounded up
// to 64) at its start for the message header; base allocates what the
// slot has no room for (nil: memory.DefaultAllocator).
func NewArena(slot *Slot, headerRoom int64, base memory.Allocator) (*Arena, error) {
	room := roundUp(max(headerRoom, 16), bodyAlign)
	if headerRoom < 0 || room > int64(len(slot.Bytes())) {
		return nil, fmt.Errorf("slots: an arena with %d bytes of header room in a %d-byte slot: %w", headerRoom, len(slot.Bytes()), errdefs.ErrInvalidArgument)
	}
	if base == nil {
		base = memory.DefaultAllocator
	}
	a := &Arena{slot: slot, base: base, body: room}
	a.mu.next = room
	return a, nil
}

// Slot is the arena's slot.
func (a *Arena) Slot() *Slot { return a.slot }

// Used is how many bytes of the slot the arena has handed out or kept for
// the header.
func (a *Arena) Used() int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.mu.next
}

func roundUp(n, to int64) int64 { return (n + to - 1) / to * to }

// Allocate hands out size bytes of the slot, 64-byte aligned, or of the
// base allocator when the slot has no room left. The slot's bytes are not
// zeroed (they hold what an earlier step left): the caller writes every
// byte it reads.
func (a *Arena) Allocate(size int) []byte {
	buf := a.slot.Bytes()
	a.mu.Lock()
	at := roundUp(a.mu.next, bodyAlign)
	if size < 0 || at+int64(size) > int64(len(buf)) {
		a.mu.Unlock()
		return a.base.Allocate(size)
	}
	a.mu.next = at + int64(size)
	a.mu.Unlock()
	return buf[at : at+int64(size) : at+int64(size)]
}

// Reallocate grows or shrinks b: in place when it is the slot's last
// allocation and there is room, else by a new allocation and a copy.
func (a *Arena) Reallocate(size int, b []byte) []byte {
	if size <= cap(b) {
		return b[:size]
	}
	if at, ok := a.offsetOf(b); ok {
		buf := a.slot.Bytes()
		a.mu.Lock()
		if at+int64(cap(b)) == a.mu.next && at+int64(size) <= int64(len(buf)) {
			a.mu.next = at + int64(size)
			a.mu.Unlock()
			return buf[at : at+int64(size) : at+int64(size)]
		}
		a.mu.Unlock()
	}
	nb := a.Allocate(size)
	copy(nb, b)
	a.Free(b)
	return nb
}

// Free returns b to the base allocator if it came from there; slot memory
// is reclaimed with the slot.
func (a *Arena) Free(b []byte) {
	if cap(b) == 0 {
		return
	}
	if _, ok := a.offsetOf(b); ok {
		return
	}
	a.base.Free(b)
}

// offsetOf is where b starts in the slot, if it lies in it.
func (a *Arena) offsetOf(b []byte) (int64, bool) {
	return within(a.slot.Bytes(), b)
}

// within is where b starts in buf, if b's bytes lie in buf (a b of length
// 0 lies in buf when it starts there).
func within(buf, b []byte) (int64, bool) {
	if cap(b) == 0 || len(buf) == 0 {
		return 0, false
	}
	lo := uintptr(unsafe.Pointer(unsafe.SliceData(buf)))
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	if p < lo || p >= lo+uintptr(len(buf)) || uint64(p-lo)+uint64(len(b)) > uint64(len(buf)) {
		return 0, false
	}
	return int64(p - lo), true
}

// WriteRecordBatch writes rec as one Arrow IPC record-batch message in the
// arena's slot, as WriteRecordBatch does, without copying the buffers the
// arena handed out: the body starts where the arena's room ends and the
// metadata places each buffer where it lies; other buffers are copied
// after the arena's. It returns where the message lies in the slot and
// how many body bytes it copied. A message whose header does not fit the
// room, or whose copied buffers do not fit the slot, fails with
// ErrTooLarge: then nothing the client reads was written, and rec is
// intact (send it otherwise, then release the slot).
func (a *Arena) WriteRecordBatch(rec arrow.RecordBatch) (offset, length, copied int64, err error) {
	p, err := ipc.GetRecordBatchPayload(rec)
	if err != nil {
		return 0, 0, 0, fmt.Errorf("slots: encode record batch: %w", err)
	}
	defer p.Release()
	meta := p.Meta()
	defer meta.Release()
	header, _ := messageHeader(0, meta.Len())
	if header > a.body {
		return 0, 0, 0, fmt.Errorf("%w: the message header is %d bytes, the arena kept %d", ErrTooLarge, header, a.body)
	}
	bufs, err := bodyBuffers(meta.Bytes())
	if err != nil {
		return 0, 0, 0, err
	}
	// The body's non-empty buffers, in order, as the payload writes them.
	var c bodyCollector
	c.want = bufs
	if err := p.SerializeBody(&c); err != nil {
		return 0, 0, 0, err
	}
	for c.next < len(bufs) && bufs[c.next].length == 0 {
		c.next++
	}
	if c.next != len(bufs) || c.pad != 0 {
		return 0, 0, 0, fmt.Errorf("slots: the payload's body has %d of %d buffers", c.next, len(bufs))
	}

	slot := a.slot.Bytes()
	body := slot[a.body:]
	end := roundUp(a.Used(), bodyAlign) - a.body // copies go after every handed-out byte
	var bodyLen int64
	offsets := make([]int64, len(bufs))
	for i, b := range bufs {
		if b.length == 0 {
			continue
		}
		src := c.data[i]
		if at, ok := within(body[:end], src); ok && at%8 == 0 {
			offsets[i] = at
		} else {
			if end+b.length > int64(len(body)) {
				return 0, 0, 0, fmt.Errorf("%w: the message's body needs %d more bytes than the slot's %d (%d rows)", ErrTooLarge, end+b.length-int64(len(body)), len(slot), rec.NumRows())
			}
			offsets[i] = end
			copied += int64(copy(body[end:end+b.length], src))
			end = roundUp(end+b.length, bodyAlign)
		}
		bodyLen = max(bodyLen, roundUp(offsets[i]+b.length, 8))
	}
	zeroPadding(body, bufs, offsets)

	offset = a.body - header
	h := slot[offset:a.body]
	binary.LittleEndian.PutUint32(h, 0xFFFFFFFF)
	binary.LittleEndian.PutUint32(h[4:], uint32(header-8))
	m := h[8 : 8+meta.Len()]
	copy(m, meta.Bytes())
	clear(h[8+meta.Len():])
	if err := patchBody(m, offsets, bodyLen); err != nil {
		return 0, 0, 0, err
	}
	return offset, header + bodyLen, copied, nil
}

// zeroPadding zeroes the padding after each buffer up to the next 8 bytes
// (the reader may look at whole words; the plain stream's are zero), but
// never a byte some buffer's data covers: buffers used in place may share
// memory (a column over the start of another's values), and the padding of
// one can be the other's data.
func zeroPadding(body []byte, bufs []bodyBuffer, offsets []int64) {
	type span struct{ lo, hi int64 }
	var data []span
	for i, b := range bufs {
		if b.length > 0 {
			data = append(data, span{offsets[i], offsets[i] + b.length})
		}
	}
	slices.SortFunc(data, func(a, b span) int { return cmp.Compare(a.lo, b.lo) })
	maxHi := make([]int64, len(data)) // maxHi[k]: the furthest end of data[:k+1]
	for k, d := range data {
		maxHi[k] = d.hi
		if k > 0 {
			maxHi[k] = max(maxHi[k], maxHi[k-1])
		}
	}
	for i, b := range bufs {
		lo := offsets[i] + b.length
		hi := roundUp(lo, 8)
		if b.length == 0 || lo == hi {
			continue
		}
		// data starting before hi: does any of them reach past lo?
		k, _ := slices.BinarySearchFunc(data, hi, func(d span, t int64) int { return cmp.Compare(d.lo, t) })
		if k > 0 && maxHi[k-1] > lo {
			continue // some buffer's bytes are there: leave them
		}
		clear(body[lo:hi])
	}
}

// bodyBuffer is one buffer entry of a record batch's metadata.
type bodyBuffer struct{ offset, length int64 }

// Flatbuffer vtable slots of Arrow's Message and RecordBatch tables
// (format/Message.fbs).
const (
	fbMessageHeaderType = 6
	fbMessageHeader     = 8
	fbMessageBodyLength = 10
	fbRecordBatchBufs   = 8
	fbHeaderRecordBatch = 3 // MessageHeader.RecordBatch
	fbBufferSize        = 16
)

// recordBatchTable is the RecordBatch table of a Message flatbuffer, and
// the message table.
func recordBatchTable(meta []byte) (msg, rb *flatbuffers.Table, err error) {
	if len(meta) < 8 {
		return nil, nil, fmt.Errorf("slots: a %d-byte message metadata", len(meta))
	}
	msg = &flatbuffers.Table{Bytes: meta, Pos: flatbuffers.GetUOffsetT(meta)}
	if o := msg.Offset(fbMessageHeaderType); o == 0 || msg.GetByte(flatbuffers.UOffsetT(o)+msg.Pos) != fbHeaderRecordBatch {
		return nil, nil, fmt.Errorf("slots: the message is not a record batch")
	}
	o := msg.Offset(fbMessageHeader)
	if o == 0 {
		return nil, nil, fmt.Errorf("slots: the message has no header")
	}
	rb = &flatbuffers.Table{Bytes: meta, Pos: msg.Indirect(flatbuffers.UOffsetT(o) + msg.Pos)}
	return msg, rb, nil
}

// bodyBuffers reads the buffer entries of a record batch message's
// metadata.
func bodyBuffers(meta []byte) ([]bodyBuffer, error) {
	_, rb, err := recordBatchTable(meta)
	if err != nil {
		return nil, err
	}
	o := flatbuffers.UOffsetT(rb.Offset(fbRecordBatchBufs))
	if o == 0 {
		return nil, nil
	}
	vec, n := rb.Vector(o), rb.VectorLen(o)
	out := make([]bodyBuffer, n)
	for i := range out {
		at := vec + flatbuffers.UOffsetT(i*fbBufferSize)
		out[i] = bodyBuffer{offset: rb.GetInt64(at), length: rb.GetInt64(at + 8)}
	}
	return out, nil
}

// patchBody rewrites, in place, the buffers' offsets and the body length
// of a record batch message's metadata (lengths and everything else stay).
func patchBody(meta []byte, offsets []int64, bodyLen int64) error {
	msg, rb, err := recordBatchTable(meta)
	if err != nil {
		return err
	}
	if o := flatbuffers.UOffsetT(rb.Offset(fbRecordBatchBufs)); o != 0 {
		vec, n := rb.Vector(o), rb.VectorLen(o)
		if n != len(offsets) {
			return fmt.Errorf("slots: %d buffers in the metadata, %d offsets", n, len(offsets))
		}
		for i, off := range offsets {
			rb.MutateInt64(vec+flatbuffers.UOffsetT(i*fbBufferSize), off)
		}
	}
	o := flatbuffers.UOffsetT(msg.Offset(fbMessageBodyLength))
	if o == 0 {
		if bodyLen != 0 {
			return fmt.Errorf("slots: the metadata has no body length to set to %d", bodyLen)
		}
		return nil
	}
	msg.MutateInt64(o+msg.Pos, bodyLen)
	return nil
}

// bodyCollector records the slices ipc.Payload.SerializeBody writes: for
// each non-empty buffer of the metadata, its bytes, then its padding to 8
// bytes (zeros, skipped).
type bodyCollector struct {
	want []bodyBuffer
	data [][]byte // by buffer index
	next int      // the next buffer expected
	pad  int64    // padding bytes expected before it
}

func (c *bodyCollector) Write(p []byte) (int, error) {
	if c.data == nil {
		c.data = make([][]byte, len(c.want))
	}
	if c.pad > 0 {
		if int64(len(p)) != c.pad || !allZero(p) {
			return 0, fmt.Errorf("slots: %d bytes where the body has %d bytes of padding", len(p), c.pad)
		}
		c.pad = 0
		return len(p), nil
	}
	for c.next < len(c.want) && c.want[c.next].length == 0 {
		c.next++
	}
	if c.next == len(c.want) || int64(len(p)) != c.want[c.next].length {
		return 0, fmt.Errorf("slots: an unexpected %d-byte write of the body (buffer %d)", len(p), c.next)
	}
	c.data[c.next] = p
	c.pad = roundUp(int64(len(p)), 8) - int64(len(p))
	c.next++
	return len(p), nil
}

func allZero(p []byte) bool {
	for _, b := range p {
		if b != 0 {
			return false
		}
	}
	return true
}
