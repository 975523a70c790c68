package flight

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"

	arrowflight "github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	grpcproto "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// requestCodec is the server's gRPC codec: grpc's proto codec, except for
// a request message that does not parse (a FlightDescriptor path element
// or an action type that is not valid UTF-8, a truncated message). grpc-go
// answers a codec error itself, with Internal and its own words, before
// any interceptor or handler runs. So instead the codec empties such a
// message and marks it with an unknown field holding the parse error, and
// the stream interceptor of requestCodecOptions answers a marked message
// InvalidArgument, saying what is wrong. The mark starts with random bytes
// chosen per server, so a client cannot forge it; an empty message is all
// a handler would see if the interceptors were left out.
//
// The codec also refuses an oversized request before it is decoded
// (sizeLimit): a command message (a FlightDescriptor, an Action, a Ticket,
// Criteria, a HandshakeRequest) over MaxCommandBytes plus commandSlack (a
// Ticket over maxTicketBytes plus commandSlack), or
// a FlightData whose descriptor or app_metadata is over it, is marked the
// same way, without the two copies that decoding makes (grpc's proto
// codec gathers the message into one buffer, then protobuf copies every
// bytes field out of it), and answered with ErrTooLarge. What stays is
// grpc's receive buffer of the message itself, which grpc frees once the
// codec returns.
type requestCodec struct {
	proto encoding.CodecV2
	nonce []byte
	// maxCommand is MaxCommandBytes.
	maxCommand int
}

// commandSlack is what a command message may hold beyond its JSON (an
// action type, path elements, protobuf framing).
const commandSlack = 64 << 10

// Kinds of mark: why a request was emptied.
const (
	markMalformed = 'm' // it does not parse
	markTooLarge  = 'l' // it is over a size limit
)

// markField is the field number of the mark: the largest valid one, which
// no Flight message uses.
const markField = protowire.MaxValidNumber

// requestCodecOptions returns the codec and its interceptor as server
// options (chained after the ones before them: a malformed request from a
// caller without a valid token is still Unauthenticated).
func requestCodecOptions(o Options) []grpc.ServerOption {
	c := &requestCodec{proto: encoding.GetCodecV2(grpcproto.Name), nonce: make([]byte, 16), maxCommand: o.MaxCommandBytes}
	_, _ = rand.Read(c.nonce)
	return []grpc.ServerOption{
		grpc.ForceServerCodecV2(c),
		grpc.ChainStreamInterceptor(c.stream),
	}
}

func (c *requestCodec) Name() string { return c.proto.Name() }

func (c *requestCodec) Marshal(v any) (mem.BufferSlice, error) { return c.proto.Marshal(v) }

func (c *requestCodec) Unmarshal(data mem.BufferSlice, v any) error {
	m, ok := v.(proto.Message)
	if ok {
		if why := c.oversized(data, v); why != "" {
			c.mark(m, markTooLarge, why)
			return nil
		}
	}
	var err error
	switch fd := v.(type) {
	case *arrowflight.FlightData:
		err = unmarshalFlightData(data, fd, nil)
	case *putData:
		err = unmarshalFlightData(data, fd.FlightData, fd.allocBody)
	default:
		err = c.proto.Unmarshal(data, v)
	}
	if err == nil || !ok {
		return err
	}
	c.mark(m, markMalformed, strings.TrimPrefix(err.Error(), "proto: "))
	return nil
}

// mark empties m and marks it with kind and msg.
func (c *requestCodec) mark(m proto.Message, kind byte, msg string) {
	proto.Reset(m)
	val := append(append(append([]byte(nil), c.nonce...), kind), msg...)
	mark := protowire.AppendTag(nil, markField, protowire.BytesType)
	mark = protowire.AppendBytes(mark, val)
	m.ProtoReflect().SetUnknown(mark)
}

