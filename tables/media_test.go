package tables_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/weftdata/weft/bucket"
	"github.com/weftdata/weft/errdefs"
	"github.com/weftdata/weft/tables"
	"github.com/weftdata/weft/versions"
)

func randomBytes(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, 1))
	out := make([]byte, n)
	for i := range out {
		out[i] = byte(r.Uint32())
	}
	return out
}

func sha(data []byte) string {
	h := sha256.Sum256(data)
	return hex.EncodeToString(h[:])
}

// countKeys lists the objects under prefix.
func countKeys(t *testing.T, b bucket.Bucket, prefix string) int {
	t.Helper()
	n := 0
	for _, err := range b.List(context.Background(), prefix) {
		require.NoError(t, err)
		n++
	}
	return n
}

// noReads fails the test if PutMedia reads the body.
type noReads struct{ t *testing.T }

func (r noReads) Read([]byte) (int, error) {
	r.t.Error("PutMedia read the body of a media object that exists")
	return 0, io.EOF
}

// TestPutMedia: uploads on fs and MinIO, a size that fits one request and
// one that S3 uploads in parts. A wrong digest or size leaves no object;
// an identical re-upload reads and stores nothing; reads are ranged.
func TestPutMedia(t *testing.T) {
	for name, mk := range backends(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newProjectEnv(t, mk(t), tables.DefaultOptions())
			ctx := context.Background()
			for _, size := range []int{0, 1000, 20 << 20} {
				t.Run(fmt.Sprint(size), func(t *testing.T) {
					data := randomBytes(uint64(size), size)
					h := sha(data)
					prefix := versions.MediaPrefix("p")
					before := countKeys(t, e.b, prefix)

					_, err := e.s.StatMedia(ctx, "p", h)
					require.ErrorIs(t, err, errdefs.ErrNotFound)

					bad := []struct {
						name string
						info tables.MediaInfo
						body []byte
					}{
						{"wrong digest", tables.MediaInfo{SHA256: sha([]byte("other")), Size: int64(size), Name: "ep.mp4"}, data},
						{"wrong digest, size unknown", tables.MediaInfo{SHA256: sha([]byte("other")), Size: -1}, data},
						{"longer", tables.MediaInfo{SHA256: h, Size: -1}, append(append([]byte{}, data...), 1)},
						{"size too large", tables.MediaInfo{SHA256: h, Size: int64(size + 1)}, data},
					}
					if size > 0 {
						bad = append(bad, []struct {
							name string
							info tables.MediaInfo
							body []byte
						}{
							{"changed byte", tables.MediaInfo{SHA256: h, Size: int64(size)}, append(append([]byte{}, data[:size-1]...), data[size-1]^1)},
							{"size too small", tables.MediaInfo{SHA256: h, Size: int64(size - 1)}, data},
							{"truncated, size unknown", tables.MediaInfo{SHA256: h, Size: -1}, data[:size/2]},
						}...)
					}
					for _, tc := range bad {
						_, err := e.s.PutMedia(ctx, "p", bytes.NewReader(tc.body), tc.info)
						require.ErrorIs(t, err, tables.ErrMediaMismatch, tc.name)
						require.ErrorIs(t, err, errdefs.ErrInvalidArgument, tc.name)
						require.Equal(t, before, countKeys(t, e.b, prefix), "%s left an object", tc.name)
					}
					if fs, ok := e.b.(*bucket.FS); ok {
						tmps, err := os.ReadDir(filepath.Join(fs.Dir(), ".weft-tmp"))
						if err == nil {
							require.Empty(t, tmps, "a refused upload left a temporary file")
						}
					}

					res, err := e.s.PutMedia(ctx, "p", bytes.NewReader(data), tables.MediaInfo{SHA256: h, Size: int64(size), Name: "ep.mp4"})
					require.NoError(t, err)
					require.True(t, res.Stored)
					require.Equal(t, versions.NewMediaObject(h, int64(size)), res.Object)
					require.Equal(t, before+1, countKeys(t, e.b, prefix))

					// Identical re-upload: nothing read, nothing new.
					res, err = e.s.PutMedia(ctx, "p", noReads{t}, tables.MediaInfo{SHA256: h, Size: int64(size)})
					require.NoError(t, err)
					require.False(t, res.Stored)
					require.Equal(t, versions.NewMediaObject(h, int64(size)), res.Object)
					require.Equal(t, before+1, countKeys(t, e.b, prefix))
					_, err = e.s.PutMedia(ctx, "p", noReads{t}, tables.MediaInfo{SHA256: h, Size: int64(size) + 1})
					require.ErrorIs(t, err, tables.ErrMediaMismatch, "a size contradicting the stored object")

					got, err := e.s.StatMedia(ctx, "p", h)
					require.NoError(t, err)
					require.Equal(t, res.Object, got)

					// Parallel ranged reads.
					r, n, err := e.s.OpenMedia(ctx, "p", h)
					require.NoError(t, err)
					require.Equal(t, int64(size), n)
					var wg sync.WaitGroup
					for k := range 8 {
						wg.Go(func() {
							off := k * size / 8
							buf := make([]byte, min(777, size-off))
							if len(buf) == 0 {
								return
							}
							_, err := r.ReadAt(buf, int64(off))
							require.NoError(t, err)
							require.Equal(t, data[off:off+len(buf)], buf)
						})
					}
					wg.Wait()
					require.NoError(t, r.(io.Closer).Close(), "the reader is a Closer")
				})
			}
			t.Run("bad requests", func(t *testing.T) {
				_, err := e.s.PutMedia(ctx, "p", strings.NewReader("x"), tables.MediaInfo{SHA256: "ABC", Size: 1})
				require.ErrorIs(t, err, errdefs.ErrInvalidArgument)
				_, err = e.s.PutMedia(ctx, "nope", strings.NewReader("x"), tables.MediaInfo{SHA256: sha([]byte("x")), Size: 1})
				require.ErrorIs(t, err, errdefs.ErrNotFound, "a project that does not exist")
				_, _, err = e.s.OpenMedia(ctx, "p", sha([]byte("never")))
				require.ErrorIs(t, err, errdefs.ErrNotFound)
			})
		})
	}
}

