package flight_test

import (
	"encoding/json"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"testing"
	"time"

	arrowflight "github.com/apache/arrow-go/v18/arrow/flight"
	flightgen "github.com/apache/arrow-go/v18/arrow/flight/gen/flight"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	"github.com/weftdata/weft/bucket"
	"github.com/weftdata/weft/client"
	"github.com/weftdata/weft/flight"
)

// heapPeak samples the live heap until stop is closed and returns its
// peak.
func heapPeak(stop <-chan struct{}) <-chan uint64 {
	out := make(chan uint64, 1)
	go func() {
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		var peak uint64
		for {
			metrics.Read(s)
			peak = max(peak, s[0].Value.Uint64())
			select {
			case <-stop:
				out <- peak
				return
			default:
				runtime.Gosched()
			}
		}
	}()
	return out
}

// TestReceiveGate: a hostile client opens many DoAction and DoExchange
// calls at once, each sending one message just under the bound of a
// first message (--max-command-size plus 64 KiB): the server receives at
// most MaxReceiving of them at a time (the others wait in their
// flow-control windows: 1 MiB a stream, 16 MiB the connection), so its
// heap grows by about MaxReceiving messages and a window of each waiting
// call, not by all of them; each is refused as oversized by its handler;
// and a normal client's calls, made meanwhile, succeed.
func TestReceiveGate(t *testing.T) {
	const (
		maxMsg    = 64 << 20 // --max-message-size: no longer what bounds these calls
		maxCmd    = 4 << 20  // --max-command-size
		msgSize   = maxCmd + 32<<10
		receiving = 2
		hostile   = 32
	)
	for _, tc := range []struct {
		name      string
		receiving int
		// bound on the heap's growth; 0: only logged.
		bound uint64
	}{
		// The bound: the admitted messages, a stream window for each waiting
		// call (grpc acknowledges a connection's bytes as they arrive, so
		// stream windows are what it holds), and room for the garbage of the
		// normal client's calls and the race detector's (observed: +101 MiB
		// under -race on 2 loaded cores, with messages of 8 MiB).
		{"gated", receiving, receiving*msgSize + hostile*uint64(flight.DefaultOptions().StreamWindowBytes) + 64<<20},
		{"ungated", hostile * 2, 0}, // the same calls without the gate, for the log
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, bucket.NewMem(), envOpts{flight: func(o *flight.Options) {
				o.MaxRecvMessageBytes = maxMsg
				o.MaxCommandBytes = maxCmd
				o.MaxReceiving = tc.receiving
			}})
			e.createProject("p")
			e.mustPut("p", "main", "t", 0, 10, 10, 4)
			ctx := ctxT(t)
			conn, err := grpc.NewClient(e.addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
				grpc.WithDefaultCallOptions(grpc.ForceCodecV2(rawCodec{})))
			require.NoError(t, err)
			t.Cleanup(func() { _ = conn.Close() })
			body := make([]byte, msgSize-1<<10)
			action, err := proto.Marshal(&arrowflight.Action{Type: "log", Body: body})
			require.NoError(t, err)
			exchange, err := proto.Marshal(&arrowflight.FlightData{FlightDescriptor: &arrowflight.FlightDescriptor{Type: arrowflight.DescriptorCMD, Cmd: body}})
			require.NoError(t, err)
			const svc = "/arrow.flight.protocol.FlightService/"

			// Collect often while measuring: the peak is then what is held,
			// not garbage the collector has not reached yet.
			defer debug.SetGCPercent(debug.SetGCPercent(20))
			runtime.GC()
			var base runtime.MemStats
			runtime.ReadMemStats(&base)
			stop := make(chan struct{})
			peak := heapPeak(stop)
			var wg sync.WaitGroup
			errs := make([]error, hostile)
			for i := range hostile {
				method, msg, client := "DoAction", action, false
				if i%2 == 1 {
					method, msg, client = "DoExchange", exchange, true
				}
				wg.Go(func() {
					s, err := conn.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true, ClientStreams: client}, svc+method)
					if err != nil {
						errs[i] = err
						return
					}
					_ = s.SendMsg(&rawMsg{msg})
					_ = s.CloseSend()
					errs[i] = s.RecvMsg(&rawMsg{})
				})
			}
			// A normal client meanwhile.
			_, err = e.c.Branches(ctx, "p")
			require.NoError(t, err, "a normal DoAction")
			_ = e.info(pathDesc("p", "main", "t"))
			wg.Wait()
			close(stop)
			grew := <-peak - base.HeapAlloc
			t.Logf("%d hostile calls of %d KiB, %d received at once: heap grew by %d MiB at its peak", hostile, msgSize>>10, tc.receiving, grew>>20)
			for _, err := range errs {
				requireCode(t, err, codes.InvalidArgument, "--max-command-size")
			}
			if tc.bound > 0 {
				require.Less(t, grew, tc.bound, "the server received more first messages at once than its gate admits")
			}
		})
	}
}

