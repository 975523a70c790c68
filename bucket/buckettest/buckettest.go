// Package buckettest is the acceptance suite of the bucket.Bucket contract.
// Every backend and every decorator runs it:
//
//	func TestAcceptance(t *testing.T) {
//		buckettest.Run(t, func(t *testing.T) bucket.Bucket { return bucket.NewMem() })
//	}
//
// The suite writes a 64 MiB object (8 MiB with -short) and more than 1,000
// keys, so it takes seconds, not milliseconds, against a real S3 server.
package buckettest

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	"github.com/weftdata/weft/bucket"
)

// Run checks the buckets newBucket makes against the bucket.Bucket
// contract. Each subtest asks newBucket for a new, empty bucket, and the
// subtests run in parallel, so newBucket must be safe to call concurrently.
func Run(t *testing.T, newBucket func(t *testing.T) bucket.Bucket) {
	tests := []struct {
		name string
		fn   func(t *testing.T, b bucket.Bucket)
	}{
		{"NotFound", testNotFound},
		{"InvalidKeys", testInvalidKeys},
		{"PutGetStat", testPutGetStat},
		{"PutSizeMismatch", testPutSizeMismatch},
		{"EmptyObject", testEmptyObject},
		{"Delete", testDelete},
		{"PutIfAbsent", testPutIfAbsent},
		{"PutIfAbsentRace", testPutIfAbsentRace},
		{"CompareAndSwap", testCompareAndSwap},
		{"CompareAndSwapRace", testCompareAndSwapRace},
		{"CompareAndSwapCounter", testCompareAndSwapCounter},
		{"TooLarge", testTooLarge},
		{"GetSmall", testGetSmall},
		{"ReadAtEdges", testReadAtEdges},
		{"ReadAtParallel", testReadAtParallel},
		{"OpenPinsVersion", testOpenPinsVersion},
		{"ListSorted", testListSorted},
		{"NestedKeys", testNestedKeys},
		{"LargeObject", testLargeObject},
		{"NoPartialReads", testNoPartialReads},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, newBucket(t))
		})
	}
}

// randBytes returns n bytes that depend only on seed.
func randBytes(seed uint64, n int) []byte {
	var key [32]byte
	key[0] = byte(seed)
	key[1] = byte(seed >> 8)
	buf := make([]byte, n)
	_, _ = rand.NewChaCha8(key).Read(buf)
	return buf
}

// onlyReader hides everything but Read, like a network stream.
type onlyReader struct{ r io.Reader }

func (o onlyReader) Read(p []byte) (int, error) { return o.r.Read(p) }

func put(t *testing.T, b bucket.Bucket, key string, data []byte) bucket.ETag {
	t.Helper()
	etag, err := b.Put(t.Context(), key, bytes.NewReader(data), int64(len(data)))
	require.NoError(t, err, "put %s", key)
	require.NotEmpty(t, etag, "put %s: empty ETag", key)
	return etag
}

func get(t *testing.T, b bucket.Bucket, key string) ([]byte, bucket.ObjectInfo) {
	t.Helper()
	data, info, err := b.Get(t.Context(), key)
	require.NoError(t, err, "get %s", key)
	return data, info
}

func requireContent(t *testing.T, b bucket.Bucket, key string, want []byte) {
	t.Helper()
	got, _ := get(t, b, key)
	require.True(t, bytes.Equal(want, got), "%s: got %d bytes %.32q, want %d bytes %.32q", key, len(got), got, len(want), want)
}

func listKeys(t *testing.T, b bucket.Bucket, prefix string) []string {
	t.Helper()
	var keys []string
	for info, err := range b.List(t.Context(), prefix) {
		require.NoError(t, err, "list %q", prefix)
		keys = append(keys, info.Key)
	}
	return keys
}