// oversized says why data, the wire form of a v, is over a size limit
// ("" if it is not), reading only field tags and lengths: nothing is
// copied. A FlightData's data_header and data_body are bounded only by
// MaxRecvMessageBytes (grpc), and leased by the puts that take them.
func (c *requestCodec) oversized(data mem.BufferSlice, v any) string {
	n := data.Len()
	limit := c.maxCommand + commandSlack
	switch v.(type) {
	case *arrowflight.FlightDescriptor, *arrowflight.Action, *arrowflight.Criteria, *arrowflight.HandshakeRequest, *arrowflight.Empty:
	case *arrowflight.Ticket:
		if n > maxTicketBytes+commandSlack {
			return fmt.Sprintf("the ticket is %d bytes, longer than any ticket this server issues (%d bytes at most); pass the ticket of an endpoint of GetFlightInfo unchanged", n, maxTicketBytes)
		}
		return ""
	case *arrowflight.FlightData, *putData:
		if n <= c.maxCommand {
			return ""
		}
		desc, meta, ok := flightDataSizes(data)
		switch {
		case !ok:
			return "" // malformed: the proto codec says how
		case desc > c.maxCommand+commandSlack:
			return fmt.Sprintf("the FlightData's flight_descriptor is %d bytes, over the server's limit of %d bytes for a command (--max-command-size, plus %d for the rest of a descriptor); send a smaller one", desc, c.maxCommand, commandSlack)
		case meta > c.maxCommand:
			return fmt.Sprintf("the FlightData's app_metadata is %d bytes, over the server's limit of %d bytes for one JSON input (--max-command-size); send a smaller one", meta, c.maxCommand)
		}
		return ""
	default:
		return ""
	}
	if n <= limit {
		return ""
	}
	name := v.(proto.Message).ProtoReflect().Descriptor().Name()
	return fmt.Sprintf("the request (a %s) is %d bytes, over the server's limit of %d bytes for one command (--max-command-size, plus %d for the rest of the message); send a smaller one", name, n, limit-commandSlack, commandSlack)
}

// FlightData's field numbers (Flight.proto).
const (
	fieldFlightDescriptor = 1
	fieldDataHeader       = 2
	fieldAppMetadata      = 3
	fieldDataBody         = 1000
)

// errWireFormat is protobuf's word for data that does not parse.
var errWireFormat = errors.New("cannot parse invalid wire-format data")

// unmarshalFlightData decodes the FlightData data into m as protobuf
// would (the last of a repeated bytes field wins, repeated descriptors
// merge, unknown fields are kept), copying each bytes field once, straight
// out of grpc's receive buffers. grpc's proto codec first gathers the
// frames of the message into one buffer and protobuf then copies every
// bytes field out of it: for a put's data_body, two copies of the piece
// on top of the frames, where this makes one (put.go, putCost). The
// data_body is allocated with allocBody when it is not nil (a put's
// message: putData), else on the heap.
func unmarshalFlightData(data mem.BufferSlice, m *arrowflight.FlightData, allocBody func(int) []byte) error {
	proto.Reset(m)
	r := sliceReader{bufs: data}
	var unknown []byte
	for !r.done() {
		num, typ, ok := r.tag()
		if !ok {
			return errWireFormat
		}
		if typ != protowire.BytesType || (num != fieldFlightDescriptor && num != fieldDataHeader && num != fieldAppMetadata && num != fieldDataBody) {
			value := r.pos()
			if !r.skipField(num, typ) {
				return errWireFormat
			}
			// kept as protobuf keeps it: the tag in its shortest form
			unknown = r.appendFrom(protowire.AppendTag(unknown, num, typ), value)
			continue
		}
		size, ok := r.varint()
		if !ok || size > uint64(r.remaining()) {
			return errWireFormat
		}
		var b []byte
		if num == fieldDataBody && allocBody != nil && size > 0 {
			b = allocBody(int(size))
			r.readInto(b)
		} else {
			b = r.read(int(size))
		}
		switch num {
		case fieldFlightDescriptor:
			if m.FlightDescriptor == nil {
				m.FlightDescriptor = &arrowflight.FlightDescriptor{}
			}
			if err := (proto.UnmarshalOptions{Merge: true}).Unmarshal(b, m.FlightDescriptor); err != nil {
				return err
			}
		case fieldDataHeader:
			m.DataHeader = b
		case fieldAppMetadata:
			m.AppMetadata = b
		case fieldDataBody:
			m.DataBody = b
		}
	}
	if len(unknown) > 0 {
		m.ProtoReflect().SetUnknown(unknown)
	}
	return nil
}

