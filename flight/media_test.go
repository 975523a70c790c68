package flight_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"

	"github.com/weftdata/weft/bucket"
	"github.com/weftdata/weft/client"
	"github.com/weftdata/weft/errdefs"
	"github.com/weftdata/weft/tables"
	"github.com/weftdata/weft/versions"
)

// makeMP4 encodes a small H.264 clip with ffmpeg (skipping loudly without
// it, failing under CI=true) and returns its bytes.
func makeMP4(t *testing.T, frames int) []byte { return makeMP4Size(t, frames, 64, 48) }

// makeMP4Size is makeMP4 of w×h frames.
func makeMP4Size(t *testing.T, frames, w, h int) []byte {
	t.Helper()
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		msg := "ffmpeg not found: the media upload tests need it (apt-get install ffmpeg; .ci/run installs it)"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip("SKIP (loud): " + msg)
	}
	out := filepath.Join(t.TempDir(), "clip.mp4")
	cmd := exec.Command("ffmpeg", "-nostdin", "-loglevel", "error", "-f", "lavfi", "-i", fmt.Sprintf("testsrc2=size=%dx%d:rate=25", w, h),
		"-frames:v", fmt.Sprint(frames), "-c:v", "libx264", "-threads", "1", "-g", "10", "-bf", "2", "-pix_fmt", "yuv420p", out)
	msg, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", msg)
	data, err := os.ReadFile(out)
	require.NoError(t, err)
	return data
}

func digest(data []byte) string {
	h := sha256.Sum256(data)
	return hex.EncodeToString(h[:])
}

func mediaKeys(t *testing.T, b bucket.Bucket, p string) int {
	t.Helper()
	n := 0
	for _, err := range b.List(context.Background(), versions.MediaPrefix(versions.ProjectName(p))) {
		require.NoError(t, err)
		n++
	}
	return n
}

// tablesOf is a second tables store over b, to look at what was stored.
func tablesOf(t *testing.T, b bucket.Bucket) *tables.Store {
	v, err := versions.New(b, versions.DefaultOptions())
	require.NoError(t, err)
	s, err := tables.New(v, tables.DefaultOptions())
	require.NoError(t, err)
	return s
}

var videoField = arrow.Field{Name: "wrist_camera", Type: tables.VideoType, Metadata: arrow.NewMetadata([]string{tables.KindKey}, []string{tables.KindVideo})}

var videoTableSchema = arrow.NewSchema([]arrow.Field{{Name: "episode_index", Type: arrow.PrimitiveTypes.Int64}, videoField}, nil)