func testNotFound(t *testing.T, b bucket.Bucket) {
	ctx := t.Context()
	requireNotFound := func(err error, what string) {
		t.Helper()
		require.ErrorIs(t, err, bucket.ErrNotFound, what)
		for _, other := range []error{bucket.ErrExists, bucket.ErrConflict, bucket.ErrInvalidKey, bucket.ErrTooLarge} {
			require.NotErrorIs(t, err, other, what)
		}
	}
	check := func(key string) {
		t.Helper()
		_, _, err := b.Get(ctx, key)
		requireNotFound(err, "get "+key)
		_, err = b.Open(ctx, key)
		requireNotFound(err, "open "+key)
		_, err = b.Stat(ctx, key)
		requireNotFound(err, "stat "+key)
		_, err = b.CompareAndSwap(ctx, key, "0123456789abcdef0123456789abcdef", []byte("x"))
		requireNotFound(err, "compare-and-swap "+key)
		_, err = b.CompareAndSwap(ctx, key, "", []byte("x"))
		requireNotFound(err, "compare-and-swap with empty ETag "+key)
		require.NoError(t, b.Delete(ctx, key), "delete "+key)
		_, _, err = b.Get(ctx, key)
		requireNotFound(err, "get after compare-and-swap "+key)
	}
	check("missing")
	check("missing/deeper/key")
	require.Empty(t, listKeys(t, b, ""), "a new bucket lists nothing")

	// A key under an object, and a key that is only a directory of others.
	put(t, b, "obj", []byte("o"))
	put(t, b, "dir/x", []byte("x"))
	check("obj/child")
	check("dir")
	requireContent(t, b, "obj", []byte("o"))
	requireContent(t, b, "dir/x", []byte("x"))
}

func testInvalidKeys(t *testing.T, b bucket.Bucket) {
	ctx := t.Context()
	bad := []string{
		"", "/", "/a", "a/", "a//b", ".", "..", "./a", "a/./b", "a/..", "a/../b",
		".weft", ".weft-tmp/x", "a/.weftlock", "a\\b", "a\x00b", "\xff\xfe",
		strings.Repeat("k", 1025),
	}
	for _, key := range bad {
		what := fmt.Sprintf("key %q", key)
		_, _, err := b.Get(ctx, key)
		require.ErrorIs(t, err, bucket.ErrInvalidKey, "get "+what)
		_, err = b.Open(ctx, key)
		require.ErrorIs(t, err, bucket.ErrInvalidKey, "open "+what)
		_, err = b.Put(ctx, key, strings.NewReader("x"), 1)
		require.ErrorIs(t, err, bucket.ErrInvalidKey, "put "+what)
		_, err = b.PutIfAbsent(ctx, key, []byte("x"))
		require.ErrorIs(t, err, bucket.ErrInvalidKey, "put-if-absent "+what)
		_, err = b.CompareAndSwap(ctx, key, "etag", []byte("x"))
		require.ErrorIs(t, err, bucket.ErrInvalidKey, "compare-and-swap "+what)
		_, err = b.Stat(ctx, key)
		require.ErrorIs(t, err, bucket.ErrInvalidKey, "stat "+what)
		require.ErrorIs(t, b.Delete(ctx, key), bucket.ErrInvalidKey, "delete "+what)
	}
	require.Empty(t, listKeys(t, b, ""), "rejected keys store nothing")

	// A long key (1,000 bytes, leaving room for a Prefix) in segments a
	// file system accepts.
	long := strings.Repeat(strings.Repeat("s", 200)+"/", 5)[:999] + "z"
	require.Len(t, long, 1000)
	put(t, b, long, []byte("long"))
	requireContent(t, b, long, []byte("long"))
	require.Equal(t, []string{long}, listKeys(t, b, ""))
}

