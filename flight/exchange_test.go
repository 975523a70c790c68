package flight_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	arrowflight "github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"

	"github.com/weftdata/weft/bucket"
	"github.com/weftdata/weft/client"
	"github.com/weftdata/weft/flight"
	"github.com/weftdata/weft/internal/membudget"
	"github.com/weftdata/weft/mix"
	"github.com/weftdata/weft/slots"
)

// slotEnv is a server with a memory budget that records the rings it makes.
type slotEnv struct {
	*env
	budget *membudget.Budget
	mu     sync.Mutex
	rings  []*slots.Ring
}

func newSlotEnv(t *testing.T, o ...envOpts) *slotEnv {
	t.Helper()
	b, err := membudget.New(membudget.Options{Total: 4 << 30, MaxWait: time.Second})
	require.NoError(t, err)
	se := &slotEnv{budget: b}
	eo := envOpts{}
	if len(o) > 0 {
		eo = o[0]
	}
	eo.budget = b
	userFlight := eo.flight
	eo.flight = func(fo *flight.Options) {
		fo.SlotInlineBytes = 0 // every step in a slot, unless the test says otherwise
		if userFlight != nil {
			userFlight(fo)
		}
	}
	se.env = newEnv(t, bucket.NewMem(), eo)
	flight.SetRingHook(se.svc, func(r *slots.Ring) {
		se.mu.Lock()
		defer se.mu.Unlock()
		se.rings = append(se.rings, r)
	})
	return se
}

func (se *slotEnv) ringList() []*slots.Ring {
	se.mu.Lock()
	defer se.mu.Unlock()
	return append([]*slots.Ring(nil), se.rings...)
}

// waitFreed waits (without a time limit of its own: the test's deadline
// bounds it) until every ring's file is gone and the budget is back at
// used bytes, then checks both.
func (se *slotEnv) waitFreed(used int64) {
	se.t.Helper()
	for {
		gone := true
		for _, r := range se.ringList() {
			if _, err := os.Stat(r.Path()); !errors.Is(err, os.ErrNotExist) {
				gone = false
			}
		}
		if gone && se.budget.Stats().Used == used {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// ipcBytes is a step's batch as one IPC stream: equal bytes, equal batches.
func ipcBytes(t *testing.T, rec arrow.RecordBatch) []byte {
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(rec.Schema()))
	require.NoError(t, w.Write(rec))
	require.NoError(t, w.Close())
	return buf.Bytes()
}

type gotStep struct {
	step  int64
	bytes []byte
	slot  bool
}

func readAll(t *testing.T, steps func(yield func(*client.Step, error) bool)) []gotStep {
	var out []gotStep
	for st, err := range steps {
		require.NoError(t, err)
		out = append(out, gotStep{step: st.Step, bytes: ipcBytes(t, st.Batch), slot: st.Slot != nil})
	}
	return out
}

// TestExchangeIdentical: host slots and DoGet give byte-identical steps
// (small rows, 100 KiB rows, a windowed recipe); every ring is unlinked
// and the budget back at its baseline after each stream.
func TestExchangeIdentical(t *testing.T) {
	se := newSlotEnv(t)
	e := se.env
	e.createProject("p")
	e.mustPut("p", "main", "a", 0, 600, 100, 16)
	e.mustPut("p", "main", "b", 1000, 900, 300, 16)
	e.mustPut("p", "main", "big", 0, 96, 32, 100<<10)
	e.mustPut("p", "main", "big2", 1000, 64, 32, 100<<10)
	ep := putEpisodeTable(t, e)
	base := se.budget.Stats().Used
	for _, tc := range []struct {
		name   string
		recipe client.Recipe
	}{
		{"small rows", mixRecipe("p")},
		{"100 KiB rows", client.Recipe{Seed: 7, BatchSize: 32, Components: []client.Component{{Project: "p", Table: "big", Weight: 0.3}, {Project: "p", Table: "big2", Weight: 0.7}}}},
		{"rows window", ep},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan, err := e.c.Resolve(ctxT(t), tc.recipe, 1)
			require.NoError(t, err)
			g0, c0, _ := flight.SlotSteps(e.svc)
			plain := readAll(t, e.c.ReadRank(ctxT(t), plan.Ranks[0]))
			shm := readAll(t, e.c.ReadRankShm(ctxT(t), plan.Ranks[0]))
			flightx := readAll(t, e.c.ReadRankExchange(ctxT(t), plan.Ranks[0], client.DeliveryFlight))
			require.NotEmpty(t, plain)
			require.Len(t, shm, len(plain))
			inSlots := 0
			for i := range plain {
				require.Equal(t, plain[i].step, shm[i].step)
				require.True(t, bytes.Equal(plain[i].bytes, shm[i].bytes), "step %d differs", plain[i].step)
				require.Equal(t, plain[i], flightx[i])
				if shm[i].slot {
					inSlots++
				}
			}
			require.Equal(t, len(shm), inSlots, "every step fits its slot")
			g, c, rc := flight.SlotSteps(e.svc)
			t.Logf("steps gathered into their slot %d (bytes re-copied so far %d), copied into one %d", g-g0, rc, c-c0)
			require.EqualValues(t, len(shm), (g-g0)+(c-c0), "every step is gathered into its slot or copied into one")
			require.Positive(t, g-g0, "once the ring exists, steps are gathered into their slots")
			se.waitFreed(base)
		})
	}
	require.Len(t, se.ringList(), 3, "one ring per shm exchange, none for plain ones")
}

