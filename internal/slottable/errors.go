package slottable

import (
	"fmt"

	"github.com/weftdata/weft/errdefs"
)

// The table's refusals. slots and gpu export them under their own names
// (slots.ErrClosed is ErrClosed, gpu.ErrRingClosed is ErrClosed, …), so
// errors.Is holds whichever name a caller checks.
var (
	// ErrClosed: the table (its ring) is closed.
	ErrClosed = fmt.Errorf("slot ring closed: %w", errdefs.ErrFailedPrecondition)
	// ErrUnknownSlot: a release names an index outside the table.
	ErrUnknownSlot = fmt.Errorf("unknown slot: %w", errdefs.ErrInvalidArgument)
	// ErrStaleGeneration: a release names a generation that is not the
	// slot's current one (a release of an earlier use of the slot).
	ErrStaleGeneration = fmt.Errorf("stale generation: %w", errdefs.ErrFailedPrecondition)
	// ErrNotHeld: a release of a slot that is not held (a double release).
	ErrNotHeld = fmt.Errorf("slot not held: %w", errdefs.ErrFailedPrecondition)
)
