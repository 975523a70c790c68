package client

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	arrowflight "github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"golang.org/x/sys/unix"
)

// ReadRankShm streams a rank's steps as ReadRank does, over DoExchange
// asking for host slots (docs/flight.md, "Host slots"): on flightd's host
// each step is read from a ring of shared memory that the client maps
// read-only, and its slot is released when the loop continues. Steps the
// server sends inline (too large for a slot), and the whole stream when
// the server serves it plainly (another host, no ring), come as ReadRank
// gets them; Step.Slot says which. A slot step's Batch lies on the
// mapping, uncopied: it is valid until the loop continues, and Retain
// does not keep it longer (the server rewrites the slot after its
// release): copy what must outlive the step.
func (c *Client) ReadRankShm(ctx context.Context, ep RankEndpoint) iter.Seq2[*Step, error] {
	return c.ReadRankExchange(ctx, ep, DeliveryShm)
}

// ReadRankExchange is ReadRankShm with the delivery to ask for:
// DeliveryShm, DeliveryFlight for the plain stream over DoExchange, or
// DeliveryCudaIPC (Step.Device). A step's slots are released when the loop
// continues, and the exchange ends (flightd then frees its slots) when
// the loop ends: after the run's last step, at a break or at an error. A
// consumer that opens the device slots' IPC handles must close them
// before that, and order its releases after its own work on the slots:
// ReadRankDevice says how.
func (c *Client) ReadRankExchange(ctx context.Context, ep RankEndpoint, delivery string) iter.Seq2[*Step, error] {
	return c.ReadRankDevice(ctx, ep, delivery, DeviceConsumer{})
}

// DeviceConsumer is what a consumer that opens the device slots' IPC
// handles (cuIpcOpenMemHandle, once per slot, kept across steps) and
// reads them with its own GPU work gives ReadRankDevice. Every function is
// optional.
//
// The end of an exchange comes in two calls, in this order (docs/gpu.md,
// "The end of an exchange"): Close, for the slots' handles, before the
// client ends its side of the call (flightd frees the slots only after
// that), and Ended, for the consumer's release events, once flightd is
// done with them: after the call's status was read. Each is called
// exactly once when the loop runs, whatever ends it (even an exchange
// that did not open: Close then has nothing to close).
type DeviceConsumer struct {
	// ReleaseEvent is called as the loop continues, once per device slot
	// of the step just handed on, before the slot's release goes up. It
	// records the consumer's interprocess event for that slot (one per
	// slot: cuEventCreate with CU_EVENT_DISABLE_TIMING|
	// CU_EVENT_INTERPROCESS) on the stream whose work read the slot
	// (cuEventRecord; no host synchronisation), and returns the event's
	// handle (cuIpcGetEventHandle's 64 bytes) the first time for a slot,
	// nil after. The release carries the handle (SlotRelease.Event);
	// flightd opens it once and its decode waits for the event to
	// complete (cuEventQuery) before it writes the slot again, so kernels the
	// consumer queued on the step may still run when the loop goes on
	// (docs/gpu.md, "Releases after the trainer's work"). Without it a
	// consumer must finish its work on a step's slots before the loop
	// continues. An error is yielded and ends the loop. The events are
	// destroyed in Ended, never before.
	ReleaseEvent func(slot int) (handle []byte, err error)
	// Close, when not nil, is called once, before the client ends its
	// side of the exchange, when every step it yielded is released: at
	// the server's end message (after the run's last step, or before a
	// step the server refuses, whose error comes after), at a break out
	// of the loop, and at an error. It must close every handle opened
	// (cuIpcCloseMemHandle), after the work that reads the slots is done:
	// flightd frees the slots' memory when the call ends, and freeing
	// memory another process still has open is undefined behaviour on
	// CUDA. It must not destroy the release events (Ended does): flightd
	// may still wait on one. Its error is yielded (unless the loop was
	// broken).
	Close func() error
	// Ended, when not nil, is called once, after Close, when flightd is
	// done with the consumer's release events: it destroys every event
	// ReleaseEvent made (cuEventDestroy). That is after the call's status
	// was read: its end after the end message, or its error. At a break
	// or an error of the client's own, when a release carried an event
	// (flightd may be decoding a step that waits on one), the client ends
	// its side and reads the call to its status: flightd stops at that
	// end, frees the slots and closes the events it opened, and only then
	// ends the call; past ExchangeEndWait (an older flightd serves on) the
	// call is cancelled, with a warning in Options.Logger, and Ended
	// called all the same. Without events the
	// call is cancelled at once, then Ended called. Its error is yielded
	// (unless the loop was broken).
	Ended func() error
}

