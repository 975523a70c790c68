package bucket_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftdata/weft/bucket"
	"github.com/weftdata/weft/bucket/buckettest"
)

// recorder is an Observer that counts reports by op and result.
type recorder struct {
	mu     sync.Mutex
	counts map[[2]string]int
}

func newRecorder() *recorder { return &recorder{counts: map[[2]string]int{}} }

func (r *recorder) ObserveBucketOp(op, result string, d time.Duration) {
	if d < 0 {
		panic("negative duration")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.counts[[2]string{op, result}]++
}

// take returns the counts so far and resets them.
func (r *recorder) take() map[[2]string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.counts
	r.counts = map[[2]string]int{}
	return c
}

func TestObserveAcceptance(t *testing.T) {
	backends := []struct {
		name string
		new  func(t *testing.T) bucket.Bucket
	}{
		{"mem", func(t *testing.T) bucket.Bucket { return bucket.Observe(bucket.NewMem(), newRecorder()) }},
		{"fs", func(t *testing.T) bucket.Bucket { return bucket.Observe(newFS(t), newRecorder()) }},
	}
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) { buckettest.Run(t, be.new) })
	}
}

func TestObserveNil(t *testing.T) {
	inner := bucket.NewMem()
	require.Same(t, bucket.Bucket(inner), bucket.Observe(inner, nil))
}

// TestObserveReports checks that each call reports its op and result once.
func TestObserveReports(t *testing.T) {
	ctx := context.Background()
	rec := newRecorder()
	b := bucket.Observe(bucket.NewMem(), rec)
	etag, err := b.Put(ctx, "a/x", bytes.NewReader([]byte("hello")), 5)
	require.NoError(t, err)
	rec.take()

	type key = [2]string
	for _, tc := range []struct {
		name string
		call func() error
		want key
	}{
		{"get", func() error { _, _, err := b.Get(ctx, "a/x"); return err }, key{bucket.OpGet, bucket.ResultOK}},
		{"get missing", func() error { _, _, err := b.Get(ctx, "a/none"); return err }, key{bucket.OpGet, bucket.ResultNotFound}},
		{"get bad key", func() error { _, _, err := b.Get(ctx, "a//b"); return err }, key{bucket.OpGet, bucket.ResultError}},
		{"open missing", func() error { _, err := b.Open(ctx, "a/none"); return err }, key{bucket.OpOpen, bucket.ResultNotFound}},
		{"put", func() error { _, err := b.Put(ctx, "a/y", bytes.NewReader(nil), 0); return err }, key{bucket.OpPut, bucket.ResultOK}},
		{"put_if_absent", func() error { _, err := b.PutIfAbsent(ctx, "a/z", []byte("z")); return err }, key{bucket.OpPutIfAbsent, bucket.ResultOK}},
		{"put_if_absent taken", func() error { _, err := b.PutIfAbsent(ctx, "a/x", []byte("z")); return err }, key{bucket.OpPutIfAbsent, bucket.ResultConflict}},
		{"cas", func() error { _, err := b.CompareAndSwap(ctx, "a/x", etag, []byte("hello")); return err }, key{bucket.OpCAS, bucket.ResultOK}},
		{"cas stale", func() error { _, err := b.CompareAndSwap(ctx, "a/x", "stale", []byte("new")); return err }, key{bucket.OpCAS, bucket.ResultConflict}},
		{"cas missing", func() error { _, err := b.CompareAndSwap(ctx, "a/none", etag, []byte("new")); return err }, key{bucket.OpCAS, bucket.ResultNotFound}},
		{"stat", func() error { _, err := b.Stat(ctx, "a/x"); return err }, key{bucket.OpStat, bucket.ResultOK}},
		{"delete", func() error { return b.Delete(ctx, "a/y") }, key{bucket.OpDelete, bucket.ResultOK}},
		{"list", func() error {
			for _, err := range b.List(ctx, "a/") {
				if err != nil {
					return err
				}
			}
			return nil
		}, key{bucket.OpList, bucket.ResultOK}},
		{"list stopped early", func() error {
			for range b.List(ctx, "a/") {
				break
			}
			return nil
		}, key{bucket.OpList, bucket.ResultOK}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_ = tc.call()
			require.Equal(t, map[key]int{tc.want: 1}, rec.take())
		})
	}

	t.Run("open and read", func(t *testing.T) {
		r, err := b.Open(ctx, "a/x")
		require.NoError(t, err)
		defer r.Close()
		require.EqualValues(t, 5, r.Size())
		p := make([]byte, 3)
		_, err = r.ReadAt(p, 0)
		require.NoError(t, err)
		_, err = r.ReadAt(p, 3) // 2 bytes and io.EOF: the end, not an error
		require.ErrorIs(t, err, io.EOF)
		_, err = r.ReadAt(p, -1)
		require.Error(t, err)
		require.Equal(t, map[key]int{{bucket.OpOpen, bucket.ResultOK}: 1, {bucket.OpRead, bucket.ResultOK}: 2, {bucket.OpRead, bucket.ResultError}: 1}, rec.take())
	})
}

func TestResult(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{nil, bucket.ResultOK},
		{bucket.ErrNotFound, bucket.ResultNotFound},
		{errors.Join(errors.New("get k"), bucket.ErrNotFound), bucket.ResultNotFound},
		{bucket.ErrExists, bucket.ResultConflict},
		{bucket.ErrConflict, bucket.ResultConflict},
		{bucket.ErrInvalidKey, bucket.ResultError},
		{context.Canceled, bucket.ResultError},
	} {
		t.Run(tc.want, func(t *testing.T) { require.Equal(t, tc.want, bucket.Result(tc.err)) })
	}
}