func testPutGetStat(t *testing.T, b bucket.Bucket) {
	ctx := t.Context()
	const key = "objects/a.bin"
	data := randBytes(1, 1000)
	etag := put(t, b, key, data)

	got, info := get(t, b, key)
	require.Equal(t, data, got)
	require.Equal(t, key, info.Key)
	require.EqualValues(t, len(data), info.Size)
	require.Equal(t, etag, info.ETag, "Get's ETag is Put's")

	st, err := b.Stat(ctx, key)
	require.NoError(t, err)
	require.Equal(t, key, st.Key)
	require.EqualValues(t, len(data), st.Size)
	require.Equal(t, etag, st.ETag, "Stat's ETag is Put's")

	// Overwrite: new content, new ETag.
	data2 := randBytes(2, 1500)
	etag2 := put(t, b, key, data2)
	require.NotEqual(t, etag, etag2)
	requireContent(t, b, key, data2)
	st, err = b.Stat(ctx, key)
	require.NoError(t, err)
	require.Equal(t, etag2, st.ETag)
	require.EqualValues(t, len(data2), st.Size)

	// Unknown size.
	data3 := randBytes(3, 777)
	etag3, err := b.Put(ctx, "objects/stream", onlyReader{bytes.NewReader(data3)}, -1)
	require.NoError(t, err)
	require.NotEmpty(t, etag3)
	requireContent(t, b, "objects/stream", data3)

	// Keys beyond ASCII.
	for _, k := range []string{"unicode/é", "unicode/日本語/ключ", "spaces/a b c", "punct/a+b=c&d?e#f%g"} {
		put(t, b, k, []byte(k))
		requireContent(t, b, k, []byte(k))
	}
	require.Equal(t, []string{"unicode/é", "unicode/日本語/ключ"}, listKeys(t, b, "unicode/"))
}

func testPutSizeMismatch(t *testing.T, b bucket.Bucket) {
	ctx := t.Context()
	const key = "size/obj"
	orig := []byte("original")
	put(t, b, key, orig)
	_, err := b.Put(ctx, key, bytes.NewReader([]byte("short")), 10)
	require.Error(t, err, "body shorter than size")
	requireContent(t, b, key, orig)
	_, err = b.Put(ctx, key, bytes.NewReader([]byte("much too long")), 4)
	require.Error(t, err, "body longer than size")
	requireContent(t, b, key, orig)
	_, err = b.Put(ctx, "size/new", bytes.NewReader([]byte("short")), 10)
	require.Error(t, err)
	_, err = b.Stat(ctx, "size/new")
	require.ErrorIs(t, err, bucket.ErrNotFound, "a failed Put writes nothing")
}

func testEmptyObject(t *testing.T, b bucket.Bucket) {
	ctx := t.Context()
	put(t, b, "empty/put", nil)
	got, info := get(t, b, "empty/put")
	require.Empty(t, got)
	require.Zero(t, info.Size)
	st, err := b.Stat(ctx, "empty/put")
	require.NoError(t, err)
	require.Zero(t, st.Size)

	r, err := b.Open(ctx, "empty/put")
	require.NoError(t, err)
	defer r.Close()
	require.Zero(t, r.Size())
	n, err := r.ReadAt(nil, 0)
	require.Equal(t, 0, n)
	require.NoError(t, err, "zero bytes at the end")
	n, err = r.ReadAt(make([]byte, 1), 0)
	require.Equal(t, 0, n)
	require.ErrorIs(t, err, io.EOF)
	all, err := bucket.ReadAll(r)
	require.NoError(t, err)
	require.Empty(t, all)

	etag, err := b.PutIfAbsent(ctx, "empty/cond", nil)
	require.NoError(t, err)
	_, err = b.CompareAndSwap(ctx, "empty/cond", etag, []byte("full"))
	require.NoError(t, err)
	requireContent(t, b, "empty/cond", []byte("full"))
}

func testDelete(t *testing.T, b bucket.Bucket) {
	ctx := t.Context()
	require.NoError(t, b.Delete(ctx, "never/was"))
	put(t, b, "del/a", []byte("a"))
	put(t, b, "del/b", []byte("b"))
	require.NoError(t, b.Delete(ctx, "del/a"))
	_, _, err := b.Get(ctx, "del/a")
	require.ErrorIs(t, err, bucket.ErrNotFound)
	_, err = b.Stat(ctx, "del/a")
	require.ErrorIs(t, err, bucket.ErrNotFound)
	require.NoError(t, b.Delete(ctx, "del/a"), "second delete")
	require.Equal(t, []string{"del/b"}, listKeys(t, b, "del/"))
	// The key is free again.
	_, err = b.PutIfAbsent(ctx, "del/a", []byte("again"))
	require.NoError(t, err)
	requireContent(t, b, "del/a", []byte("again"))
}

