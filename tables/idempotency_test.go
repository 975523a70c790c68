package tables_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftdata/weft/bucket"
	"github.com/weftdata/weft/tables"
	"github.com/weftdata/weft/versions"
)

// flakyRefs is a bucket whose next ref move fails: after it lands (the
// acknowledgement is lost, as when the server dies right after the commit)
// or before. It can also fail every update of idempotency records, so a
// retry must find the commit by walking the history.
type flakyRefs struct {
	bucket.Bucket
	failAfter, failBefore atomic.Bool
	failIdemUpdates       atomic.Bool
}

var errLostAck = errors.New("connection reset (test: the reply was lost)")

func (f *flakyRefs) CompareAndSwap(ctx context.Context, key string, old bucket.ETag, data []byte) (bucket.ETag, error) {
	switch {
	case strings.Contains(key, "/refs/heads/") && f.failBefore.CompareAndSwap(true, false):
		return "", errLostAck
	case strings.Contains(key, "/refs/heads/") && f.failAfter.Load():
		etag, err := f.Bucket.CompareAndSwap(ctx, key, old, data)
		if err == nil && f.failAfter.CompareAndSwap(true, false) {
			return "", errLostAck
		}
		return etag, err
	case strings.Contains(key, "/idempotency/") && f.failIdemUpdates.Load():
		return "", errLostAck
	}
	return f.Bucket.CompareAndSwap(ctx, key, old, data)
}

// snapshot is every object's key and ETag.
func snapshot(t *testing.T, b bucket.Bucket) map[string]bucket.ETag {
	t.Helper()
	out := map[string]bucket.ETag{}
	for info, err := range b.List(context.Background(), "") {
		require.NoError(t, err)
		st, err := b.Stat(context.Background(), info.Key)
		require.NoError(t, err)
		out[info.Key] = st.ETag
	}
	return out
}

func (e *env) appendKey(t *testing.T, tbl versions.TableName, start, n int64, key versions.IdempotencyKey) (*tables.AppendResult, error) {
	t.Helper()
	r := reader(t, makeBatch(e.mem, start, n))
	defer r.Release()
	return e.s.AppendWith(context.Background(), "p", "main", tbl, r, tables.AppendOptions{IdempotencyKey: key})
}

func tableIDs(t *testing.T, e *env, tbl versions.TableName) []int64 {
	t.Helper()
	v, err := e.s.Table(context.Background(), "p", "main", tbl)
	require.NoError(t, err)
	ids := e.readAll(t, v)
	slices.Sort(ids)
	return ids
}