// shmEqualsDoGet reads a rank with DoGet and over host slots, requires the
// same steps byte for byte, and counts the steps that came in slots and
// inline.
func shmEqualsDoGet(t *testing.T, e *env, rank client.RankEndpoint) (inSlots, inline int) {
	t.Helper()
	plain := readAll(t, e.c.ReadRank(ctxT(t), rank))
	shm := readAll(t, e.c.ReadRankShm(ctxT(t), rank))
	require.Len(t, shm, len(plain))
	for i := range plain {
		require.Equal(t, plain[i].bytes, shm[i].bytes, "step %d", i)
		if shm[i].slot {
			inSlots++
		} else {
			inline++
		}
	}
	return inSlots, inline
}

// TestExchangeInline: steps too large for a slot come inline (in parts
// over StepMessageBytes), the others in slots, in one exchange; the steps
// equal DoGet's.
func TestExchangeInline(t *testing.T) {
	se := newSlotEnv(t, envOpts{flight: func(o *flight.Options) { o.StepMessageBytes = 4 << 10 }})
	e := se.env
	flight.SetSlotBytes(e.svc, 4<<10)
	e.createProject("p")
	e.mustPut("p", "main", "a", 0, 400, 100, 16)
	e.mustPut("p", "main", "big", 1000, 40, 20, 5<<10)
	base := se.budget.Stats().Used
	plan, err := e.c.Resolve(ctxT(t), client.Recipe{Seed: 5, BatchSize: 8, Components: []client.Component{{Project: "p", Table: "a", Weight: 0.9}, {Project: "p", Table: "big", Weight: 0.1}}}, 1)
	require.NoError(t, err)
	inSlots, inline := shmEqualsDoGet(t, e, plan.Ranks[0])
	require.Positive(t, inSlots, "%d inline, %d rings", inline, len(se.ringList()))
	require.Positive(t, inline)
	se.waitFreed(base)
}

