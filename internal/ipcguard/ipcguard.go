package ipcguard

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	flatbuffers "github.com/google/flatbuffers/go"
)

// guard passes an Arrow IPC stream through, message by message, after
// checking what arrow-go's reader would trust: it allocates a message's
// body, and slices of the schema's fields, children and metadata, by the
// sizes the message declares, so a hostile file could make it allocate
// terabytes (a fatal error, not a recoverable panic) or recurse forever
// over a cyclic schema. The guard refuses a body longer than the rest of
// the file, a vector longer than its flatbuffer, nesting deeper than
// ipcMaxDepth or more than ipcMaxFields fields, and compressed bodies
// (whose declared uncompressed sizes would be allocated too; datasets never
// writes them). Other corruption is left to the reader and to the batch
// validation after it.
type guard struct {
	r      io.Reader
	left   int64 // bytes of the file not read yet
	out    []byte
	body   int64 // body bytes of the current message still to pass
	done   bool
	err    error
	msgs   int
	fields int
}

const (
	ipcMaxMeta   = 64 << 20
	ipcMaxDepth  = 64
	ipcMaxFields = 100_000
)

// New returns r, a stream of size bytes, guarded: read it with arrow-go's
// ipc.NewReader, and recover panics around that reader (out-of-range
// offsets panic in the flatbuffers library; the guard has made them the
// worst a hostile stream can do).
func New(r io.Reader, size int64) io.Reader { return &guard{r: r, left: size} }

func (g *guard) Read(p []byte) (int, error) {
	for {
		if g.err != nil {
			return 0, g.err
		}
		if len(g.out) > 0 {
			n := copy(p, g.out)
			g.out = g.out[n:]
			return n, nil
		}
		if g.body > 0 {
			n, err := g.r.Read(p[:min(int64(len(p)), g.body)])
			g.body -= int64(n)
			g.left -= int64(n)
			if errors.Is(err, io.EOF) && g.body > 0 {
				err = io.ErrUnexpectedEOF
			}
			if err != nil && !errors.Is(err, io.EOF) {
				g.err = err
			}
			if n > 0 {
				return n, nil
			}
			continue
		}
		if g.done {
			return 0, io.EOF
		}
		g.err = g.next()
	}
}

// next reads the next message's prefix and metadata, checks them, and
// queues them for the reader.
func (g *guard) next() error {
	var pre [8]byte
	n, err := io.ReadFull(g.r, pre[:4])
	if n == 0 && errors.Is(err, io.EOF) {
		g.done = true
		return nil
	}
	if err != nil {
		return fmt.Errorf("message %d: %w", g.msgs, noEOF(err))
	}
	g.left -= 4
	head := pre[:4]
	size := binary.LittleEndian.Uint32(pre[:4])
	if size == 0xFFFFFFFF {
		if _, err := io.ReadFull(g.r, pre[4:]); err != nil {
			return fmt.Errorf("message %d: %w", g.msgs, noEOF(err))
		}
		g.left -= 4
		head = pre[:8]
		size = binary.LittleEndian.Uint32(pre[4:])
	}
	g.out = append(g.out[:0], head...)
	if size == 0 {
		g.done = true
		return nil
	}
	if int64(size) > g.left || size > ipcMaxMeta || size < 8 {
		return fmt.Errorf("message %d declares %d bytes of metadata, with %d bytes left in the file", g.msgs, size, g.left)
	}
	meta := make([]byte, size)
	if _, err := io.ReadFull(g.r, meta); err != nil {
		return fmt.Errorf("message %d: %w", g.msgs, noEOF(err))
	}
	g.left -= int64(size)
	body, err := g.check(meta)
	if err != nil {
		return fmt.Errorf("message %d: %w", g.msgs, err)
	}
	if body < 0 || body > g.left {
		return fmt.Errorf("message %d declares a body of %d bytes, with %d bytes left in the file", g.msgs, body, g.left)
	}
	g.out = append(g.out, meta...)
	g.body = body
	g.msgs++
	return nil
}

func noEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// Message, Schema, Field, RecordBatch and DictionaryBatch vtable slots
// (Arrow's Message.fbs and Schema.fbs: slot of field i is 4+2i).
const (
	msgHeaderType, msgHeader, msgBodyLength, msgCustomMetadata = 6, 8, 10, 12
	schemaFields, schemaCustomMetadata                         = 6, 8
	fieldChildren, fieldCustomMetadata                         = 14, 16
	batchNodes, batchBuffers, batchCompression, batchVariadic  = 6, 8, 10, 12
	dictData                                                   = 6
	hdrSchema, hdrDictionary, hdrRecordBatch                   = 1, 2, 3
)

