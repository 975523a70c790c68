package importers

import (
	"fmt"

	"github.com/weftdata/weft/errdefs"
)

// Errors. Each wraps an errdefs kind; messages name the source file (and
// the member, row or column) at fault.
var (
	// ErrUnknownFormat: no importer by that name (the message lists them).
	ErrUnknownFormat = fmt.Errorf("%w: unknown import format", errdefs.ErrInvalidArgument)
	// ErrNotImplemented: a format that is registered but not built yet.
	ErrNotImplemented = fmt.Errorf("%w: import format not implemented", errdefs.ErrUnimplemented)
	// ErrBadSource: a source URL or path that cannot name a dataset.
	ErrBadSource = fmt.Errorf("%w: bad import source", errdefs.ErrInvalidArgument)
	// ErrSourceDenied: a local source outside every import root, or a
	// symlink leaving the source's directory. Refused before anything is read.
	ErrSourceDenied = fmt.Errorf("%w: import source not allowed", errdefs.ErrPermissionDenied)
	// ErrSourceNotFound: a source directory, file or pattern that matches nothing.
	ErrSourceNotFound = fmt.Errorf("import source %w", errdefs.ErrNotFound)
	// ErrBadOption: an import option the format does not know, or a bad value.
	ErrBadOption = fmt.Errorf("%w: bad import option", errdefs.ErrInvalidArgument)
	// ErrBadInput: the dataset is malformed (truncated or corrupt files,
	// duplicate keys, hash mismatches, inconsistent columns). Nothing is
	// committed.
	ErrBadInput = fmt.Errorf("%w: bad dataset", errdefs.ErrInvalidArgument)
	// ErrPickle: a pickled member or column; Weft never unpickles.
	ErrPickle = fmt.Errorf("%w: pickled data refused", ErrBadInput)
	// ErrTooLarge: a member, shard or sample beyond Options' size limits.
	ErrTooLarge = fmt.Errorf("%w: too large", errdefs.ErrResourceExhausted)
)
