package flight_test

import (
	"context"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"

	"github.com/weftdata/weft/bucket"
	"github.com/weftdata/weft/client"
	"github.com/weftdata/weft/flight"
)

// rawConns opens n TCP connections to addr that never send the HTTP/2
// preface.
func rawConns(t *testing.T, addr string, n int) []net.Conn {
	t.Helper()
	cs := make([]net.Conn, n)
	for i := range cs {
		c, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		t.Cleanup(func() { _ = c.Close() })
		cs[i] = c
	}
	return cs
}

// closedByServer says whether the server closed c (a read ends with EOF or
// a reset) rather than keeping it open for wait.
func closedByServer(c net.Conn, wait time.Duration) bool {
	_ = c.SetReadDeadline(time.Now().Add(wait))
	var b [64]byte
	for {
		_, err := c.Read(b[:])
		if err == nil {
			continue // the server's settings, sent before it reads the preface
		}
		var ne net.Error
		return !(errors.As(err, &ne) && ne.Timeout()) || errors.Is(err, io.EOF)
	}
}

// dialCall makes a new client connection and one call on it.
func dialCall(ctx context.Context, addr string) error {
	c, err := client.Dial(addr, client.Options{})
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = c.Branches(ctx, "p")
	return err
}

// TestMaxConnections: over MaxConnections, idle TCP connections (no
// HTTP/2 preface) and real gRPC connections alike are closed as they are
// accepted, while the connections already served keep serving; closing
// some gives their places back.
func TestMaxConnections(t *testing.T) {
	const limit = 8
	e := newEnv(t, bucket.NewMem(), envOpts{flight: func(o *flight.Options) {
		o.MaxConnections = limit
		o.ConnTimeout = time.Minute // the idle connections stay for the test
	}})
	e.createProject("p") // the env's client: one connection, served
	ctx := ctxT(t)

	// Real gRPC connections up to the limit, less the idle ones below.
	var held []*client.Client
	for range limit / 2 {
		c, err := client.Dial(e.addr, client.Options{})
		require.NoError(t, err)
		t.Cleanup(func() { _ = c.Close() })
		_, err = c.Branches(ctx, "p")
		require.NoError(t, err)
		held = append(held, c)
	}
	idle := rawConns(t, e.addr, limit-1-len(held))
	// Over the limit: closed at once, idle or not.
	for _, c := range rawConns(t, e.addr, 16) {
		require.True(t, closedByServer(c, 20*time.Second), "a connection over --max-connections is closed")
	}
	for range 3 {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := dialCall(cctx, e.addr)
		cancel()
		require.Error(t, err, "a gRPC connection over the limit")
		require.Regexp(t, codes.Unavailable.String()+"|"+codes.DeadlineExceeded.String(), err.Error())
	}
	// The ones served keep serving.
	_, err := e.c.Branches(ctx, "p")
	require.NoError(t, err)
	for _, c := range held {
		_, err := c.Branches(ctx, "p")
		require.NoError(t, err)
	}
	// Closing the idle ones frees their places (once the server has seen
	// them close).
	for _, c := range idle {
		require.NoError(t, c.Close())
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := dialCall(cctx, e.addr)
		cancel()
		if err == nil {
			break
		}
		require.True(t, time.Now().Before(deadline), "no place came back: %v", err)
		time.Sleep(50 * time.Millisecond)
	}
}

// TestConnTimeout: a connection that never says hello (no HTTP/2
// preface) is closed after ConnTimeout, and its place goes to a real
// client.
func TestConnTimeout(t *testing.T) {
	e := newEnv(t, bucket.NewMem(), envOpts{flight: func(o *flight.Options) {
		o.MaxConnections = 3
		o.ConnTimeout = 300 * time.Millisecond
	}})
	e.createProject("p")
	for _, c := range rawConns(t, e.addr, 2) {
		require.True(t, closedByServer(c, 30*time.Second), "a silent connection is closed after --conn-timeout")
	}
	require.NoError(t, dialCall(ctxT(t), e.addr), "the silent connections' places are free")
}

// TestConnIdle: a connection that completed its HTTP/2 handshake and then
// opens no call is closed after ConnIdle, and its place serves another
// client; a client whose connection was closed so calls again.
func TestConnIdle(t *testing.T) {
	e := newEnv(t, bucket.NewMem(), envOpts{flight: func(o *flight.Options) {
		o.MaxConnections = 4 // the env's client, two idle ones, one more
		o.ConnIdle = 500 * time.Millisecond
	}})
	e.createProject("p")
	idle := []*h2Conn{dialH2(t, e.addr), dialH2(t, e.addr)} // handshaken, no call
	require.NoError(t, dialCall(ctxT(t), e.addr), "a place is left")
	for _, h := range idle {
		require.Eventually(t, func() bool {
			h.mu.Lock()
			defer h.mu.Unlock()
			return h.closed
		}, 30*time.Second, 10*time.Millisecond, "an idle connection is closed after --conn-idle")
	}
	require.NoError(t, dialCall(ctxT(t), e.addr), "the idle connections' places are free")
	_, err := e.c.Branches(ctxT(t), "p") // the env's client, idle meanwhile, reconnects
	require.NoError(t, err)
}
