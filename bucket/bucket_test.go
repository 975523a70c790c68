package bucket_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/weftdata/weft/bucket"
	"github.com/weftdata/weft/bucket/buckettest"
	"github.com/weftdata/weft/internal/s3test"
)

func TestMain(m *testing.M) {
	code := s3test.Main(m)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goroutine leak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

func newFS(t testing.TB) *bucket.FS {
	t.Helper()
	f, err := bucket.NewFS(t.TempDir())
	require.NoError(t, err)
	return f
}

// prefixDecoys sit in the inner bucket around the prefix "tenant/a": a
// Prefix bucket must never show or touch them.
var prefixDecoys = []string{"tenant/a-x", "tenant/a0", "tenant/ab/c", "tenant/b/k", "tenant0", "a/k", "zzz"}

func TestAcceptance(t *testing.T) {
	backends := []struct {
		name string
		new  func(t *testing.T) bucket.Bucket
	}{
		{"mem", func(t *testing.T) bucket.Bucket { return bucket.NewMem() }},
		{"fs", func(t *testing.T) bucket.Bucket { return newFS(t) }},
		{"minio", func(t *testing.T) bucket.Bucket { return s3test.SharedMinIO(t).NewBucket(t, t.Name()) }},
		{"versitygw", func(t *testing.T) bucket.Bucket { return s3test.SharedVersityGW(t).NewBucket(t, t.Name()) }},
	}
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			buckettest.Run(t, be.new)
		})
		t.Run(be.name+"-prefix", func(t *testing.T) {
			buckettest.Run(t, func(t *testing.T) bucket.Bucket {
				inner := be.new(t)
				for _, k := range prefixDecoys {
					_, err := inner.Put(t.Context(), k, strings.NewReader("decoy"), 5)
					require.NoError(t, err)
				}
				t.Cleanup(func() {
					if t.Failed() {
						return
					}
					// The decoys are intact and nothing leaked out of the prefix.
					for info, err := range inner.List(context.Background(), "") {
						require.NoError(t, err)
						if strings.HasPrefix(info.Key, "tenant/a/") {
							continue
						}
						require.Contains(t, prefixDecoys, info.Key, "a key written outside the prefix")
						data, _, err := inner.Get(context.Background(), info.Key)
						require.NoError(t, err)
						require.Equal(t, "decoy", string(data))
					}
				})
				return bucket.Prefix(inner, "tenant/a")
			})
		})
	}
}

func TestPrefix(t *testing.T) {
	ctx := t.Context()
	inner := bucket.NewMem()
	require.Same(t, inner, bucket.Prefix(inner, ""), "empty prefix")
	require.Same(t, inner, bucket.Prefix(inner, "/"), "empty prefix")
	p := bucket.Prefix(inner, "/proj/x/")
	_, err := p.Put(ctx, "k", strings.NewReader("v"), 1)
	require.NoError(t, err)
	data, info, err := inner.Get(ctx, "proj/x/k")
	require.NoError(t, err)
	require.Equal(t, "v", string(data))
	require.Equal(t, "proj/x/k", info.Key)
	_, info, err = p.Get(ctx, "k")
	require.NoError(t, err)
	require.Equal(t, "k", info.Key, "Get strips the prefix")
	st, err := p.Stat(ctx, "k")
	require.NoError(t, err)
	require.Equal(t, "k", st.Key, "Stat strips the prefix")

	// The key is checked on its own, not only joined to the prefix.
	_, _, err = p.Get(ctx, "")
	require.ErrorIs(t, err, bucket.ErrInvalidKey)
	_, _, err = p.Get(ctx, "../x/k")
	require.ErrorIs(t, err, bucket.ErrInvalidKey)

	bad := bucket.Prefix(inner, "a//b")
	_, err = bad.Put(ctx, "k", strings.NewReader("v"), 1)
	require.ErrorIs(t, err, bucket.ErrInvalidKey, "an invalid prefix fails every call")
}

