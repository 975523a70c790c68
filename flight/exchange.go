package flight

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	arrowflight "github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/peer"

	"github.com/weftdata/weft/auth"
	"github.com/weftdata/weft/client"
	"github.com/weftdata/weft/errdefs"
	"github.com/weftdata/weft/gpu"
	"github.com/weftdata/weft/mix"
	"github.com/weftdata/weft/slots"
)

// DoExchange serves a rank's steps (docs/flight.md, "Host slots"): the
// first client message's CMD descriptor is a client.ExchangeCommand with
// the rank's ticket, verified as DoGet verifies it. With delivery "shm", a
// peer on this host and a ring the budget allows, each step is written
// into a slot of a ring in /dev/shm and only its descriptor is sent; the
// client's messages release slots. Otherwise the exchange carries the same
// messages as DoGet. Whenever the exchange ends, the ring's slots are
// released, its file unlinked and its bytes returned to the budget.
func (s *Service) DoExchange(stream arrowflight.FlightService_DoExchangeServer) error {
	ctx := stream.Context()
	s.hook("DoExchange")
	return s.status(ctx, "DoExchange", s.doExchange(ctx, stream))
}

func (s *Service) doExchange(ctx context.Context, stream arrowflight.FlightService_DoExchangeServer) error {
	first, err := stream.Recv()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return fmt.Errorf("%w: the exchange ended before its first message; send a CMD descriptor with {\"rank_exchange\": ...}", ErrBadRequest)
		}
		return err
	}
	d := first.GetFlightDescriptor()
	if d == nil || d.GetType() != arrowflight.DescriptorCMD {
		return fmt.Errorf("%w: the exchange's first message needs a CMD descriptor with {\"rank_exchange\": {\"ticket\", \"delivery\"}}", ErrBadRequest)
	}
	if err := s.checkLen("exchange command", d.GetCmd()); err != nil {
		return err
	}
	var cmd client.ExchangeCommand
	if err := decode(ErrBadRequest, "exchange command", d.GetCmd(), &cmd); err != nil {
		return err
	}
	rx := cmd.RankExchange
	kind, payload, err := s.decodeTicket(ctx, rx.Ticket)
	if err != nil {
		return err
	}
	if kind != kindRank {
		return fmt.Errorf("%w: rank_exchange takes a rank ticket (an endpoint of a run plan), not a ticket of kind %d", ErrBadTicket, kind)
	}
	rt, err := decodeRankTicket(payload)
	if err != nil {
		return err
	}
	for _, p := range rt.projects() {
		if err := allow(ctx, p, auth.Read); err != nil {
			return err
		}
	}
	release, err := s.slot(ctx, s.lim.streams, "DoGet streams", s.opts.MaxStreams, "--max-streams")
	if err != nil {
		return err
	}
	defer release()

	// The client's messages (releases) are read by their own goroutine; a
	// bad one ends the exchange with its error.
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	x := &exchange{s: s, stream: stream, cancel: cancel, done: make(chan struct{})}
	defer x.closeRing() // after the wait for the client's end, below
	go x.readReleases()
	err = s.serveRank(ctx, rt, func(run *mix.Run, stepBytes int64) (rankSink, error) {
		if rx.Delivery == client.DeliveryCudaIPC && s.localPeer(ctx) {
			return x.cudaSink(run, stepBytes, run.BatchSize()/rt.World), nil
		}
		if rx.Delivery != client.DeliveryFlight && s.localPeer(ctx) {
			return x.shmSink(run, stepBytes), nil
		}
		return s.newPlainSink(stream, run), nil
	})
	cerr := context.Cause(ctx)
	if errors.Is(cerr, errClientEnded) {
		return nil // the client stopped early; the rings are freed (closeRing) before the call ends: it waits for that
	}
	if cerr != nil && !errors.Is(cerr, context.Canceled) {
		return cerr // a bad release, which cancelled the steps
	}
	if err == nil {
		// Every step is sent: say so, and wait for the client to end its
		// side (it does on this message) before the call ends. A call that
		// ends while the client's side is open is reset, and the client
		// may then lose the last messages it had not read yet.
		return x.end(ctx, rt.Run)
	}
	return err
}

