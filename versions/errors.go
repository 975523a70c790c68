package versions

import (
	"errors"
	"fmt"
)

// Base kinds. Every error this package returns for bad input or missing
// objects wraps one of these, so callers (the Flight boundary) can map them
// to status codes with errors.Is.
var (
	ErrNotFound      = errors.New("not found")
	ErrAlreadyExists = errors.New("already exists")
	ErrInvalid       = errors.New("invalid argument")
	// ErrConflict: a concurrent change made the operation impossible (for
	// example two writers creating one table with different schemas), or the
	// retry budget for a contended branch ran out.
	ErrConflict = errors.New("conflict")
	// ErrCorrupt: a stored object does not match its content id.
	ErrCorrupt = errors.New("corrupt object")
)

// Specific errors, each with the kind it belongs to.
var (
	ErrInvalidName      = fmt.Errorf("%w: name", ErrInvalid)
	ErrInvalidRef       = fmt.Errorf("%w: ref", ErrInvalid)
	ErrProjectNotFound  = fmt.Errorf("project %w", ErrNotFound)
	ErrBranchNotFound   = fmt.Errorf("branch %w", ErrNotFound)
	ErrCommitNotFound   = fmt.Errorf("commit %w", ErrNotFound)
	ErrManifestNotFound = fmt.Errorf("manifest %w", ErrNotFound)
	ErrRefNotFound      = fmt.Errorf("ref %w", ErrNotFound)
	ErrProjectExists    = fmt.Errorf("project %w", ErrAlreadyExists)
	ErrBranchExists     = fmt.Errorf("branch %w", ErrAlreadyExists)
	ErrAmbiguousRef     = fmt.Errorf("%w: ambiguous commit prefix", ErrInvalid)
	ErrTooManyRetries   = fmt.Errorf("%w: branch too contended", ErrConflict)
)