func TestIdempotentAppend(t *testing.T) {
	for name, newBucket := range backends(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			t.Run("retry after the ack was lost", func(t *testing.T) {
				for _, walk := range []bool{false, true} {
					t.Run(fmt.Sprintf("walk=%v", walk), func(t *testing.T) {
						fb := &flakyRefs{Bucket: newBucket(t)}
						e := newProjectEnv(t, fb, smallGroups())
						e.append(t, "p", "main", "t", 0, 5, 5) // history before the key
						fb.failAfter.Store(true)
						fb.failIdemUpdates.Store(walk) // no "landed" shortcut: walk the history
						_, err := e.appendKey(t, "t", 5, 10, "k-1")
						require.ErrorIs(t, err, errLostAck)
						head, err := e.v.Head(context.Background(), "p", "main")
						require.NoError(t, err)
						e.append(t, "p", "main", "t", 15, 5, 5) // another writer meanwhile

						before := snapshot(t, fb)
						res, err := e.appendKey(t, "t", 5, 10, "k-1")
						require.NoError(t, err)
						require.True(t, res.Replayed)
						require.Equal(t, head, res.Commit.ID, "the retry returns the first attempt's commit")
						require.EqualValues(t, 10, res.Rows)
						after := snapshot(t, fb)
						// The retry may note "landed" in the key's record
						// (a shortcut for later retries); nothing else changes.
						for k := range after {
							if strings.Contains(k, "/idempotency/") {
								require.Contains(t, before, k)
								delete(before, k)
								delete(after, k)
							}
						}
						require.Equal(t, before, after, "a replayed append writes no data, manifest or commit")
						require.Equal(t, seq(0, 20), tableIDs(t, e, "t"))
					})
				}
			})
			t.Run("retry after a failure before the commit", func(t *testing.T) {
				fb := &flakyRefs{Bucket: newBucket(t)}
				e := newProjectEnv(t, fb, smallGroups())
				fb.failBefore.Store(true)
				_, err := e.appendKey(t, "t", 0, 10, "k-2")
				require.ErrorIs(t, err, errLostAck)
				res, err := e.appendKey(t, "t", 0, 10, "k-2")
				require.NoError(t, err)
				require.False(t, res.Replayed)
				again, err := e.appendKey(t, "t", 0, 10, "k-2")
				require.NoError(t, err)
				require.True(t, again.Replayed)
				require.Equal(t, res.Commit.ID, again.Commit.ID)
				require.Equal(t, seq(0, 10), tableIDs(t, e, "t"))
			})
			t.Run("concurrent retries", func(t *testing.T) {
				if testing.Short() {
					t.Skip("-short: skipping the retry race")
				}
				// 6 keys, each appended 4 times at once (and once more
				// after), racing each other and 2 writers without a key.
				e := newProjectEnv(t, newBucket(t), smallGroups())
				const keys, tries, rows = 6, 4, 10
				results := make([][]*tables.AppendResult, keys)
				var mu sync.Mutex
				var wg sync.WaitGroup
				errs := make(chan error, keys*tries+2)
				for k := range keys {
					for range tries {
						wg.Go(func() {
							res, err := e.appendKey(t, "t", int64(k*rows), rows, versions.IdempotencyKey(fmt.Sprintf("key-%d", k)))
							if err != nil {
								errs <- err
								return
							}
							mu.Lock()
							results[k] = append(results[k], res)
							mu.Unlock()
						})
					}
				}
				for w := range 2 {
					wg.Go(func() {
						r := reader(t, makeBatch(e.mem, int64(1000+w*rows), rows))
						defer r.Release()
						if _, err := e.s.Append(context.Background(), "p", "main", "t", r, ""); err != nil {
							errs <- err
						}
					})
				}
				wg.Wait()
				close(errs)
				for err := range errs {
					require.NoError(t, err)
				}
				for k := range keys {
					res, err := e.appendKey(t, "t", int64(k*rows), rows, versions.IdempotencyKey(fmt.Sprintf("key-%d", k)))
					require.NoError(t, err)
					require.True(t, res.Replayed)
					results[k] = append(results[k], res)
					fresh := 0
					for _, r := range results[k] {
						require.Equal(t, results[k][0].Commit.ID, r.Commit.ID, "key %d: every try returns the one commit", k)
						require.EqualValues(t, rows, r.Rows)
						if !r.Replayed {
							fresh++
						}
					}
					require.Equal(t, 1, fresh, "key %d committed once", k)
				}
				want := append(seq(0, keys*rows), seq(1000, 2*rows)...)
				require.Equal(t, want, tableIDs(t, e, "t"), "every row exactly once")
				log, err := e.v.Log(context.Background(), "p", "main", 0)
				require.NoError(t, err)
				require.Len(t, log, 1+keys+2)
			})
			t.Run("a key is bound to its table and branch", func(t *testing.T) {
				e := newProjectEnv(t, newBucket(t), smallGroups())
				_, err := e.appendKey(t, "t", 0, 3, "k-3")
				require.NoError(t, err)
				_, err = e.appendKey(t, "u", 0, 3, "k-3")
				require.ErrorIs(t, err, versions.ErrIdempotencyKeyReused)
				_, err = e.v.CreateBranch(context.Background(), "p", "dev", "main")
				require.NoError(t, err)
				r := reader(t, makeBatch(e.mem, 0, 3))
				defer r.Release()
				_, err = e.s.AppendWith(context.Background(), "p", "dev", "t", r, tables.AppendOptions{IdempotencyKey: "k-3"})
				require.ErrorIs(t, err, versions.ErrIdempotencyKeyReused)
			})
			t.Run("bad keys", func(t *testing.T) {
				e := newProjectEnv(t, newBucket(t), smallGroups())
				for _, k := range []string{"has space", strings.Repeat("k", 257), "tab\t", "é"} {
					_, err := e.appendKey(t, "t", 0, 3, versions.IdempotencyKey(k))
					require.ErrorIs(t, err, versions.ErrInvalidIdempotencyKey, "%q", k)
				}
			})
		})
	}
}
