package gc_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/weftdata/weft/bucket"
	"github.com/weftdata/weft/errdefs"
	"github.com/weftdata/weft/gc"
	"github.com/weftdata/weft/internal/s3test"
	"github.com/weftdata/weft/tables"
	"github.com/weftdata/weft/versions"
)

func TestMain(m *testing.M) { os.Exit(s3test.Main(m)) }

var schema = arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)

func batch(mem memory.Allocator, start, n int64) array.RecordReader {
	b := array.NewInt64Builder(mem)
	defer b.Release()
	for i := start; i < start+n; i++ {
		b.Append(i)
	}
	col := b.NewArray()
	defer col.Release()
	rec := array.NewRecordBatch(schema, []arrow.Array{col}, n)
	defer rec.Release()
	r, _ := array.NewRecordReader(schema, []arrow.RecordBatch{rec})
	return r
}

// deleteLog records every key deleted through it.
type deleteLog struct {
	bucket.Bucket
	mu      sync.Mutex
	deleted []string
}

func (d *deleteLog) Delete(ctx context.Context, key string) error {
	d.mu.Lock()
	d.deleted = append(d.deleted, key)
	d.mu.Unlock()
	return d.Bucket.Delete(ctx, key)
}

// RemoveStaleTemps passes the fs store's temp cleanup through.
func (d *deleteLog) RemoveStaleTemps(cutoff time.Time, dryRun bool) (bucket.TempStats, error) {
	if f, ok := d.Bucket.(*bucket.FS); ok {
		return f.RemoveStaleTemps(cutoff, dryRun)
	}
	return bucket.TempStats{}, nil
}

func hexID(c byte) string { return strings.Repeat(string(c), 64) }