// TestExchangeSmallStepsInline: with SlotInlineBytes, steps under it
// travel inline in the host-slot exchange and larger ones in slots; both
// equal DoGet's. The ring of a stream whose first step is small has three
// slots.
func TestExchangeSmallStepsInline(t *testing.T) {
	se := newSlotEnv(t, envOpts{flight: func(o *flight.Options) { o.SlotInlineBytes = 2 << 10 }})
	e := se.env
	e.createProject("p")
	e.mustPut("p", "main", "a", 0, 400, 100, 16)
	e.mustPut("p", "main", "big", 1000, 40, 20, 5<<10)
	base := se.budget.Stats().Used
	plan, err := e.c.Resolve(ctxT(t), client.Recipe{Seed: 5, BatchSize: 8, Components: []client.Component{{Project: "p", Table: "a", Weight: 0.9}, {Project: "p", Table: "big", Weight: 0.1}}}, 1)
	require.NoError(t, err)
	inSlots, inline := shmEqualsDoGet(t, e, plan.Ranks[0])
	require.Positive(t, inSlots, "steps with a 5 KiB row go in slots")
	require.Positive(t, inline, "steps of small rows go inline")
	se.waitFreed(base)

	small, err := e.c.Resolve(ctxT(t), client.Recipe{Seed: 5, BatchSize: 8, Components: []client.Component{{Project: "p", Table: "a"}}}, 1)
	require.NoError(t, err)
	rings := len(se.ringList())
	got := readAll(t, e.c.ReadRankShm(ctxT(t), small.Ranks[0]))
	require.NotEmpty(t, got)
	for i, st := range got {
		require.False(t, st.slot, "step %d of 8 small rows goes inline", i)
	}
	require.Len(t, se.ringList(), rings+1)
	require.Equal(t, 3, se.ringList()[rings].Slots(), "a stream whose first step is small gets the smallest ring")
	se.waitFreed(base)
}

// putEpisodeTable stores an episode table and returns a recipe with a rows
// window over it.
func putEpisodeTable(t *testing.T, e *env) client.Recipe {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "episode_index", Type: arrow.PrimitiveTypes.Int64},
		{Name: "x", Type: arrow.PrimitiveTypes.Int64},
	}, nil)
	bld := array.NewRecordBuilder(e.cmem, schema)
	for i := range int64(300) {
		bld.Field(0).(*array.Int64Builder).Append(i / 7)
		bld.Field(1).(*array.Int64Builder).Append(i * 3)
	}
	rec := bld.NewRecordBatch()
	bld.Release()
	rr, err := array.NewRecordReader(schema, []arrow.RecordBatch{rec})
	require.NoError(t, err)
	rec.Release()
	_, err = e.c.Put(ctxT(t), client.PutDescriptor{Project: "p", Branch: "main", Table: "ep"}, rr)
	rr.Release()
	require.NoError(t, err)
	return client.Recipe{Seed: 1, BatchSize: 8, Components: []client.Component{{Project: "p", Table: "ep", Weight: 1,
		Windows: map[string]client.Window{"x": {Kind: "rows", Spec: json.RawMessage(`{"offsets":[-1,0,2],"pad":true}`)}}}}}
}

// rawExchange opens an exchange for ticket by hand and returns the stream
// and its header (nil for a plain one).
func rawExchange(ctx context.Context, t *testing.T, e *env, ticket []byte, delivery string) (arrowflight.FlightService_DoExchangeClient, *client.SlotsHeader) {
	stream, err := e.client.DoExchange(ctx)
	require.NoError(t, err)
	cmd, err := json.Marshal(client.ExchangeCommand{RankExchange: &client.RankExchange{Ticket: ticket, Delivery: delivery}})
	require.NoError(t, err)
	require.NoError(t, stream.Send(&arrowflight.FlightData{FlightDescriptor: &arrowflight.FlightDescriptor{Type: arrowflight.DescriptorCMD, Cmd: cmd}}))
	first, err := stream.Recv()
	require.NoError(t, err)
	require.NotEmpty(t, first.DataHeader, "the first message is the schema")
	var h client.SlotsHeader
	if client.Decode("header", first.AppMetadata, &h) != nil {
		return stream, nil // plain: no header (perhaps the first step's metadata)
	}
	again, err := stream.Recv()
	require.NoError(t, err)
	require.Empty(t, again.DataHeader, "the header again, on its own")
	require.Equal(t, first.AppMetadata, again.AppMetadata)
	return stream, &h
}

