package flight

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	flightgen "github.com/apache/arrow-go/v18/arrow/flight/gen/flight"
	"golang.org/x/sync/semaphore"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// What a call costs before its handler sees its request: grpc receives a
// whole message, up to MaxRecvMessageBytes, before the codec decodes it
// (and refuses an oversized command, codec.go). Two things keep the
// buffers of messages that no lease counts bounded:
//
//   - every method is served as a stream (Flight's three unary methods
//     too: on the wire a unary call is a stream of one message each way),
//     so that a call's first message is received by its handler, after
//     the interceptors have authenticated the caller, and not before
//     them, as grpc does for a unary method;
//   - the receive gate admits at most Options.MaxReceiving calls at once
//     to the receiving of their first message (a DoPut's is leased by the
//     put itself); a call over it waits up to QueueWait, then fails with
//     ResourceExhausted. Until then grpc holds at most one flow-control
//     window of the call (recvWindowBytes): the server's windows are
//     fixed, not grown by grpc's bandwidth estimate (up to 16 MiB a
//     stream).
//
// So the messages being received take at most MaxReceiving times
// MaxRecvMessageBytes, which Budget does not count: keep that much of the
// process's memory out of it (cmd/flightd does). A stream's later
// messages (an exchange's slot releases) are not gated: a call that has
// sent its first message and been admitted (a rank exchange holds one of
// MaxStreams places) may still send messages up to MaxRecvMessageBytes.

// recvWindowBytes is the server's flow-control window of each stream: what
// grpc buffers of a call whose handler is not reading (grpc grows it to a
// whole message while a handler reads one). It also caps what a client
// sends a stream per round trip: 1 MiB keeps a DoPut at ~1 GB/s over a
// 1 ms link (64 KiB would cap it at ~64 MB/s); the connection's window
// bounds the streams of a connection together.
const recvWindowBytes = 1 << 20

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
		grpc.InitialWindowSize(recvWindowBytes),
		grpc.InitialConnWindowSize(recvConnWindowBytes),
		grpc.ChainStreamInterceptor(g.stream),
	}
}

func (g *recvGate) stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	if strings.HasSuffix(info.FullMethod, "/DoPut") {
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
