package sampler

import (
	"fmt"

	"github.com/weftdata/weft/errdefs"
)

// ErrInvalid is the kind of every error this package returns: the spec or an
// argument is bad. It wraps errdefs.ErrInvalidArgument, which the gRPC
// boundary maps to InvalidArgument.
var ErrInvalid = fmt.Errorf("%w", errdefs.ErrInvalidArgument)

// Specific errors, each wrapping ErrInvalid. Returned errors wrap these with
// the offending value, for example
// "component 2: weight -1 is not positive and finite: invalid argument: weight".
var (
	ErrNoComponents = fmt.Errorf("%w: no components", ErrInvalid)
	ErrWeight       = fmt.Errorf("%w: weight", ErrInvalid)
	ErrRows         = fmt.Errorf("%w: row count", ErrInvalid)
	ErrBlocks       = fmt.Errorf("%w: block layout", ErrInvalid)
	ErrBatchSize    = fmt.Errorf("%w: batch size", ErrInvalid)
	ErrShuffle      = fmt.Errorf("%w: shuffle", ErrInvalid)
	ErrSteps        = fmt.Errorf("%w: steps", ErrInvalid)
	ErrTooLarge     = fmt.Errorf("%w: run too large", ErrInvalid)
	ErrWorldSize    = fmt.Errorf("%w: world size", ErrInvalid)
	ErrRank         = fmt.Errorf("%w: rank", ErrInvalid)
	ErrStep         = fmt.Errorf("%w: step", ErrInvalid)
)