func recvSlot(t *testing.T, stream arrowflight.FlightService_DoExchangeClient) client.SlotStepMetadata {
	fd, err := stream.Recv()
	require.NoError(t, err)
	require.Empty(t, fd.DataHeader)
	require.Empty(t, fd.DataBody)
	var m client.SlotStepMetadata
	require.NoError(t, client.Decode("slot step", fd.AppMetadata, &m))
	require.NotNil(t, m.Slot)
	return m
}

// requireOwnPages checks the host-slot layout's promise (docs/flight.md,
// "Host slots"): every slot starts on a 4 KiB page boundary, and each held
// step's message lies in its own slot, so no page holds bytes of two of
// the steps a client holds.
func requireOwnPages(t *testing.T, h *client.SlotsHeader, held []client.SlotStepMetadata) {
	t.Helper()
	const page = 4096
	require.Zero(t, h.SlotBytes%page, "slot_bytes %d is a whole number of pages", h.SlotBytes)
	pages := map[int64]int64{} // page → the step with bytes on it
	for _, m := range held {
		d := m.Slot
		lo, hi := int64(d.Slot)*h.SlotBytes, int64(d.Slot+1)*h.SlotBytes
		require.True(t, d.Offset >= lo && d.Offset+d.Length <= hi, "step %d [%d, %d) lies in its slot [%d, %d)", m.Step, d.Offset, d.Offset+d.Length, lo, hi)
		for p := d.Offset / page; p <= (d.Offset+d.Length-1)/page; p++ {
			other, ok := pages[p]
			require.False(t, ok, "page %d holds bytes of steps %d and %d", p, other, m.Step)
			pages[p] = m.Step
		}
	}
}

func sendRelease(t *testing.T, stream arrowflight.FlightService_DoExchangeClient, meta string) {
	require.NoError(t, stream.Send(&arrowflight.FlightData{AppMetadata: []byte(meta)}))
}

// smallRun plans a run of many small steps (125 of 8 rows).
func smallRun(t *testing.T, e *env, w int) *client.RunPlan {
	e.createProject("p")
	e.mustPut("p", "main", "a", 0, 1000, 250, 16)
	plan, err := e.c.Resolve(ctxT(t), client.Recipe{Seed: 3, BatchSize: 8, Components: []client.Component{{Project: "p", Table: "a"}}}, w)
	require.NoError(t, err)
	return plan
}

// TestExchangeWaitsForRelease: a client that holds every slot makes the
// server wait in Acquire (its ring full, the next step not sent); a
// release lets exactly that slot be reused, at the next generation. The
// client then cancels: ring unlinked, budget back.
func TestExchangeWaitsForRelease(t *testing.T) {
	se := newSlotEnv(t)
	e := se.env
	plan := smallRun(t, e, 1)
	base := se.budget.Stats().Used
	ctx, cancel := context.WithCancel(ctxT(t))
	defer cancel()
	stream, h := rawExchange(ctx, t, e, plan.Ranks[0].Ticket, client.DeliveryShm)
	require.NotNil(t, h)
	require.Equal(t, client.DeliveryShm, h.Delivery)
	require.Equal(t, plan.Record.Run, h.Run)
	require.GreaterOrEqual(t, h.Slots, 3)
	require.Zero(t, h.SlotBytes%slots.SlotAlign)
	rings := se.ringList()
	require.Len(t, rings, 1)
	ring := rings[0]
	require.Equal(t, ring.Path(), h.Ring)
	fi, err := os.Stat(h.Ring)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "only the server's user may open a ring")
	require.GreaterOrEqual(t, se.budget.Stats().Used-base, int64(h.Slots)*h.SlotBytes, "the ring counts against the budget")

	var held []client.SlotStepMetadata
	for i := range h.Slots {
		m := recvSlot(t, stream)
		require.EqualValues(t, i, m.Step)
		require.EqualValues(t, 1, m.Slot.Generation)
		held = append(held, m)
	}
	for ring.Waiting() != 1 { // the server's next Acquire blocks
		time.Sleep(time.Millisecond)
	}
	require.Equal(t, h.Slots, ring.Held())
	requireOwnPages(t, h, held)

	first := held[0].Slot
	sendRelease(t, stream, `{"slot":`+itoa(int64(first.Slot))+`,"generation":1}`)
	m := recvSlot(t, stream)
	require.EqualValues(t, h.Slots, m.Step)
	require.Equal(t, first.Slot, m.Slot.Slot, "the released slot, and only it, is reused")
	require.EqualValues(t, 2, m.Slot.Generation)
	for ring.Waiting() != 1 {
		time.Sleep(time.Millisecond)
	}
	require.Equal(t, h.Slots, ring.Held())

	cancel()
	se.waitFreed(base)
}

