package flight_test

import (
	"context"
	"errors"
	"io"
	"runtime"
	"runtime/debug"
	"testing"
	"time"

	arrowflight "github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	"github.com/weftdata/weft/auth"
	"github.com/weftdata/weft/bucket"
	"github.com/weftdata/weft/flight"
)

const flightSvc = "/arrow.flight.protocol.FlightService/"

// liveHeap returns the heap's live bytes after a collection (two: the
// second frees what sync.Pools, grpc's buffer pools among them, kept
// through the first).
func liveHeap() uint64 {
	h, _ := liveMemory()
	return h
}

// liveMemory returns the heap's live bytes after a collection (as
// liveHeap) and the goroutine stacks' bytes.
func liveMemory() (heap, stacks uint64) {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc, m.StackInuse
}

// waitNoCalls waits until the Service counts no open call: a call's place
// is given back when grpc ends its stream, which may come just after the
// client has seen the call's end.
func waitNoCalls(t *testing.T, svc *flight.Service) {
	t.Helper()
	require.Eventually(t, func() bool { return flight.OpenCalls(svc) == 0 }, 10*time.Second, time.Millisecond,
		"open calls: %d", flight.OpenCalls(svc))
}

// TestCallCount: every way a call can end gives its place in MaxCalls
// back: a call that ends normally or with an error, one the client
// cancels, resets or that loses its connection, one that ends at its
// deadline, one of an unknown method, and one refused by authentication.
func TestCallCount(t *testing.T) {
	e := newEnv(t, bucket.NewMem(), envOpts{})
	e.createProject("p")
	e.mustPut("p", "main", "t", 0, 2000, 100, 1<<10)
	info := e.info(pathDesc("p", "main", "t"))
	waitNoCalls(t, e.svc)

	anon, err := grpc.NewClient(e.addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.ForceCodecV2(rawCodec{})))
	require.NoError(t, err)
	t.Cleanup(func() { _ = anon.Close() })
	action, err := proto.Marshal(&arrowflight.Action{Type: "list_branches", Body: []byte(`{"project":"p"}`)})
	require.NoError(t, err)

	for _, tc := range []struct {
		name string
		call func(t *testing.T)
	}{
		{"normal", func(t *testing.T) {
			_, err := e.c.Branches(ctxT(t), "p")
			require.NoError(t, err)
		}},
		{"error", func(t *testing.T) {
			_, err := e.client.GetFlightInfo(ctxT(t), pathDesc("p", "main", "nope"))
			requireCode(t, err, codes.NotFound)
		}},
		{"client cancel", func(t *testing.T) {
			ctx, cancel := context.WithCancel(ctxT(t))
			s, err := e.client.DoGet(ctx, info.Endpoint[0].Ticket)
			require.NoError(t, err)
			_, err = s.Recv()
			require.NoError(t, err)
			cancel()
		}},
		{"client cancel, waiting", func(t *testing.T) {
			ctx, cancel := context.WithCancel(ctxT(t))
			_, err := anon.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, flightSvc+"DoExchange")
			require.NoError(t, err)
			require.Eventually(t, func() bool { return flight.OpenCalls(e.svc) == 1 }, 10*time.Second, time.Millisecond, "an open call is counted")
			cancel()
		}},
		{"reset", func(t *testing.T) {
			h := dialH2(t, e.addr)
			id := h.open(flightSvc + "DoAction")
			require.NoError(t, h.send(id, 1<<10, 4<<10, false)) // a part of its message
			require.Eventually(t, func() bool { return flight.OpenCalls(e.svc) == 1 }, 10*time.Second, time.Millisecond)
			h.reset(id)
		}},
		{"connection drop", func(t *testing.T) {
			h := dialH2(t, e.addr)
			for range 3 {
				require.NoError(t, h.send(h.open(flightSvc+"DoExchange"), 1<<10, 4<<10, false))
			}
			require.Eventually(t, func() bool { return flight.OpenCalls(e.svc) == 3 }, 10*time.Second, time.Millisecond)
			h.close()
		}},
		{"deadline", func(t *testing.T) {
			ctx, cancel := context.WithTimeout(ctxT(t), 200*time.Millisecond)
			defer cancel()
			s, err := anon.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, flightSvc+"DoExchange")
			require.NoError(t, err)
			requireCode(t, s.RecvMsg(&rawMsg{}), codes.DeadlineExceeded) // it never sends its first message
		}},
		{"unknown method", func(t *testing.T) {
			s, err := anon.NewStream(ctxT(t), &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, "/weft.Nope/Nope")
			require.NoError(t, err)
			requireCode(t, s.RecvMsg(&rawMsg{}), codes.Unimplemented)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.call(t)
			waitNoCalls(t, e.svc)
		})
	}

	t.Run("unauthenticated", func(t *testing.T) {
		b := bucket.NewMem()
		root, _, err := auth.CreateToken(context.Background(), b, auth.TokenSpec{Name: "root", GlobalAdmin: true}, time.Now())
		require.NoError(t, err)
		store, err := auth.NewStore(b, auth.DefaultOptions())
		require.NoError(t, err)
		e := newEnv(t, b, envOpts{authn: store, token: root})
		anon, err := grpc.NewClient(e.addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithDefaultCallOptions(grpc.ForceCodecV2(rawCodec{})))
		require.NoError(t, err)
		t.Cleanup(func() { _ = anon.Close() })
		s, err := anon.NewStream(ctxT(t), &grpc.StreamDesc{ServerStreams: true}, flightSvc+"DoAction")
		require.NoError(t, err)
		require.NoError(t, s.SendMsg(&rawMsg{action}))
		require.NoError(t, s.CloseSend())
		requireCode(t, s.RecvMsg(&rawMsg{}), codes.Unauthenticated)
		waitNoCalls(t, e.svc)
	})
}