// ExchangeEndWait bounds how long ReadRankDevice, at a break or an error
// of its own, reads an exchange whose releases carried events to its end
// once it ended its side (DeviceConsumer.Ended); then it cancels the call
// and warns in Options.Logger (the loop is over: nothing is yielded).
const ExchangeEndWait = 30 * time.Second

// ReadRankDevice is ReadRankExchange for a consumer that opens the device
// slots' IPC handles and records release events for them (dc).
func (c *Client) ReadRankDevice(ctx context.Context, ep RankEndpoint, delivery string, dc DeviceConsumer) iter.Seq2[*Step, error] {
	return func(yield func(*Step, error) bool) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		live := true // the loop goes on (a yield after a break would panic)
		x, err := c.openExchange(ctx, ep.Ticket, delivery)
		if err != nil {
			live = yield(nil, err)
			x = &rankExchange{dev: dc} // no step, no event: Close and Ended all the same
		} else {
			x.dev = dc
			defer x.close()
			x.steps(func(st *Step, err error) bool {
				live = live && yield(st, err)
				return live
			})
		}
		if err := x.end(cancel, ExchangeEndWait); err != nil && live {
			yield(nil, err)
		}
	}
}

// rankExchange is the client side of one rank exchange.
type rankExchange struct {
	c      *Client
	stream arrowflight.FlightService_DoExchangeClient
	feed   *messageFeed
	rdr    *ipc.Reader
	header *SlotsHeader // nil: plain delivery
	mapped []byte       // the ring, mapped read-only
	// dev is the consumer of the device slots (ReadRankDevice); its Close
	// and Ended are called once each, by end.
	dev DeviceConsumer
	// over: the call's status was read (Recv's io.EOF or error).
	over bool
	// events: a release carried one of the consumer's events (flightd may
	// have opened it and wait on it).
	events bool
}

// end ends the exchange from the client's side once the loop is over
// (docs/gpu.md, "The end of an exchange"): the consumer's handles close
// (dev.Close); a call not over yet whose releases carried events is ended
// from our side and read to its status (drain: flightd stops, frees the
// slots and closes the events it opened, then ends the call), bounded by
// wait; the call is cancelled (a break or an error without events: at
// once); then the consumer's events are destroyed (dev.Ended). It returns
// dev.Close's and dev.Ended's errors.
func (x *rankExchange) end(cancel context.CancelFunc, wait time.Duration) error {
	err := x.endDevice()
	if !x.over && x.events {
		x.drain(cancel, wait)
	}
	cancel()
	if f := x.dev.Ended; f != nil {
		x.dev.Ended = nil
		if eerr := f(); eerr != nil {
			err = errors.Join(err, fmt.Errorf("end the device consumer (its release events): %w", eerr))
		}
	}
	return err
}

// drain ends the client's side of the call and reads the call to its
// status, dropping what still comes (the server's status is not an error
// of the loop: the client stopped); past wait it cancels the call, and
// says so in Options.Logger (a warning: the consumer's events are
// destroyed next while that flightd may still wait on one; nothing is
// yielded, the loop having ended).
func (x *rankExchange) drain(cancel context.CancelFunc, wait time.Duration) {
	if err := x.stream.CloseSend(); err != nil {
		return // the stream is gone: cancelling is all there is
	}
	t := time.AfterFunc(wait, cancel)
	var err error
	for err == nil {
		_, err = x.stream.Recv()
	}
	x.over = true
	if late := !t.Stop(); late && !errors.Is(err, io.EOF) && x.c != nil {
		x.c.log.Warn("weft: flightd did not end the rank exchange after the client ended its side; the call is cancelled, "+
			"and the device consumer's release events are destroyed while that flightd may still wait on one (an older flightd?)",
			"wait", wait)
	}
}

