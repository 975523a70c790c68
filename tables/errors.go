package tables

import (
	"fmt"

	"github.com/weftdata/weft/versions"
)

// Errors for bad input. Each wraps a versions kind (ErrInvalid, ErrNotFound)
// so the Flight boundary maps them to status codes with errors.Is, and each
// returned message names the offending table, column or value.
var (
	// ErrTableNotFound: no such table at that commit (the message lists the tables there).
	ErrTableNotFound = fmt.Errorf("table %w", versions.ErrNotFound)
	// ErrColumnNotFound: a projection names a column the table lacks (the message lists its columns).
	ErrColumnNotFound = fmt.Errorf("column %w", versions.ErrNotFound)
	// ErrSchemaMismatch: an append's schema differs from the table's; the
	// message names the first differing column. Nothing is stored.
	ErrSchemaMismatch = fmt.Errorf("%w: schema mismatch", versions.ErrInvalid)
	// ErrEmptyAppend: an append with no rows. Nothing is stored.
	ErrEmptyAppend = fmt.Errorf("%w: empty append", versions.ErrInvalid)
	// ErrBadSchema: a schema no table can hold (no columns, unnamed or repeated columns).
	ErrBadSchema = fmt.Errorf("%w: unusable schema", versions.ErrInvalid)
	// ErrBadColumns: a projection names a column twice.
	ErrBadColumns = fmt.Errorf("%w: bad column list", versions.ErrInvalid)
	// ErrRowOutOfRange and ErrBlockOutOfRange: an ordinal or block index past the version's end.
	ErrRowOutOfRange   = fmt.Errorf("%w: row ordinal out of range", versions.ErrInvalid)
	ErrBlockOutOfRange = fmt.Errorf("%w: block out of range", versions.ErrInvalid)
)

// ErrTooLarge: rows that do not fit one Arrow array (a binary column of
// over 2 GiB in one block or one gathered batch).
var ErrTooLarge = fmt.Errorf("%w: too large for one Arrow array", versions.ErrInvalid)