// genReader yields n pseudo-random bytes without holding them.
type genReader struct {
	r    *rand.PCG
	left int64
}

func (g *genReader) Read(p []byte) (int, error) {
	if g.left == 0 {
		return 0, io.EOF
	}
	p = p[:min(int64(len(p)), g.left)]
	i := 0
	for ; i+8 <= len(p); i += 8 {
		v := g.r.Uint64()
		for k := range 8 {
			p[i+k] = byte(v >> (8 * k))
		}
	}
	for ; i < len(p); i++ {
		p[i] = byte(g.r.Uint64())
	}
	g.left -= int64(len(p))
	return len(p), nil
}

// TestPutMediaStreams uploads 512 MiB from a generator and samples the
// Go heap meanwhile: its growth stays far below the file's size (a memory
// bound, not a timing). On S3 the bound adds the bucket's multipart
// buffers (4 parts in flight and one being read, 16 MiB each).
func TestPutMediaStreams(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a 512 MiB upload")
	}
	const size = 512 << 20
	bounds := map[string]uint64{"fs": 64 << 20, "minio": 64<<20 + 5*16<<20}
	for name, mk := range backends(t) {
		t.Run(name, func(t *testing.T) {
			e := newProjectEnv(t, mk(t), tables.DefaultOptions())
			ctx := context.Background()
			h := sha256.New()
			_, err := io.Copy(h, &genReader{r: rand.NewPCG(7, 7), left: size})
			require.NoError(t, err)
			digest := hex.EncodeToString(h.Sum(nil))

			runtime.GC()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			base := ms.HeapInuse
			var peak atomic.Uint64
			done := make(chan struct{})
			var wg sync.WaitGroup
			wg.Go(func() {
				tick := time.NewTicker(20 * time.Millisecond)
				defer tick.Stop()
				for {
					var ms runtime.MemStats
					runtime.ReadMemStats(&ms)
					if ms.HeapInuse > peak.Load() {
						peak.Store(ms.HeapInuse)
					}
					select {
					case <-done:
						return
					case <-tick.C:
					}
				}
			})
			res, err := e.s.PutMedia(ctx, "p", &genReader{r: rand.NewPCG(7, 7), left: size}, tables.MediaInfo{SHA256: digest, Size: size, Name: "big.mp4"})
			close(done)
			wg.Wait()
			require.NoError(t, err)
			require.True(t, res.Stored)
			require.Equal(t, int64(size), res.Object.Size)
			growth := int64(peak.Load()) - int64(base)
			t.Logf("%s: peak heap in use grew by %.1f MiB for a %d MiB upload", name, float64(growth)/(1<<20), size>>20)
			require.Less(t, growth, int64(bounds[name]), "the upload held too much of the file in memory")
		})
	}
}

// videoSchema: an episode column, a video column and a plain one.
func videoSchema() *arrow.Schema {
	return arrow.NewSchema([]arrow.Field{
		{Name: "episode_index", Type: arrow.PrimitiveTypes.Int64},
		{Name: "wrist_camera", Type: tables.VideoType, Metadata: arrow.NewMetadata([]string{tables.KindKey}, []string{tables.KindVideo})},
		{Name: "action", Type: arrow.PrimitiveTypes.Float32},
	}, nil)
}