// end sends the end message ({"run","end":true}: no step comes after it)
// and waits for the client to end its side (awaitClientEnd). It returns
// the send's error: the client is gone then, with nothing to wait for.
func (x *exchange) end(ctx context.Context, run mix.RunID) error {
	meta, err := json.Marshal(client.ExchangeEnd{Run: string(run), End: true})
	if err != nil {
		return err
	}
	x.ending.Store(true)
	if err := x.stream.Send(&arrowflight.FlightData{AppMetadata: meta}); err != nil {
		return err
	}
	x.awaitClientEnd(ctx)
	return nil
}

// exchangeEndWait bounds how long a finished exchange without device
// slots waits for its client to end its side of the stream.
const exchangeEndWait = 30 * time.Second

// awaitClientEnd waits, once the end message is sent, for the client to
// end its side (x.done) or for the call to end (ctx: the client cancelled,
// or died). The rings are freed after it (closeRing), so this is the
// order at an exchange's end (docs/gpu.md, "The end of an exchange"):
//
//   - with device slots, it waits without a bound. The client ends its
//     side only once every step it handed on is released and it closed
//     the slots' IPC handles; a trainer may hold up to its prefetch of
//     steps for as long as its steps take, and on CUDA freeing memory
//     another process still has open is undefined behaviour. A dead
//     client's call ends (its connection goes), and with it its
//     mappings: its slots are freed then.
//   - with host slots only, it waits at most exchangeEndWait: a client's
//     mapping of the ring stays valid after the ring's file is unlinked.
func (x *exchange) awaitClientEnd(ctx context.Context) {
	x.mu.Lock()
	device := len(x.drings) > 0
	x.mu.Unlock()
	var bound <-chan time.Time
	if !device {
		bound = time.After(exchangeEndWait)
	}
	select {
	case <-x.done:
	case <-ctx.Done():
	case <-bound:
	}
}

// isLocalPeer says whether the call's peer is on this host: a loopback IP
// or a unix socket.
func isLocalPeer(ctx context.Context) bool {
	p, ok := peer.FromContext(ctx)
	if !ok || p.Addr == nil {
		return false
	}
	switch a := p.Addr.(type) {
	case *net.TCPAddr:
		return a.IP.IsLoopback()
	case *net.UnixAddr:
		return true
	}
	return false
}

// exchange is one DoExchange's state shared with its release reader.
type exchange struct {
	s      *Service
	stream arrowflight.FlightService_DoExchangeServer
	cancel context.CancelCauseFunc
	done   chan struct{} // closed when the client's side has ended
	// ending is set before the end message is sent: no step is written
	// into a slot after it, so a device release's event is not opened (the
	// client may close it meanwhile: it does once its steps are released).
	ending atomic.Bool

	mu   sync.Mutex
	ring *slots.Ring // nil: plain delivery (releases are refused)
	// endedEarly: the client ended its side before the end message
	// (readReleases); setRing stops an exchange whose ring comes after.
	endedEarly bool
	// drings are the device rings of a "cuda-ipc" exchange (none: no
	// device slots), each numbering its slots after the one before (a
	// larger ring for steps with larger frames, gpuexchange.go's grow).
	drings []*gpu.DeviceRing
}

// dring is the device ring whose slots include index; nil: none.
func (x *exchange) dring(index int) *gpu.DeviceRing {
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, r := range x.drings {
		if r.Contains(index) {
			return r
		}
	}
	return nil
}

// readReleases reads the client's messages until the stream ends: each
// one with app_metadata must be a client.SlotRelease of a slot the client
// holds. A message without app_metadata (pyarrow's writer.begin sends a
// schema) is ignored. It leaves the ring to the handler, which closes it;
// a release after that is refused by the ring and ends nothing.
//
// A client that ends its side before the end message, on an exchange
// with slots (it stops early: it will release no more), stops the
// exchange (errClientEnded): no more steps, the rings are freed, and the
// call ends with OK only then. The Python loader stopped early waits for
// that end before it destroys its release events (flightd's decode may
// wait on one until then; docs/gpu.md, "The end of an exchange"). A plain
// exchange's client may end its side at once and still read every step.
// Every exchange with slots has a host ring (a "cuda-ipc" exchange's
// header and host columns go through it), set once its header is sent
// (setRing): a client that ends its side before that is remembered
// (endedEarly), and setRing stops the exchange then, before its first
// step.
func (x *exchange) readReleases() {
	defer close(x.done)
	for {
		fd, err := x.stream.Recv()
		if err != nil {
			if errors.Is(err, io.EOF) && x.s.clientEndHook != nil {
				x.s.clientEndHook()
			}
			if errors.Is(err, io.EOF) && !x.ending.Load() {
				x.mu.Lock()
				x.endedEarly = true
				slotted := x.ring != nil
				x.mu.Unlock()
				if slotted {
					x.cancel(errClientEnded)
				}
			}
			return // io.EOF: the client sends no more; else the call ended
		}
		if err := x.release(fd); err != nil {
			x.cancel(err)
			return
		}
	}
}