// TestCollectRacesWriters: 8 writers append in loops while gc runs over and
// over with a tiny grace period. No object a commit names is ever deleted
// (every commit's manifests and data files are readable at the end, every
// acknowledged row is there once), and orphans older than the grace are
// removed: planted ones, and those of attempts that lost their race.
func TestCollectRacesWriters(t *testing.T) {
	backends := map[string]func(t *testing.T) (bucket.Bucket, string){
		"fs": func(t *testing.T) (bucket.Bucket, string) {
			dir := t.TempDir()
			b, err := bucket.NewFS(dir)
			require.NoError(t, err)
			return b, dir
		},
		"minio": func(t *testing.T) (bucket.Bucket, string) {
			return s3test.SharedMinIO(t).NewBucket(t, t.Name()), ""
		},
	}
	for name, newBucket := range backends {
		t.Run(name, func(t *testing.T) {
			if testing.Short() {
				t.Skip("-short: skipping the gc race")
			}
			ctx := context.Background()
			inner, dir := newBucket(t)
			b := &deleteLog{Bucket: inner}
			v, err := versions.New(b, versions.DefaultOptions())
			require.NoError(t, err)
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			topts := tables.DefaultOptions()
			topts.Allocator = mem
			s, err := tables.New(v, topts)
			require.NoError(t, err)
			_, err = v.CreateProject(ctx, "p")
			require.NoError(t, err)

			// Orphans of killed puts: a data file, a manifest, a commit
			// (and, on fs, a temporary file), plus the auth and run
			// objects gc must never touch.
			orphans := []string{"projects/p/data/t/killed.parquet", "projects/p/manifests/" + hexID('a'), "projects/p/commits/" + hexID('b')}
			kept := []string{"auth/tokens/" + hexID('c'), "projects/p/runs/" + hexID('d')}
			for _, k := range orphans {
				_, err := b.Put(ctx, k, strings.NewReader("orphan"), 6)
				require.NoError(t, err)
			}
			_, err = b.PutIfAbsent(ctx, kept[0], []byte(`{"format":1}`))
			require.NoError(t, err)
			_, err = b.PutIfAbsent(ctx, kept[1], []byte(`{"format":1,"components":[]}`))
			require.NoError(t, err)
			if dir != "" {
				// Age them on fs so that the first collection already
				// removes them, mid-race.
				tmp := filepath.Join(dir, ".weft-tmp", "put-killed")
				require.NoError(t, os.WriteFile(tmp, []byte("partial"), 0o644))
				long := time.Now().Add(-time.Hour)
				for _, p := range append([]string{tmp}, keysToPaths(dir, orphans...)...) {
					require.NoError(t, os.Chtimes(p, long, long))
				}
			}

			const grace = time.Second
			const writers, each, rows = 8, 25, 10
			var (
				mu      sync.Mutex
				acked   []int64
				timeout int
			)
			done := make(chan struct{})
			var wg sync.WaitGroup
			for w := range writers {
				wg.Go(func() {
					for i := range each {
						start := int64(w*each+i) * rows
						// The writer-side half of gc's safety: a put
						// that cannot finish well within the grace
						// period fails before it moves its branch.
						actx, cancel := context.WithTimeout(ctx, grace/3)
						r := batch(mem, start, rows)
						_, err := s.Append(actx, "p", "main", "t", r, "")
						r.Release()
						cancel()
						mu.Lock()
						switch {
						case err == nil:
							acked = append(acked, start)
						case errors.Is(err, context.DeadlineExceeded):
							timeout++
						default:
							t.Errorf("writer %d: %v", w, err)
						}
						mu.Unlock()
					}
				})
			}
			var runs []gc.Stats
			gcDone := make(chan struct{})
			go func() {
				defer close(gcDone)
				opts := gc.DefaultOptions()
				opts.Grace = grace
				for {
					st, err := gc.Collect(ctx, v, opts)
					if err != nil {
						t.Errorf("gc during the race: %v", err)
						return
					}
					runs = append(runs, st)
					select {
					case <-done:
						return
					default:
					}
				}
			}()
			wg.Wait()
			close(done)
			<-gcDone
			t.Logf("%d gc runs during the race; %d appends acknowledged, %d timed out", len(runs), len(acked), timeout)
			require.NotEmpty(t, acked)

			// Let everything age past the grace period, then collect.
			time.Sleep(grace + 100*time.Millisecond)
			opts := gc.DefaultOptions()
			opts.Grace = grace
			final, err := gc.Collect(ctx, v, opts)
			require.NoError(t, err)
			t.Logf("final gc: %+v", final)
			var racedDeletes int
			for _, st := range runs {
				racedDeletes += st.Deleted
			}
			t.Logf("deleted during the race: %d objects", racedDeletes)

			// Every commit's manifests and data files are there.
			live := map[string]bool{}
			log, err := v.Log(ctx, "p", "main", 0)
			require.NoError(t, err)
			for _, c := range log {
				live[versions.CommitsPrefix("p")+string(c.ID)] = true
				for _, mid := range c.Tables {
					m, err := v.GetManifest(ctx, "p", mid)
					require.NoError(t, err, "commit %s names manifest %s", c.ID.Short(), mid)
					live[versions.ManifestsPrefix("p")+string(mid)] = true
					for _, f := range m.Files {
						_, err := b.Stat(ctx, versions.DataFileKey("p", f.Path))
						require.NoError(t, err, "manifest %s names %s", mid, f.Path)
						live[versions.DataFileKey("p", f.Path)] = true
					}
				}
			}
			b.mu.Lock()
			for _, k := range b.deleted {
				require.False(t, live[k], "gc deleted %s, which a commit names", k)
			}
			b.mu.Unlock()

			// Every acknowledged row once, nothing twice.
			tv, err := s.Table(ctx, "p", "main", "t")
			require.NoError(t, err)
			var ids []int64
			for rec, err := range s.Scan(ctx, tv, nil, 0, len(tv.Blocks()), 1<<20) {
				require.NoError(t, err)
				ids = append(ids, rec.Column(0).(*array.Int64).Int64Values()...)
				rec.Release()
			}
			slices.Sort(ids)
			require.Equal(t, len(ids), len(slices.Compact(slices.Clone(ids))), "no row twice")
			for _, start := range acked {
				_, found := slices.BinarySearch(ids, start)
				require.True(t, found, "acknowledged rows from %d are missing", start)
			}

			// Only live objects remain where gc looks; what it must not
			// touch is still there.
			for _, prefix := range []string{versions.CommitsPrefix("p"), versions.ManifestsPrefix("p"), versions.DataPrefix("p")} {
				for info, err := range b.List(ctx, prefix) {
					require.NoError(t, err)
					require.True(t, live[info.Key], "%s is garbage older than the grace period, yet still there", info.Key)
				}
			}
			for _, k := range orphans {
				_, err := b.Stat(ctx, k)
				require.ErrorIs(t, err, bucket.ErrNotFound, k)
			}
			for _, k := range kept {
				_, err := b.Stat(ctx, k)
				require.NoError(t, err, k)
			}
			if dir != "" {
				entries, err := os.ReadDir(filepath.Join(dir, ".weft-tmp"))
				require.NoError(t, err)
				require.Empty(t, entries, "stale temporary files are removed")
			}
		})
	}
}