// videoRows is one batch: row i names media shas[i % len(shas)].
func videoRows(mem memory.Allocator, schema *arrow.Schema, n int, shas ...string) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	ep := b.Field(0).(*array.Int64Builder)
	v := b.Field(1).(*array.StructBuilder)
	media := v.FieldBuilder(0).(*array.StringBuilder)
	times := v.FieldBuilder(1).(*array.Float64Builder)
	act := b.Field(2).(*array.Float32Builder)
	for i := range n {
		ep.Append(int64(i % len(shas)))
		v.Append(true)
		media.Append(shas[i%len(shas)])
		times.Append(float64(i/len(shas)) / 25)
		act.Append(float32(i))
	}
	return b.NewRecordBatch()
}

func recordReader(t *testing.T, schema *arrow.Schema, recs ...arrow.RecordBatch) array.RecordReader {
	t.Helper()
	r, err := array.NewRecordReader(schema, recs)
	require.NoError(t, err)
	for _, rec := range recs {
		rec.Release()
	}
	return r
}

func (e *env) putMedia(t *testing.T, data []byte) string {
	t.Helper()
	h := sha(data)
	_, err := e.s.PutMedia(context.Background(), "p", bytes.NewReader(data), tables.MediaInfo{SHA256: h, Size: int64(len(data))})
	require.NoError(t, err)
	return h
}

func (e *env) manifest(t *testing.T, tbl versions.TableName) *versions.Manifest {
	t.Helper()
	v, err := e.s.Table(context.Background(), "p", "main", tbl)
	require.NoError(t, err)
	return v.Manifest
}

func shas(m *versions.Manifest) []string {
	var out []string
	for _, o := range m.Media {
		out = append(out, o.SHA256)
	}
	return out
}