// TestReceiveTimeout: a client that opens calls and never sends their
// first message holds every receiving place only for ReceiveTimeout: its
// calls then fail with DEADLINE_EXCEEDED, and a normal call waiting at
// the gate (QueueWait is longer) gets a place and succeeds.
func TestReceiveTimeout(t *testing.T) {
	e := newEnv(t, bucket.NewMem(), envOpts{flight: func(o *flight.Options) {
		o.MaxReceiving = 1
		o.ReceiveTimeout = 300 * time.Millisecond
		o.QueueWait = 10 * time.Second
	}})
	e.createProject("p")
	ctx := ctxT(t)
	conn, err := grpc.NewClient(e.addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.ForceCodecV2(rawCodec{})))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	const svc = "/arrow.flight.protocol.FlightService/"
	stalled := make([]grpc.ClientStream, 2)
	for i := range stalled {
		s, err := conn.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, svc+"DoExchange")
		require.NoError(t, err)
		stalled[i] = s // opened, nothing sent: the server waits for the first message
	}
	_, err = e.c.Branches(ctx, "p")
	require.NoError(t, err, "a normal DoAction behind two stalled calls")
	for _, s := range stalled {
		requireCode(t, s.RecvMsg(&rawMsg{}), codes.DeadlineExceeded, "--receive-timeout")
	}
}

// TestLaterMessages: a hostile client holds many rank exchanges (each
// admitted, its ring full, the server reading its slot releases) and
// sends on each a "release" of nearly --max-message-size: grpc refuses
// each by its length, before receiving it (ResourceExhausted, naming the
// 64 KiB bound of a later message), so the server's heap does not grow by
// the messages (without the bound it grew by ~190 MiB: every message
// gathered at once); and a normal client is served meanwhile.
func TestLaterMessages(t *testing.T) {
	const (
		maxMsg  = 8 << 20
		hostile = 24
	)
	se := newSlotEnv(t, envOpts{flight: func(o *flight.Options) { o.MaxRecvMessageBytes = maxMsg }})
	e := se.env
	plan := smallRun(t, e, 1)
	ctx := ctxT(t)
	conn, err := grpc.NewClient(e.addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.ForceCodecV2(rawCodec{}), grpc.MaxCallRecvMsgSize(64<<20)))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	cmd, err := json.Marshal(client.ExchangeCommand{RankExchange: &client.RankExchange{Ticket: plan.Ranks[0].Ticket, Delivery: client.DeliveryShm}})
	require.NoError(t, err)
	first, err := proto.Marshal(&arrowflight.FlightData{FlightDescriptor: &arrowflight.FlightDescriptor{Type: arrowflight.DescriptorCMD, Cmd: cmd}})
	require.NoError(t, err)
	later, err := proto.Marshal(&arrowflight.FlightData{AppMetadata: make([]byte, maxMsg-1<<10)})
	require.NoError(t, err)

	// Open every exchange and read its header: each is admitted, and its
	// release reader is waiting for a message.
	streams := make([]grpc.ClientStream, hostile)
	for i := range streams {
		s, err := conn.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, "/arrow.flight.protocol.FlightService/DoExchange")
		require.NoError(t, err)
		require.NoError(t, s.SendMsg(&rawMsg{first}))
		for range 2 { // the schema with the header, and the header again
			require.NoError(t, s.RecvMsg(&rawMsg{}))
		}
		streams[i] = s
	}

	defer debug.SetGCPercent(debug.SetGCPercent(20))
	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)
	stop := make(chan struct{})
	peak := heapPeak(stop)
	var wg sync.WaitGroup
	errs := make([]error, hostile)
	for i, s := range streams {
		wg.Go(func() {
			_ = s.SendMsg(&rawMsg{later})
			for {
				if err := s.RecvMsg(&rawMsg{}); err != nil {
					errs[i] = err
					return
				}
			}
		})
	}
	_, err = e.c.Branches(ctx, "p")
	require.NoError(t, err, "a normal DoAction")
	wg.Wait()
	close(stop)
	grew := <-peak - base.HeapAlloc
	t.Logf("%d exchanges each sent a %d MiB later message: heap grew by %d MiB at its peak", hostile, maxMsg>>20, grew>>20)
	for _, err := range errs {
		requireCode(t, err, codes.ResourceExhausted, "received message larger than max", " vs. 65536)")
	}
	// The bound: a later message per exchange, and room for the garbage
	// of the steps sent and the normal client's call.
	require.Less(t, grew, uint64(hostile*64<<10+48<<20), "the server received oversized later messages")
}

// TestRecvLimitHook: the bound of what grpc receives on a call is set
// through a field of grpc's server stream (recvgate.go, recvLimit); a grpc
// release that moves it fails here, not in production (where calls would
// fail Internal).
func TestRecvLimitHook(t *testing.T) {
	e := newEnv(t, bucket.NewMem(), envOpts{})
	e.createProject("p")
	_, err := e.c.Branches(ctxT(t), "p")
	require.NoError(t, err, "a call through recvCaps")
}

// TestEveryMethodIsAStream: the service registers no unary method (grpc
// would receive a unary call's request before any interceptor runs, past
// the receive gate and the message bounds, and the server has no unary
// interceptors: authentication, logging and recovery are stream
// interceptors), and serves every method of Flight's service.
func TestEveryMethodIsAStream(t *testing.T) {
	e := newEnv(t, bucket.NewMem(), envOpts{})
	d := flight.ServiceDesc(e.svc)
	require.Empty(t, d.Methods, "a unary method bypasses the stream interceptors")
	want := map[string]bool{}
	for _, m := range flightgen.FlightService_ServiceDesc.Methods {
		want[m.MethodName] = true
	}
	for _, s := range flightgen.FlightService_ServiceDesc.Streams {
		want[s.StreamName] = true
	}
	got := map[string]bool{}
	for _, s := range d.Streams {
		got[s.StreamName] = true
	}
	require.Equal(t, want, got)
	info := e.svc.NewServer().GetServiceInfo()[d.ServiceName]
	require.Len(t, info.Methods, len(want), "NewServer registers the service of serviceDesc")
}