func keysToPaths(dir string, keys ...string) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = filepath.Join(dir, filepath.FromSlash(k))
	}
	return out
}

// TestCollectDryRunAndYoung: a dry run deletes nothing; an orphan younger
// than the grace period is kept; a run record's pinned commit is a root.
func TestCollectDryRunAndYoung(t *testing.T) {
	ctx := context.Background()
	b := bucket.NewMem()
	v, err := versions.New(b, versions.DefaultOptions())
	require.NoError(t, err)
	_, err = v.CreateProject(ctx, "p")
	require.NoError(t, err)
	_, err = b.Put(ctx, "projects/p/data/t/young.parquet", strings.NewReader("x"), 1)
	require.NoError(t, err)

	opts := gc.DefaultOptions()
	opts.Grace = time.Hour
	st, err := gc.Collect(ctx, v, opts)
	require.NoError(t, err)
	require.Equal(t, 0, st.Deleted)
	require.Equal(t, 2, st.Young, "the data file and the root commit are young")

	// An hour later: a dry run reports it and keeps it; a real run deletes it.
	opts.Now = func() time.Time { return time.Now().Add(2 * time.Hour) }
	opts.DryRun = true
	st, err = gc.Collect(ctx, v, opts)
	require.NoError(t, err)
	require.Equal(t, 1, st.Deleted)
	require.EqualValues(t, 1, st.DeletedBytes)
	_, err = b.Stat(ctx, "projects/p/data/t/young.parquet")
	require.NoError(t, err)
	opts.DryRun = false
	st, err = gc.Collect(ctx, v, opts)
	require.NoError(t, err)
	require.Equal(t, 1, st.Deleted)
	_, err = b.Stat(ctx, "projects/p/data/t/young.parquet")
	require.ErrorIs(t, err, bucket.ErrNotFound)
	require.Equal(t, 1, st.Live, "the root commit is live and old")

	t.Run("a run's pinned commit is a root", func(t *testing.T) {
		// A commit no branch names, pinned by a run record.
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		s, err := tables.New(v, tables.Options{RowGroupRows: 100, RowGroupBytes: 1 << 20, Allocator: mem})
		require.NoError(t, err)
		_, err = v.CreateBranch(ctx, "p", "side", "main")
		require.NoError(t, err)
		r := batch(mem, 0, 5)
		res, err := s.Append(ctx, "p", "side", "t", r, "")
		r.Release()
		require.NoError(t, err)
		run := fmt.Sprintf(`{"format":1,"components":[{"project":"p","table":"t","commit":%q}]}`, res.Commit.ID)
		_, err = b.PutIfAbsent(ctx, "projects/p/runs/"+hexID('e'), []byte(run))
		require.NoError(t, err)
		// Make the branch forget the commit: point it back at main's head.
		head, err := v.Head(ctx, "p", "main")
		require.NoError(t, err)
		_, err = b.Put(ctx, "projects/p/refs/heads/side", strings.NewReader(string(head)+"\n"), -1)
		require.NoError(t, err)
		st, err := gc.Collect(ctx, v, opts)
		require.NoError(t, err)
		require.Equal(t, 0, st.Deleted)
		_, err = b.Stat(ctx, versions.DataFileKey("p", res.File.Path))
		require.NoError(t, err)
	})
}

