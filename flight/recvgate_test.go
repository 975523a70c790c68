package flight_test

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"testing"
	"time"

	arrowflight "github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	"github.com/weftdata/weft/bucket"
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
// calls at once, each sending one message just under
// --max-message-size: the server receives at most MaxReceiving of them
// at a time (the others wait in their flow-control windows: 1 MiB a
// stream, 16 MiB the connection), so its heap grows by about MaxReceiving
// messages and a connection window, not by all of them; each
// is refused as oversized; and a normal client's calls, made meanwhile,
// succeed.
func TestReceiveGate(t *testing.T) {
	const (
		maxMsg    = 8 << 20
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
		// under -race on 2 loaded cores); ungated, the heap grows by ~250 MiB.
		{"gated", receiving, receiving*maxMsg + hostile*flight.RecvWindowBytes + 64<<20},
		{"ungated", hostile * 2, 0}, // the same calls without the gate, for the log
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, bucket.NewMem(), envOpts{flight: func(o *flight.Options) {
				o.MaxRecvMessageBytes = maxMsg
				o.MaxReceiving = tc.receiving
			}})
			e.createProject("p")
			e.mustPut("p", "main", "t", 0, 10, 10, 4)
			ctx := ctxT(t)
			conn, err := grpc.NewClient(e.addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
				grpc.WithDefaultCallOptions(grpc.ForceCodecV2(rawCodec{})))
			require.NoError(t, err)
			t.Cleanup(func() { _ = conn.Close() })
			body := make([]byte, maxMsg-1<<10)
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
			t.Logf("%d hostile calls of %d MiB, %d received at once: heap grew by %d MiB at its peak", hostile, maxMsg>>20, tc.receiving, grew>>20)
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
