package bucket

import (
	"context"
	"fmt"
	"io"
	"iter"
	"strings"
	"time"
	"unicode/utf8"
)

// ETag is an opaque token naming one version of one object's content. Two
// reads of an unchanged object give the same ETag; a write gives a new one
// unless the bytes are identical (S3 and FS both derive it from the content).
type ETag string

// ObjectInfo describes one object.
type ObjectInfo struct {
	Key     string
	Size    int64
	ETag    ETag      // empty in List results of backends that cannot list it cheaply
	ModTime time.Time // best effort; never used for consistency
}

// MaxConditionalSize bounds the body of PutIfAbsent and CompareAndSwap. Such
// objects (refs, commits, manifests, run records) are small, and S3 clients
// drop conditions on multipart uploads, so conditional writes stay single-part.
const MaxConditionalSize = 5 << 20

// Bucket is a flat key space of immutable-per-version objects.
//
// Keys are '/'-separated paths of valid UTF-8, at most 1024 bytes: non-empty,
// not starting or ending with '/', without empty, "." or ".." segments,
// without NUL or backslash, and without segments that start with ".weft"
// (reserved for backend bookkeeping). A bad key gives ErrInvalidKey.
//
// Portable key sets never use a key as a directory of another key: "a/b" and
// "a/b/c" cannot both exist on FS or on S3 servers that map keys to files
// (versitygw's posix backend), which reject the second write with an error
// wrapping ErrInvalidKey. Mem and AWS S3 hold both; MinIO takes both but
// List then misses "a/b/c". FS also rejects a segment longer than the file
// system allows (255 bytes on ext4).
//
// All methods may be called concurrently, from many goroutines and, for
// backends that share storage (FS on one directory, S3 on one bucket), from
// many processes. Errors wrap ErrNotFound, ErrExists, ErrConflict,
// ErrInvalidKey or ErrTooLarge where those apply; anything else is an I/O
// fault of the backend.
type Bucket interface {
	// Get returns the whole object and its info.
	Get(ctx context.Context, key string) ([]byte, ObjectInfo, error)

	// Open returns a Reader over one version of the object: later writes to
	// the key do not change what the Reader returns (it reads the version
	// that was current at Open, or fails with an error wrapping ErrConflict
	// or ErrNotFound once that version is gone, as on S3). The Reader uses
	// ctx for its reads; Close it when done.
	Open(ctx context.Context, key string) (Reader, error)

	// Put writes the object unconditionally and atomically. size is the
	// body's length, or -1 if unknown; a body of another length than a
	// size >= 0 is an error and writes nothing. Large bodies may be
	// uploaded in parts (so their S3 ETag is not an MD5).
	Put(ctx context.Context, key string, body io.Reader, size int64) (ETag, error)

	// PutIfAbsent creates the object only if the key holds none; otherwise
	// it returns an error wrapping ErrExists and changes nothing. Among
	// concurrent callers on one key exactly one succeeds.
	PutIfAbsent(ctx context.Context, key string, data []byte) (ETag, error)

	// CompareAndSwap replaces the object only if its current ETag is old;
	// otherwise it returns an error wrapping ErrConflict (or ErrNotFound if
	// the key holds nothing) and changes nothing. Among concurrent callers
	// holding the same old ETag exactly one succeeds. ETags name content, so
	// an object rewritten with the same bytes still matches (A→B→A passes).
	CompareAndSwap(ctx context.Context, key string, old ETag, data []byte) (ETag, error)

	// Stat returns the object's info, including its ETag. It may cost a
	// read of the whole object (FS hashes the file).
	Stat(ctx context.Context, key string) (ObjectInfo, error)

	// List yields every object whose key starts with prefix (a plain string
	// prefix, not only a directory), in ascending byte order of key, across
	// however many pages the backend needs. It stops at the first error,
	// which it yields with a zero ObjectInfo.
	List(ctx context.Context, prefix string) iter.Seq2[ObjectInfo, error]

	// Delete removes the object. Deleting a missing key is not an error.
	Delete(ctx context.Context, key string) error
}