// flightDataSizes returns the sizes of the flight_descriptor and
// app_metadata fields of the FlightData data (their last occurrence, as
// protobuf decodes them: a repeated descriptor is merged, so its sizes
// add), walking the fields in place; ok is false for data that does not
// parse. Other fields, unknown groups included, are skipped as
// unmarshalFlightData skips them.
func flightDataSizes(data mem.BufferSlice) (desc, meta int, ok bool) {
	r := sliceReader{bufs: data}
	for !r.done() {
		num, typ, ok := r.tag()
		if !ok {
			return 0, 0, false
		}
		if typ != protowire.BytesType || (num != fieldFlightDescriptor && num != fieldAppMetadata) {
			if !r.skipField(num, typ) {
				return 0, 0, false
			}
			continue
		}
		size, ok := r.varint()
		if !ok || size > uint64(r.remaining()) {
			return 0, 0, false
		}
		if num == fieldFlightDescriptor {
			desc += int(size)
		} else {
			meta = int(size)
		}
		r.skip(int(size))
	}
	return desc, meta, true
}

// sliceReader reads varints from, and skips over, a mem.BufferSlice in
// place.
type sliceReader struct {
	bufs mem.BufferSlice
	i    int // current buffer
	off  int // offset in it
}

func (r *sliceReader) done() bool {
	for r.i < len(r.bufs) && r.off >= r.bufs[r.i].Len() {
		r.i, r.off = r.i+1, 0
	}
	return r.i >= len(r.bufs)
}

func (r *sliceReader) remaining() int {
	n := -r.off
	for _, b := range r.bufs[r.i:] {
		n += b.Len()
	}
	return n
}

func (r *sliceReader) varint() (uint64, bool) {
	var v uint64
	for shift := 0; shift < 64; shift += 7 {
		if r.done() {
			return 0, false
		}
		b := r.bufs[r.i].ReadOnlyData()[r.off]
		r.off++
		if shift == 63 && b > 1 {
			return 0, false // over 64 bits: protobuf refuses it
		}
		v |= uint64(b&0x7f) << shift
		if b < 0x80 {
			return v, true
		}
	}
	return 0, false
}

// pos is the offset of the reader from the start of the slice.
func (r *sliceReader) pos() int {
	n := r.off
	for _, b := range r.bufs[:r.i] {
		n += b.Len()
	}
	return n
}

// read returns a copy of the next n bytes (n <= remaining); nil for 0,
// as protobuf decodes an empty bytes field.
func (r *sliceReader) read(n int) []byte {
	if n == 0 {
		return nil
	}
	out := make([]byte, n)
	r.readInto(out)
	return out
}

// readInto copies the next len(out) bytes (<= remaining) into out.
func (r *sliceReader) readInto(out []byte) {
	for k := 0; k < len(out) && !r.done(); {
		c := copy(out[k:], r.bufs[r.i].ReadOnlyData()[r.off:])
		r.off += c
		k += c
	}
}

// appendFrom appends to b the bytes from offset start (before the reader)
// to the reader.
func (r *sliceReader) appendFrom(b []byte, start int) []byte {
	end := r.pos()
	off := 0
	for _, buf := range r.bufs {
		d := buf.ReadOnlyData()
		lo, hi := max(start-off, 0), min(end-off, len(d))
		if lo < hi {
			b = append(b, d[lo:hi]...)
		}
		off += len(d)
		if off >= end {
			break
		}
	}
	return b
}

// tag reads a field's tag: its number (refused outside protobuf's valid
// range) and wire type.
func (r *sliceReader) tag() (protowire.Number, protowire.Type, bool) {
	t, ok := r.varint()
	if !ok {
		return 0, 0, false
	}
	num, typ := protowire.DecodeTag(t)
	return num, typ, num >= protowire.MinValidNumber && num <= protowire.MaxValidNumber
}

// maxGroupDepth is how deeply unknown groups may nest, protobuf's
// default recursion limit.
const maxGroupDepth = 10000

// skipField skips the value of field num of wire type typ (a group whole,
// as protobuf skips an unknown one); false if it does not parse.
func (r *sliceReader) skipField(num protowire.Number, typ protowire.Type) bool {
	if typ == protowire.StartGroupType {
		return r.skipGroup(num)
	}
	return r.skipValue(typ)
}

