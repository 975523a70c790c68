package slots

import (
	"encoding/binary"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/weftdata/weft/errdefs"
)

// bodyAlign is the alignment of a written message's body in the slot (and
// so in the client's mapping: slots start SlotAlign-aligned, a multiple of
// it).
const bodyAlign = 64

// WriteRecordBatch writes rec as one Arrow IPC encapsulated record-batch
// message (continuation marker, metadata length, flatbuffer metadata, body;
// no schema, which is sent separately) at the start of slot, its body
// 64-byte aligned. It returns where the message lies in the slot, as
// Slot.Descriptor takes them. A message that does not fit in the slot
// fails with ErrTooLarge before anything is written.
func WriteRecordBatch(slot *Slot, rec arrow.RecordBatch) (offset, length int64, err error) {
	return WriteRecordBatchAt(slot, 0, rec)
}

// MessageBytes is the length of rec's message as WriteRecordBatch writes
// it at the start of a slot (its offset plus length): the slot size rec
// needs. It encodes rec; a caller that also writes rec, or needs its
// HeaderRoom too, encodes it once with Encode.
func MessageBytes(rec arrow.RecordBatch) (int64, error) {
	m, err := Encode(rec)
	if err != nil {
		return 0, err
	}
	defer m.Release()
	return m.Bytes(), nil
}

// Message is a record batch encoded once as an IPC record-batch message:
// the sizes a producer makes its ring and arena from (Bytes, HeaderRoom)
// and the message's write into a slot (WriteAt), without encoding the
// batch again for each. It holds the batch's buffers (not a copy) until
// Release; write it before the batch's buffers change. A Message is not
// safe for concurrent use.
type Message struct {
	p       ipc.Payload
	metaLen int
	bodyLen int64
	rows    int64
}

// Encode encodes rec as the message WriteRecordBatch writes. The caller
// releases the message.
func Encode(rec arrow.RecordBatch) (*Message, error) {
	p, err := ipc.GetRecordBatchPayload(rec)
	if err != nil {
		return nil, fmt.Errorf("slots: encode record batch: %w", err)
	}
	meta := p.Meta()
	defer meta.Release()
	msg := ipc.NewMessage(meta, memory.NewBufferBytes(nil))
	defer msg.Release()
	return &Message{p: p, metaLen: meta.Len(), bodyLen: msg.BodyLen(), rows: rec.NumRows()}, nil
}

// Release releases the message's hold on the batch's buffers.
func (m *Message) Release() { m.p.Release() }

// Bytes is the message's length as WriteAt writes it at the start of a
// slot (its offset plus length): the slot size the batch needs
// (MessageBytes).
func (m *Message) Bytes() int64 {
	header, offset := messageHeader(0, m.metaLen)
	return offset + header + m.bodyLen
}

// HeaderRoom is the room an Arena keeps for the header of a message of a
// batch like this one (HeaderRoom).
func (m *Message) HeaderRoom() int64 {
	header, _ := messageHeader(0, m.metaLen)
	return roundUp(header+bodyAlign, bodyAlign)
}

// messageHeader is the header length of a message whose flatbuffer
// metadata is metaLen bytes (the 8-byte prefix and the metadata padded to
// 8, as ipc writes it), and the offset at or after at where the message
// starts so that its body is bodyAlign-aligned.
func messageHeader(at int64, metaLen int) (header, offset int64) {
	header = int64(8 + metaLen)
	header += (8 - header%8) % 8
	offset = at + header
	offset += (bodyAlign - offset%bodyAlign) % bodyAlign
	return header, offset - header
}

// WriteRecordBatchAt is WriteRecordBatch at or after byte at of the slot
// (several messages in one slot: at is the previous offset+length).
func WriteRecordBatchAt(slot *Slot, at int64, rec arrow.RecordBatch) (offset, length int64, err error) {
	if buf := slot.Bytes(); at < 0 || at > int64(len(buf)) {
		return 0, 0, fmt.Errorf("slots: write at byte %d of a %d-byte slot: %w", at, len(buf), errdefs.ErrInvalidArgument)
	}
	m, err := Encode(rec)
	if err != nil {
		return 0, 0, err
	}
	defer m.Release()
	return m.WriteAt(slot, at)
}

// WriteAt writes the message at or after byte at of the slot, as
// WriteRecordBatchAt writes its batch, and returns where it lies. A
// message may be written more than once (into several slots).
func (m *Message) WriteAt(slot *Slot, at int64) (offset, length int64, err error) {
	buf := slot.Bytes()
	if at < 0 || at > int64(len(buf)) {
		return 0, 0, fmt.Errorf("slots: write at byte %d of a %d-byte slot: %w", at, len(buf), errdefs.ErrInvalidArgument)
	}
	header, offset := messageHeader(at, m.metaLen)
	length = header + m.bodyLen
	if offset+length > int64(len(buf)) {
		return 0, 0, fmt.Errorf("%w: the message is %d bytes (%d rows); the slot has %d bytes from byte %d; use bigger slots or smaller steps",
			ErrTooLarge, length, m.rows, int64(len(buf))-at, at)
	}
	w := &sliceWriter{buf: buf[offset : offset+length]}
	n, err := m.p.WritePayload(w)
	if err != nil {
		return 0, 0, fmt.Errorf("slots: write record batch: %w", err)
	}
	if int64(n) != header || int64(w.n) != length {
		return 0, 0, fmt.Errorf("slots: wrote %d bytes (header %d), expected %d (header %d)", w.n, n, length, header)
	}
	// WritePayload writes the header length ipc pads to 8; check that the
	// reader will find the body where we aligned it.
	if got := int64(binary.LittleEndian.Uint32(buf[offset+4:])) + 8; got != header {
		return 0, 0, fmt.Errorf("slots: message header is %d bytes, expected %d", got, header)
	}
	return offset, length, nil
}

// sliceWriter writes into a fixed slice and refuses to go past its end.
type sliceWriter struct {
	buf []byte
	n   int
}

func (w *sliceWriter) Write(p []byte) (int, error) {
	if len(p) > len(w.buf)-w.n {
		return 0, fmt.Errorf("%w: %d more bytes past the end of the message", ErrTooLarge, len(p)-(len(w.buf)-w.n))
	}
	w.n += copy(w.buf[w.n:], p)
	return len(p), nil
}
