package tables

import (
	"fmt"

	"github.com/weftdata/weft/versions"
)

// Errors for bad input. Each wraps a versions kind (ErrInvalid, ErrNotFound)
// so the Flight boundary maps them to status codes with errors.Is.
var (
	ErrTableNotFound   = fmt.Errorf("table %w", versions.ErrNotFound)
	ErrColumnNotFound  = fmt.Errorf("column %w", versions.ErrNotFound)
	ErrSchemaMismatch  = fmt.Errorf("%w: schema mismatch", versions.ErrInvalid)
	ErrEmptyAppend     = fmt.Errorf("%w: empty append", versions.ErrInvalid)
	ErrBadSchema       = fmt.Errorf("%w: unusable schema", versions.ErrInvalid)
	ErrBadColumns      = fmt.Errorf("%w: bad column list", versions.ErrInvalid)
	ErrRowOutOfRange   = fmt.Errorf("%w: row ordinal out of range", versions.ErrInvalid)
	ErrBlockOutOfRange = fmt.Errorf("%w: block out of range", versions.ErrInvalid)
)