// videoBatch is n rows of episode 0 naming media sha at 25 fps.
func videoBatch(e *env, sha string, n int) array.RecordReader {
	b := array.NewRecordBuilder(e.cmem, videoTableSchema)
	defer b.Release()
	v := b.Field(1).(*array.StructBuilder)
	for i := range n {
		b.Field(0).(*array.Int64Builder).Append(0)
		v.Append(true)
		v.FieldBuilder(0).(*array.StringBuilder).Append(sha)
		v.FieldBuilder(1).(*array.Float64Builder).Append(float64(i) / 25)
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	r, err := array.NewRecordReader(videoTableSchema, []arrow.RecordBatch{rec})
	require.NoError(e.t, err)
	return r
}

// TestMediaUpload: a real MP4 through the Go client, on fs and MinIO:
// uploaded, indexed, stat'ed, re-uploaded without storing, appended to by
// rows of a video column; corrupt, truncated and mismatched uploads are
// refused with no object left.
func TestMediaUpload(t *testing.T) {
	clip := makeMP4(t, 30)
	sha := digest(clip)
	for name, open := range backends(t) {
		t.Run(name, func(t *testing.T) {
			var checks atomic.Int64
			e := newEnv(t, open(t), envOpts{
				tables: func(o *tables.Options) {},
				appendCheck: func(_ context.Context, p versions.ProjectName, tb versions.TableName, schema *arrow.Schema) (tables.BatchCheck, error) {
					checks.Add(1)
					if tb != "refused" {
						return nil, nil
					}
					return func(_ context.Context, _ *arrow.Schema, rec arrow.RecordBatch, first int64) error {
						return fmt.Errorf("%w: row %d: refused by the check", errdefs.ErrInvalidArgument, first+rec.NumRows()-1)
					}, nil
				},
			})
			ctx := ctxT(t)
			e.createProject("p")

			st, err := e.c.StatMedia(ctx, "p", sha)
			require.NoError(t, err)
			require.Equal(t, client.StatMediaResult{SHA256: sha}, st)

			res, err := e.c.PutMedia(ctx, "p", "ep_0001.mp4", bytes.NewReader(clip), int64(len(clip)), sha)
			require.NoError(t, err)
			require.Equal(t, client.MediaPutResult{SHA256: sha, Size: int64(len(clip)), Stored: true, Codec: "h264", Width: 64, Height: 48, Frames: 30, Duration: 1.2}, res)
			require.Equal(t, 1, mediaKeys(t, e.b, "p"))

			st, err = e.c.StatMedia(ctx, "p", sha)
			require.NoError(t, err)
			require.Equal(t, client.StatMediaResult{SHA256: sha, Size: int64(len(clip)), Exists: true}, st)

			again, err := e.c.PutMedia(ctx, "p", "copy.mp4", bytes.NewReader(clip), int64(len(clip)), sha)
			require.NoError(t, err)
			require.False(t, again.Stored)
			require.Equal(t, res.Frames, again.Frames)
			require.Equal(t, 1, mediaKeys(t, e.b, "p"), "an identical re-upload stores nothing new")

			bad := []struct {
				name, file string
				data       []byte
				sha        string
				size       int64
				msg        []string
			}{
				{"truncated", "trunc.mp4", clip[:len(clip)/2], digest(clip[:len(clip)/2]), int64(len(clip) / 2), []string{`"trunc.mp4"`, "nothing was stored"}},
				{"corrupt", "noise.mp4", bytes.Repeat([]byte("weft"), 5000), digest(bytes.Repeat([]byte("weft"), 5000)), 20000, []string{`"noise.mp4"`, "not a video"}},
				{"digest mismatch", "ep_0002.mp4", clip, digest([]byte("other")), int64(len(clip)), []string{`"ep_0002.mp4"`, "hashes to sha256 " + sha}},
				{"size mismatch", "ep_0003.mp4", clip[:100], digest(clip[:100]), 101, []string{`"ep_0003.mp4"`, "declared 101"}},
			}
			for _, tc := range bad {
				t.Run(tc.name, func(t *testing.T) {
					_, err := e.c.PutMedia(ctx, "p", tc.file, bytes.NewReader(tc.data), tc.size, tc.sha)
					requireCode(t, err, codes.InvalidArgument, tc.msg...)
					require.Equal(t, 1, mediaKeys(t, e.b, "p"), "a refused upload left an object")
					st, err := e.c.StatMedia(ctx, "p", tc.sha)
					require.NoError(t, err)
					if tc.sha != sha {
						require.False(t, st.Exists)
					}
				})
			}

			// Rows naming the uploaded clip; rows naming one never uploaded.
			r := videoBatch(e, sha, 30)
			put, err := e.c.Put(ctx, client.PutDescriptor{Project: "p", Branch: "main", Table: "episodes"}, r)
			r.Release()
			require.NoError(t, err)
			require.EqualValues(t, 30, put.Rows)
			store := tablesOf(t, e.b)
			v, err := store.Table(ctx, "p", "main", "episodes")
			require.NoError(t, err)
			require.Equal(t, []versions.MediaObject{versions.NewMediaObject(sha, int64(len(clip)))}, v.Manifest.Media)

			missing := digest([]byte("never"))
			r = videoBatch(e, missing, 3)
			_, err = e.c.Put(ctx, client.PutDescriptor{Project: "p", Branch: "main", Table: "episodes"}, r)
			r.Release()
			requireCode(t, err, codes.InvalidArgument, "row 0: media "+missing+" is not uploaded; upload it first (DoPut media)")

			// Parts.AppendCheck: once per put; its error stores nothing.
			before := checks.Load()
			r = videoBatch(e, sha, 5)
			_, err = e.c.Put(ctx, client.PutDescriptor{Project: "p", Branch: "main", Table: "refused"}, r)
			r.Release()
			requireCode(t, err, codes.InvalidArgument, "row 4: refused by the check")
			require.Equal(t, before+1, checks.Load())
			_, err = store.Table(ctx, "p", "main", "refused")
			require.ErrorIs(t, err, errdefs.ErrNotFound)

			// Bad requests: strict command decoding, the chunk schema.
			_, err = e.c.PutMedia(ctx, "p", "x.mp4", bytes.NewReader(clip), int64(len(clip)), "ABC")
			requireCode(t, err, codes.InvalidArgument, "sha256")
			_, err = e.c.PutMedia(ctx, "nope", "x.mp4", bytes.NewReader(clip), int64(len(clip)), sha)
			requireCode(t, err, codes.NotFound)
			_, err = e.c.StatMedia(ctx, "p", "xyz")
			requireCode(t, err, codes.InvalidArgument, "sha256")
			for _, body := range []string{`{"project":"p"}`, `{"project":"p","sha256":"` + sha + `","extra":1}`} {
				_, err := e.action("stat_media", body)
				requireCode(t, err, codes.InvalidArgument)
			}
			chunk := func() arrow.RecordBatch {
				b := array.NewRecordBuilder(e.cmem, client.MediaChunkSchema)
				defer b.Release()
				b.Field(0).(*array.BinaryBuilder).Append(clip)
				return b.NewRecordBatch()
			}
			for _, tc := range []struct{ name, cmd, msg string }{
				{"no size", `{"media":{"project":"p","sha256":"` + sha + `"}}`, `"size" is missing`},
				{"unknown field", `{"media":{"project":"p","sha256":"` + sha + `","size":1,"codec":"h264"}}`, "codec"},
				{"not media", `{"upload":{}}`, "upload"},
				{"negative size", `{"media":{"project":"p","sha256":"` + sha + `","size":-1}}`, "size"},
			} {
				t.Run(tc.name, func(t *testing.T) {
					_, err := e.put(ctx, cmdDesc(tc.cmd), client.MediaChunkSchema, chunk())
					requireCode(t, err, codes.InvalidArgument, tc.msg)
				})
			}
			t.Run("wrong schema", func(t *testing.T) {
				rec := makeBatch(e.cmem, 0, 3, 4)
				_, err := e.put(ctx, cmdDesc(`{"media":{"project":"p","sha256":"`+digest([]byte("z"))+`","size":1}}`), testSchema, rec)
				requireCode(t, err, codes.InvalidArgument, "{chunk: binary not null}")
			})
			require.Equal(t, 1, mediaKeys(t, e.b, "p"))
		})
	}
}
