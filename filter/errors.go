package filter

import (
	"fmt"

	"github.com/weftdata/weft/errdefs"
)

var (
	// ErrSyntax: the filter text does not parse. The message names the
	// byte offset and what was expected there.
	ErrSyntax = fmt.Errorf("filter syntax error: %w", errdefs.ErrInvalidArgument)
	// ErrType: the filter parses but does not fit the table: an unknown
	// column, a column of a type filters do not support, or a literal
	// that cannot be compared with its column.
	ErrType = fmt.Errorf("filter type error: %w", errdefs.ErrInvalidArgument)
	// ErrTooLarge: the filter exceeds a limit (Limits).
	ErrTooLarge = fmt.Errorf("filter too large: %w", errdefs.ErrInvalidArgument)
)
