package flight

import (
	"context"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"
	"time"
	"unsafe"

	flightgen "github.com/apache/arrow-go/v18/arrow/flight/gen/flight"
	"golang.org/x/sync/semaphore"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// What a call costs before its handler sees its request: grpc receives a
// whole message before the codec decodes it (and refuses an oversized
// command, codec.go), bounded only by the largest message it accepts;
// grpc-go has one such bound per server (MaxRecvMessageBytes, for a
// DoPut's batches), none per method or per message. Three things keep the
// buffers of messages that no lease counts bounded:
//
//   - recvCaps, the first stream interceptor after refuseOver (conns.go, which passes grpc's stream on), lowers grpc's bound of each
//     call other than a DoPut (a DoPut leases its messages, putCost) to
//     laterMessageBytes once its first message is in: a DoExchange's slot
//     releases are tiny, and the other methods read no later message.
//     grpc reads a message's length before it receives the message, and
//     refuses one over its bound there (ResourceExhausted, naming the
//     bound), so an oversized later message is never gathered. grpc-go
//     has no API for this: recvLimit sets the field of its server stream
//     that holds the bound (TestLaterMessages fails if a grpc release
//     moves it, and a call then fails Internal rather than go unbounded).
//     A first message keeps MaxRecvMessageBytes: the codec refuses an
//     oversized command with InvalidArgument, naming its flag;
//   - every method is served as a stream (Flight's three unary methods
//     too: on the wire a unary call is a stream of one message each way),
//     so that a call's first message is received by its handler, after
//     the interceptors have authenticated the caller, and not before them, as grpc does for a unary method;
//   - the receive gate admits at most Options.MaxReceiving calls at once
//     to the receiving of their first message; a call over it waits up to
//     QueueWait, then fails with ResourceExhausted. Until then grpc holds
//     at most one flow-control window of the call (StreamWindowBytes):
//     the server's windows are fixed, not grown by grpc's bandwidth
//     estimate (up to 16 MiB a stream).
//
// So the messages being received take at most MaxReceiving first messages
// of MaxRecvMessageBytes and MaxStreams later ones of laterMessageBytes;
// and the windows of calls not reading (waiting at the gate, or sent more
// than their handler reads) at most MaxCalls windows (conns.go, the call
// limit), on at most MaxConnections connections' buffers. The Budget does
// not count them: Options.ReceivingBytes is their sum, which the process
// keeps out of it (cmd/flightd does).

// laterMessageBytes is the largest message after a call's first, on every
// method but DoPut: a slot release is a JSON object of a few dozen bytes
// (client.SlotRelease); a schema message (pyarrow's writer.begin) of a few
// hundred columns fits too.
const laterMessageBytes = 64 << 10

// ReceivingBytes is what the network's input may hold that no lease
// counts: MaxReceiving first messages of MaxRecvMessageBytes, a later
// message of each of MaxStreams exchanges, a flow-control window
// (StreamWindowBytes) of each of MaxCalls open calls, and grpc's buffers
// of MaxConnections connections (connBytes). The windows and the messages
// are counted apart: a call reading a message larger than its window has
// the message let in on top of the window. Keep it out of the Budget.
func (o Options) ReceivingBytes() int64 {
	return int64(o.MaxReceiving)*int64(o.MaxRecvMessageBytes) +
		int64(o.MaxStreams)*laterMessageBytes +
		int64(o.MaxCalls)*int64(o.StreamWindowBytes) +
		int64(o.MaxConnections)*connBytes
}

// minStreamWindowBytes is grpc's smallest stream window (HTTP/2's
// default): grpc ignores a smaller one.
const minStreamWindowBytes = 64 << 10

// recvConnWindowBytes is each connection's window: grpc acknowledges a
// connection's bytes as they arrive, so it bounds nothing held, only the
// bytes in flight; 16 MiB is what grpc's estimate would grow it to.
const recvConnWindowBytes = 16 << 20

// recvGate is the Service's receive gate (see above).
type recvGate struct {
	sem *semaphore.Weighted
	s   *Service
}

// gateOptions returns the server options of the receive gate: the fixed
// windows and the stream interceptor that admits first messages (chained
// last: an unauthenticated caller never waits for, or holds, a place).
func (s *Service) gateOptions() []grpc.ServerOption {
	g := &recvGate{sem: semaphore.NewWeighted(int64(s.opts.MaxReceiving)), s: s}
	return []grpc.ServerOption{
		grpc.InitialWindowSize(int32(s.opts.StreamWindowBytes)),
		grpc.InitialConnWindowSize(recvConnWindowBytes),
		grpc.ChainStreamInterceptor(g.stream),
	}
}

func (g *recvGate) stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	if isPut(info.FullMethod) {
		return handler(srv, ss) // the put leases its messages (putCost)
	}
	return handler(srv, &gatedStream{ServerStream: ss, g: g, method: info.FullMethod})
}

// gatedStream receives its first message through the gate.
type gatedStream struct {
	grpc.ServerStream
	g        *recvGate
	method   string
	admitted bool
}