func testPutIfAbsent(t *testing.T, b bucket.Bucket) {
	ctx := t.Context()
	const key = "refs/first"
	etag, err := b.PutIfAbsent(ctx, key, []byte("v1"))
	require.NoError(t, err)
	require.NotEmpty(t, etag)
	st, err := b.Stat(ctx, key)
	require.NoError(t, err)
	require.Equal(t, etag, st.ETag)

	_, err = b.PutIfAbsent(ctx, key, []byte("v2"))
	require.ErrorIs(t, err, bucket.ErrExists)
	require.NotErrorIs(t, err, bucket.ErrConflict)
	_, err = b.PutIfAbsent(ctx, key, []byte("v1"))
	require.ErrorIs(t, err, bucket.ErrExists, "same bytes still exist")
	requireContent(t, b, key, []byte("v1"))

	// An object from a plain Put counts too.
	put(t, b, "refs/plain", []byte("p"))
	_, err = b.PutIfAbsent(ctx, "refs/plain", []byte("q"))
	require.ErrorIs(t, err, bucket.ErrExists)
	requireContent(t, b, "refs/plain", []byte("p"))
}

// race runs f on n goroutines released together and returns their results.
func race[T any](n int, f func(i int) (T, error)) ([]T, []error) {
	results := make([]T, n)
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			results[i], errs[i] = f(i)
		})
	}
	close(start)
	wg.Wait()
	return results, errs
}

func testPutIfAbsentRace(t *testing.T, b bucket.Bucket) {
	ctx := t.Context()
	const n = 16
	const key = "race/put-if-absent"
	etags, errs := race(n, func(i int) (bucket.ETag, error) {
		return b.PutIfAbsent(ctx, key, []byte(fmt.Sprintf("writer %d", i)))
	})
	requireOneWinner(t, b, key, etags, errs, bucket.ErrExists)
}

func testCompareAndSwap(t *testing.T, b bucket.Bucket) {
	ctx := t.Context()
	const key = "refs/heads/main"
	e1, err := b.PutIfAbsent(ctx, key, []byte("c1"))
	require.NoError(t, err)
	e2, err := b.CompareAndSwap(ctx, key, e1, []byte("c2"))
	require.NoError(t, err)
	require.NotEqual(t, e1, e2)
	data, info := get(t, b, key)
	require.Equal(t, "c2", string(data))
	require.Equal(t, e2, info.ETag)

	for _, stale := range []bucket.ETag{e1, "", "not-an-etag", "0123456789abcdef0123456789abcdef"} {
		_, err = b.CompareAndSwap(ctx, key, stale, []byte("c3"))
		require.ErrorIs(t, err, bucket.ErrConflict, "old ETag %q", stale)
		require.NotErrorIs(t, err, bucket.ErrNotFound)
		requireContent(t, b, key, []byte("c2"))
	}

	// The ETag of a plain Put, of Get and of Stat all work as old.
	e4 := put(t, b, key, []byte("c4"))
	e5, err := b.CompareAndSwap(ctx, key, e4, []byte("c5"))
	require.NoError(t, err)
	_, info = get(t, b, key)
	require.Equal(t, e5, info.ETag)
	e6, err := b.CompareAndSwap(ctx, key, info.ETag, []byte("c6"))
	require.NoError(t, err)
	st, err := b.Stat(ctx, key)
	require.NoError(t, err)
	require.Equal(t, e6, st.ETag)
	_, err = b.CompareAndSwap(ctx, key, st.ETag, []byte("c7"))
	require.NoError(t, err)
	requireContent(t, b, key, []byte("c7"))

	// Deleted under the caller: not found.
	require.NoError(t, b.Delete(ctx, key))
	_, err = b.CompareAndSwap(ctx, key, st.ETag, []byte("c8"))
	require.ErrorIs(t, err, bucket.ErrNotFound)
}

func testCompareAndSwapRace(t *testing.T, b bucket.Bucket) {
	ctx := t.Context()
	const n = 16
	const key = "race/cas"
	old := put(t, b, key, []byte("base"))
	etags, errs := race(n, func(i int) (bucket.ETag, error) {
		return b.CompareAndSwap(ctx, key, old, []byte(fmt.Sprintf("writer %d", i)))
	})
	requireOneWinner(t, b, key, etags, errs, bucket.ErrConflict)
}