// TestExchangeClientEndsEarly: a client that ends its side before the
// end message (a loader stopped early, which holds every slot) stops the
// exchange: the call ends with OK, and the ring is freed before its
// status comes (the Python loader destroys its release events only then,
// docs/gpu.md "The end of an exchange"). A plain exchange's client may
// end its side at once and still reads every step.
func TestExchangeClientEndsEarly(t *testing.T) {
	se := newSlotEnv(t)
	e := se.env
	plan := smallRun(t, e, 1)
	base := se.budget.Stats().Used
	t.Run("host slots", func(t *testing.T) {
		stream, h := rawExchange(ctxT(t), t, e, plan.Ranks[0].Ticket, client.DeliveryShm)
		require.NotNil(t, h)
		rings := se.ringList()
		ring := rings[len(rings)-1]
		for range h.Slots {
			recvSlot(t, stream)
		}
		for ring.Waiting() != 1 { // every slot held: the server waits for a release
			time.Sleep(time.Millisecond)
		}
		require.NoError(t, stream.CloseSend())
		var err error
		for err == nil {
			_, err = stream.Recv()
		}
		require.ErrorIs(t, err, io.EOF, "the call ends with OK")
		_, serr := os.Stat(ring.Path())
		require.ErrorIs(t, serr, os.ErrNotExist, "the ring is freed before the call's status")
		require.Equal(t, base, se.budget.Stats().Used)
	})
	t.Run("plain", func(t *testing.T) {
		flight.SetLocalPeer(e.svc, func(context.Context) bool { return false })
		want := len(readAll(t, e.c.ReadRank(ctxT(t), plan.Ranks[0])))
		stream, h := rawExchange(ctxT(t), t, e, plan.Ranks[0].Ticket, client.DeliveryShm)
		require.Nil(t, h)
		require.NoError(t, stream.CloseSend())
		steps := 0 // record batches after the schema (rawExchange read it)
		for {
			fd, err := stream.Recv()
			if errors.Is(err, io.EOF) {
				break
			}
			require.NoError(t, err)
			if len(fd.DataHeader) > 0 {
				steps++
			}
		}
		require.Equal(t, want, steps)
	})
}

