package flight

import (
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/keepalive"
)

// What a connection costs: grpc's buffers of it (a 32 KiB read buffer and
// a 32 KiB write buffer, its framer and header tables: about 100 KiB with
// its goroutines' stacks), and the flow-control windows of its streams
// (recvWindowBytes each): what a client has sent a call that its handler
// has not read yet (a call waiting at the receive gate, or sent more than
// its method reads) stays in grpc's buffers, up to a window. So at most
// MaxConnections connections are served at once (LimitListener closes the
// ones over it as they are accepted), each with at most MaxConnStreams
// calls (grpc refuses more: REFUSED_STREAM, which clients retry), each
// taking ConnTimeout at most to say hello (the HTTP/2 preface and
// settings; a client that never does is closed then, so idle TCP
// connections free their place). The process's memory then holds at most
// MaxConnections times (100 KiB and MaxConnStreams windows) for them,
// which the Budget does not count (cmd/flightd keeps it in its runtime
// overhead, docs/operations.md "Limits").

// connOptions returns the server options that bound connections.
func (s *Service) connOptions() []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.MaxConcurrentStreams(uint32(s.opts.MaxConnStreams)),
		grpc.ConnectionTimeout(s.opts.ConnTimeout),
		// A client may ping at most every minPingInterval, and only while
		// it has calls: more is answered with GOAWAY (grpc's
		// "too_many_pings"), so pings cannot keep the server busy.
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: minPingInterval, PermitWithoutStream: false}),
	}
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
