package tables

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime/debug"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/weftdata/weft/bucket"
	"github.com/weftdata/weft/errdefs"
	"github.com/weftdata/weft/versions"
)

// Data files live in the user's bucket, so one can be half written,
// flipped or another tool's. Whatever a read of one fails on, other than
// the bucket itself or the caller's context, is that file's damage: an
// error of kind Corrupt naming it, never Internal, and never a panic.
// Every function that parses a data file on its goroutine defers
// parseGuard; the Parquet reader runs no goroutines of its own for us
// (pqarrow's Parallel reads are off: a panic in one of its goroutines
// would end the process), the column reads we run in parallel guard
// themselves.

// ioError marks an error of the bucket (a failed ranged read): it keeps
// its own kind, or none (an I/O fault), and is not the file's damage.
type ioError struct{ err error }

func (e *ioError) Error() string { return e.err.Error() }
func (e *ioError) Unwrap() error { return e.err }

// bucketReader is a bucket.Reader whose read errors (other than io.EOF,
// which the Parquet reader expects at a file's end) are ioErrors.
type bucketReader struct{ bucket.Reader }

func (r bucketReader) ReadAt(p []byte, off int64) (int, error) {
	n, err := r.Reader.ReadAt(p, off)
	if err != nil && err != io.EOF { //nolint:errorlint // io.ReaderAt returns io.EOF itself
		err = &ioError{err}
	}
	return n, err
}

// corrupt returns err as the damage of data file key: unchanged when it
// has a kind, is the bucket's (ioError) or the context's; else wrapped in
// versions.ErrCorrupt, naming key unless it already does.
func corrupt(key string, err error) error {
	var ie *ioError
	switch {
	case err == nil, errdefs.Kind(err) != nil, errors.As(err, &ie),
		errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	case strings.Contains(err.Error(), key):
		return fmt.Errorf("%w: %w", versions.ErrCorrupt, err)
	}
	return fmt.Errorf("%w: data file %s: %w", versions.ErrCorrupt, key, err)
}

// parseGuard, deferred with a pointer to the named error result of a
// function that reads data file key, turns a panic of the Parquet reader
// into ErrCorrupt and reclassifies the error (corrupt). The panic's stack
// goes to log (a panic may be a bug of ours or arrow-go's, not the file's
// damage), once: the error says only that the reader failed. A meter's
// refusal of an allocation (exhaustedPanic) is the budget's error, not
// damage, and is not logged.
func parseGuard(log *slog.Logger, key string, err *error) {
	if p := recover(); p != nil {
		if ex, ok := p.(*exhaustedPanic); ok {
			*err = fmt.Errorf("data file %s: %w", key, ex.err)
			return
		}
		log.Error("the Parquet reader panicked on a data file; the read fails as corrupt", "key", key, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
		*err = fmt.Errorf("%w: data file %s: the Parquet reader failed on it (%v)", versions.ErrCorrupt, key, p)
		return
	}
	*err = corrupt(key, *err)
}

// guarded runs fn, a step of reading data file key, under parseGuard.
func guarded(log *slog.Logger, key string, fn func() error) (err error) {
	defer parseGuard(log, key, &err)
	return fn()
}

// joinChunks returns the arrays pqarrow decoded for one column as one
// array the caller releases (nil when there are none), after checkChunks:
// the array itself when there is one, else their concatenation from mem.
func joinChunks(ch *arrow.Chunked, mem memory.Allocator) (arrow.Array, error) {
	if err := checkChunks(ch); err != nil {
		return nil, err
	}
	switch len(ch.Chunks()) {
	case 0:
		return nil, nil
	case 1:
		a := ch.Chunk(0)
		a.Retain()
		return a, nil
	}
	return array.Concatenate(ch.Chunks(), mem)
}

// checkChunks validates the arrays pqarrow decoded (array.Validate: O(1)
// per array, buffer sizes and child lengths): a damaged page can leave a
// struct's child shorter than the struct, which a gather (on a goroutine
// nothing recovers) would read past.
func checkChunks(ch *arrow.Chunked) error {
	for _, c := range ch.Chunks() {
		if err := array.Validate(c); err != nil {
			return fmt.Errorf("%w: %w", versions.ErrCorrupt, err)
		}
	}
	return nil
}