// check validates one message's flatbuffer and returns its body length.
// Out-of-range offsets panic in the flatbuffers library; the caller
// recovers them as bad input.
func (g *guard) check(buf []byte) (int64, error) {
	root := flatbuffers.GetUOffsetT(buf)
	if int(root) >= len(buf) {
		return 0, fmt.Errorf("its metadata is not a flatbuffer")
	}
	msg := &flatbuffers.Table{Bytes: buf, Pos: root}
	if err := g.vector(msg, msgCustomMetadata, 4); err != nil {
		return 0, err
	}
	var body int64
	if o := msg.Offset(msgBodyLength); o != 0 {
		body = msg.GetInt64(msg.Pos + flatbuffers.UOffsetT(o))
	}
	var hdr flatbuffers.Table
	if o := msg.Offset(msgHeader); o != 0 {
		msg.Union(&hdr, flatbuffers.UOffsetT(o))
	} else {
		return body, nil
	}
	typ := byte(0)
	if o := msg.Offset(msgHeaderType); o != 0 {
		typ = msg.GetByte(msg.Pos + flatbuffers.UOffsetT(o))
	}
	switch typ {
	case hdrSchema:
		if err := g.vector(&hdr, schemaCustomMetadata, 4); err != nil {
			return 0, err
		}
		return body, g.fieldsOf(&hdr, schemaFields, 0)
	case hdrDictionary:
		o := hdr.Offset(dictData)
		if o == 0 {
			return body, nil
		}
		var rb flatbuffers.Table
		rb.Bytes, rb.Pos = buf, hdr.Indirect(hdr.Pos+flatbuffers.UOffsetT(o))
		return body, g.batch(&rb)
	case hdrRecordBatch:
		return body, g.batch(&hdr)
	}
	return 0, fmt.Errorf("it is a message of type %d, not a schema or a record batch", typ)
}

func (g *guard) batch(t *flatbuffers.Table) error {
	if t.Offset(batchCompression) != 0 {
		return fmt.Errorf("its record batch is compressed (LZ4 or ZSTD IPC buffers), which this reader does not take")
	}
	for _, v := range []struct {
		slot flatbuffers.VOffsetT
		size int
	}{{batchNodes, 16}, {batchBuffers, 16}, {batchVariadic, 8}} {
		if err := g.vector(t, v.slot, v.size); err != nil {
			return err
		}
	}
	return nil
}

// fieldsOf checks the vector of Field tables in slot of t, recursively.
func (g *guard) fieldsOf(t *flatbuffers.Table, slot flatbuffers.VOffsetT, depth int) error {
	if depth > ipcMaxDepth {
		return fmt.Errorf("its schema nests deeper than %d levels", ipcMaxDepth)
	}
	if err := g.vector(t, slot, 4); err != nil {
		return err
	}
	o := t.Offset(slot)
	if o == 0 {
		return nil
	}
	start, n := t.Vector(flatbuffers.UOffsetT(o)), t.VectorLen(flatbuffers.UOffsetT(o))
	for i := range n {
		g.fields++
		if g.fields > ipcMaxFields {
			return fmt.Errorf("its schema has more than %d fields", ipcMaxFields)
		}
		f := &flatbuffers.Table{Bytes: t.Bytes, Pos: t.Indirect(start + flatbuffers.UOffsetT(4*i))}
		if err := g.vector(f, fieldCustomMetadata, 4); err != nil {
			return err
		}
		if err := g.fieldsOf(f, fieldChildren, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// vector checks that the vector in slot of t (if any) fits in the buffer.
func (g *guard) vector(t *flatbuffers.Table, slot flatbuffers.VOffsetT, elem int) error {
	o := t.Offset(slot)
	if o == 0 {
		return nil
	}
	pos := t.Pos + flatbuffers.UOffsetT(o)
	at := int64(pos) + int64(flatbuffers.GetUOffsetT(t.Bytes[pos:]))
	if at+4 > int64(len(t.Bytes)) {
		return fmt.Errorf("a vector of its metadata lies outside it")
	}
	n := int64(binary.LittleEndian.Uint32(t.Bytes[at:]))
	if n*int64(elem) > int64(len(t.Bytes))-at-4 {
		return fmt.Errorf("a vector of its metadata declares %d elements, more than its %d bytes hold", n, len(t.Bytes))
	}
	return nil
}