// requireOneWinner checks the outcome of a race of conditional writes of
// "writer i" to key: exactly one writer won, every other got loserErr, and
// the key holds the winner's bytes under the winner's ETag.
func requireOneWinner(t *testing.T, b bucket.Bucket, key string, etags []bucket.ETag, errs []error, loserErr error) {
	t.Helper()
	winner := -1
	for i, err := range errs {
		if err == nil {
			require.Equal(t, -1, winner, "writers %d and %d both won", winner, i)
			winner = i
			continue
		}
		require.ErrorIs(t, err, loserErr, "writer %d", i)
	}
	require.NotEqual(t, -1, winner, "nobody won")
	data, info := get(t, b, key)
	require.Equal(t, fmt.Sprintf("writer %d", winner), string(data))
	require.Equal(t, etags[winner], info.ETag)
}

// testCompareAndSwapCounter increments a counter from several goroutines,
// retrying on conflict, as versions moves a branch: no increment is lost.
func testCompareAndSwapCounter(t *testing.T, b bucket.Bucket) {
	ctx := t.Context()
	const workers, each = 4, 10
	const key = "race/counter"
	_, err := b.PutIfAbsent(ctx, key, []byte("0"))
	require.NoError(t, err)
	g, gctx := errgroup.WithContext(ctx)
	for range workers {
		g.Go(func() error {
			for range each {
				for {
					data, info, err := b.Get(gctx, key)
					if err != nil {
						return err
					}
					n, err := strconv.Atoi(string(data))
					if err != nil {
						return err
					}
					_, err = b.CompareAndSwap(gctx, key, info.ETag, []byte(strconv.Itoa(n+1)))
					if errors.Is(err, bucket.ErrConflict) {
						continue
					}
					if err != nil {
						return err
					}
					break
				}
			}
			return nil
		})
	}
	require.NoError(t, g.Wait())
	requireContent(t, b, key, []byte(strconv.Itoa(workers*each)))
}

func testTooLarge(t *testing.T, b bucket.Bucket) {
	ctx := t.Context()
	big := make([]byte, bucket.MaxConditionalSize+1)
	_, err := b.PutIfAbsent(ctx, "large/cond", big)
	require.ErrorIs(t, err, bucket.ErrTooLarge)
	_, err = b.Stat(ctx, "large/cond")
	require.ErrorIs(t, err, bucket.ErrNotFound)

	etag := put(t, b, "large/cas", []byte("small"))
	_, err = b.CompareAndSwap(ctx, "large/cas", etag, big)
	require.ErrorIs(t, err, bucket.ErrTooLarge)
	requireContent(t, b, "large/cas", []byte("small"))

	// The limit itself is allowed.
	limit := randBytes(4, bucket.MaxConditionalSize)
	e, err := b.PutIfAbsent(ctx, "large/limit", limit)
	require.NoError(t, err)
	_, err = b.CompareAndSwap(ctx, "large/limit", e, limit[:bucket.MaxConditionalSize-1])
	require.NoError(t, err)
	requireContent(t, b, "large/limit", limit[:bucket.MaxConditionalSize-1])
}

