package bucket

import (
	"context"
	"errors"
	"io"
	"iter"
	"time"
)

// The operations an Observer sees, one per Bucket method, plus OpRead for
// each ReadAt of a Reader that Open returned (a range read: on S3, one GET).
const (
	OpGet         = "get"
	OpOpen        = "open"
	OpRead        = "read"
	OpPut         = "put"
	OpPutIfAbsent = "put_if_absent"
	OpCAS         = "cas"
	OpStat        = "stat"
	OpList        = "list"
	OpDelete      = "delete"
)

// Ops lists every operation an Observer may see, for metrics that set up
// their series ahead of the first call.
var Ops = []string{OpGet, OpOpen, OpRead, OpPut, OpPutIfAbsent, OpCAS, OpStat, OpList, OpDelete}

// The results an Observer sees.
const (
	// ResultOK: the operation succeeded (a ReadAt that stops at the end of
	// the object with io.EOF included).
	ResultOK = "ok"
	// ResultNotFound: the error wraps ErrNotFound.
	ResultNotFound = "not_found"
	// ResultConflict: a conditional write lost (ErrExists, ErrConflict), the
	// expected outcome of a race rather than a fault.
	ResultConflict = "conflict"
	// ResultError: any other error, I/O faults and cancellations included.
	ResultError = "error"
)

// Results lists every result an Observer may see.
var Results = []string{ResultOK, ResultNotFound, ResultConflict, ResultError}

// Observer receives one call per finished bucket operation: the operation
// (an Op… constant), its result (a Result… constant) and how long it took.
// It must be safe for concurrent use and must not block.
type Observer interface {
	ObserveBucketOp(op, result string, d time.Duration)
}

// Observe returns a Bucket that behaves exactly like b and reports every
// operation to o: one report per call, and for List one report when the
// iteration ends (its duration spans the whole iteration, the caller's work
// between items included). A nil o returns b itself. The result is an
// io.Closer that closes b if b is one.
func Observe(b Bucket, o Observer) Bucket {
	if o == nil {
		return b
	}
	return &observed{b: b, o: o}
}

type observed struct {
	b Bucket
	o Observer
}

// Result classifies err as one of the Result… constants.
func Result(err error) string {
	switch {
	case err == nil:
		return ResultOK
	case errors.Is(err, ErrNotFound):
		return ResultNotFound
	case errors.Is(err, ErrExists), errors.Is(err, ErrConflict):
		return ResultConflict
	}
	return ResultError
}

func (m *observed) done(op string, start time.Time, err error) {
	m.o.ObserveBucketOp(op, Result(err), time.Since(start))
}

func (m *observed) Get(ctx context.Context, key string) ([]byte, ObjectInfo, error) {
	start := time.Now()
	data, info, err := m.b.Get(ctx, key)
	m.done(OpGet, start, err)
	return data, info, err
}

func (m *observed) getSmall(ctx context.Context, key string, limit int64) ([]byte, ObjectInfo, error) {
	start := time.Now()
	data, info, err := GetSmall(ctx, m.b, key, limit)
	m.done(OpGet, start, err)
	return data, info, err
}

func (m *observed) Open(ctx context.Context, key string) (Reader, error) {
	start := time.Now()
	r, err := m.b.Open(ctx, key)
	m.done(OpOpen, start, err)
	if err != nil {
		return nil, err
	}
	return &observedReader{Reader: r, m: m}, nil
}

func (m *observed) Put(ctx context.Context, key string, body io.Reader, size int64) (ETag, error) {
	start := time.Now()
	etag, err := m.b.Put(ctx, key, body, size)
	m.done(OpPut, start, err)
	return etag, err
}

func (m *observed) PutIfAbsent(ctx context.Context, key string, data []byte) (ETag, error) {
	start := time.Now()
	etag, err := m.b.PutIfAbsent(ctx, key, data)
	m.done(OpPutIfAbsent, start, err)
	return etag, err
}

func (m *observed) CompareAndSwap(ctx context.Context, key string, old ETag, data []byte) (ETag, error) {
	start := time.Now()
	etag, err := m.b.CompareAndSwap(ctx, key, old, data)
	m.done(OpCAS, start, err)
	return etag, err
}

func (m *observed) Stat(ctx context.Context, key string) (ObjectInfo, error) {
	start := time.Now()
	info, err := m.b.Stat(ctx, key)
	m.done(OpStat, start, err)
	return info, err
}

func (m *observed) List(ctx context.Context, prefix string) iter.Seq2[ObjectInfo, error] {
	return func(yield func(ObjectInfo, error) bool) {
		start := time.Now()
		var err error
		defer func() { m.done(OpList, start, err) }()
		for info, e := range m.b.List(ctx, prefix) {
			if e != nil {
				err = e
			}
			if !yield(info, e) {
				return
			}
		}
	}
}

func (m *observed) Delete(ctx context.Context, key string) error {
	start := time.Now()
	err := m.b.Delete(ctx, key)
	m.done(OpDelete, start, err)
	return err
}

// Close closes the inner bucket if it is an io.Closer (S3 is).
func (m *observed) Close() error {
	if c, ok := m.b.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

type observedReader struct {
	Reader
	m *observed
}

func (r *observedReader) ReadAt(p []byte, off int64) (int, error) {
	start := time.Now()
	n, err := r.Reader.ReadAt(p, off)
	res := err
	if err == io.EOF {
		res = nil // the end of the object, as the Reader contract has it
	}
	r.m.done(OpRead, start, res)
	return n, err
}