// endDevice calls dev.Close once (nil after).
func (x *rankExchange) endDevice() error {
	f := x.dev.Close
	x.dev.Close = nil
	if f == nil {
		return nil
	}
	if err := f(); err != nil {
		return fmt.Errorf("close the device slots: %w", err)
	}
	return nil
}

func (c *Client) openExchange(ctx context.Context, ticket []byte, delivery string) (*rankExchange, error) {
	cmd, err := json.Marshal(ExchangeCommand{RankExchange: &RankExchange{Ticket: ticket, Delivery: delivery}})
	if err != nil {
		return nil, err
	}
	stream, err := c.fc.DoExchange(ctx)
	if err != nil {
		return nil, fromWire(err)
	}
	x := &rankExchange{c: c, stream: stream, feed: &messageFeed{}}
	// A failed send (io.EOF) means the call ended: Recv says why.
	if err := stream.Send(&arrowflight.FlightData{FlightDescriptor: &arrowflight.FlightDescriptor{Type: arrowflight.DescriptorCMD, Cmd: cmd}}); err != nil && !errors.Is(err, io.EOF) {
		return nil, fromWire(err)
	}
	first, err := stream.Recv()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%w: the exchange ended before its schema", ErrBadResponse)
		}
		return nil, fromWire(err)
	}
	// A plain stream's schema message may carry the first step's
	// app_metadata (as DoGet's does): only "delivery" marks a header.
	var h SlotsHeader
	if len(first.GetAppMetadata()) > 0 && json.Unmarshal(first.GetAppMetadata(), &h) == nil && h.Delivery != "" {
		if (h.Delivery != DeliveryShm && h.Delivery != DeliveryCudaIPC) || h.Ring == "" {
			return nil, fmt.Errorf("%w: exchange header %q", ErrBadResponse, first.GetAppMetadata())
		}
		x.header = &h
		if x.mapped, err = mapRing(h); err != nil {
			return nil, err
		}
	}
	x.feed.next = ipc.NewMessage(memory.NewBufferBytes(first.GetDataHeader()), memory.NewBufferBytes(first.GetDataBody()))
	if x.rdr, err = ipc.NewReaderFromMessageReader(x.feed, ipc.WithAllocator(c.mem)); err != nil {
		x.close()
		return nil, fmt.Errorf("%w: schema: %w", ErrBadResponse, err)
	}
	return x, nil
}

