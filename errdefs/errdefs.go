// Package errdefs holds Weft's error kinds: the leaf every package's
// sentinel errors wrap, so that one mapping at the gRPC boundary (package
// errdefs/errgrpc) and the Go client can classify any error with errors.Is
// without importing the package that made it (containerd's errdefs is the
// model).
//
// A package declares its own sentinels in its errors.go, each wrapping one
// kind:
//
//	ErrBranchNotFound = fmt.Errorf("branch %w", errdefs.ErrNotFound)
//
// and returns them wrapped with context naming the offending value and what
// to do. Callers test the kind (errors.Is(err, errdefs.ErrNotFound)) or the
// specific sentinel.
package errdefs

import "errors"

// The kinds. Each is a plain error whose message is the kind's name in
// lowercase words; wrapping messages add the detail.
var (
	// ErrInvalidArgument: the input is malformed or not allowed (a name, a
	// ref, a schema, a recipe, a JSON body, a ticket).
	ErrInvalidArgument = errors.New("invalid argument")
	// ErrNotFound: a named thing (project, branch, commit, table, column,
	// run, object) does not exist.
	ErrNotFound = errors.New("not found")
	// ErrAlreadyExists: creating something that exists.
	ErrAlreadyExists = errors.New("already exists")
	// ErrConflict: a concurrent change made the operation impossible, or a
	// retry budget ran out; retrying may succeed.
	ErrConflict = errors.New("conflict")
	// ErrCorrupt: stored data does not match its content id, or has a format
	// this version cannot read. It is damage to the store, not bad input.
	ErrCorrupt = errors.New("corrupt data")
	// ErrFailedPrecondition: the input is fine but the stored state does not
	// allow the operation (a table whose schema this server cannot read); the
	// message says what to do first (e.g. which commit to branch from).
	ErrFailedPrecondition = errors.New("failed precondition")
	// ErrUnauthenticated: no credentials, or credentials that are not valid.
	ErrUnauthenticated = errors.New("unauthenticated")
	// ErrPermissionDenied: valid credentials without the scope the call needs.
	ErrPermissionDenied = errors.New("permission denied")
	// ErrResourceExhausted: a limit (memory, size, concurrency) refuses the
	// work now; it may succeed later or when made smaller.
	ErrResourceExhausted = errors.New("resource exhausted")
	// ErrUnavailable: a dependency (the bucket, a peer) cannot be reached.
	ErrUnavailable = errors.New("unavailable")
	// ErrUnimplemented: specified but not built.
	ErrUnimplemented = errors.New("not implemented")
)

// Kinds lists every kind, in the order above.
var Kinds = []error{
	ErrInvalidArgument, ErrNotFound, ErrAlreadyExists, ErrConflict, ErrCorrupt,
	ErrFailedPrecondition, ErrUnauthenticated, ErrPermissionDenied, ErrResourceExhausted, ErrUnavailable,
	ErrUnimplemented,
}

// Kind returns the kind of err: the first kind met in a depth-first walk of
// err's wrap tree (as errors.Is walks it), so the outermost kind wins. A
// caller reclassifies an error by wrapping it in another kind first:
//
//	fmt.Errorf("%w: data file %s: %w", errdefs.ErrCorrupt, key, err) // err may be NotFound
//
// has kind ErrCorrupt. Kind returns nil when err wraps no kind.
func Kind(err error) error {
	for err != nil {
		for _, k := range Kinds {
			if err == k { //nolint:errorlint // identity at this node; the walk does the unwrapping
				return k
			}
			if x, ok := err.(interface{ Is(error) bool }); ok && x.Is(k) {
				return k
			}
		}
		switch u := err.(type) { //nolint:errorlint // walking the tree by hand
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				if k := Kind(e); k != nil {
					return k
				}
			}
			return nil
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		default:
			return nil
		}
	}
	return nil
}
