package flight_test

import (
	"bytes"
	"encoding/binary"
	"net"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc/codes"
)

// h2Conn is a raw HTTP/2 client connection, for clients that grpc's own
// would not be: calls opened and fed without reading, reset, or dropped
// with the connection. It honours the connection's flow-control window
// (the server would close a connection over it), nothing else.
type h2Conn struct {
	t    *testing.T
	c    net.Conn
	fr   *http2.Framer
	wmu  sync.Mutex // the framer's write side and the header encoder
	hbuf bytes.Buffer
	enc  *hpack.Encoder
	next uint32 // the next stream id

	mu   sync.Mutex
	cond *sync.Cond
	// window is what the connection's window lets the client send.
	window int64
	// streamWindow is the server's initial window of a stream (its
	// settings); settled once the settings are in.
	streamWindow int64
	settled      bool
	// status holds the grpc-status of each stream the server answered.
	status map[uint32]codes.Code
	closed bool
}

// dialH2 opens a raw HTTP/2 connection to addr and waits for the server's
// settings.
func dialH2(t *testing.T, addr string) *h2Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	h := &h2Conn{t: t, c: c, fr: http2.NewFramer(c, c), next: 1, window: 65535, streamWindow: 65535, status: map[uint32]codes.Code{}}
	h.cond = sync.NewCond(&h.mu)
	h.enc = hpack.NewEncoder(&h.hbuf)
	h.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	_, err = c.Write([]byte(http2.ClientPreface))
	require.NoError(t, err)
	require.NoError(t, h.fr.WriteSettings())
	done := make(chan struct{})
	go func() { defer close(done); h.read() }()
	t.Cleanup(func() { h.close(); <-done })
	h.mu.Lock()
	for !h.settled && !h.closed {
		h.cond.Wait()
	}
	h.mu.Unlock()
	return h
}

// read handles the server's frames until the connection ends.
func (h *h2Conn) read() {
	defer func() {
		h.mu.Lock()
		h.closed = true
		h.cond.Broadcast()
		h.mu.Unlock()
	}()
	for {
		f, err := h.fr.ReadFrame()
		if err != nil {
			return
		}
		h.mu.Lock()
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				if v, ok := f.Value(http2.SettingInitialWindowSize); ok {
					h.streamWindow = int64(v)
				}
				h.settled = true
				h.wmu.Lock()
				_ = h.fr.WriteSettingsAck()
				h.wmu.Unlock()
			}
		case *http2.WindowUpdateFrame:
			if f.StreamID == 0 {
				h.window += int64(f.Increment)
			}
		case *http2.MetaHeadersFrame:
			for _, hf := range f.RegularFields() {
				if hf.Name == "grpc-status" {
					n, _ := strconv.Atoi(hf.Value)
					h.status[f.StreamID] = codes.Code(n)
				}
			}
		}
		h.cond.Broadcast()
		h.mu.Unlock()
	}
}

// open starts a call of method (a full method name) and returns its
// stream id.
func (h *h2Conn) open(method string) uint32 { return h.openWith(method, false) }

// openWith starts a call of method with the extra header fields (name,
// value); with end, its headers end the client's side of the stream.
func (h *h2Conn) openWith(method string, end bool, extra ...[2]string) uint32 {
	h.wmu.Lock()
	defer h.wmu.Unlock()
	id := h.next
	h.next += 2
	h.hbuf.Reset()
	fields := [][2]string{{":method", "POST"}, {":scheme", "http"}, {":path", method}, {":authority", "weft"}, {"content-type", "application/grpc"}, {"te", "trailers"}}
	for _, f := range append(fields, extra...) {
		require.NoError(h.t, h.enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]}))
	}
	require.NoError(h.t, h.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: h.hbuf.Bytes(), EndHeaders: true, EndStream: end}))
	return id
}

// send sends n bytes on stream id: a gRPC message prefix announcing a
// message of msgLen bytes, then zeros, within the connection's window;
// with end, the last frame ends the client's side of the stream.
func (h *h2Conn) send(id uint32, n, msgLen int, end bool) error {
	var prefix [5]byte
	binary.BigEndian.PutUint32(prefix[1:], uint32(msgLen))
	buf := make([]byte, 16<<10)
	copy(buf, prefix[:])
	for n > 0 {
		chunk := min(n, len(buf))
		h.mu.Lock()
		for h.window < int64(chunk) && !h.closed {
			h.cond.Wait()
		}
		closed := h.closed
		h.window -= int64(chunk)
		h.mu.Unlock()
		if closed {
			return net.ErrClosed
		}
		h.wmu.Lock()
		err := h.fr.WriteData(id, end && chunk == n, buf[:chunk])
		h.wmu.Unlock()
		if err != nil {
			return err
		}
		clear(buf[:5])
		n -= chunk
	}
	return nil
}

// reset resets stream id (RST_STREAM, CANCEL).
func (h *h2Conn) reset(id uint32) {
	h.wmu.Lock()
	defer h.wmu.Unlock()
	require.NoError(h.t, h.fr.WriteRSTStream(id, http2.ErrCodeCancel))
}

// answered returns the streams answered so far with their codes.
func (h *h2Conn) answered() map[uint32]codes.Code {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make(map[uint32]codes.Code, len(h.status))
	for id, c := range h.status {
		out[id] = c
	}
	return out
}

// waitAnswered waits until n streams are answered or the connection ends.
func (h *h2Conn) waitAnswered(n int) map[uint32]codes.Code {
	h.mu.Lock()
	for len(h.status) < n && !h.closed {
		h.cond.Wait()
	}
	h.mu.Unlock()
	return h.answered()
}

// waitWindow waits until the connection's window lets the client send n
// bytes: the server acknowledges a connection's bytes as they arrive, in
// quarters of its window, so a window within a quarter of the server's
// says that all but that quarter of what was sent has been received.
func (h *h2Conn) waitWindow(n int64) {
	h.mu.Lock()
	for h.window < n && !h.closed {
		h.cond.Wait()
	}
	h.mu.Unlock()
}

func (h *h2Conn) close() { _ = h.c.Close() }