func (x *exchange) release(fd *arrowflight.FlightData) error {
	if len(fd.GetAppMetadata()) == 0 {
		return nil
	}
	if len(fd.GetDataBody()) > 0 {
		return fmt.Errorf("%w: a release message has a body; send only app_metadata {\"slot\", \"generation\"}", ErrBadRequest)
	}
	if err := x.s.checkLen("slot release", fd.GetAppMetadata()); err != nil {
		return err
	}
	var r client.SlotRelease
	if err := decode(ErrBadRequest, "slot release", fd.GetAppMetadata(), &r); err != nil {
		return err
	}
	x.mu.Lock()
	ring, devices := x.ring, len(x.drings) > 0
	x.mu.Unlock()
	if r.Device {
		if !devices {
			return fmt.Errorf("%w: a device slot release on an exchange served without device slots", ErrBadRequest)
		}
		dring := x.dring(r.Slot)
		if dring == nil {
			return fmt.Errorf("device slot release: %w: %d; the exchange has no such device slot", gpu.ErrUnknownSlot, r.Slot)
		}
		var event []byte
		if r.Event != "" && !x.ending.Load() {
			var err error
			if event, err = base64.StdEncoding.DecodeString(r.Event); err != nil || len(event) == 0 {
				return fmt.Errorf("%w: device slot release: the event is not base64 of a handle", ErrBadRequest)
			}
		}
		if err := dring.ReleaseAfter(r.Slot, r.Generation, event); err != nil {
			if errors.Is(err, gpu.ErrRingClosed) {
				return nil // the exchange is ending
			}
			return fmt.Errorf("device slot release: %w", err)
		}
		return nil
	}
	if ring == nil {
		return fmt.Errorf("%w: a slot release on an exchange served without host slots (plain delivery); send no messages", ErrBadRequest)
	}
	if err := ring.Release(r.Slot, r.Generation); err != nil {
		if errors.Is(err, slots.ErrClosed) {
			return nil // the exchange is ending
		}
		return fmt.Errorf("slot release: %w", err)
	}
	return nil
}

// Ring sizes. A client holds the step it works on and the ones its
// loader prefetched (weft.TrainLoader: 4 by default), and the server
// builds StreamSteps ahead: a ring with fewer slots puts a release's round
// trip on every step's path. Small steps get more slots, up to
// ringSmallBytes in all.
const (
	ringClientSlots = 6
	ringSmallBytes  = 4 << 20
	ringMaxSlots    = 64
)

// ringShape is the ring of a stream whose steps are about stepBytes and
// whose first step's message is firstBytes: StreamSteps + ringClientSlots
// slots (at least 3; more for small steps, see ringSmallBytes), each the
// larger of the estimate plus an eighth and 64 KiB (IPC framing, rows
// wider than the average) and the first step's message plus a half (the
// estimate counts no video segments, and steps of windows vary), rounded
// up to whole pages (slots.SlotAlign, or the host's page size if larger:
// no page holds bytes of two steps), at most MaxStepBytes (rounded up). A
// step that does not fit goes inline.
func (s *Service) ringShape(stepBytes, firstBytes int64) (int, int64) {
	b := min(max(stepBytes+stepBytes/8+64<<10, firstBytes+firstBytes/2), s.opts.MaxStepBytes)
	if s.slotBytes > 0 {
		b = s.slotBytes
	}
	align := max(int64(slots.SlotAlign), int64(os.Getpagesize())) // powers of two: the larger is a multiple of the other
	b = (b + align - 1) / align * align
	n := max(3, s.opts.StreamSteps+ringClientSlots)
	if more := int(ringSmallBytes / b); more > n {
		n = min(more, ringMaxSlots)
	}
	if firstBytes < s.opts.SlotInlineBytes {
		n = 3 // steps like the first go inline: slots only for larger ones
	}
	return n, b
}

