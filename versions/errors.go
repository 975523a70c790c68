package versions

import (
	"errors"
	"fmt"
)

// Base kinds. Every error this package (and package tables) returns for bad
// input or missing objects wraps one of these, so callers — the Flight
// boundary above all — map them to status codes with errors.Is.
var (
	// ErrNotFound: a project, branch, commit, manifest, table or column is missing.
	ErrNotFound = errors.New("not found")
	// ErrAlreadyExists: creating a project or branch that exists.
	ErrAlreadyExists = errors.New("already exists")
	// ErrInvalid: bad input (a name, a ref, a schema, an empty append).
	ErrInvalid = errors.New("invalid argument")
	// ErrConflict: a concurrent change made the operation impossible, or
	// the retry budget for a contended branch ran out. Retrying may work.
	ErrConflict = errors.New("conflict")
	// ErrCorrupt: a stored object does not match its content id, or has a
	// format this version of Weft cannot read.
	ErrCorrupt = errors.New("corrupt object")
)

// Specific errors, each wrapping its kind. The message of a returned error
// names the offending value and says what to do.
var (
	// ErrInvalidName: a project, branch or table name breaks the naming
	// rule (1 to 128 of A-Z a-z 0-9 _ . -, not "." or "..", not ".weft…").
	ErrInvalidName = fmt.Errorf("%w: name", ErrInvalid)
	// ErrInvalidRef: a malformed commit id or an empty ref.
	ErrInvalidRef = fmt.Errorf("%w: ref", ErrInvalid)
	// ErrAmbiguousRef: a commit id prefix that matches several commits.
	ErrAmbiguousRef = fmt.Errorf("%w: ambiguous commit prefix", ErrInvalid)

	ErrProjectNotFound  = fmt.Errorf("project %w", ErrNotFound)
	ErrBranchNotFound   = fmt.Errorf("branch %w", ErrNotFound)
	ErrCommitNotFound   = fmt.Errorf("commit %w", ErrNotFound)
	ErrManifestNotFound = fmt.Errorf("manifest %w", ErrNotFound)
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