func testReadAtEdges(t *testing.T, b bucket.Bucket) {
	ctx := t.Context()
	const size = 1000
	data := randBytes(5, size)
	put(t, b, "read/edges", data)
	r, err := b.Open(ctx, "read/edges")
	require.NoError(t, err)
	defer r.Close()
	require.EqualValues(t, size, r.Size())

	cases := []struct {
		name    string
		off     int64
		len     int
		wantN   int
		wantEOF bool
	}{
		{"empty read at start", 0, 0, 0, false},
		{"empty read in the middle", 500, 0, 0, false},
		{"empty read at the end", size, 0, 0, false},
		{"first byte", 0, 1, 1, false},
		{"middle", 100, 300, 300, false},
		{"whole object", 0, size, size, false},
		{"last byte", size - 1, 1, 1, false},
		{"ends at the end", size - 10, 10, 10, false},
		{"crosses the end", size - 10, 50, 10, true},
		{"whole and more", 0, size + 1, size, true},
		{"at the end", size, 1, 0, true},
		{"past the end", size + 5, 1, 0, true},
		{"empty read past the end", size + 5, 0, 0, true},
	}
	for _, c := range cases {
		p := make([]byte, c.len)
		n, err := r.ReadAt(p, c.off)
		require.Equal(t, c.wantN, n, c.name)
		if c.wantEOF {
			require.Equal(t, io.EOF, err, c.name)
		} else {
			require.NoError(t, err, c.name)
		}
		if n > 0 {
			require.Equal(t, data[c.off:c.off+int64(n)], p[:n], c.name)
		}
	}
	n, err := r.ReadAt(make([]byte, 10), -1)
	require.Error(t, err, "negative offset")
	require.NotErrorIs(t, err, io.EOF, "negative offset")
	require.Equal(t, 0, n)

	all, err := bucket.ReadAll(r)
	require.NoError(t, err)
	require.Equal(t, data, all)
}

func testReadAtParallel(t *testing.T, b bucket.Bucket) {
	ctx := t.Context()
	const size = 1 << 20
	data := randBytes(6, size)
	put(t, b, "read/parallel", data)
	r, err := b.Open(ctx, "read/parallel")
	require.NoError(t, err)
	defer r.Close()
	var g errgroup.Group
	for w := range 16 {
		g.Go(func() error {
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			for range 8 {
				off := rng.Int64N(size)
				p := make([]byte, 1+rng.IntN(64<<10))
				n, err := r.ReadAt(p, off)
				want := min(int64(len(p)), size-off)
				if int64(n) != want || (err != nil && !(err == io.EOF && want < int64(len(p)))) {
					return fmt.Errorf("ReadAt(%d bytes, %d) = %d, %v; want %d", len(p), off, n, err, want)
				}
				if !bytes.Equal(p[:n], data[off:off+want]) {
					return fmt.Errorf("ReadAt(%d bytes, %d): wrong bytes", len(p), off)
				}
			}
			return nil
		})
	}
	require.NoError(t, g.Wait())
}

func testOpenPinsVersion(t *testing.T, b bucket.Bucket) {
	ctx := t.Context()
	const key = "read/pinned"
	const size = 256 << 10
	a, c := randBytes(7, size), randBytes(8, size)
	put(t, b, key, a)
	r, err := b.Open(ctx, key)
	require.NoError(t, err)
	defer r.Close()
	put(t, b, key, c)

	// The old version, or a failure: never the new bytes, never a mix.
	check := func(what string, off int64, n int) {
		t.Helper()
		p := make([]byte, n)
		got, err := r.ReadAt(p, off)
		if err != nil {
			require.NotErrorIs(t, err, io.EOF, what)
			t.Logf("%s: the reader fails once its version is gone: %v", what, err)
			return
		}
		require.Equal(t, n, got, what)
		require.True(t, bytes.Equal(a[off:off+int64(n)], p), "%s: an open Reader returned bytes of another version", what)
	}
	require.EqualValues(t, size, r.Size())
	check("after overwrite, whole", 0, size)
	check("after overwrite, range", 1000, 4096)
	require.NoError(t, b.Delete(ctx, key))
	check("after delete", 5000, 100)
}

