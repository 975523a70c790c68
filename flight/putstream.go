package flight

import (
	"sync/atomic"

	arrowflight "github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// A put's messages are received as putData: the codec decodes each
// data_body into the put's body allocator (requestCodec.Unmarshal), and
// putMessages hands the body to the record batch read from it as an Arrow
// buffer of that allocator, so the body is freed the moment the last
// array over it is released (the batch stored), not left to the garbage
// collector. With internal/offheap as the allocator a piece's 16 MiB body
// is unmapped then and there (DoPut).

// putData is one FlightData of a put. body is DataBody when it came from
// mem, until it is handed on (putMessages) or freed.
type putData struct {
	*arrowflight.FlightData
	mem  memory.Allocator
	body []byte
}

// allocBody is the codec's allocator of the data_body (the last of
// repeated ones wins: an earlier one is freed).
func (d *putData) allocBody(n int) []byte {
	d.free()
	d.body = d.mem.Allocate(n)
	return d.body
}

func (d *putData) free() {
	if d.body != nil {
		d.mem.Free(d.body)
		d.body = nil
	}
}

// putStream is the record reader of a put's stream (arrowflight.Reader's
// counterpart), with the latest app_metadata and the descriptor.
type putStream struct {
	*ipc.Reader
	msgs *putMessages
}

// newPutStream reads the schema of the put's stream; bodies are allocated
// from heap until SetBodyAllocator.
func newPutStream(s *deadlineStream, heap memory.Allocator, opts ...ipc.Option) (*putStream, error) {
	first, err := s.recv(heap)
	if err != nil {
		return nil, err
	}
	m := &putMessages{stream: s, descr: first.FlightDescriptor}
	m.mem.Store(&heap)
	m.refs.Add(1)
	if len(first.DataHeader) > 0 {
		m.peeked = first
	} else {
		first.free()
	}
	m.refs.Add(1) // the ipc.Reader's, released with it
	r, err := ipc.NewReaderFromMessageReader(m, opts...)
	if err != nil {
		m.Release() // the ipc.Reader released its reference
		return nil, err
	}
	return &putStream{Reader: r, msgs: m}, nil
}

// SetBodyAllocator allocates the bodies of the messages received from now
// on from mem.
func (r *putStream) SetBodyAllocator(mem memory.Allocator) { r.msgs.mem.Store(&mem) }

// LatestAppMetadata is the app_metadata of the message last read.
func (r *putStream) LatestAppMetadata() []byte { return r.msgs.meta }

// LatestFlightDescriptor is the last descriptor the stream carried.
func (r *putStream) LatestFlightDescriptor() *arrowflight.FlightDescriptor { return r.msgs.descr }

func (r *putStream) Release() {
	r.Reader.Release()
	r.msgs.Release()
}

// putMessages is the ipc.MessageReader of a put's stream.
type putMessages struct {
	stream *deadlineStream
	mem    atomic.Pointer[memory.Allocator]
	peeked *putData
	msg    *ipc.Message // the message last read, until the next one
	meta   []byte
	descr  *arrowflight.FlightDescriptor
	refs   atomic.Int64
}

func (m *putMessages) Message() (*ipc.Message, error) {
	// The ipc.Reader is done with the last message: the record read
	// from it holds its own references to the body.
	if m.msg != nil {
		m.msg.Release()
		m.msg = nil
	}
	d := m.peeked
	m.peeked = nil
	if d == nil {
		var err error
		if d, err = m.stream.recv(*m.mem.Load()); err != nil {
			m.meta, m.descr = nil, nil
			return nil, err
		}
	}
	m.meta = d.AppMetadata
	if d.FlightDescriptor != nil {
		m.descr = d.FlightDescriptor
	}
	body := memory.NewBufferBytes(d.DataBody)
	if d.body != nil {
		body = memory.NewBufferWithAllocator(d.body, d.mem)
		d.body = nil
	}
	m.msg = ipc.NewMessage(memory.NewBufferBytes(d.DataHeader), body)
	body.Release() // the message's now
	return m.msg, nil
}

func (m *putMessages) Retain() { m.refs.Add(1) }

func (m *putMessages) Release() {
	if m.refs.Add(-1) != 0 {
		return
	}
	if m.msg != nil {
		m.msg.Release()
		m.msg = nil
	}
	if m.peeked != nil {
		m.peeked.free()
		m.peeked = nil
	}
}

// recv receives the stream's next message, its body from mem, giving up
// when s.ctx ends (see deadlineStream).
func (s *deadlineStream) recv(mem memory.Allocator) (*putData, error) {
	if err := s.ctx.Err(); err != nil {
		return nil, err
	}
	d := &putData{FlightData: &arrowflight.FlightData{}, mem: mem}
	ch := make(chan error, 1)
	go func() { ch <- s.FlightService_DoPutServer.RecvMsg(d) }()
	select {
	case err := <-ch:
		if err != nil {
			d.free()
			return nil, err
		}
		return d, nil
	case <-s.ctx.Done():
		go func() {
			<-ch
			d.free() // received after all: nobody reads it
		}()
		return nil, s.ctx.Err()
	}
}
