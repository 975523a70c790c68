package flight_test

import (
	"errors"
	"fmt"
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
// ticket, criteria, an exchange's first message) over --max-command-size
// plus 64 KiB is refused by grpc before it is received (ResourceExhausted,
// naming the bound), and a DoPut message whose descriptor or app_metadata
// is over --max-command-size is refused with InvalidArgument before it is
// decoded: the server allocates about the request's size once at most
// (grpc's receive buffer), not the two more copies that decoding makes;
// and the connection keeps serving.
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
	// grpc's refusal of a message over its bound: a command and 64 KiB.
	bound := fmt.Sprintf(" vs. %d)", limit+64<<10)
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
		code     codes.Code
		contains []string
	}{
		{"GetFlightInfo descriptor", unary("GetFlightInfo", enc(cmd)), codes.ResourceExhausted, []string{bound}},
		{"GetSchema descriptor", unary("GetSchema", enc(cmd)), codes.ResourceExhausted, []string{bound}},
		{"PollFlightInfo descriptor", unary("PollFlightInfo", enc(cmd)), codes.ResourceExhausted, []string{bound}},
		{"DoAction action", stream("DoAction", false, enc(&arrowflight.Action{Type: "log", Body: big})), codes.ResourceExhausted, []string{bound}},
		{"DoGet ticket", stream("DoGet", false, enc(&arrowflight.Ticket{Ticket: big})), codes.ResourceExhausted, []string{bound}},
		{"ListFlights criteria", stream("ListFlights", false, enc(&arrowflight.Criteria{Expression: big})), codes.ResourceExhausted, []string{bound}},
		{"DoPut descriptor", stream("DoPut", true, enc(&arrowflight.FlightData{FlightDescriptor: cmd})), codes.InvalidArgument, []string{"flight_descriptor", "--max-command-size"}},
		{"DoPut app_metadata", stream("DoPut", true, enc(&arrowflight.FlightData{FlightDescriptor: pathDesc("p", "main", "t")}), enc(&arrowflight.FlightData{AppMetadata: big})), codes.InvalidArgument, []string{"app_metadata", "--max-command-size"}},
		{"DoExchange descriptor", stream("DoExchange", true, enc(&arrowflight.FlightData{FlightDescriptor: cmd})), codes.ResourceExhausted, []string{bound}},
		// Under grpc's bound, over the codec's: refused before decoding.
		{"DoGet ticket under the bound", stream("DoGet", false, enc(&arrowflight.Ticket{Ticket: big[:limit]})), codes.InvalidArgument, []string{"longer than any ticket"}},
		{"DoExchange app_metadata under the bound", stream("DoExchange", true, enc(&arrowflight.FlightData{AppMetadata: big[:limit+1]})), codes.InvalidArgument, []string{"app_metadata", "--max-command-size"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			err := tc.call()
			runtime.ReadMemStats(&after)
			requireCode(t, err, tc.code, tc.contains...)
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
