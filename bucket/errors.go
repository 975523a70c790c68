package bucket

import (
	"fmt"

	"github.com/weftdata/weft/errdefs"
)

// Sentinel errors, each wrapping an errdefs kind. Backends wrap them with
// context; check with errors.Is. Callers that know better reclassify: a data
// file a manifest names but the bucket lacks is store damage, not a missing
// thing the client named.
var (
	// ErrNotFound: the key holds no object.
	ErrNotFound = fmt.Errorf("object %w", errdefs.ErrNotFound)
	// ErrExists: PutIfAbsent found the key taken.
	ErrExists = fmt.Errorf("object %w", errdefs.ErrAlreadyExists)
	// ErrConflict: CompareAndSwap found a different ETag than the caller's.
	ErrConflict = fmt.Errorf("object changed since it was read (etag mismatch): %w", errdefs.ErrConflict)
	// ErrInvalidKey: the key breaks the key rules of Bucket, or the backend
	// cannot store it next to an existing key ("a/b" beside "a/b/c" on FS).
	ErrInvalidKey = fmt.Errorf("%w: object key", errdefs.ErrInvalidArgument)
	// ErrTooLarge: a conditional write's body is above MaxConditionalSize.
	ErrTooLarge = fmt.Errorf("%w: conditional object too large", errdefs.ErrResourceExhausted)
	// ErrObjectTooLarge: GetSmall found an object above its limit (nothing
	// of it was read into memory). Callers that know the object should be
	// small reclassify: a 10 GB ref is store damage.
	ErrObjectTooLarge = fmt.Errorf("%w: object larger than expected", errdefs.ErrResourceExhausted)
)