// TestAppendVideo: an append names its video columns' media in the new
// manifest (format 2), carries the table's media forward, and stores
// nothing when a medium is missing, a row has no media, or Check fails.
func TestAppendVideo(t *testing.T) {
	for name, mk := range backends(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newProjectEnv(t, mk(t), tables.DefaultOptions())
			ctx := context.Background()
			schema := videoSchema()
			a := e.putMedia(t, []byte("media a"))
			b := e.putMedia(t, []byte("media b"))
			absent := sha([]byte("never uploaded"))
			head := func() versions.CommitID {
				id, err := e.v.Head(ctx, "p", "main")
				require.NoError(t, err)
				return id
			}
			dataFiles := func() int { return countKeys(t, e.b, versions.DataPrefix("p")) }

			// Absent media: InvalidArgument naming row and digest, nothing committed.
			start, files := head(), dataFiles()
			r := recordReader(t, schema, videoRows(e.mem, schema, 4, a), videoRows(e.mem, schema, 4, a, absent))
			_, err := e.s.Append(ctx, "p", "main", "eps", r, "")
			r.Release()
			require.ErrorIs(t, err, tables.ErrMediaNotUploaded)
			require.ErrorIs(t, err, errdefs.ErrInvalidArgument)
			require.Contains(t, err.Error(), "row 5: media "+absent+" is not uploaded; upload it first (DoPut media)")
			require.Equal(t, start, head())
			require.Equal(t, files, dataFiles(), "a refused append left a data file")

			// First append: media a; format 2.
			r = recordReader(t, schema, videoRows(e.mem, schema, 6, a))
			_, err = e.s.Append(ctx, "p", "main", "eps", r, "")
			r.Release()
			require.NoError(t, err)
			m := e.manifest(t, "eps")
			require.Equal(t, versions.ManifestMediaFormat, m.Format)
			require.Equal(t, []string{a}, shas(m))

			// Adds b, keeps a.
			r = recordReader(t, schema, videoRows(e.mem, schema, 3, b, a))
			_, err = e.s.Append(ctx, "p", "main", "eps", r, "")
			r.Release()
			require.NoError(t, err)
			want := []string{a, b}
			if b < a {
				want = []string{b, a}
			}
			require.Equal(t, want, shas(e.manifest(t, "eps")))
			// Names only a: both carried forward.
			r = recordReader(t, schema, videoRows(e.mem, schema, 2, a))
			_, err = e.s.Append(ctx, "p", "main", "eps", r, "")
			r.Release()
			require.NoError(t, err)
			require.Equal(t, want, shas(e.manifest(t, "eps")))

			// Check: called per batch with the table's schema and first rows;
			// an error stores nothing.
			var firsts []int64
			check := func(_ context.Context, s *arrow.Schema, rec arrow.RecordBatch, first int64) error {
				require.True(t, s.Field(1).HasMetadata())
				firsts = append(firsts, first)
				if first >= 7 {
					return fmt.Errorf("%w: row %d is no good", errdefs.ErrInvalidArgument, first)
				}
				return nil
			}
			start, files = head(), dataFiles()
			r = recordReader(t, schema, videoRows(e.mem, schema, 3, a), videoRows(e.mem, schema, 4, a), videoRows(e.mem, schema, 2, b))
			_, err = e.s.AppendWith(ctx, "p", "main", "eps", r, tables.AppendOptions{Check: check})
			r.Release()
			require.ErrorContains(t, err, "row 7 is no good")
			require.Equal(t, []int64{0, 3, 7}, firsts)
			require.Equal(t, start, head())
			require.Equal(t, files, dataFiles())

			// A row without media, or a null video value.
			for _, tc := range []struct {
				name string
				edit func(*array.StructBuilder)
				msg  string
			}{
				{"null struct", func(v *array.StructBuilder) { v.AppendNull() }, "column \"wrist_camera\" is not nullable but the append has 1 nulls"},
				{"null media", func(v *array.StructBuilder) {
					v.Append(true)
					v.FieldBuilder(0).AppendNull()
					v.FieldBuilder(1).(*array.Float64Builder).Append(1)
				}, "row 2: video column \"wrist_camera\" has no media"},
				{"null time", func(v *array.StructBuilder) {
					v.Append(true)
					v.FieldBuilder(0).(*array.StringBuilder).Append(a)
					v.FieldBuilder(1).AppendNull()
				}, "row 2: video column \"wrist_camera\" has no time"},
				{"not a digest", func(v *array.StructBuilder) {
					v.Append(true)
					v.FieldBuilder(0).(*array.StringBuilder).Append("ep_0001.mp4")
					v.FieldBuilder(1).(*array.Float64Builder).Append(1)
				}, "is not a sha256 digest"},
			} {
				t.Run(tc.name, func(t *testing.T) {
					// The column's children are not nullable, but a sender's
					// arrays may hold nulls anyway.
					nullable := arrow.NewSchema([]arrow.Field{schema.Field(0), {Name: "wrist_camera", Type: tables.VideoType, Nullable: true}, schema.Field(2)}, nil)
					bld := array.NewRecordBuilder(e.mem, nullable)
					defer bld.Release()
					v := bld.Field(1).(*array.StructBuilder)
					for i := range 3 {
						bld.Field(0).(*array.Int64Builder).Append(0)
						bld.Field(2).(*array.Float32Builder).Append(0)
						if i == 2 {
							tc.edit(v)
							continue
						}
						v.Append(true)
						v.FieldBuilder(0).(*array.StringBuilder).Append(a)
						v.FieldBuilder(1).(*array.Float64Builder).Append(float64(i))
					}
					start := head()
					r := recordReader(t, nullable, bld.NewRecordBatch())
					defer r.Release()
					_, err := e.s.Append(ctx, "p", "main", "eps", r, "")
					require.ErrorIs(t, err, errdefs.ErrInvalidArgument)
					require.ErrorContains(t, err, tc.msg)
					require.Equal(t, start, head())
				})
			}
		})
	}
}

// gatedReader serves its batches, waiting on gate before the last one.
type gatedReader struct {
	array.RecordReader
	n       int
	reached chan struct{}
	gate    chan struct{}
}

func (g *gatedReader) Next() bool {
	g.n++
	if g.n == 2 {
		close(g.reached)
		<-g.gate
	}
	return g.RecordReader.Next()
}

// TestAppendVideoConcurrent: an append whose commit lands after another
// append changed the table's manifest keeps both appends' media.
func TestAppendVideoConcurrent(t *testing.T) {
	b, err := bucket.NewFS(t.TempDir())
	require.NoError(t, err)
	e := newProjectEnv(t, b, tables.DefaultOptions())
	ctx := context.Background()
	schema := videoSchema()
	a, c, d := e.putMedia(t, []byte("a")), e.putMedia(t, []byte("c")), e.putMedia(t, []byte("d"))
	r := recordReader(t, schema, videoRows(e.mem, schema, 2, a))
	_, err = e.s.Append(ctx, "p", "main", "eps", r, "")
	r.Release()
	require.NoError(t, err)

	slow := &gatedReader{RecordReader: recordReader(t, schema, videoRows(e.mem, schema, 2, c), videoRows(e.mem, schema, 2, c)), reached: make(chan struct{}), gate: make(chan struct{})}
	defer slow.Release()
	errc := make(chan error, 1)
	go func() {
		_, err := e.s.Append(ctx, "p", "main", "eps", slow, "")
		errc <- err
	}()
	<-slow.reached
	r = recordReader(t, schema, videoRows(e.mem, schema, 2, d))
	_, err = e.s.Append(ctx, "p", "main", "eps", r, "")
	r.Release()
	require.NoError(t, err)
	close(slow.gate)
	require.NoError(t, <-errc)
	got := shas(e.manifest(t, "eps"))
	require.ElementsMatch(t, []string{a, c, d}, got)
	require.Equal(t, int64(8), e.manifest(t, "eps").Rows())
}

