package client

import (
	"fmt"

	"github.com/weftdata/weft/errdefs"
)

// Host-slot delivery (issue 14; planned, not served yet): a trainer on
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
}

// Validate checks the fields.
func (r *SlotRelease) Validate() error {
	switch {
	case r.Slot < 0:
		return fmt.Errorf("%w: slot is %d; it must be 0 or more", errdefs.ErrInvalidArgument, r.Slot)
	case r.Generation < 1:
		return fmt.Errorf("%w: generation is %d; it must be 1 or more", errdefs.ErrInvalidArgument, r.Generation)
	}
	return nil
}