// TestFSCrossProcess races four processes on one FS directory: one
// PutIfAbsent winner, and no lost CompareAndSwap increment.
func TestFSCrossProcess(t *testing.T) {
	if store := os.Getenv("WEFT_FS_CHILD_STORE"); store != "" {
		fsChild(t, store)
		return
	}
	const procs, increments = 4, 50
	dir := t.TempDir()
	store := filepath.Join(dir, "store")
	f, err := bucket.NewFS(store)
	require.NoError(t, err)
	ctx := t.Context()
	_, err = f.PutIfAbsent(ctx, "counter", []byte("0"))
	require.NoError(t, err)

	startFile := filepath.Join(dir, "start")
	type child struct {
		cmd *exec.Cmd
		out bytes.Buffer
	}
	children := make([]*child, procs)
	for i := range children {
		c := &child{}
		c.cmd = exec.CommandContext(ctx, os.Args[0], "-test.run=^TestFSCrossProcess$", "-test.count=1", "-test.v")
		c.cmd.Env = append(os.Environ(),
			"WEFT_FS_CHILD_STORE="+store,
			"WEFT_FS_CHILD_ID="+strconv.Itoa(i),
			"WEFT_FS_CHILD_START="+startFile,
			"WEFT_FS_CHILD_INCREMENTS="+strconv.Itoa(increments))
		c.cmd.Stdout = &c.out
		c.cmd.Stderr = &c.out
		require.NoError(t, c.cmd.Start())
		children[i] = c
	}
	// Release them together once all are started.
	require.NoError(t, os.WriteFile(startFile, nil, 0o644))
	winners := 0
	for i, c := range children {
		err := c.cmd.Wait()
		require.NoError(t, err, "child %d:\n%s", i, c.out.String())
		for line := range strings.Lines(c.out.String()) {
			if r, ok := strings.CutPrefix(strings.TrimSpace(line), "RESULT "); ok {
				t.Logf("child %d: %s", i, r)
				if r == "put-if-absent won" {
					winners++
				}
			}
		}
	}
	require.Equal(t, 1, winners, "PutIfAbsent winners across processes")
	data, _, err := f.Get(ctx, "counter")
	require.NoError(t, err)
	require.Equal(t, strconv.Itoa(procs*increments), string(data), "no increment lost")
	data, _, err = f.Get(ctx, "race")
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(string(data), "proc "), "%q", data)
}

func fsChild(t *testing.T, store string) {
	ctx := t.Context()
	id := os.Getenv("WEFT_FS_CHILD_ID")
	increments, err := strconv.Atoi(os.Getenv("WEFT_FS_CHILD_INCREMENTS"))
	require.NoError(t, err)
	f, err := bucket.NewFS(store)
	require.NoError(t, err)
	deadline := time.Now().Add(time.Minute)
	for {
		if _, err := os.Stat(os.Getenv("WEFT_FS_CHILD_START")); err == nil {
			break
		}
		require.True(t, time.Now().Before(deadline), "no start signal")
		time.Sleep(time.Millisecond)
	}
	_, err = f.PutIfAbsent(ctx, "race", []byte("proc "+id))
	switch {
	case err == nil:
		fmt.Println("RESULT put-if-absent won")
	case errors.Is(err, bucket.ErrExists):
		fmt.Println("RESULT put-if-absent lost")
	default:
		t.Fatal(err)
	}
	conflicts := 0
	for range increments {
		for {
			data, info, err := f.Get(ctx, "counter")
			require.NoError(t, err)
			n, err := strconv.Atoi(string(data))
			require.NoError(t, err)
			_, err = f.CompareAndSwap(ctx, "counter", info.ETag, []byte(strconv.Itoa(n+1)))
			if errors.Is(err, bucket.ErrConflict) {
				conflicts++
				continue
			}
			require.NoError(t, err)
			break
		}
	}
	fmt.Printf("RESULT %d increments, %d conflicts\n", increments, conflicts)
}

