package bucket

import "errors"

// Sentinel errors. Backends wrap them with context; check with errors.Is.
var (
	// ErrNotFound: the key holds no object.
	ErrNotFound = errors.New("object not found")
	// ErrExists: PutIfAbsent found the key taken.
	ErrExists = errors.New("object already exists")
	// ErrConflict: CompareAndSwap found a different ETag than the caller's.
	ErrConflict = errors.New("object changed since it was read (etag mismatch)")
	// ErrInvalidKey: the key breaks the key rules of Bucket, or the backend
	// cannot store it next to an existing key ("a/b" beside "a/b/c" on FS).
	ErrInvalidKey = errors.New("invalid object key")
	// ErrTooLarge: a conditional write's body is above MaxConditionalSize.
	ErrTooLarge = errors.New("conditional object too large")
)