// GetSmall is b.Get of an object its caller expects to hold at most limit
// bytes (refs, commits, manifests, run records: objects written with
// PutIfAbsent or CompareAndSwap hold at most MaxConditionalSize). A larger
// object is an error wrapping ErrObjectTooLarge, found before its bytes
// are read (by the backends of this package; any other Bucket's Get reads
// it first), so that a damaged or foreign object at a small object's key
// cannot make the caller allocate gigabytes.
func GetSmall(ctx context.Context, b Bucket, key string, limit int64) ([]byte, ObjectInfo, error) {
	if s, ok := b.(smallGetter); ok {
		return s.getSmall(ctx, key, limit)
	}
	data, info, err := b.Get(ctx, key)
	if err == nil && int64(len(data)) > limit {
		return nil, ObjectInfo{}, tooLarge(key, int64(len(data)), limit)
	}
	return data, info, err
}

// smallGetter is a Bucket that checks an object's size before it reads it.
type smallGetter interface {
	getSmall(ctx context.Context, key string, limit int64) ([]byte, ObjectInfo, error)
}

func tooLarge(key string, size, limit int64) error {
	return fmt.Errorf("%s holds %d bytes, over the %d expected: %w", key, size, limit, ErrObjectTooLarge)
}

// Reader reads ranges of one object version.
//
// ReadAt follows io.ReaderAt: it fills p or returns an error saying why not;
// at the end of the object it returns the bytes there are and io.EOF. A read
// that fills p returns nil, even when it ends exactly at the end of the
// object. Reading zero bytes at or before the end returns 0, nil; reading at
// or past the end returns 0, io.EOF; a negative offset is an error (not
// io.EOF). ReadAt may be called concurrently and does not return partial
// results short of the end.
type Reader interface {
	io.ReaderAt
	io.Closer
	// Size is the length of the object version in bytes.
	Size() int64
}

// ValidateKey returns an error wrapping ErrInvalidKey if key breaks the key
// rules of Bucket.
func ValidateKey(key string) error {
	if key == "" {
		return fmt.Errorf("%w: empty key", ErrInvalidKey)
	}
	if len(key) > 1024 {
		return fmt.Errorf("%w: key longer than 1024 bytes", ErrInvalidKey)
	}
	if !utf8.ValidString(key) {
		return fmt.Errorf("%w: %q is not valid UTF-8", ErrInvalidKey, key)
	}
	for _, seg := range strings.Split(key, "/") {
		switch {
		case seg == "":
			return fmt.Errorf("%w: %q has an empty path segment", ErrInvalidKey, key)
		case seg == "." || seg == "..":
			return fmt.Errorf("%w: %q has a %q segment", ErrInvalidKey, key, seg)
		case strings.HasPrefix(seg, ".weft"):
			return fmt.Errorf("%w: %q uses the reserved segment prefix .weft", ErrInvalidKey, key)
		case strings.ContainsAny(seg, "\x00\\"):
			return fmt.Errorf("%w: %q contains a NUL or backslash", ErrInvalidKey, key)
		}
	}
	return nil
}

// readSpan applies the Reader contract's edge rules to a read of n bytes at
// off in an object of size bytes. It returns how many bytes to fetch, or,
// when that is 0, the result to return at once (io.EOF, nil or an error).
func readSpan(op, key string, off int64, n int, size int64) (int64, error) {
	switch {
	case off < 0:
		return 0, fmt.Errorf("%s %s: negative offset %d", op, key, off)
	case off > size:
		return 0, io.EOF
	case n == 0:
		return 0, nil
	case off == size:
		return 0, io.EOF
	}
	return min(int64(n), size-off), nil
}

// ReadAll reads a whole Reader into memory.
func ReadAll(r Reader) ([]byte, error) {
	buf := make([]byte, r.Size())
	n, err := r.ReadAt(buf, 0)
	if err == io.EOF && int64(n) == r.Size() {
		err = nil
	}
	return buf[:n], err
}
