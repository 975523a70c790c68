package client

import (
	"fmt"

	"github.com/weftdata/weft/errdefs"
)

// Host-slot delivery (issue 14; DoExchange, flight/exchange.go): a trainer on
// flightd's host is sent, per step, a SlotDescriptor instead of the step's
// record batch, maps the ring's file and reads the batch from there; it
// sends a SlotRelease when it is done with the step. See docs/flight.md,
// "Host slots".

// SlotDescriptor says where one Arrow IPC record-batch message (schema sent
// separately) lies in a ring of host shared memory: bytes [Offset,
// Offset+Length) of the file Ring, inside slot Slot, written for its use
// Generation. Offset counts from the start of the file; the message's body
// is 64-byte aligned in it.
type SlotDescriptor struct {
	Ring       string `json:"ring"`
	Slot       int    `json:"slot"`
	Generation uint64 `json:"generation"`
	Offset     int64  `json:"offset"`
	Length     int64  `json:"length"`
}

// Validate checks the fields.
func (d *SlotDescriptor) Validate() error {
	if err := required("ring", d.Ring); err != nil {
		return err
	}
	switch {
	case d.Slot < 0:
		return fmt.Errorf("%w: slot is %d; it must be 0 or more", errdefs.ErrInvalidArgument, d.Slot)
	case d.Generation < 1:
		return fmt.Errorf("%w: generation is %d; it must be 1 or more", errdefs.ErrInvalidArgument, d.Generation)
	case d.Offset < 0 || d.Length < 1:
		return fmt.Errorf("%w: offset %d, length %d; they must be 0 or more and 1 or more", errdefs.ErrInvalidArgument, d.Offset, d.Length)
	}
	return nil
}

// SlotRelease is what a client sends when it is done with a step's slot:
// the slot and the generation its descriptor named. The server refuses a
// release of an unknown slot, of a stale generation or of a slot already
// released.
type SlotRelease struct {
	Slot       int    `json:"slot"`
	Generation uint64 `json:"generation"`
	// Device names a device slot (delivery "cuda-ipc": a step's video
	// windows, docs/gpu.md) rather than a host slot.
	Device bool `json:"device,omitempty"`
	// Event (device slots only) is the base64 of the client's
	// interprocess event for this slot (cudaIpcEventHandle_t's 64 bytes;
	// the CPU fake: a fake event file's path), sent with the slot's first
	// release after the client recorded it on the stream that read the
	// slot. The client records it again at every later release of the
	// slot, without sending it: flightd's decode waits on the event
	// before it writes the slot again (docs/gpu.md, "Releases after the
	// trainer's work"). Without it, flightd writes the slot as soon as
	// the release comes.
	Event string `json:"event,omitempty"`
}

// Validate checks the fields.
func (r *SlotRelease) Validate() error {
	switch {
	case r.Event != "" && !r.Device:
		return fmt.Errorf("%w: an event on a host slot's release (only device slots take one)", errdefs.ErrInvalidArgument)
	case r.Slot < 0:
		return fmt.Errorf("%w: slot is %d; it must be 0 or more", errdefs.ErrInvalidArgument, r.Slot)
	case r.Generation < 1:
		return fmt.Errorf("%w: generation is %d; it must be 1 or more", errdefs.ErrInvalidArgument, r.Generation)
	}
	return nil
}

// Deliveries a RankExchange may ask for.
const (
	// DeliveryShm asks for host slots; a server that cannot serve them
	// (the peer is not on its host, no ring could be made) answers with
	// the plain stream.
	DeliveryShm = "shm"
	// DeliveryFlight asks for the plain stream over the exchange.
	DeliveryFlight = "flight"
	// DeliveryCudaIPC asks for host slots plus the steps' video windows
	// decoded by flightd on its GPU into device slots, handed over by
	// CUDA IPC (docs/gpu.md); a server that cannot answers with host
	// slots (the header's "fallback" says why) or the plain stream.
	DeliveryCudaIPC = "cuda-ipc"
)

// ExchangeCommand is the CMD FlightDescriptor of a DoExchange: JSON
// {"rank_exchange": {...}}.
type ExchangeCommand struct {
	RankExchange *RankExchange `json:"rank_exchange"`
}

// Validate checks that the command names one exchange.
func (c *ExchangeCommand) Validate() error {
	if c.RankExchange == nil {
		return fmt.Errorf("%w: rank_exchange is missing; it is the only exchange", errdefs.ErrInvalidArgument)
	}
	return c.RankExchange.Validate()
}

// RankExchange asks for a rank's steps over DoExchange: Ticket is the
// rank's endpoint ticket, as DoGet takes it (base64 in JSON), Delivery
// DeliveryShm or DeliveryFlight.
type RankExchange struct {
	Ticket   []byte `json:"ticket"`
	Delivery string `json:"delivery"`
}

// Validate checks the fields.
func (r *RankExchange) Validate() error {
	if len(r.Ticket) == 0 {
		return fmt.Errorf("%w: ticket is missing or empty; pass the ticket of a rank endpoint", errdefs.ErrInvalidArgument)
	}
	if r.Delivery != DeliveryShm && r.Delivery != DeliveryFlight && r.Delivery != DeliveryCudaIPC {
		return fmt.Errorf("%w: delivery is %q; it must be %q, %q or %q", errdefs.ErrInvalidArgument, r.Delivery, DeliveryShm, DeliveryFlight, DeliveryCudaIPC)
	}
	return nil
}

// SlotsHeader is the app_metadata of the first message (the schema) of a
// rank exchange served with host slots: the ring the steps come in.
// A plain exchange's first message has no app_metadata.
type SlotsHeader struct {
	Run       string `json:"run"`
	Delivery  string `json:"delivery"` // DeliveryShm, or DeliveryCudaIPC when DeviceColumns come in device slots
	Ring      string `json:"ring"`
	Slots     int    `json:"slots"`
	SlotBytes int64  `json:"slot_bytes"`
	// DeviceColumns (delivery "cuda-ipc") are the video window columns
	// that are not in the steps' batches: each step's come in device
	// slots, named by a StepDevice message before the step.
	DeviceColumns []string `json:"device_columns,omitempty"`
	// Fallback says why an exchange that asked for "cuda-ipc" is served
	// with host slots only (no GPU, a codec NVDEC lacks, a resize, …):
	// the client decodes the video on the CPU.
	Fallback string `json:"fallback,omitempty"`
}

// SlotStepMetadata is the app_metadata of a step sent in a slot (a
// message without body): {"run","step","slot":{...}}.
type SlotStepMetadata struct {
	Run  string          `json:"run"`
	Step int64           `json:"step"`
	Slot *SlotDescriptor `json:"slot"`
}

// ExchangeEnd is the app_metadata of the last message of a rank exchange
// (a message without body), {"run", "end": true}, sent after its last
// step: the client then ends its side of the stream (CloseSend; pyarrow:
// writer.done_writing()), and the server ends the call. A call that ended
// while the client's side was still open could be reset before the client
// read the last steps.
type ExchangeEnd struct {
	Run string `json:"run"`
	End bool   `json:"end"`
}
