package mix

import (
	"fmt"

	"github.com/weftdata/weft/versions"
)

// Errors. Each wraps a versions kind, so the Flight boundary maps it to a
// gRPC code with errors.Is: ErrInvalid kinds to InvalidArgument, ErrNotFound
// kinds to NotFound. Returned errors wrap these with a message that names
// the component, field, column or value at fault and what to do. Errors from
// package sampler (sampler.ErrInvalid) and from packages tables and versions
// pass through wrapped.
var (
	// ErrBadRecipe: a recipe that cannot be resolved: bad JSON, an unknown
	// or missing field, a bad weight, batch size, shuffle, step count or
	// column list, components whose columns differ in type.
	ErrBadRecipe = fmt.Errorf("%w: bad recipe", versions.ErrInvalid)
	// ErrEmptyComponent: a component's table has no rows at the pinned commit.
	ErrEmptyComponent = fmt.Errorf("%w: empty component", versions.ErrInvalid)
	// ErrBadRunID: a run id that is not 64 lowercase hex digits.
	ErrBadRunID = fmt.Errorf("%w: bad run id", versions.ErrInvalid)
	// ErrWorldSize: a world size below 1 or that does not divide the batch
	// size; ErrRank: a rank outside 0..W-1.
	ErrWorldSize = fmt.Errorf("%w: world size", versions.ErrInvalid)
	ErrRank      = fmt.Errorf("%w: rank", versions.ErrInvalid)
	// ErrStepRange: a start or end step outside the run.
	ErrStepRange = fmt.Errorf("%w: step out of range", versions.ErrInvalid)
	// ErrRunNotFound: no run record with that id in the store.
	ErrRunNotFound = fmt.Errorf("run %w", versions.ErrNotFound)
	// ErrBatchTooLarge: one step's slice does not fit one Arrow batch (a
	// binary column over 2 GiB); use more ranks or a smaller batch.
	ErrBatchTooLarge = fmt.Errorf("%w: step batch too large", versions.ErrInvalid)
)
