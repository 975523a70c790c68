package flight

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"strings"

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
// the interceptors of serverOptions answer a marked message
// InvalidArgument, saying what is wrong. The mark starts with random bytes
// chosen per server, so a client cannot forge it; an empty message is all
// a handler would see if the interceptors were left out.
type requestCodec struct {
	proto encoding.CodecV2
	nonce []byte
}

// markField is the field number of the mark: the largest valid one, which
// no Flight message uses.
const markField = protowire.MaxValidNumber

// requestCodecOptions returns the codec and its two interceptors as server
// options (chained after the ones before them: a malformed request from a
// caller without a valid token is still Unauthenticated).
func requestCodecOptions() []grpc.ServerOption {
	c := &requestCodec{proto: encoding.GetCodecV2(grpcproto.Name), nonce: make([]byte, 16)}
	_, _ = rand.Read(c.nonce)
	return []grpc.ServerOption{
		grpc.ForceServerCodecV2(c),
		grpc.ChainUnaryInterceptor(c.unary),
		grpc.ChainStreamInterceptor(c.stream),
	}
}

func (c *requestCodec) Name() string { return c.proto.Name() }

func (c *requestCodec) Marshal(v any) (mem.BufferSlice, error) { return c.proto.Marshal(v) }

func (c *requestCodec) Unmarshal(data mem.BufferSlice, v any) error {
	err := c.proto.Unmarshal(data, v)
	m, ok := v.(proto.Message)
	if err == nil || !ok {
		return err
	}
	proto.Reset(m)
	msg := strings.TrimPrefix(err.Error(), "proto: ")
	mark := protowire.AppendTag(nil, markField, protowire.BytesType)
	mark = protowire.AppendBytes(mark, append(append([]byte(nil), c.nonce...), msg...))
	m.ProtoReflect().SetUnknown(mark)
	return nil
}

// malformed returns the parse error marked on v, if any.
func (c *requestCodec) malformed(v any) (string, bool) {
	m, ok := v.(proto.Message)
	if !ok {
		return "", false
	}
	u := m.ProtoReflect().GetUnknown()
	for len(u) > 0 {
		num, typ, n := protowire.ConsumeTag(u)
		if n < 0 {
			return "", false
		}
		u = u[n:]
		if num == markField && typ == protowire.BytesType {
			val, n := protowire.ConsumeBytes(u)
			if n >= 0 && bytes.HasPrefix(val, c.nonce) {
				return string(val[len(c.nonce):]), true
			}
		}
		n = protowire.ConsumeFieldValue(num, typ, u)
		if n < 0 {
			return "", false
		}
		u = u[n:]
	}
	return "", false
}

// malformedError is the answer to a marked message: InvalidArgument for
// gRPC, ErrBadRequest for errors.Is (a handler that wraps it keeps both).
type malformedError struct{ msg string }

func (e malformedError) Error() string { return e.msg }
func (e malformedError) Unwrap() error { return ErrBadRequest }
func (e malformedError) GRPCStatus() *status.Status {
	return status.New(codes.InvalidArgument, e.msg)
}

func (c *requestCodec) refuse(method, parseErr string) error {
	if i := strings.LastIndexByte(method, '/'); i >= 0 {
		method = method[i+1:]
	}
	const maxErr = 200
	if len(parseErr) > maxErr {
		parseErr = parseErr[:maxErr] + "…"
	}
	return malformedError{msg: fmt.Sprintf("%s: the request is not a valid Flight protobuf message (%s); path elements of a FlightDescriptor and action types must be valid UTF-8 text", method, parseErr)}
}

func (c *requestCodec) unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if msg, bad := c.malformed(req); bad {
		return nil, c.refuse(info.FullMethod, msg)
	}
	return handler(ctx, req)
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
	if msg, bad := s.c.malformed(m); bad {
		return s.c.refuse(s.method, msg)
	}
	return nil
}