// endBeforeRing opens an exchange of ticket by hand, sends its command
// and ends its side at once, before the server made its ring: the ring
// hook waits until the server has seen that end. It returns every message
// the call sent until its status, which must be OK (io.EOF), failing at
// once on a step's message. The rings made are recorded as newSlotEnv's.
func (se *slotEnv) endBeforeRing(ctx context.Context, t *testing.T, ticket []byte, delivery string) []*arrowflight.FlightData {
	t.Helper()
	ended := make(chan struct{})
	var once sync.Once
	flight.SetClientEndHook(se.svc, func() { once.Do(func() { close(ended) }) })
	flight.SetRingHook(se.svc, func(r *slots.Ring) {
		select { // made once the server saw the client's end (or the test is over)
		case <-ended:
		case <-ctx.Done():
		}
		se.mu.Lock()
		defer se.mu.Unlock()
		se.rings = append(se.rings, r)
	})
	defer flight.SetClientEndHook(se.svc, nil)
	stream, err := se.client.DoExchange(ctx)
	require.NoError(t, err)
	cmd, err := json.Marshal(client.ExchangeCommand{RankExchange: &client.RankExchange{Ticket: ticket, Delivery: delivery}})
	require.NoError(t, err)
	require.NoError(t, stream.Send(&arrowflight.FlightData{FlightDescriptor: &arrowflight.FlightDescriptor{Type: arrowflight.DescriptorCMD, Cmd: cmd}}))
	require.NoError(t, stream.CloseSend())
	var got []*arrowflight.FlightData
	for {
		fd, err := stream.Recv()
		if err != nil {
			require.ErrorIs(t, err, io.EOF, "the call ends with OK")
			return got
		}
		got = append(got, fd)
		require.LessOrEqual(t, len(got), 2, "only the header (the schema with it, and again on its own) comes: no step; got %q", fd.AppMetadata)
	}
}

// TestExchangeClientEndsBeforeRing: a client that ends its side right
// after its command, before the server made its ring (it will release
// nothing), stops the exchange when the ring is made (docs/flight.md,
// "End."): the header comes, then the call ends with OK with no step, and
// the ring is freed and the budget back before that status. The server
// used to fill the ring and wait for a release until the client
// cancelled, holding the ring.
func TestExchangeClientEndsBeforeRing(t *testing.T) {
	se := newSlotEnv(t)
	plan := smallRun(t, se.env, 1)
	base := se.budget.Stats().Used
	got := se.endBeforeRing(ctxT(t), t, plan.Ranks[0].Ticket, client.DeliveryShm)
	require.Len(t, got, 2)
	require.NotEmpty(t, got[0].DataHeader, "the schema")
	var h client.SlotsHeader
	require.NoError(t, client.Decode("header", got[0].AppMetadata, &h))
	require.Equal(t, client.DeliveryShm, h.Delivery)
	require.Equal(t, got[0].AppMetadata, got[1].AppMetadata, "the header again, on its own")
	rings := se.ringList()
	require.Len(t, rings, 1)
	require.Equal(t, h.Ring, rings[0].Path())
	_, err := os.Stat(h.Ring)
	require.ErrorIs(t, err, os.ErrNotExist, "the ring is freed before the call's status")
	require.Equal(t, base, se.budget.Stats().Used)
}

// TestExchangeBadRelease: releases the ring refuses end the exchange with
// their code, and free the ring.
func TestExchangeBadRelease(t *testing.T) {
	se := newSlotEnv(t)
	e := se.env
	plan := smallRun(t, e, 1)
	base := se.budget.Stats().Used
	for _, tc := range []struct {
		name string
		meta func(d *client.SlotDescriptor) string
		code codes.Code
	}{
		{"stale generation", func(d *client.SlotDescriptor) string { return `{"slot":` + itoa(int64(d.Slot)) + `,"generation":7}` }, codes.FailedPrecondition},
		{"unknown slot", func(*client.SlotDescriptor) string { return `{"slot":99,"generation":1}` }, codes.InvalidArgument},
		{"zero generation", func(*client.SlotDescriptor) string { return `{"slot":` + itoa(h0slots-1) + `,"generation":0}` }, codes.InvalidArgument},
		{"unknown field", func(d *client.SlotDescriptor) string { return `{"slot":0,"generation":1,"x":1}` }, codes.InvalidArgument},
		{"not json", func(*client.SlotDescriptor) string { return `release` }, codes.InvalidArgument},
		{"an event on a host slot's release", func(d *client.SlotDescriptor) string {
			return `{"slot":` + itoa(int64(d.Slot)) + `,"generation":1,"event":"L2Rldi9udWxs"}`
		}, codes.InvalidArgument},
		{"double release", nil, codes.FailedPrecondition},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stream, h := rawExchange(ctxT(t), t, e, plan.Ranks[0].Ticket, client.DeliveryShm)
			require.NotNil(t, h)
			m := recvSlot(t, stream)
			if tc.meta == nil {
				rel := `{"slot":` + itoa(int64(m.Slot.Slot)) + `,"generation":1}`
				sendRelease(t, stream, rel)
				sendRelease(t, stream, rel)
			} else {
				sendRelease(t, stream, tc.meta(m.Slot))
			}
			var err error
			for err == nil {
				_, err = stream.Recv()
			}
			requireCode(t, err, tc.code)
			se.waitFreed(base)
		})
	}
}