func TestFSLayout(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	f, err := bucket.NewFS(filepath.Join(dir, "new", "store"))
	require.NoError(t, err, "NewFS creates the directory")
	_, err = f.Put(ctx, "projects/p/data/t/x.parquet", strings.NewReader("pq"), 2)
	require.NoError(t, err)
	data, err := os.ReadFile(filepath.Join(dir, "new", "store", "projects", "p", "data", "t", "x.parquet"))
	require.NoError(t, err, "a key is a plain file under the directory")
	require.Equal(t, "pq", string(data))

	// The ETag is ContentETag of the bytes, whoever reads it.
	etag, err := f.PutIfAbsent(ctx, "refs/main", []byte("commit-1"))
	require.NoError(t, err)
	require.Equal(t, bucket.ContentETag([]byte("commit-1")), etag)
	st, err := f.Stat(ctx, "refs/main")
	require.NoError(t, err)
	require.Equal(t, etag, st.ETag)

	// A segment too long for the file system is an invalid key here.
	_, err = f.Put(ctx, "x/"+strings.Repeat("n", 300), strings.NewReader("v"), 1)
	require.ErrorIs(t, err, bucket.ErrInvalidKey)
	_, _, err = f.Get(ctx, "x/"+strings.Repeat("n", 300))
	require.ErrorIs(t, err, bucket.ErrInvalidKey)

	// Nothing is left in the temp directory after writes.
	entries, err := os.ReadDir(filepath.Join(f.Dir(), ".weft-tmp"))
	require.NoError(t, err)
	require.Empty(t, entries)
}

func TestFSRemovesStaleTemps(t *testing.T) {
	dir := t.TempDir()
	_, err := bucket.NewFS(dir)
	require.NoError(t, err)
	tmp := filepath.Join(dir, ".weft-tmp")
	stale, fresh := filepath.Join(tmp, "put-stale"), filepath.Join(tmp, "put-fresh")
	require.NoError(t, os.WriteFile(stale, []byte("crashed"), 0o644))
	require.NoError(t, os.WriteFile(fresh, []byte("in flight"), 0o644))
	old := time.Now().Add(-2 * time.Hour)
	require.NoError(t, os.Chtimes(stale, old, old))
	_, err = bucket.NewFS(dir)
	require.NoError(t, err)
	_, err = os.Stat(stale)
	require.ErrorIs(t, err, os.ErrNotExist, "a temp file over an hour old is removed")
	_, err = os.Stat(fresh)
	require.NoError(t, err, "a recent temp file may be another writer's: kept")
}

func TestOpen(t *testing.T) {
	ctx := t.Context()
	for _, tc := range []struct {
		url     string
		wantErr string
	}{
		{"", "file://DIR"},
		{"gs://bucket/x", "unknown scheme"},
		{"http://example.com/x", "s3://BUCKET"},
		{"s3://", "no bucket name"},
		{"s3:///prefix", "no bucket name"},
		{"s3://bkt/a//b", "bad prefix"},
		{"s3://bkt/a/../b", "bad prefix"},
		{"file://", "no directory"},
	} {
		t.Run(tc.url, func(t *testing.T) {
			_, err := bucket.Open(ctx, tc.url, bucket.S3Config{})
			require.ErrorContains(t, err, tc.wantErr)
		})
	}

	dir := t.TempDir()
	for _, tc := range []struct{ url, dir string }{
		{filepath.Join(dir, "plain"), filepath.Join(dir, "plain")},
		{"file://" + filepath.Join(dir, "url"), filepath.Join(dir, "url")},
	} {
		b, err := bucket.Open(ctx, tc.url, bucket.S3Config{})
		require.NoError(t, err, tc.url)
		f, ok := b.(*bucket.FS)
		require.True(t, ok, "%s: got %T", tc.url, b)
		require.Equal(t, tc.dir, f.Dir())
		st, err := os.Stat(tc.dir)
		require.NoError(t, err)
		require.True(t, st.IsDir())
	}

	// A relative directory, and the default.
	t.Chdir(dir)
	for _, url := range []string{bucket.DefaultStore, "file://rel/store"} {
		b, err := bucket.Open(ctx, url, bucket.S3Config{})
		require.NoError(t, err, url)
		want, err := filepath.Abs(strings.TrimPrefix(url, "file://"))
		require.NoError(t, err)
		require.Equal(t, want, b.(*bucket.FS).Dir())
	}
}