// shmSink returns the exchange's host-slot sink. Its ring is made at the
// first step, sized from it; if no ring can be made then (no /dev/shm, a
// full tmpfs, the budget), nothing has been sent and the stream is served
// plainly.
func (x *exchange) shmSink(run *mix.Run, stepBytes int64) rankSink {
	return &shmSink{s: x.s, x: x, run: run, schema: run.Schema(), estimate: stepBytes}
}

// shmSink writes each step into a slot and sends its descriptor; a step
// that does not fit a slot is sent inline, as DoGet sends it.
type shmSink struct {
	s        *Service
	x        *exchange
	run      *mix.Run
	schema   *arrow.Schema
	estimate int64 // the step bytes serveRank estimated

	ring   *slots.Ring         // made at the first step
	plain  *plainSink          // set when no ring could be made
	inline *arrowflight.Writer // made at the first inline step

	// The steps the builder gathers straight into a slot (StepAllocator),
	// once the ring exists; the builder runs ahead of send.
	arenas struct {
		sync.Mutex
		ring *slots.Ring // nil: steps are built in the engine's memory
		room int64       // header room of a step's message
		step map[int64]*slots.Arena
	}

	// The header's delivery ("" is "shm"), device columns and fallback
	// (a "cuda-ipc" exchange, gpuexchange.go).
	delivery      string
	deviceColumns []string
	fallback      string
}

// open makes the ring for steps like first (the first step's message,
// whose sizes shape the ring and the arenas' header room) and sends the
// stream's header (the schema message with app_metadata
// client.SlotsHeader). ok is false when no ring could be made, nothing
// having been sent.
func (k *shmSink) open(ctx context.Context, first *slots.Message) (ok bool, err error) {
	s := k.s
	need := first.Bytes()
	n, b := s.ringShape(k.estimate, need)
	ring, err := slots.NewRing(ctx, slots.Options{Dir: s.slotDir, Slots: n, SlotBytes: b, Budget: s.budget})
	for err != nil && errors.Is(err, errdefs.ErrResourceExhausted) && n > 3 {
		// Not enough budget for the whole ring: fewer slots, at worst a
		// release's round trip per step.
		n = max(3, n/2)
		ring, err = slots.NewRing(ctx, slots.Options{Dir: s.slotDir, Slots: n, SlotBytes: b, Budget: s.budget})
	}
	if err != nil {
		s.log.InfoContext(ctx, "host slots unavailable: serving the plain stream", "err", err)
		return false, nil
	}
	if s.ringHook != nil {
		s.ringHook(ring)
	}
	delivery := client.DeliveryShm
	if k.delivery != "" {
		delivery = k.delivery
	}
	meta, err := json.Marshal(client.SlotsHeader{Run: string(k.run.ID()), Delivery: delivery, Ring: ring.Path(), Slots: ring.Slots(), SlotBytes: ring.SlotBytes(),
		DeviceColumns: k.deviceColumns, Fallback: k.fallback})
	if err == nil {
		err = k.sendSchema(meta)
	}
	if err == nil {
		// Again on its own: pyarrow's reader does not show the schema
		// message's app_metadata, and the first steps may come inline.
		err = k.x.stream.Send(&arrowflight.FlightData{AppMetadata: meta})
	}
	if err != nil {
		ring.Close()
		return false, err // the header may be half sent: fail rather than serve plainly
	}
	k.ring = ring
	if err := k.x.setRing(ring); err != nil {
		return true, err // the client ended its side already: no step goes
	}
	if ring.Slots() >= arenaMinSlots && need >= s.opts.SlotInlineBytes {
		k.arenas.Lock()
		k.arenas.ring, k.arenas.room = ring, first.HeaderRoom()
		k.arenas.step = make(map[int64]*slots.Arena)
		k.arenas.Unlock()
	}
	return true, nil
}

// setRing makes ring the exchange's host ring, once the header naming it
// is sent (the exchange frees it at its end, closeRing). A client that
// ended its side before (readReleases: it will release nothing) stops the
// exchange now, as it would have had the ring existed when it ended
// (docs/flight.md, "End."): errClientEnded, the exchange cancelled with
// it, so the call ends with OK after the header, with no step, and the
// ring freed.
func (x *exchange) setRing(ring *slots.Ring) error {
	x.mu.Lock()
	x.ring = ring
	ended := x.endedEarly
	x.mu.Unlock()
	if ended {
		x.cancel(errClientEnded)
		return errClientEnded
	}
	return nil
}

