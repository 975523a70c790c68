package metrics

import (
	"fmt"

	"github.com/weftdata/weft/errdefs"
)

// ErrNotReady: /readyz fails; the error says why (the gRPC server is not
// serving, or the store does not answer).
var ErrNotReady = fmt.Errorf("not ready: %w", errdefs.ErrUnavailable)