func TestVideoColumns(t *testing.T) {
	video := arrow.NewMetadata([]string{tables.KindKey}, []string{tables.KindVideo})
	for _, tc := range []struct {
		name   string
		fields []arrow.Field
		want   []int
		err    string
	}{
		{"none", []arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64}}, nil, ""},
		{"two", []arrow.Field{{Name: "a", Type: tables.VideoType, Metadata: video}, {Name: "x", Type: arrow.PrimitiveTypes.Int64}, {Name: "b", Type: tables.VideoType, Metadata: video}}, []int{0, 2}, ""},
		{"struct without metadata is not video", []arrow.Field{{Name: "a", Type: tables.VideoType}}, nil, ""},
		{"wrong type", []arrow.Field{{Name: "a", Type: arrow.BinaryTypes.String, Metadata: video}}, nil, "video column \"a\" has type"},
		{"wrong field order", []arrow.Field{{Name: "a", Type: arrow.StructOf(arrow.Field{Name: "time", Type: arrow.PrimitiveTypes.Float64}, arrow.Field{Name: "media", Type: arrow.BinaryTypes.String}), Metadata: video}}, nil, "has type"},
		{"nullable children", []arrow.Field{{Name: "a", Type: arrow.StructOf(arrow.Field{Name: "media", Type: arrow.BinaryTypes.String, Nullable: true}, arrow.Field{Name: "time", Type: arrow.PrimitiveTypes.Float64}), Metadata: video}}, nil, "video column \"a\""},
		{"unknown kind", []arrow.Field{{Name: "a", Type: tables.VideoType, Metadata: arrow.NewMetadata([]string{tables.KindKey}, []string{"audio"})}}, nil, "the kinds are"},
		{"good tolerance", []arrow.Field{{Name: "a", Type: tables.VideoType, Metadata: arrow.NewMetadata([]string{tables.KindKey, tables.ToleranceKey}, []string{tables.KindVideo, "0.02"})}}, []int{0}, ""},
		{"bad tolerance", []arrow.Field{{Name: "a", Type: tables.VideoType, Metadata: arrow.NewMetadata([]string{tables.KindKey, tables.ToleranceKey}, []string{tables.KindVideo, "-1"})}}, nil, "weft.tolerance"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tables.VideoColumns(arrow.NewSchema(tc.fields, nil))
			if tc.err != "" {
				require.ErrorIs(t, err, tables.ErrBadVideoColumn)
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestEpisodeColumn(t *testing.T) {
	i64 := arrow.PrimitiveTypes.Int64
	for _, tc := range []struct {
		name   string
		fields []arrow.Field
		meta   map[string]string
		want   string
		err    bool
	}{
		{"none", []arrow.Field{{Name: "x", Type: i64}}, nil, "", false},
		{"episode_index", []arrow.Field{{Name: "episode", Type: i64}, {Name: "episode_index", Type: i64}}, nil, "episode_index", false},
		{"episode", []arrow.Field{{Name: "episode", Type: arrow.BinaryTypes.String}}, nil, "episode", false},
		{"named", []arrow.Field{{Name: "run", Type: arrow.PrimitiveTypes.Uint32}, {Name: "episode_index", Type: i64}}, map[string]string{tables.EpisodeKey: "run"}, "run", false},
		{"named missing", []arrow.Field{{Name: "episode_index", Type: i64}}, map[string]string{tables.EpisodeKey: "run"}, "", true},
		{"float", []arrow.Field{{Name: "episode", Type: arrow.PrimitiveTypes.Float64}}, nil, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			md := arrow.MetadataFrom(tc.meta)
			got, err := tables.EpisodeColumn(arrow.NewSchema(tc.fields, &md))
			if tc.err {
				require.ErrorIs(t, err, tables.ErrBadVideoColumn)
				require.True(t, errors.Is(err, errdefs.ErrInvalidArgument))
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}