// h0slots is a slot index that exists in every test ring (at least 3).
const h0slots = 3

// TestExchangePlainPeer: a peer that is not on the server's host gets the
// plain stream over the exchange, identical to DoGet, and no ring.
func TestExchangePlainPeer(t *testing.T) {
	se := newSlotEnv(t)
	e := se.env
	flight.SetLocalPeer(e.svc, func(context.Context) bool { return false })
	plan := smallRun(t, e, 1)
	plain := readAll(t, e.c.ReadRank(ctxT(t), plan.Ranks[0]))
	shm := readAll(t, e.c.ReadRankShm(ctxT(t), plan.Ranks[0]))
	require.Equal(t, plain, shm)
	require.Empty(t, se.ringList())

	// A release on a plain exchange is refused. (A run of 20 MB: the
	// server cannot finish its stream before the client reads on.)
	e.mustPut("p", "main", "big", 0, 200, 50, 100<<10)
	big, err := e.c.Resolve(ctxT(t), client.Recipe{Seed: 3, BatchSize: 8, Components: []client.Component{{Project: "p", Table: "big"}}}, 1)
	require.NoError(t, err)
	stream, h := rawExchange(ctxT(t), t, e, big.Ranks[0].Ticket, client.DeliveryShm)
	require.Nil(t, h)
	sendRelease(t, stream, `{"slot":0,"generation":1}`)
	for err == nil {
		_, err = stream.Recv()
	}
	requireCode(t, err, codes.InvalidArgument, "without host slots")
}

// TestExchangeTicket: the exchange checks its command and ticket as DoGet
// does.
func TestExchangeTicket(t *testing.T) {
	se := newSlotEnv(t)
	e := se.env
	plan := smallRun(t, e, 1)
	tampered := bytes.Clone(plan.Ranks[0].Ticket)
	tampered[len(tampered)/2] ^= 1
	for _, tc := range []struct {
		name string
		cmd  string
		code codes.Code
	}{
		{"tampered ticket", `{"rank_exchange":{"ticket":"` + base64.StdEncoding.EncodeToString(tampered) + `","delivery":"shm"}}`, codes.InvalidArgument},
		{"unknown field", `{"rank_exchange":{"ticket":"` + base64.StdEncoding.EncodeToString(plan.Ranks[0].Ticket) + `","delivery":"shm","x":1}}`, codes.InvalidArgument},
		{"bad delivery", `{"rank_exchange":{"ticket":"` + base64.StdEncoding.EncodeToString(plan.Ranks[0].Ticket) + `","delivery":"gpu"}}`, codes.InvalidArgument},
		{"no exchange", `{}`, codes.InvalidArgument},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stream, err := e.client.DoExchange(ctxT(t))
			require.NoError(t, err)
			require.NoError(t, stream.Send(&arrowflight.FlightData{FlightDescriptor: &arrowflight.FlightDescriptor{Type: arrowflight.DescriptorCMD, Cmd: []byte(tc.cmd)}}))
			_, err = stream.Recv()
			requireCode(t, err, tc.code)
		})
	}
	for _, err := range e.c.ReadRankShm(ctxT(t), client.RankEndpoint{Ticket: tampered}) {
		requireCode(t, err, codes.InvalidArgument)
	}
	require.Empty(t, se.ringList())
}