func (s *gatedStream) RecvMsg(m any) error {
	if s.admitted {
		return s.ServerStream.RecvMsg(m)
	}
	release, err := s.g.s.slot(s.Context(), s.g.sem, "calls receiving their first message", s.g.s.opts.MaxReceiving, "--max-receiving")
	if err != nil {
		return gateError{err}
	}
	s.admitted = true
	// The place is held until the first message is in, at most
	// ReceiveTimeout: a stalled or slow client must not keep every place
	// (the other calls would be refused after QueueWait). On timeout the
	// call ends; its stream's end returns the receive, which gives the
	// place back (and grpc frees the partial message).
	done := make(chan error, 1)
	go func() {
		err := s.ServerStream.RecvMsg(m)
		release()
		done <- err
	}()
	t := time.NewTimer(s.g.s.opts.ReceiveTimeout)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C:
		return gateError{fmt.Errorf("%s: the call's first message did not arrive within %s (--receive-timeout): %w",
			s.method, s.g.s.opts.ReceiveTimeout, context.DeadlineExceeded)}
	}
}

// serviceDesc is Flight's service as grpc registers it, with the unary
// methods served as streams (see above).
func (s *Service) serviceDesc() *grpc.ServiceDesc {
	d := flightgen.FlightService_ServiceDesc
	d.Methods = nil
	d.Streams = append(slices.Clone(d.Streams),
		unaryStream("GetFlightInfo", s.GetFlightInfo),
		unaryStream("PollFlightInfo", s.PollFlightInfo),
		unaryStream("GetSchema", s.GetSchema),
	)
	return &d
}

// unaryStream serves the unary method name, call, as a stream: it
// receives one request, calls call and sends its reply.
func unaryStream[Req any, PReq interface {
	*Req
	proto.Message
}, Resp proto.Message](name string, call func(context.Context, PReq) (Resp, error)) grpc.StreamDesc {
	return grpc.StreamDesc{StreamName: name, ServerStreams: false, ClientStreams: false, Handler: func(_ any, ss grpc.ServerStream) error {
		req := PReq(new(Req))
		if err := ss.RecvMsg(req); err != nil {
			if errors.Is(err, io.EOF) {
				return malformedError{msg: fmt.Sprintf("%s: the call ended without its request message", name)}
			}
			return err
		}
		resp, err := call(ss.Context(), req)
		if err != nil {
			return err
		}
		return ss.SendMsg(resp)
	}}
}

// gateError is the receive gate's refusal (ErrBusy) or the call's end
// while it waited, with its gRPC code, for the handlers that return what
// RecvMsg returns as it is.
type gateError struct{ err error }

func (e gateError) Error() string { return e.err.Error() }
func (e gateError) Unwrap() error { return e.err }
func (e gateError) GRPCStatus() *status.Status {
	return status.New(code(e.err), e.err.Error())
}

// isPut says whether method is Flight's DoPut, whose messages the put
// leases (putCost) and which the receive limits leave alone.
func isPut(method string) bool { return strings.HasSuffix(method, "/DoPut") }

// recvCaps is the first stream interceptor (after refuseOver, which passes
// grpc's stream on unwrapped): it bounds the messages of a
// call other than a DoPut before grpc receives them (see above). It must
// run first: it needs grpc's own server stream, not a wrapper of it.
func (s *Service) recvCaps(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	if isPut(info.FullMethod) {
		return handler(srv, ss)
	}
	limit := recvLimit(ss)
	if limit == nil {
		return status.Errorf(codes.Internal, "%s: this flightd cannot bound the messages of its calls (its grpc's server stream has changed: see flight/recvgate.go, recvLimit); it refuses calls rather than receive them unbounded", info.FullMethod)
	}
	return handler(srv, &cappedStream{ServerStream: ss, limit: limit})
}

// recvLimit returns the bound of the messages grpc receives on ss (grpc's
// server stream; its field maxReceiveMessageSize, read by every RecvMsg
// before it receives the message), nil if ss is not one or grpc no longer
// has that field. Set it only from the goroutine calling RecvMsg, between
// calls.
func recvLimit(ss grpc.ServerStream) *int {
	v := reflect.ValueOf(ss)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return nil
	}
	e := v.Elem()
	if t := e.Type(); t.Kind() != reflect.Struct || t.PkgPath() != "google.golang.org/grpc" || t.Name() != "serverStream" {
		return nil
	}
	f := e.FieldByName("maxReceiveMessageSize")
	if !f.IsValid() || f.Kind() != reflect.Int {
		return nil
	}
	return (*int)(unsafe.Pointer(f.UnsafeAddr()))
}

// cappedStream lowers its bound to laterMessageBytes once the first
// message is in. grpc answers a message over the bound itself, before
// RecvMsg returns (ResourceExhausted, "grpc: received message larger than
// max (SIZE vs. BOUND)"); the handler's error comes too late to word it.
type cappedStream struct {
	grpc.ServerStream
	limit *int
	later bool // the first message is in
}

func (s *cappedStream) RecvMsg(m any) error {
	err := s.ServerStream.RecvMsg(m)
	if !s.later {
		s.later = true
		*s.limit = laterMessageBytes
	}
	return err
}