func TestOpenS3(t *testing.T) {
	srv := s3test.SharedVersityGW(t)
	ctx := t.Context()
	name := srv.MakeBucket(t, "open")
	for _, env := range []string{"AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION", "AWS_DEFAULT_REGION"} {
		t.Setenv(env, "")
	}

	// Settings from the arguments.
	b, err := bucket.Open(ctx, "s3://"+name+"/tenants/one/", srv.Config(""))
	require.NoError(t, err)
	defer b.(io.Closer).Close()
	_, err = b.Put(ctx, "k", strings.NewReader("v"), 1)
	require.NoError(t, err)
	raw, err := bucket.NewS3(ctx, srv.Config(name))
	require.NoError(t, err)
	defer raw.Close()
	data, _, err := raw.Get(ctx, "tenants/one/k")
	require.NoError(t, err, "the URL's prefix prefixes every key")
	require.Equal(t, "v", string(data))

	// Settings from the environment; arguments override it.
	cfg := srv.Config("")
	t.Setenv("AWS_ENDPOINT_URL", cfg.Endpoint)
	t.Setenv("AWS_ACCESS_KEY_ID", cfg.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", cfg.SecretKey)
	t.Setenv("AWS_REGION", cfg.Region)
	require.Equal(t, cfg, bucket.S3ConfigFromEnv())
	b, err = bucket.Open(ctx, "s3://"+name, bucket.S3Config{})
	require.NoError(t, err)
	_, ok := b.(*bucket.S3)
	require.True(t, ok, "no prefix: the S3 itself, got %T", b)
	data, _, err = b.Get(ctx, "tenants/one/k")
	require.NoError(t, err)
	require.Equal(t, "v", string(data))
	require.NoError(t, b.(io.Closer).Close())
	_, err = bucket.Open(ctx, "s3://"+name, bucket.S3Config{SecretKey: "wrong-secret"})
	require.Error(t, err, "an argument overrides the environment")
	require.ErrorContains(t, err, name)

	// A missing bucket, a bucket named twice.
	_, err = bucket.Open(ctx, "s3://no-such-bucket-here", bucket.S3Config{})
	require.ErrorContains(t, err, `bucket "no-such-bucket-here" does not exist at `+cfg.Endpoint)
	_, err = bucket.Open(ctx, "s3://"+name, bucket.S3Config{Bucket: "other"})
	require.ErrorContains(t, err, "names bucket")
}

func TestS3Unreachable(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	_, err := bucket.NewS3(ctx, bucket.S3Config{Endpoint: "http://127.0.0.1:1", Bucket: "bkt"})
	require.ErrorContains(t, err, `bucket "bkt" at http://127.0.0.1:1`)
	_, err = bucket.NewS3(ctx, bucket.S3Config{Endpoint: "127.0.0.1:9000", Bucket: "bkt"})
	require.ErrorContains(t, err, "want http://")
	_, err = bucket.NewS3(ctx, bucket.S3Config{Endpoint: "http://host/path", Bucket: "bkt"})
	require.ErrorContains(t, err, "without a path")
}

// BenchmarkReadAt reads 1 MiB ranges of a 64 MiB object in parallel through
// one Reader.
func BenchmarkReadAt(b *testing.B) {
	const size, chunk = 64 << 20, 1 << 20
	data := make([]byte, size)
	_, _ = rand.NewChaCha8([32]byte{1}).Read(data)
	for _, be := range []struct {
		name string
		new  func(b *testing.B) bucket.Bucket
	}{
		{"fs", func(b *testing.B) bucket.Bucket { return newFS(b) }},
		{"minio", func(b *testing.B) bucket.Bucket { return s3test.SharedMinIO(b).NewBucket(b, "bench") }},
		{"versitygw", func(b *testing.B) bucket.Bucket { return s3test.SharedVersityGW(b).NewBucket(b, "bench") }},
	} {
		b.Run(be.name, func(b *testing.B) {
			bk := be.new(b)
			ctx := b.Context()
			_, err := bk.Put(ctx, "bench/obj", bytes.NewReader(data), size)
			require.NoError(b, err)
			r, err := bk.Open(ctx, "bench/obj")
			require.NoError(b, err)
			defer r.Close()
			b.SetBytes(chunk)
			b.SetParallelism(4)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				p := make([]byte, chunk)
				rng := rand.New(rand.NewPCG(rand.Uint64(), 0))
				for pb.Next() {
					off := rng.Int64N(size/chunk) * chunk
					if _, err := r.ReadAt(p, off); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

func ExamplePrefix() {
	ctx := context.Background()
	store := bucket.NewMem()
	team := bucket.Prefix(store, "teams/robotics")
	team.Put(ctx, "refs/main", strings.NewReader("c1"), 2)
	for info := range store.List(ctx, "") {
		fmt.Println(info.Key)
	}
	for info := range team.List(ctx, "") {
		fmt.Println(info.Key)
	}
	// Output:
	// teams/robotics/refs/main
	// refs/main
}