// TestExchangeFourRanks: 4 ranks of a run read at once each get their own
// ring; together they are the world-1 batches (rank r has positions r,
// r+4, … of each step).
func TestExchangeFourRanks(t *testing.T) {
	se := newSlotEnv(t)
	e := se.env
	plan := smallRun(t, e, 4)
	base := se.budget.Stats().Used
	one, err := e.c.Resume(ctxT(t), plan.Record.Run, 1, 0)
	require.NoError(t, err)
	global, err := e.readRank(ctxT(t), one.Ranks[0])
	require.NoError(t, err)
	type rows struct {
		comps []int32
		rows  []int64
	}
	got := make([][]rows, 4)
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for r := range 4 {
		wg.Go(func() {
			for st, err := range e.c.ReadRankShm(ctxT(t), plan.Ranks[r]) {
				if err != nil {
					errs[r] = err
					return
				}
				if st.Slot == nil {
					errs[r] = errors.New("a step came inline")
					return
				}
				sc := st.Batch.Schema()
				got[r] = append(got[r], rows{
					comps: append([]int32(nil), st.Batch.Column(sc.FieldIndices(mix.ComponentColumn)[0]).(*array.Int32).Int32Values()...),
					rows:  append([]int64(nil), st.Batch.Column(sc.FieldIndices(mix.RowColumn)[0]).(*array.Int64).Int64Values()...),
				})
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	rings := se.ringList()
	require.Len(t, rings, 4)
	paths := map[string]bool{}
	for _, r := range rings {
		paths[r.Path()] = true
	}
	require.Len(t, paths, 4, "a ring per rank")
	for s, g := range global {
		for i := range g.rows {
			r := got[i%4][s]
			require.Equal(t, g.rows[i], r.rows[i/4], "step %d position %d", s, i)
			require.Equal(t, g.comps[i], r.comps[i/4])
		}
	}
	se.waitFreed(base)
}

// TestExchangeClientKilled: a client process killed with SIGKILL while it
// holds slots frees them: the ring is unlinked and the budget returns to
// its baseline.
func TestExchangeClientKilled(t *testing.T) {
	if os.Getenv("WEFT_SLOT_CLIENT") != "" {
		return // the helper process's copy of this test
	}
	se := newSlotEnv(t)
	e := se.env
	plan := smallRun(t, e, 1)
	base := se.budget.Stats().Used
	cmd := exec.Command(os.Args[0], "-test.run=^TestExchangeClientProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), "WEFT_SLOT_CLIENT=1", "WEFT_SLOT_ADDR="+e.addr, "WEFT_SLOT_TICKET="+base64.StdEncoding.EncodeToString(plan.Ranks[0].Ticket))
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "holding\n", line)
	rings := se.ringList()
	require.Len(t, rings, 1)
	require.Positive(t, rings[0].Held())
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()
	se.waitFreed(base)
}

// TestExchangeClientProcess is the client TestExchangeClientKilled kills:
// it takes two steps (holding the second's slot), says so, and waits.
func TestExchangeClientProcess(t *testing.T) {
	if os.Getenv("WEFT_SLOT_CLIENT") == "" {
		t.Skip("run by TestExchangeClientKilled")
	}
	ticket, err := base64.StdEncoding.DecodeString(os.Getenv("WEFT_SLOT_TICKET"))
	require.NoError(t, err)
	c, err := client.Dial(os.Getenv("WEFT_SLOT_ADDR"), client.Options{Allocator: memory.NewGoAllocator()})
	require.NoError(t, err)
	n := 0
	for st, err := range c.ReadRankShm(context.Background(), client.RankEndpoint{Ticket: ticket}) {
		require.NoError(t, err)
		require.NotNil(t, st.Slot)
		if n++; n == 2 {
			_, _ = io.WriteString(os.Stdout, "holding\n")
			select {} // until killed
		}
	}
}