// TestCollectMedia: a media object a kept manifest names is kept, also
// once a later append stops naming it in its rows (the manifest carries
// it); an unnamed one is kept while young and deleted once older than
// the grace.
func TestCollectMedia(t *testing.T) {
	ctx := context.Background()
	b := bucket.NewMem()
	v, err := versions.New(b, versions.DefaultOptions())
	require.NoError(t, err)
	_, err = v.CreateProject(ctx, "p")
	require.NoError(t, err)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	s, err := tables.New(v, tables.Options{RowGroupRows: 100, RowGroupBytes: 1 << 20, Allocator: mem})
	require.NoError(t, err)
	put := func(data string) string {
		h := sha256.Sum256([]byte(data))
		sha := hex.EncodeToString(h[:])
		_, err := s.PutMedia(ctx, "p", strings.NewReader(data), tables.MediaInfo{SHA256: sha, Size: int64(len(data))})
		require.NoError(t, err)
		return sha
	}
	named, orphan := put("named clip"), put("orphan clip")
	vs := arrow.NewSchema([]arrow.Field{{Name: "cam", Type: tables.VideoType, Metadata: arrow.NewMetadata([]string{tables.KindKey}, []string{tables.KindVideo})}}, nil)
	appendRows := func(sha string) {
		bld := array.NewRecordBuilder(mem, vs)
		defer bld.Release()
		st := bld.Field(0).(*array.StructBuilder)
		st.Append(true)
		st.FieldBuilder(0).(*array.StringBuilder).Append(sha)
		st.FieldBuilder(1).(*array.Float64Builder).Append(0)
		rec := bld.NewRecordBatch()
		defer rec.Release()
		r, err := array.NewRecordReader(vs, []arrow.RecordBatch{rec})
		require.NoError(t, err)
		defer r.Release()
		_, err = s.Append(ctx, "p", "main", "eps", r, "")
		require.NoError(t, err)
	}
	appendRows(named)
	other := put("other clip")
	appendRows(other) // the table's manifest still names `named`

	opts := gc.DefaultOptions()
	opts.Grace = time.Hour
	st, err := gc.Collect(ctx, v, opts)
	require.NoError(t, err)
	require.Equal(t, 0, st.Deleted, "everything is young")

	opts.Now = func() time.Time { return time.Now().Add(2 * time.Hour) }
	st, err = gc.Collect(ctx, v, opts)
	require.NoError(t, err)
	require.Equal(t, 1, st.Deleted)
	for _, sha := range []string{named, other} {
		_, err := b.Stat(ctx, versions.MediaKey("p", sha))
		require.NoError(t, err, "media %s was deleted", sha[:8])
	}
	_, err = b.Stat(ctx, versions.MediaKey("p", orphan))
	require.ErrorIs(t, err, bucket.ErrNotFound, "an unnamed old media object is deleted")
}

// TestCollectCheckpointWeights: a checkpoint's weights, a media object of
// kind file that a file column of the checkpoints table names, are kept
// by the manifest (also after later rows stop naming them); the weights
// of a save killed between upload and commit (an object no manifest
// names) are kept while young and deleted once older than the grace.
func TestCollectCheckpointWeights(t *testing.T) {
	ctx := context.Background()
	b := bucket.NewMem()
	v, err := versions.New(b, versions.DefaultOptions())
	require.NoError(t, err)
	_, err = v.CreateProject(ctx, "p")
	require.NoError(t, err)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	s, err := tables.New(v, tables.Options{RowGroupRows: 100, RowGroupBytes: 1 << 20, Allocator: mem})
	require.NoError(t, err)
	put := func(data string) string {
		h := sha256.Sum256([]byte(data))
		sha := hex.EncodeToString(h[:])
		_, err := s.PutMedia(ctx, "p", strings.NewReader(data), tables.MediaInfo{SHA256: sha, Size: int64(len(data))})
		require.NoError(t, err)
		return sha
	}
	cs := arrow.NewSchema([]arrow.Field{
		{Name: "step", Type: arrow.PrimitiveTypes.Int64},
		{Name: "weights", Type: arrow.BinaryTypes.String, Nullable: true,
			Metadata: arrow.NewMetadata([]string{tables.KindKey}, []string{tables.KindFile})},
	}, nil)
	save := func(step int64, sha string) {
		bld := array.NewRecordBuilder(mem, cs)
		defer bld.Release()
		bld.Field(0).(*array.Int64Builder).Append(step)
		if sha == "" {
			bld.Field(1).AppendNull() // a rank that adds metrics only
		} else {
			bld.Field(1).(*array.StringBuilder).Append(sha)
		}
		rec := bld.NewRecordBatch()
		defer rec.Release()
		r, err := array.NewRecordReader(cs, []arrow.RecordBatch{rec})
		require.NoError(t, err)
		defer r.Release()
		_, err = s.Append(ctx, "p", "main", "checkpoints", r, "")
		require.NoError(t, err)
	}
	first := put("weights at step 100")
	save(100, first)
	second := put("weights at step 200")
	save(200, second)
	save(200, "")
	killed := put("weights at step 300, save killed before its commit")

	opts := gc.DefaultOptions()
	opts.Grace = time.Hour
	st, err := gc.Collect(ctx, v, opts)
	require.NoError(t, err)
	require.Equal(t, 0, st.Deleted, "everything is young")
	_, err = b.Stat(ctx, versions.MediaKey("p", killed))
	require.NoError(t, err, "a young unnamed object is kept (its save may be about to commit)")

	opts.Now = func() time.Time { return time.Now().Add(2 * time.Hour) }
	st, err = gc.Collect(ctx, v, opts)
	require.NoError(t, err)
	require.Equal(t, 1, st.Deleted)
	for _, sha := range []string{first, second} {
		_, err := b.Stat(ctx, versions.MediaKey("p", sha))
		require.NoError(t, err, "committed weights %s were deleted", sha[:8])
	}
	_, err = b.Stat(ctx, versions.MediaKey("p", killed))
	require.ErrorIs(t, err, bucket.ErrNotFound, "the killed save's weights are deleted after the grace")
}