func testListSorted(t *testing.T, b bucket.Bucket) {
	ctx := t.Context()
	const many = 1100 // more than one S3 page of 1,000
	var keys []string
	for i := range many {
		keys = append(keys, fmt.Sprintf("many/k%05d", i))
	}
	// Keys whose byte order differs from a directory walk's: '-' (0x2d)
	// and '.' sort before '/' (0x2f), '0' after it, and UTF-8 after ASCII.
	tricky := []string{
		"t/a-b", "t/a.b", "t/a/b/c", "t/a/b/d", "t/a/b-c", "t/a0", "t/a/bc",
		"t/z", "t/é", "t/a b", "t/A", "t/a/b.c/d", "t-x", "t0", "u",
	}
	keys = append(keys, tricky...)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for i, k := range keys {
		g.Go(func() error {
			// Sizes differ by key, so List's sizes are checked too.
			_, err := b.Put(gctx, k, bytes.NewReader([]byte(k)[:i%len(k)+1]), int64(i%len(k)+1))
			return err
		})
	}
	require.NoError(t, g.Wait())
	sizes := map[string]int64{}
	for i, k := range keys {
		sizes[k] = int64(i%len(k) + 1)
	}
	sorted := slices.Sorted(slices.Values(keys))

	want := func(prefix string) []string {
		var out []string
		for _, k := range sorted {
			if strings.HasPrefix(k, prefix) {
				out = append(out, k)
			}
		}
		return out
	}
	for _, prefix := range []string{
		"", "many/", "many/k010", "many/k0109", "many", "t/", "t", "t/a", "t/a/", "t/a/b",
		"t/a/b/", "t/a/b/c", "t/a/b.", "t/é", "t/\xc3", "nothing", "t/a/b/c/d", "many/k01099/x",
	} {
		var got []string
		for info, err := range b.List(ctx, prefix) {
			require.NoError(t, err, "list %q", prefix)
			require.Equal(t, sizes[info.Key], info.Size, "list %q: size of %s", prefix, info.Key)
			got = append(got, info.Key)
		}
		require.Equal(t, want(prefix), got, "list %q", prefix)
	}

	// Stopping early is fine and leaks nothing (the caller checks leaks).
	n := 0
	for _, err := range b.List(ctx, "many/") {
		require.NoError(t, err)
		n++
		if n == 3 {
			break
		}
	}
	require.Equal(t, 3, n)

	// A listed ETag, where a backend gives one, is the object's ETag.
	for info, err := range b.List(ctx, "t/a/") {
		require.NoError(t, err)
		if info.ETag != "" {
			st, err := b.Stat(ctx, info.Key)
			require.NoError(t, err)
			require.Equal(t, st.ETag, info.ETag, info.Key)
		}
	}
}

// testNestedKeys checks the portability rule for "a/b" beside "a/b/c": a
// backend holds both (and Get finds both), or refuses the second with
// ErrInvalidKey and keeps the first intact.
func testNestedKeys(t *testing.T, b bucket.Bucket) {
	ctx := t.Context()
	for _, order := range [][2]string{{"nest/a", "nest/a/b"}, {"rev/a/b", "rev/a"}} {
		first, second := order[0], order[1]
		put(t, b, first, []byte(first))
		_, err := b.Put(ctx, second, strings.NewReader(second), int64(len(second)))
		if err != nil {
			require.ErrorIs(t, err, bucket.ErrInvalidKey, "put %s beside %s", second, first)
			t.Logf("backend refuses %s beside %s: %v", second, first, err)
			_, err = b.PutIfAbsent(ctx, second, []byte(second))
			require.ErrorIs(t, err, bucket.ErrInvalidKey, "put-if-absent %s beside %s", second, first)
			_, _, err = b.Get(ctx, second)
			require.ErrorIs(t, err, bucket.ErrNotFound)
			requireContent(t, b, first, []byte(first))
			require.Equal(t, []string{first}, listKeys(t, b, strings.Split(first, "/")[0]+"/"))
			continue
		}
		requireContent(t, b, first, []byte(first))
		requireContent(t, b, second, []byte(second))
		// Backends that take both may still list them badly (MinIO lists
		// only the shorter key): that is why portable layouts avoid it.
		want := slices.Sorted(slices.Values([]string{first, second}))
		if got := listKeys(t, b, strings.Split(first, "/")[0]+"/"); !slices.Equal(want, got) {
			t.Logf("backend holds %s beside %s but lists %q, not %q", second, first, got, want)
		}
		require.NoError(t, b.Delete(ctx, first))
		requireContent(t, b, second, []byte(second))
	}
}