// skipGroup skips the fields of group num up to and including its end
// tag; false if it does not parse (an end tag of another group, nesting
// deeper than maxGroupDepth, no end).
func (r *sliceReader) skipGroup(num protowire.Number) bool {
	open := []protowire.Number{num}
	for len(open) > 0 {
		n, typ, ok := r.tag()
		if !ok {
			return false
		}
		switch typ {
		case protowire.StartGroupType:
			if len(open) >= maxGroupDepth {
				return false
			}
			open = append(open, n)
		case protowire.EndGroupType:
			if n != open[len(open)-1] {
				return false
			}
			open = open[:len(open)-1]
		default:
			if !r.skipValue(typ) {
				return false
			}
		}
	}
	return true
}

// skipValue skips the value of a field of wire type typ, other than a
// group; false if it does not parse.
func (r *sliceReader) skipValue(typ protowire.Type) bool {
	var size uint64
	switch typ {
	case protowire.VarintType:
		_, ok := r.varint()
		return ok
	case protowire.Fixed64Type:
		size = 8
	case protowire.Fixed32Type:
		size = 4
	case protowire.BytesType:
		var ok bool
		if size, ok = r.varint(); !ok {
			return false
		}
	default:
		return false
	}
	if size > uint64(r.remaining()) {
		return false
	}
	r.skip(int(size))
	return true
}

func (r *sliceReader) skip(n int) {
	for n > 0 && !r.done() {
		k := min(n, r.bufs[r.i].Len()-r.off)
		r.off += k
		n -= k
	}
}

// marked returns the kind and text of the mark on v, if any.
func (c *requestCodec) marked(v any) (byte, string, bool) {
	m, ok := v.(proto.Message)
	if !ok {
		return 0, "", false
	}
	u := m.ProtoReflect().GetUnknown()
	for len(u) > 0 {
		num, typ, n := protowire.ConsumeTag(u)
		if n < 0 {
			return 0, "", false
		}
		u = u[n:]
		if num == markField && typ == protowire.BytesType {
			val, n := protowire.ConsumeBytes(u)
			if n >= 0 && len(val) > len(c.nonce) && bytes.HasPrefix(val, c.nonce) {
				return val[len(c.nonce)], string(val[len(c.nonce)+1:]), true
			}
		}
		n = protowire.ConsumeFieldValue(num, typ, u)
		if n < 0 {
			return 0, "", false
		}
		u = u[n:]
	}
	return 0, "", false
}

// malformedError is the answer to a marked message: InvalidArgument for
// gRPC, ErrBadRequest for errors.Is (a handler that wraps it keeps both).
type malformedError struct{ msg string }

func (e malformedError) Error() string { return e.msg }
func (e malformedError) Unwrap() error { return ErrBadRequest }
func (e malformedError) GRPCStatus() *status.Status {
	return status.New(codes.InvalidArgument, e.msg)
}

// tooLargeError is the answer to a request over a size limit: ErrTooLarge,
// its gRPC code from errgrpc like every other error's.
type tooLargeError struct{ msg string }

func (e tooLargeError) Error() string { return e.msg }
func (e tooLargeError) Unwrap() error { return ErrTooLarge }
func (e tooLargeError) GRPCStatus() *status.Status {
	return status.New(code(ErrTooLarge), e.msg)
}

// refuse is the answer to a message marked kind with msg.
func (c *requestCodec) refuse(method string, kind byte, msg string) error {
	if i := strings.LastIndexByte(method, '/'); i >= 0 {
		method = method[i+1:]
	}
	if kind == markTooLarge {
		return tooLargeError{msg: method + ": " + msg}
	}
	parseErr := msg
	const maxErr = 200
	if len(parseErr) > maxErr {
		parseErr = parseErr[:maxErr] + "…"
	}
	return malformedError{msg: fmt.Sprintf("%s: the request is not a valid Flight protobuf message (%s); path elements of a FlightDescriptor and action types must be valid UTF-8 text", method, parseErr)}
}

func (c *requestCodec) stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	return handler(srv, &checkedStream{ServerStream: ss, c: c, method: info.FullMethod})
}

// checkedStream answers RecvMsg of a marked message with malformedError.
type checkedStream struct {
	grpc.ServerStream
	c      *requestCodec
	method string
}

func (s *checkedStream) RecvMsg(m any) error {
	if err := s.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	if kind, msg, bad := s.c.marked(m); bad {
		return s.c.refuse(s.method, kind, msg)
	}
	return nil
}
