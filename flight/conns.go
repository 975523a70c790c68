package flight

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/tap"
)

// What a connection costs: grpc's buffers of it (a 32 KiB read buffer and
// a 32 KiB write buffer, its framer and header tables, its goroutines'
// stacks: connBytes), and the flow-control windows of its calls
// (StreamWindowBytes each): what a client has sent a call that its
// handler has not read yet (a call waiting at the receive gate or for a
// slot, or sent more than its method reads) stays in grpc's buffers, up
// to a window (grpc acknowledges a connection's bytes as they arrive, so
// the connection's window bounds nothing held). So:
//
//   - at most MaxConnections connections are served at once
//     (LimitListener closes the ones over it as they are accepted), each
//     taking ConnTimeout at most to say hello (the HTTP/2 preface and
//     settings; a client that never does is closed then, so idle TCP
//     connections free their place);
//   - at most MaxConnStreams calls are open on one connection (grpc
//     refuses more: REFUSED_STREAM, which clients retry);
//   - at most MaxCalls calls are open on all of them together: the call
//     limit (callLimit) refuses one over it before grpc makes its stream,
//     so the client's data for it is dropped as it arrives, never held.
//
// The process's memory then holds at most MaxConnections × connBytes and
// MaxCalls windows for them, which Options.ReceivingBytes counts and the
// Budget does not (cmd/flightd keeps it out of the budget; see
// docs/operations.md, "Limits").

// connBytes is what grpc holds of one served connection with no call
// open: measured at about 80 KiB of heap per connection
// (TestConnectionBytes: read and write buffers, framer, header tables and
// three goroutines), rounded up.
const connBytes = 128 << 10

// connOptions returns the server options that bound connections.
func (s *Service) connOptions() []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.MaxConcurrentStreams(uint32(s.opts.MaxConnStreams)),
		grpc.ConnectionTimeout(s.opts.ConnTimeout),
		// A client may ping at most every minPingInterval, and only while
		// it has calls: more is answered with GOAWAY (grpc's
		// "too_many_pings"), so pings cannot keep the server busy.
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: minPingInterval, PermitWithoutStream: false}),
		// A connection with no call for ConnIdle is closed (GOAWAY), its
		// MaxConnections place freed.
		grpc.KeepaliveParams(keepalive.ServerParameters{MaxConnectionIdle: s.opts.ConnIdle}),
		grpc.InTapHandle(s.calls.tap),
	}
}

// callLimit is the Service's cap on open calls (Options.MaxCalls). Its tap
// runs in grpc's transport as a call's headers arrive, before grpc makes
// the call's stream (so before grpc buffers any of its data) and before
// authentication: a call over the limit is answered ResourceExhausted at
// once (grpc's early abort: the client's data for it is dropped as it
// arrives). An admitted call is counted until its stream's context ends,
// which grpc does on every ending of a stream it made (the handler's
// status sent, a reset from the client, the connection's loss, an
// unknown method) and which ends the receiving of its data. (A call with
// a deadline over the limit is refused just after: see tap.)
type callLimit struct {
	max     int64
	log     *slog.Logger
	open    atomic.Int64
	refused atomic.Int64
	lastLog atomic.Int64 // unix nanoseconds of the last refusal logged
}

func newCallLimit(max int, log *slog.Logger) *callLimit {
	return &callLimit{max: int64(max), log: log}
}

// tap admits or refuses a call (a grpc tap.ServerInHandle). grpc calls it
// with its transport's lock held, for every call of a connection in turn:
// it must not block.
//
// A call over the limit without a deadline is refused here. One with a
// deadline (grpc-timeout) is not: grpc gives its context a timer and never
// cancels the context of a call its tap refuses (grpc-go 1.83,
// http2Server.operateHeaders), so each such refusal would hold the timer
// and its context until the client's deadline (about 300 bytes, for up to
// 11,000 years: "99999999H"), a leak a client could grow at the rate it
// opens calls while the server is at MaxCalls. It is admitted marked
// instead, and refused by the first interceptor (refuseOver) before
// anything reads it: its stream then ends as any other, which cancels its
// context. It counts while it lives, a moment over the limit.
func (l *callLimit) tap(ctx context.Context, info *tap.Info) (context.Context, error) {
	over := l.open.Add(1) > l.max
	if !over {
		context.AfterFunc(ctx, func() { l.open.Add(-1) })
		return ctx, nil
	}
	err := l.refusal(info.FullMethodName)
	if _, ok := ctx.Deadline(); ok {
		context.AfterFunc(ctx, func() { l.open.Add(-1) })
		return context.WithValue(ctx, overCallsKey{}, err), nil
	}
	l.open.Add(-1)
	return nil, err
}

// refusal counts and logs (at most every refuseLogEvery) a call refused
// for the limit, and returns its status error.
func (l *callLimit) refusal(method string) error {
	n := l.refused.Add(1)
	now := time.Now().UnixNano()
	if last := l.lastLog.Load(); now-last >= int64(refuseLogEvery) && l.lastLog.CompareAndSwap(last, now) {
		l.log.Warn("call refused: the server is at its limit of open calls (--max-calls)", "method", method, "limit", l.max, "refused_total", n)
	}
	err := fmt.Errorf("%w: %s: %d calls are open, the server's limit (--max-calls); retry later", ErrBusy, method, l.max)
	return status.Error(code(err), err.Error())
}

// overCallsKey marks the context of a call the tap admitted over the limit
// (its value: the call's refusal).
type overCallsKey struct{}

// refuseOver is the first stream interceptor: it answers a call the tap
// admitted over the limit with its refusal, before anything receives it.
func refuseOver(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	if err, ok := ss.Context().Value(overCallsKey{}).(error); ok {
		return err
	}
	return handler(srv, ss)
}

// minPingInterval is how often a client may ping (keepalive): grpc-go and
// gRPC C++ clients send none unless asked, and those that are ask for 10 s
// at the least.
const minPingInterval = 10 * time.Second

// LimitListener returns lis serving at most max connections at once: one
// accepted beyond that is closed at once (the client sees its connection
// reset or closed, and may retry), and logged at most once per
// refuseLogEvery. Closing a connection gives its place back.
func LimitListener(lis net.Listener, max int, log *slog.Logger) net.Listener {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &limitListener{Listener: lis, max: int64(max), log: log}
}

// refuseLogEvery bounds the log lines of refused connections.
const refuseLogEvery = 10 * time.Second

type limitListener struct {
	net.Listener
	max     int64
	log     *slog.Logger
	open    atomic.Int64
	refused atomic.Int64
	lastLog atomic.Int64 // unix nanoseconds of the last refusal logged
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.open.Add(1) <= l.max {
			return &limitConn{Conn: c, l: l}, nil
		}
		l.open.Add(-1)
		_ = c.Close()
		n := l.refused.Add(1)
		now := time.Now().UnixNano()
		if last := l.lastLog.Load(); now-last >= int64(refuseLogEvery) && l.lastLog.CompareAndSwap(last, now) {
			l.log.Warn("connection refused: the server is at its limit of connections (--max-connections)", "limit", l.max, "refused_total", n, "peer", c.RemoteAddr().String())
		}
	}
}

// limitConn gives its place back when first closed.
type limitConn struct {
	net.Conn
	l    *limitListener
	once sync.Once
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.open.Add(-1) })
	return err
}