// testGetSmall: GetSmall reads an object up to its limit and refuses a
// larger one with ErrObjectTooLarge.
func testGetSmall(t *testing.T, b bucket.Bucket) {
	ctx := t.Context()
	data := randBytes(11, 1000)
	e := put(t, b, "small/a", data)
	got, info, err := bucket.GetSmall(ctx, b, "small/a", 1000)
	require.NoError(t, err)
	require.Equal(t, data, got)
	require.Equal(t, e, info.ETag)
	require.EqualValues(t, 1000, info.Size)
	_, _, err = bucket.GetSmall(ctx, b, "small/a", 999)
	require.ErrorIs(t, err, bucket.ErrObjectTooLarge)
	_, _, err = bucket.GetSmall(ctx, b, "small/missing", 1000)
	require.ErrorIs(t, err, bucket.ErrNotFound)
}

func testLargeObject(t *testing.T, b bucket.Bucket) {
	ctx := t.Context()
	size := 64 << 20
	if testing.Short() {
		size = 8 << 20
	}
	data := randBytes(9, size)
	want := sha256.Sum256(data)

	for _, c := range []struct {
		key  string
		body io.Reader
		size int64
	}{
		{"large/known", bytes.NewReader(data), int64(size)},
		{"large/unknown", onlyReader{bytes.NewReader(data)}, -1},
	} {
		e, err := b.Put(ctx, c.key, c.body, c.size)
		require.NoError(t, err, c.key)
		got, info := get(t, b, c.key)
		require.Equal(t, want, sha256.Sum256(got), "%s: content differs after Get", c.key)
		require.EqualValues(t, size, info.Size)
		require.Equal(t, e, info.ETag, c.key)
		st, err := b.Stat(ctx, c.key)
		require.NoError(t, err)
		require.Equal(t, e, st.ETag, c.key)
		require.EqualValues(t, size, st.Size)

		if c.size < 0 {
			continue // how it was written does not change how it reads
		}
		// Read it back in parallel ranges through one Reader.
		r, err := b.Open(ctx, c.key)
		require.NoError(t, err)
		buf := make([]byte, size)
		var g errgroup.Group
		g.SetLimit(4)
		const chunk = 3 << 20 // not a divisor: the last read crosses the end
		for off := 0; off < size; off += chunk {
			g.Go(func() error {
				end := min(off+chunk, size)
				p := make([]byte, chunk)
				n, err := r.ReadAt(p, int64(off))
				if n != end-off || (err != nil && err != io.EOF) {
					return fmt.Errorf("ReadAt(%d) = %d, %v", off, n, err)
				}
				copy(buf[off:], p[:n])
				return nil
			})
		}
		require.NoError(t, g.Wait())
		require.NoError(t, r.Close())
		require.Equal(t, want, sha256.Sum256(buf), "%s: content differs after ReadAt", c.key)
	}
}

// testNoPartialReads overwrites a multi-MiB object with two contents in
// turn while readers check they always see one of them, whole.
func testNoPartialReads(t *testing.T, b bucket.Bucket) {
	ctx := t.Context()
	const key = "atomic/obj"
	const size = 3 << 20
	contents := [2][]byte{randBytes(10, size), randBytes(11, size)}
	sums := [2][32]byte{sha256.Sum256(contents[0]), sha256.Sum256(contents[1])}
	put(t, b, key, contents[0])

	writes := 12
	if testing.Short() {
		writes = 4
	}
	done := make(chan struct{})
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		defer close(done)
		for i := range writes {
			c := contents[(i+1)%2]
			if _, err := b.Put(gctx, key, bytes.NewReader(c), int64(len(c))); err != nil {
				return err
			}
		}
		return nil
	})
	for range 3 {
		g.Go(func() error {
			// Read while the writer runs; a cap keeps fast backends (Mem)
			// from starving the other parallel subtests of CPU.
			for reads := 0; reads < 8*writes; reads++ {
				data, _, err := b.Get(gctx, key)
				if err != nil {
					return fmt.Errorf("get during overwrites: %w", err)
				}
				if sum := sha256.Sum256(data); sum != sums[0] && sum != sums[1] {
					return fmt.Errorf("read %d: Get returned %d bytes matching neither version", reads, len(data))
				}
				select {
				case <-done:
					return nil
				default:
				}
			}
			return nil
		})
	}
	require.NoError(t, g.Wait())
}
