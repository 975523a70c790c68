package flight_test

import (
	"errors"
	"io"
	"runtime"
	"testing"

	arrowflight "github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"

	"github.com/weftdata/weft/bucket"
	"github.com/weftdata/weft/flight"
)

// rawCodec sends pre-encoded messages as they are (no copy), and keeps
// what it receives as bytes: the test's own allocations stay out of the
// server's.
type rawCodec struct{}

type rawMsg struct{ b []byte }

func (rawCodec) Name() string { return "proto" }

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	return mem.BufferSlice{mem.SliceBuffer(v.(*rawMsg).b)}, nil
}

func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	v.(*rawMsg).b = data.Materialize()
	return nil
}

// TestOversizedRequests: a command message (a descriptor, an action, a
// ticket, criteria) over --max-command-size, or a DoPut or DoExchange
// message whose descriptor or app_metadata is, is refused with
// InvalidArgument before it is decoded: the server allocates about the
// request's size once (grpc's receive buffer), not the two more copies
// that decoding makes; and the connection keeps serving.
func TestOversizedRequests(t *testing.T) {
	const limit = 1 << 20 // MaxCommandBytes
	const size = 24 << 20 // each request's payload
	e := newEnv(t, bucket.NewMem(), envOpts{flight: func(o *flight.Options) {
		o.MaxCommandBytes = limit
	}})
	e.createProject("p")
	e.mustPut("p", "main", "t", 0, 10, 10, 4)
	ctx := ctxT(t)
	conn, err := grpc.NewClient(e.addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.ForceCodecV2(rawCodec{}), grpc.MaxCallRecvMsgSize(64<<20)))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })

	big := make([]byte, size)
	for i := range big {
		big[i] = 'a' + byte(i%26)
	}
	enc := func(m proto.Message) []byte {
		b, err := proto.Marshal(m)
		require.NoError(t, err)
		return b
	}
	const svc = "/arrow.flight.protocol.FlightService/"
	unary := func(method string, req []byte) func() error {
		return func() error { return conn.Invoke(ctx, svc+method, &rawMsg{req}, &rawMsg{}) }
	}
	stream := func(method string, client bool, reqs ...[]byte) func() error {
		return func() error {
			s, err := conn.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true, ClientStreams: client}, svc+method)
			if err != nil {
				return err
			}
			for _, r := range reqs {
				if err := s.SendMsg(&rawMsg{r}); err != nil {
					break // the server answered: RecvMsg says how
				}
			}
			_ = s.CloseSend()
			for {
				if err := s.RecvMsg(&rawMsg{}); err != nil {
					if errors.Is(err, io.EOF) {
						return nil
					}
					return err
				}
			}
		}
	}
	cmd := &arrowflight.FlightDescriptor{Type: arrowflight.DescriptorCMD, Cmd: big}
	for _, tc := range []struct {
		name     string
		call     func() error
		contains []string
	}{
		{"GetFlightInfo descriptor", unary("GetFlightInfo", enc(cmd)), []string{"FlightDescriptor", "--max-command-size"}},
		{"GetSchema descriptor", unary("GetSchema", enc(cmd)), []string{"FlightDescriptor", "--max-command-size"}},
		{"PollFlightInfo descriptor", unary("PollFlightInfo", enc(cmd)), []string{"FlightDescriptor", "--max-command-size"}},
		{"DoAction action", stream("DoAction", false, enc(&arrowflight.Action{Type: "log", Body: big})), []string{"Action", "--max-command-size"}},
		{"DoGet ticket", stream("DoGet", false, enc(&arrowflight.Ticket{Ticket: big})), []string{"longer than any ticket"}},
		{"ListFlights criteria", stream("ListFlights", false, enc(&arrowflight.Criteria{Expression: big})), []string{"Criteria", "--max-command-size"}},
		{"DoPut descriptor", stream("DoPut", true, enc(&arrowflight.FlightData{FlightDescriptor: cmd})), []string{"flight_descriptor", "--max-command-size"}},
		{"DoPut app_metadata", stream("DoPut", true, enc(&arrowflight.FlightData{FlightDescriptor: pathDesc("p", "main", "t")}), enc(&arrowflight.FlightData{AppMetadata: big})), []string{"app_metadata", "--max-command-size"}},
		{"DoExchange descriptor", stream("DoExchange", true, enc(&arrowflight.FlightData{FlightDescriptor: cmd})), []string{"flight_descriptor", "--max-command-size"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			err := tc.call()
			runtime.ReadMemStats(&after)
			requireCode(t, err, codes.InvalidArgument, tc.contains...)
			// Decoding allocates the request twice more than grpc's
			// receive buffer (pooled, so often reused): the proto codec's
			// gathered copy and protobuf's copy of the bytes field.
			grew := after.TotalAlloc - before.TotalAlloc
			t.Logf("allocated %d MiB for a %d MiB request", grew>>20, size>>20)
			require.Less(t, grew, uint64(size+size/2), "the server copied the oversized request")
			_, err = e.c.Branches(ctx, "p")
			require.NoError(t, err, "the server still answers")
			require.NoError(t, unary("GetFlightInfo", enc(pathDesc("p", "main", "t")))(), "the connection still serves")
		})
	}

	// At the limit, a command is decoded and judged by its handler.
	t.Run("at the limit", func(t *testing.T) {
		err := unary("GetFlightInfo", enc(&arrowflight.FlightDescriptor{Type: arrowflight.DescriptorCMD, Cmd: big[:limit+1]}))()
		requireCode(t, err, codes.InvalidArgument, "for one JSON input (--max-command-size)")
	})
	// A put's data body is bounded by MaxRecvMessageBytes only.
	t.Run("put body", func(t *testing.T) {
		_, err := e.put(ctx, pathDesc("p", "main", "u"), testSchema, makeBatch(e.cmem, 0, 4096, 1024)) // ~4 MiB in one message
		require.NoError(t, err)
	})
}