// slotCounts counts the steps written into host slots: gathered there
// (and the body bytes written again, those of columns not gathered into
// the slot), or copied into one whole.
type slotCounts struct {
	gathered, copied atomic.Int64
	recopied         atomic.Int64
}

// arenaMinSlots is the smallest ring whose steps are gathered into their
// slots. The builder then holds up to two slots ahead of send (the step
// it builds and the one it handed over) while the client, waiting for a
// step, holds one: with a step built before the ring existed still to
// send (it needs a slot of its own), four are needed; one more for the
// client's release in flight.
const arenaMinSlots = 5

// StepAllocator (mix.StepMemory) is the memory of step's columns: once
// the ring exists, an arena in a free slot (waiting for one), which send
// then describes without copying the gathered columns; before, nil (the
// engine's memory: send copies the step into a slot).
func (k *shmSink) StepAllocator(ctx context.Context, step int64) (memory.Allocator, error) {
	k.arenas.Lock()
	ring, room := k.arenas.ring, k.arenas.room
	k.arenas.Unlock()
	if ring == nil {
		return nil, nil
	}
	slot, err := ring.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	a, err := slots.NewArena(slot, room, k.s.mem)
	if err != nil {
		_ = slot.Release()
		return nil, nil // a slot smaller than the header room: copy
	}
	k.arenas.Lock()
	k.arenas.step[step] = a
	k.arenas.Unlock()
	return a, nil
}

// arena takes step's arena, if it was built in one.
func (k *shmSink) arena(step int64) *slots.Arena {
	k.arenas.Lock()
	defer k.arenas.Unlock()
	a := k.arenas.step[step]
	delete(k.arenas.step, step)
	return a
}

func (k *shmSink) sendSchema(meta []byte) error {
	p := ipc.GetSchemaPayload(k.schema, k.s.mem)
	defer p.Release()
	m := p.Meta()
	defer m.Release()
	return k.x.stream.Send(&arrowflight.FlightData{DataHeader: m.Bytes(), AppMetadata: meta})
}

func (k *shmSink) send(ctx context.Context, run mix.RunID, step int64, batch arrow.RecordBatch) error {
	return k.sendEncoded(ctx, run, step, batch, nil)
}

// sendEncoded is send with batch's message encoded already (msg; nil:
// encoded here when needed): the first step is encoded once, for the
// ring's sizes and for its slot (cudaSink encodes it to open the ring).
func (k *shmSink) sendEncoded(ctx context.Context, run mix.RunID, step int64, batch arrow.RecordBatch, msg *slots.Message) error {
	if a := k.arena(step); a != nil {
		return k.sendArena(ctx, run, step, batch, a)
	}
	if k.plain != nil {
		return k.plain.send(ctx, run, step, batch)
	}
	var own *slots.Message // encoded here: released on return (the caller releases its msg)
	defer func() {
		if own != nil {
			own.Release()
		}
	}()
	encode := func() error {
		if msg != nil {
			return nil
		}
		m, err := slots.Encode(batch)
		if err != nil {
			return err
		}
		msg, own = m, m
		return nil
	}
	if k.ring == nil {
		if err := encode(); err != nil {
			return err
		}
		ok, err := k.open(ctx, msg)
		if err != nil {
			return err
		}
		if !ok {
			k.plain = k.s.newPlainSink(k.x.stream, k.run)
			return k.plain.send(ctx, run, step, batch)
		}
	}
	if recordBytes(batch) < k.s.opts.SlotInlineBytes {
		return k.sendInline(run, step, batch)
	}
	if err := encode(); err != nil {
		return err
	}
	slot, err := k.ring.Acquire(ctx) // waits while the client holds every slot
	if err != nil {
		return err
	}
	off, n, err := msg.WriteAt(slot, 0)
	if errors.Is(err, slots.ErrTooLarge) {
		if err := slot.Release(); err != nil {
			return err
		}
		return k.sendInline(run, step, batch)
	}
	if err != nil {
		_ = slot.Release()
		return err
	}
	k.s.slotSteps.copied.Add(1)
	return k.sendDescriptor(run, step, slot, off, n)
}