// TestCollectFailsClosedOnDamage: a damaged object on the mark's path (a
// garbage or huge run record, a garbage manifest, a garbage ref) fails
// the collection as Corrupt before anything is deleted: the data it can
// no longer trace is kept, not taken for garbage.
func TestCollectFailsClosedOnDamage(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, b bucket.Bucket, v *versions.Store)
	}{
		{"run record garbage", func(t *testing.T, b bucket.Bucket, _ *versions.Store) {
			_, err := b.Put(context.Background(), "projects/p/runs/"+hexID('e'), strings.NewReader("{not json"), -1)
			require.NoError(t, err)
		}},
		{"run record huge", func(t *testing.T, b bucket.Bucket, _ *versions.Store) {
			huge := strings.Repeat(" ", bucket.MaxConditionalSize+1)
			_, err := b.Put(context.Background(), "projects/p/runs/"+hexID('e'), strings.NewReader(huge), int64(len(huge)))
			require.NoError(t, err)
		}},
		{"manifest garbage", func(t *testing.T, b bucket.Bucket, v *versions.Store) {
			for info, err := range b.List(context.Background(), versions.ManifestsPrefix("p")) {
				require.NoError(t, err)
				_, err = b.Put(context.Background(), info.Key, strings.NewReader("garbage"), -1)
				require.NoError(t, err)
			}
		}},
		{"ref garbage", func(t *testing.T, b bucket.Bucket, _ *versions.Store) {
			_, err := b.Put(context.Background(), versions.RefKey("p", "main"), strings.NewReader("zz\n"), -1)
			require.NoError(t, err)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			b := bucket.NewMem()
			v, err := versions.New(b, versions.DefaultOptions())
			require.NoError(t, err)
			_, err = v.CreateProject(ctx, "p")
			require.NoError(t, err)
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			s, err := tables.New(v, tables.Options{RowGroupRows: 100, RowGroupBytes: 1 << 20, Allocator: mem})
			require.NoError(t, err)
			r := batch(mem, 0, 5)
			res, err := s.Append(ctx, "p", "main", "t", r, "")
			r.Release()
			require.NoError(t, err)
			tc.damage(t, b, v)
			before := 0
			for range b.List(ctx, "") {
				before++
			}
			opts := gc.DefaultOptions()
			opts.Now = func() time.Time { return time.Now().Add(30 * 24 * time.Hour) }
			_, err = gc.Collect(ctx, v, opts)
			require.ErrorIs(t, err, gc.ErrMarkFailed)
			require.ErrorIs(t, err, errdefs.ErrCorrupt)
			after := 0
			for range b.List(ctx, "") {
				after++
			}
			require.Equal(t, before, after, "nothing is deleted")
			_, err = b.Stat(ctx, versions.DataFileKey("p", res.File.Path))
			require.NoError(t, err)
		})
	}
}
