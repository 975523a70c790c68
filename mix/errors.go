package mix

import (
	"fmt"

	"github.com/weftdata/weft/errdefs"
)

// Errors. Each wraps an errdefs kind, so the gRPC boundary maps it to a
// code with errors.Is: ErrInvalidArgument kinds to InvalidArgument, ErrNotFound
// kinds to NotFound. Returned errors wrap these with a message that names
// the component, field, column or value at fault and what to do. Errors from
// package sampler (sampler.ErrInvalid) and from packages tables and versions
// pass through wrapped.
var (
	// ErrBadRecipe: a recipe that cannot be resolved: bad JSON, an unknown
	// or missing field, a bad weight, batch size, shuffle, step count or
	// column list, components whose columns differ in type.
	ErrBadRecipe = fmt.Errorf("%w: bad recipe", errdefs.ErrInvalidArgument)
	// ErrBadWindow: a window a recipe names cannot be served: no kind, a
	// name taken by a column, windows that differ between components, or
	// a spec its kind rejects.
	ErrBadWindow = fmt.Errorf("%w: bad window", ErrBadRecipe)
	// ErrUnknownKind: a window names a materializer kind the engine does
	// not have (Options.Kinds).
	ErrUnknownKind = fmt.Errorf("%w: unknown materializer kind", ErrBadWindow)
	// ErrEmptyComponent: a component's table has no rows at the pinned commit.
	ErrEmptyComponent = fmt.Errorf("%w: empty component", errdefs.ErrInvalidArgument)
	// ErrBadRunID: a run id that is not 64 lowercase hex digits.
	ErrBadRunID = fmt.Errorf("%w: bad run id", errdefs.ErrInvalidArgument)
	// ErrWorldSize: a world size below 1 or that does not divide the batch
	// size; ErrRank: a rank outside 0..W-1.
	ErrWorldSize = fmt.Errorf("%w: world size", errdefs.ErrInvalidArgument)
	ErrRank      = fmt.Errorf("%w: rank", errdefs.ErrInvalidArgument)
	// ErrStepRange: a start or end step outside the run.
	ErrStepRange = fmt.Errorf("%w: step out of range", errdefs.ErrInvalidArgument)
	// ErrRunNotFound: no run record with that id in the store.
	ErrRunNotFound = fmt.Errorf("run %w", errdefs.ErrNotFound)
	// ErrBatchTooLarge: one step's slice does not fit one Arrow batch (a
	// binary column over 2 GiB); use more ranks or a smaller batch.
	ErrBatchTooLarge = fmt.Errorf("%w: step batch too large", errdefs.ErrInvalidArgument)
)