// sendDescriptor sends the descriptor of a step's message in slot.
func (k *shmSink) sendDescriptor(run mix.RunID, step int64, slot *slots.Slot, off, n int64) error {
	desc := slot.Descriptor(off, n)
	meta, err := json.Marshal(client.SlotStepMetadata{Run: string(run), Step: step, Slot: &desc})
	if err != nil {
		return err
	}
	return k.x.stream.Send(&arrowflight.FlightData{AppMetadata: meta})
}

// sendArena sends a step gathered into a's slot: its message header is
// written in front of the columns already there, and its descriptor sent.
// A step that goes inline (small, or too large for the slot) is sent from
// the slot's memory, and the slot released after.
func (k *shmSink) sendArena(_ context.Context, run mix.RunID, step int64, batch arrow.RecordBatch, a *slots.Arena) error {
	slot := a.Slot()
	if recordBytes(batch) >= k.s.opts.SlotInlineBytes {
		off, n, copied, err := a.WriteRecordBatch(batch)
		switch {
		case err == nil:
			k.s.slotSteps.gathered.Add(1)
			k.s.slotSteps.recopied.Add(copied)
			return k.sendDescriptor(run, step, slot, off, n)
		case errors.Is(err, slots.ErrTooLarge):
		default:
			_ = slot.Release()
			return err
		}
	}
	err := k.sendInline(run, step, batch) // reads the slot: release after
	return errors.Join(err, slot.Release())
}

// recordBytes is the size of rec's rows in its buffers.
func recordBytes(rec arrow.RecordBatch) int64 {
	var n int64
	for _, c := range rec.Columns() {
		n += rangeBytes(c, 0, int64(c.Len()))
	}
	return n
}

// sendInline sends a step as DoGet does, in the exchange.
func (k *shmSink) sendInline(run mix.RunID, step int64, batch arrow.RecordBatch) error {
	if k.inline == nil {
		// The schema went with the header: drop the writer's own.
		k.inline = arrowflight.NewRecordWriter(&skipFirst{w: k.x.stream}, ipc.WithSchema(k.schema), ipc.WithAllocator(k.s.mem))
	}
	return k.s.sendStep(k.inline, run, step, batch)
}

// close ends the inline messages. The ring outlives it: the exchange
// closes it (closeRing) when the call ends, after the client has ended its
// side, so a client that is behind can still map it (a ring larger than
// the rank's steps is filled and done with before the client reads the
// first descriptor).
func (k *shmSink) close() error {
	var err error
	if k.ring == nil && k.plain == nil {
		// No step was sent: the client still needs the schema.
		k.plain = k.s.newPlainSink(k.x.stream, k.run)
	}
	if k.plain != nil {
		err = k.plain.close()
	}
	if k.inline != nil {
		err = errors.Join(err, k.inline.Close())
	}
	return err
}

// closeRing releases every slot, unmaps and unlinks the ring (if one was
// made) and returns its bytes to the budget, and frees the device rings.
// The client's mapping of the host ring stays readable until it unmaps
// it; the device rings' memory must not be in use any more (it runs when
// the call ends, after awaitClientEnd).
func (x *exchange) closeRing() {
	x.mu.Lock()
	ring, drings := x.ring, x.drings
	x.mu.Unlock()
	for _, dring := range drings {
		dring.ReleaseAll()
		if err := dring.Close(); errors.Is(err, gpu.ErrStillOpen) {
			// Only the fake sees it; on CUDA this would be a use after free.
			x.s.log.Error("device slot freed while the client still had its IPC handle open", "err", err)
		} else if err != nil {
			x.s.log.Warn("close a device slot ring", "err", err)
		}
	}
	if ring == nil {
		return
	}
	ring.ReleaseAll()
	if err := ring.Close(); err != nil {
		x.s.log.Warn("close a slot ring", "ring", ring.Path(), "err", err)
	}
}

// skipFirst drops the first message written to it (an ipc writer's
// schema, already sent with the slots header).
type skipFirst struct {
	w       arrowflight.DataStreamWriter
	skipped bool
}

func (f *skipFirst) Send(fd *arrowflight.FlightData) error {
	if !f.skipped {
		f.skipped = true
		return nil
	}
	return f.w.Send(fd)
}
