package gc

import (
	"fmt"

	"github.com/weftdata/weft/errdefs"
)

var (
	// ErrInvalid: unusable options.
	ErrInvalid = fmt.Errorf("%w", errdefs.ErrInvalidArgument)
	// ErrMarkFailed: the store could not be read completely, so nothing
	// was deleted.
	ErrMarkFailed = fmt.Errorf("%w: could not read every live object; deleted nothing", errdefs.ErrUnavailable)
)
