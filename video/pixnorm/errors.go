package pixnorm

import (
	"fmt"

	"github.com/weftdata/weft/errdefs"
)

// ErrInvalid: a Normalize that Validate refuses.
var ErrInvalid = fmt.Errorf("pixnorm: normalisation %w", errdefs.ErrInvalidArgument)
