package versions

import (
	"fmt"

	"github.com/weftdata/weft/errdefs"
)

// The kinds this package's errors wrap, under their old names. They are the
// errdefs kinds themselves (not wrappers), so errors.Is(err,
// versions.ErrNotFound) and errors.Is(err, errdefs.ErrNotFound) agree; new
// code should name the errdefs kind.
var (
	ErrNotFound      = errdefs.ErrNotFound
	ErrAlreadyExists = errdefs.ErrAlreadyExists
	ErrInvalid       = errdefs.ErrInvalidArgument
	ErrConflict      = errdefs.ErrConflict
	ErrCorrupt       = errdefs.ErrCorrupt
)

// Specific errors, each wrapping its kind. The message of a returned error
// names the offending value and says what to do.
var (
	// ErrInvalidName: a project, branch or table name breaks the naming
	// rule (1 to 128 of A-Z a-z 0-9 _ . -, not "." or "..", not ".weft…").
	ErrInvalidName = fmt.Errorf("%w: name", ErrInvalid)
	// ErrHexName: a project, branch or table name of 8 to 64 hex digits,
	// which a ref could read as a commit id or prefix.
	ErrHexName = fmt.Errorf("%w: name reads as a commit id", ErrInvalidName)
	// ErrInvalidRef: a malformed commit id or an empty ref.
	ErrInvalidRef = fmt.Errorf("%w: ref", ErrInvalid)
	// ErrInvalidSHA256: a media digest that is not 64 lowercase hex digits.
	ErrInvalidSHA256 = fmt.Errorf("%w: sha256", ErrInvalid)
	// ErrAmbiguousRef: a commit id prefix that matches several commits.
	ErrAmbiguousRef = fmt.Errorf("%w: ambiguous commit prefix", ErrInvalid)

	ErrProjectNotFound = fmt.Errorf("project %w", ErrNotFound)
	ErrBranchNotFound  = fmt.Errorf("branch %w", ErrNotFound)
	ErrCommitNotFound  = fmt.Errorf("commit %w", ErrNotFound)
	// ErrManifestNotFound: a commit names a manifest the store lacks. Clients
	// never name manifests, so this is damage to the store (ErrCorrupt).
	ErrManifestNotFound = fmt.Errorf("%w: manifest missing", ErrCorrupt)
	// ErrRefNotFound: a ref that is neither a branch nor a known commit (prefix).
	ErrRefNotFound = fmt.Errorf("ref %w", ErrNotFound)

	ErrProjectExists = fmt.Errorf("project %w", ErrAlreadyExists)
	ErrBranchExists  = fmt.Errorf("branch %w", ErrAlreadyExists)

	// ErrTooManyRetries: a commit lost the race for its branch MaxAttempts times.
	ErrTooManyRetries = fmt.Errorf("%w: branch too contended", ErrConflict)
)

// Idempotent commits (idempotency.go).
var (
	// ErrInvalidIdempotencyKey: an idempotency key that is empty, too long
	// or not printable ASCII.
	ErrInvalidIdempotencyKey = fmt.Errorf("%w: idempotency key", ErrInvalid)
	// ErrIdempotencyKeyReused: a key already recorded for another branch or
	// table of the project.
	ErrIdempotencyKeyReused = fmt.Errorf("%w: idempotency key reused for another write", ErrInvalid)
)