// TestRefusedCallsHoldNothing: a call the call limit refuses leaves
// nothing behind, with or without a deadline. grpc gives a call with a
// deadline (grpc-timeout) a timer, which it never stops when its tap
// refuses the call: refused in the tap, each call with a deadline held about
// 300 bytes until its deadline (here 11,000 years), so a client could grow
// the server's memory at the rate it opened calls while the server was
// at MaxCalls.
func TestRefusedCallsHoldNothing(t *testing.T) {
	const refused = 20000
	e := newEnv(t, bucket.NewMem(), envOpts{flight: func(o *flight.Options) {
		o.MaxCalls = 1
		o.QueueWait = time.Minute
		o.ReceiveTimeout = time.Minute // the held call keeps its place for the test
	}})
	e.createProject("p")
	waitNoCalls(t, e.svc)
	hold := dialH2(t, e.addr)
	require.NoError(t, hold.send(hold.open(flightSvc+"DoAction"), 1<<10, 4<<10, false))
	require.Eventually(t, func() bool { return flight.OpenCalls(e.svc) == 1 }, 10*time.Second, time.Millisecond)

	for _, tc := range []struct {
		name  string
		extra [][2]string
	}{
		{"no deadline", nil},
		{"deadline", [][2]string{{"grpc-timeout", "99999999H"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := dialH2(t, e.addr)
			base := liveHeap()
			for i := range refused {
				h.openWith(flightSvc+"DoAction", true, tc.extra...)
				if i%100 == 99 {
					h.waitAnswered(i + 1) // keep within what the server queues and its streams per connection (--max-conn-streams)
				}
			}
			got := h.waitAnswered(refused)
			require.Len(t, got, refused)
			for _, c := range got {
				require.Equal(t, codes.ResourceExhausted, c)
			}
			h.close()
			grew := int64(liveHeap()) - int64(base)
			t.Logf("%d refused calls: live heap grew by %d KiB (%d bytes a call; this client's map of answers included)", refused, grew>>10, grew/refused)
			require.Less(t, grew, int64(refused*100), "refused calls hold memory")
			require.EqualValues(t, 1, flight.OpenCalls(e.svc))
		})
	}
}

// TestConnectionBytes: what a served connection with no call holds (grpc's
// buffers and framer on the heap, its goroutines' stacks), with its read
// buffer (grpc pools it, held only while bytes are pending: counted
// here), is under what ReceivingBytes counts of it (connBytes).
func TestConnectionBytes(t *testing.T) {
	const conns = 200
	e := newEnv(t, bucket.NewMem(), envOpts{})
	e.createProject("p")
	baseHeap, baseStacks := liveMemory()
	hs := make([]*h2Conn, conns)
	for i := range hs {
		hs[i] = dialH2(t, e.addr)
	}
	// A call on each, so that the server has served it (its write side in
	// use too), then none open.
	for _, h := range hs {
		id := h.open(flightSvc + "ListActions")
		require.NoError(t, h.send(id, 5, 0, true))
	}
	for _, h := range hs {
		h.waitAnswered(1)
	}
	waitNoCalls(t, e.svc)
	heap, stacks := liveMemory()
	heap, stacks = (heap-baseHeap)/conns, (stacks-baseStacks)/conns
	const readBuffer = 32 << 10
	t.Logf("%d connections, each: %d KiB of live heap (the server's and this raw client's), %d KiB of stacks, a %d KiB read buffer; %d KiB counted", conns, heap>>10, stacks>>10, readBuffer>>10, flight.ConnBytes>>10)
	require.Less(t, heap+stacks+readBuffer, uint64(flight.ConnBytes))
}

// TestMaxCalls: a hostile client opens calls on many connections and
// fills the flow-control window of each with a first message that its
// handler cannot read yet (the receive gate admits 2 at a time, and
// those wait for the rest of their message). The server refuses the calls
// over MaxCalls with ResourceExhausted as they open, so its live heap
// grows by about MaxCalls windows, not by a window of every call opened
// (without the limit: 8 connections × 16 calls × 1 MiB); a real client's
// stream, open before, is served to its end meanwhile; a new call is
// refused while every place is taken, and served once the hostile
// connections are gone.
func TestMaxCalls(t *testing.T) {
	const (
		maxCalls  = 24
		window    = 1 << 20
		conns     = 8
		perConn   = 16
		receiving = 2
		msgLen    = 2 << 20 // each hostile call's message: more than its window
	)
	e := newEnv(t, bucket.NewMem(), envOpts{flight: func(o *flight.Options) {
		o.MaxCalls = maxCalls
		o.StreamWindowBytes = window
		o.MaxConnStreams = perConn
		o.MaxReceiving = receiving
		o.QueueWait = time.Minute
		o.ReceiveTimeout = time.Minute // the hostile calls hold their places for the test
	}})
	e.createProject("p")
	e.mustPut("p", "main", "t", 0, 4000, 100, 1<<10)
	info := e.info(pathDesc("p", "main", "t"))
	ctx := ctxT(t)
	waitNoCalls(t, e.svc)

	// The real client's stream, open before the attack.
	real, err := e.client.DoGet(ctx, info.Endpoint[0].Ticket)
	require.NoError(t, err)
	_, err = real.Recv()
	require.NoError(t, err)

	defer debug.SetGCPercent(debug.SetGCPercent(20))
	base := liveHeap()
	stop := make(chan struct{})
	peak := heapPeak(stop)
	hs := make([]*h2Conn, conns)
	for i := range hs {
		hs[i] = dialH2(t, e.addr)
		require.EqualValues(t, window, hs[i].streamWindow, "the server's stream window")
	}
	for _, h := range hs {
		for range perConn {
			id := h.open(flightSvc + "DoAction")
			require.NoError(t, h.send(id, window, msgLen, false))
		}
	}
	// Every byte sent is in (all but a quarter of each connection's window
	// is acknowledged), and every call over the limit answered.
	want := conns*perConn - (maxCalls - 1) // one place is the real client's
	answered := func() map[codes.Code]int {
		n := map[codes.Code]int{}
		for _, h := range hs {
			for _, c := range h.answered() {
				n[c]++
			}
		}
		return n
	}
	for _, h := range hs {
		h.waitWindow(12 << 20)
	}
	require.Eventually(t, func() bool { return answered()[codes.ResourceExhausted] >= want }, 10*time.Second, time.Millisecond)
	held := liveHeap() - base
	close(stop)
	grew := <-peak - base
	t.Logf("%d hostile calls of a %d KiB window each, answered %v: live heap grew by %d MiB (peak %d MiB)", conns*perConn, window>>10, answered(), held>>20, grew>>20)
	require.Equal(t, map[codes.Code]int{codes.ResourceExhausted: want}, answered(), "the calls over MaxCalls are refused, the others wait")
	require.EqualValues(t, maxCalls, flight.OpenCalls(e.svc))
	// The bound: MaxCalls windows, the admitted messages, the connections'
	// buffers, and room for the garbage of the calls refused.
	bound := uint64(maxCalls*window + receiving*msgLen + conns*flight.ConnBytes + 16<<20)
	require.Less(t, held, bound, "the server holds more than MaxCalls windows")

	// The real client's stream is served to its end.
	n := 1
	for {
		_, err := real.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		n++
	}
	require.Greater(t, n, 2, "the real stream's batches")
	// A new call while every place is taken is refused, naming the flag;
	// served once the hostile connections are gone.
	waitCalls := func(n int64) {
		require.Eventually(t, func() bool { return flight.OpenCalls(e.svc) == n }, 10*time.Second, time.Millisecond)
	}
	waitCalls(maxCalls - 1)
	last := dialH2(t, e.addr) // the others are at MaxConnStreams
	hs = append(hs, last)
	require.NoError(t, last.send(last.open(flightSvc+"DoAction"), 1<<10, msgLen, false))
	waitCalls(maxCalls)
	_, err = e.c.Branches(ctx, "p")
	requireCode(t, err, codes.ResourceExhausted, "--max-calls")
	for _, h := range hs {
		h.close()
	}
	waitNoCalls(t, e.svc)
	_, err = e.c.Branches(ctx, "p")
	require.NoError(t, err)
}