// mapRing maps a ring's file read-only and checks its size.
func mapRing(h SlotsHeader) ([]byte, error) {
	f, err := os.Open(h.Ring)
	if err != nil {
		return nil, fmt.Errorf("open the ring: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("stat the ring: %w", err)
	}
	if want := int64(h.Slots) * h.SlotBytes; h.Slots < 1 || h.SlotBytes < 1 || fi.Size() != want {
		return nil, fmt.Errorf("%w: ring %s is %d bytes; the header says %d slots of %d", ErrBadResponse, h.Ring, fi.Size(), h.Slots, h.SlotBytes)
	}
	m, err := unix.Mmap(int(f.Fd()), 0, int(fi.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("map the ring: %w", err)
	}
	return m, nil
}

func (x *rankExchange) close() {
	if x.rdr != nil {
		x.rdr.Release()
	}
	if x.mapped != nil {
		_ = unix.Munmap(x.mapped)
		x.mapped = nil
	}
}

// record reads the batch of one message through the exchange's ipc reader.
func (x *rankExchange) record(msg *ipc.Message) (arrow.RecordBatch, error) {
	x.feed.next = msg
	if !x.rdr.Next() {
		if err := x.rdr.Err(); err != nil {
			return nil, fmt.Errorf("%w: record batch: %w", ErrBadResponse, err)
		}
		return nil, fmt.Errorf("%w: a message that is not a record batch", ErrBadResponse)
	}
	return x.rdr.RecordBatch(), nil
}

// slotMessage is the IPC message a descriptor names, on the mapping.
func (x *rankExchange) slotMessage(d *SlotDescriptor) (*ipc.Message, error) {
	if err := d.Validate(); err != nil {
		return nil, fmt.Errorf("%w: slot descriptor: %w", ErrBadResponse, err)
	}
	if x.header == nil || d.Ring != x.header.Ring || d.Offset > int64(len(x.mapped)) || d.Length > int64(len(x.mapped))-d.Offset || d.Length < 8 {
		return nil, fmt.Errorf("%w: slot descriptor %+v outside the exchange's ring", ErrBadResponse, *d)
	}
	b := x.mapped[d.Offset : d.Offset+d.Length]
	if binary.LittleEndian.Uint32(b) != 0xFFFFFFFF {
		return nil, fmt.Errorf("%w: slot %d: no IPC continuation marker", ErrBadResponse, d.Slot)
	}
	n := int64(binary.LittleEndian.Uint32(b[4:]))
	if 8+n > d.Length {
		return nil, fmt.Errorf("%w: slot %d: metadata of %d bytes in a %d-byte message", ErrBadResponse, d.Slot, n, d.Length)
	}
	return ipc.NewMessage(memory.NewBufferBytes(b[8:8+n]), memory.NewBufferBytes(b[8+n:])), nil
}

func (x *rankExchange) release(d *SlotDescriptor) error {
	meta, err := json.Marshal(SlotRelease{Slot: d.Slot, Generation: d.Generation})
	if err != nil {
		return err
	}
	if err := x.stream.Send(&arrowflight.FlightData{AppMetadata: meta}); err != nil && !errors.Is(err, io.EOF) {
		return fromWire(err)
	}
	return nil // io.EOF: the server ended the call; Recv says how
}

// controlMessage is the app_metadata of a message without data header,
// decoded once: an ExchangeEnd ("end"), the SlotsHeader again ("delivery"
// and "ring"), a step's device slots ("device", flight.StepDevice: the
// message before a step of a "cuda-ipc" exchange) or a SlotStepMetadata
// ("slot").
type controlMessage struct {
	Run      string          `json:"run"`
	Step     int64           `json:"step"`
	End      bool            `json:"end"`
	Delivery string          `json:"delivery"`
	Ring     string          `json:"ring"`
	Device   json.RawMessage `json:"device"`
	Slot     *SlotDescriptor `json:"slot"`
}

// releaseDevice gives a step's device slots back ({"slot","generation","device":true}
// and, once per slot, the consumer's release event: DeviceConsumer.ReleaseEvent).
func (x *rankExchange) releaseDevice(dev []json.RawMessage) error {
	seen := map[SlotRelease]bool{}
	for _, raw := range dev {
		var d struct {
			Slot       int    `json:"slot"`
			Generation uint64 `json:"generation"`
		}
		if err := json.Unmarshal(raw, &d); err != nil {
			return fmt.Errorf("%w: device slot descriptor: %w", ErrBadResponse, err)
		}
		r := SlotRelease{Slot: d.Slot, Generation: d.Generation, Device: true}
		if seen[r] { // the step's columns share one slot
			continue
		}
		seen[r] = true
		if x.dev.ReleaseEvent != nil {
			h, err := x.dev.ReleaseEvent(d.Slot)
			if err != nil {
				return fmt.Errorf("record device slot %d's release event: %w", d.Slot, err)
			}
			if len(h) > 0 {
				r.Event = base64.StdEncoding.EncodeToString(h)
				x.events = true
			}
		}
		meta, err := json.Marshal(r)
		if err != nil {
			return err
		}
		if err := x.stream.Send(&arrowflight.FlightData{AppMetadata: meta}); err != nil && !errors.Is(err, io.EOF) {
			return fromWire(err)
		}
	}
	return nil
}

// steps yields the exchange's steps, joining parts as ReadRank does.
func (x *rankExchange) steps(yield func(*Step, error) bool) {
	j := &stepJoiner{c: x.c, join: true}
	defer j.release()
	device := map[int64][]json.RawMessage{} // a step's device slots, until the step comes
	for {
		fd, err := x.stream.Recv()
		if err != nil {
			x.over = true // the call's status: its end, or its error
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			yield(nil, fromWire(err))
			return
		}
		if len(fd.GetDataHeader()) == 0 {
			var meta controlMessage
			err := json.Unmarshal(fd.GetAppMetadata(), &meta)
			switch {
			case err == nil && meta.End:
				// The last message: every step yielded is released (each
				// when the loop continued); the consumer's device handles
				// close, then our side ends, so the server ends the call
				// and frees the slots. The consumer's events are destroyed
				// after that end (io.EOF below; end).
				if err := x.endDevice(); err != nil {
					yield(nil, err)
					return
				}
				if err := x.stream.CloseSend(); err != nil {
					yield(nil, fromWire(err))
					return
				}
				continue
			case err == nil && meta.Delivery != "" && meta.Ring != "":
				continue // the header again, for clients that do not see the schema's app_metadata
			case err == nil && len(meta.Device) > 0:
				var d []json.RawMessage
				if err := json.Unmarshal(meta.Device, &d); err != nil {
					yield(nil, fmt.Errorf("%w: device step app_metadata: %w", ErrBadResponse, err))
					return
				}
				device[meta.Step] = d
				continue
			case err != nil || meta.Slot == nil: // not a step in a slot either
				yield(nil, fmt.Errorf("%w: slot step app_metadata %q", ErrBadResponse, fd.GetAppMetadata()))
				return
			}
			// A step in a slot.
			if j.inside() {
				yield(nil, fmt.Errorf("%w: step %d came in a slot inside step %d's parts", ErrBadResponse, meta.Step, j.partStep))
				return
			}
			msg, err := x.slotMessage(meta.Slot)
			if err != nil {
				yield(nil, err)
				return
			}
			rec, err := x.record(msg)
			if err != nil {
				yield(nil, err)
				return
			}
			dev := device[meta.Step]
			delete(device, meta.Step)
			if !yield(&Step{Run: meta.Run, Step: meta.Step, Batch: rec, Messages: 1, Slot: meta.Slot, Device: dev}, nil) {
				return
			}
			if err := x.release(meta.Slot); err != nil {
				yield(nil, err)
				return
			}
			if err := x.releaseDevice(dev); err != nil {
				yield(nil, err)
				return
			}
			continue
		}
		var meta StepMetadata
		if err := json.Unmarshal(fd.GetAppMetadata(), &meta); err != nil {
			yield(nil, fmt.Errorf("%w: step app_metadata: %w", ErrBadResponse, err))
			return
		}
		rec, err := x.record(ipc.NewMessage(memory.NewBufferBytes(fd.GetDataHeader()), memory.NewBufferBytes(fd.GetDataBody())))
		if err != nil {
			yield(nil, err)
			return
		}
		st, done, err := j.add(meta, rec)
		if err != nil {
			yield(nil, err)
			return
		}
		if st == nil {
			continue // more parts are due
		}
		st.Device = device[st.Step]
		delete(device, st.Step)
		ok := yield(st, nil)
		done()
		if !ok {
			return
		}
		if err := x.releaseDevice(st.Device); err != nil {
			yield(nil, err)
			return
		}
	}
	if err := j.end(); err != nil {
		yield(nil, err)
	}
}

// messageFeed hands the ipc reader one message at a time.
type messageFeed struct{ next *ipc.Message }

func (f *messageFeed) Message() (*ipc.Message, error) {
	if f.next == nil {
		return nil, io.EOF
	}
	m := f.next
	f.next = nil
	return m, nil
}

func (f *messageFeed) Retain()  {}
func (f *messageFeed) Release() {}
