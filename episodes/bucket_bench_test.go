package episodes

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"iter"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/weftdata/weft/bucket"
	"github.com/weftdata/weft/internal/s3test"
	"github.com/weftdata/weft/mix"
	"github.com/weftdata/weft/tables"
	"github.com/weftdata/weft/versions"
	"github.com/weftdata/weft/video"
)

// countingBucket counts the bytes read from b (Get and Reader.ReadAt),
// media objects apart from everything else (Parquet, manifests, refs).
type countingBucket struct {
	bucket.Bucket
	media, other atomic.Int64
}

func (c *countingBucket) count(key string, n int) {
	if strings.Contains(key, "/media/") {
		c.media.Add(int64(n))
	} else {
		c.other.Add(int64(n))
	}
}

func (c *countingBucket) reset() { c.media.Store(0); c.other.Store(0) }

func (c *countingBucket) Get(ctx context.Context, key string) ([]byte, bucket.ObjectInfo, error) {
	data, info, err := c.Bucket.Get(ctx, key)
	c.count(key, len(data))
	return data, info, err
}

func (c *countingBucket) Open(ctx context.Context, key string) (bucket.Reader, error) {
	r, err := c.Bucket.Open(ctx, key)
	if err != nil {
		return nil, err
	}
	return &bucketCountingReader{Reader: r, key: key, c: c}, nil
}

func (c *countingBucket) List(ctx context.Context, prefix string) iter.Seq2[bucket.ObjectInfo, error] {
	return c.Bucket.List(ctx, prefix)
}

type bucketCountingReader struct {
	bucket.Reader
	key string
	c   *countingBucket
}

func (r *bucketCountingReader) ReadAt(p []byte, off int64) (int, error) {
	n, err := r.Reader.ReadAt(p, off)
	r.c.count(r.key, n)
	return n, err
}

// benchClip is one rendered episode clip of the bytes benchmark.
type benchClip struct {
	path   string
	sha    string
	size   int64
	frames int
	times  []float64 // frames' presentation times in display order
}

var benchClips struct {
	mu   sync.Mutex
	dir  string
	made map[string][]*benchClip
}

// renderBenchClips renders (once per test binary) n H.264 episodes of
// frames frames at 30 fps, side×side, with keyframes every gop frames:
// libx264 High, crf 30, B-frames, yuv420p, single-threaded, each episode a
// different moving pattern.
func renderBenchClips(b *testing.B, n, frames, side, gop int) []*benchClip {
	b.Helper()
	needFFmpeg(b)
	key := fmt.Sprintf("%d-%d-%d-%d", n, frames, side, gop)
	benchClips.mu.Lock()
	defer benchClips.mu.Unlock()
	if c, ok := benchClips.made[key]; ok {
		return c
	}
	if benchClips.dir == "" {
		dir, err := os.MkdirTemp("", "weft-episodes-bench-")
		require.NoError(b, err)
		benchClips.dir, benchClips.made = dir, map[string][]*benchClip{}
	}
	var out []*benchClip
	for i := range n {
		p := filepath.Join(benchClips.dir, fmt.Sprintf("%s-%d.mp4", key, i))
		args := []string{"-v", "error", "-nostdin", "-y", "-f", "lavfi",
			"-i", fmt.Sprintf("testsrc2=size=%dx%d:rate=30,hue=h=%d*t", side, side, 20+15*i),
			"-frames:v", fmt.Sprint(frames), "-c:v", "libx264", "-profile:v", "high", "-crf", "30", "-g", fmt.Sprint(gop),
			"-keyint_min", fmt.Sprint(gop), "-sc_threshold", "0", "-bf", "2", "-pix_fmt", "yuv420p",
			"-threads", "1", "-x264-params", "threads=1", p}
		if out, err := exec.Command("ffmpeg", args...).CombinedOutput(); err != nil {
			b.Fatalf("ffmpeg %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		data, err := os.ReadFile(p)
		require.NoError(b, err)
		idx, err := video.Read(context.Background(), bytes.NewReader(data), int64(len(data)))
		require.NoError(b, err)
		sum := sha256.Sum256(data)
		c := &benchClip{path: p, sha: hex.EncodeToString(sum[:]), size: int64(len(data)), frames: idx.Len()}
		for k := range idx.Len() {
			c.times = append(c.times, idx.FrameTime(k).Seconds())
		}
		out = append(out, c)
	}
	benchClips.made[key] = out
	return out
}

// BenchmarkVideoBucketBytes measures the ranged-read efficiency of video
// windows through the real stack: clips uploaded with tables.PutMedia,
// moments appended with a video column, a run of Video(range(T)) windows
// resolved and streamed by a mix.Engine with the episodes kinds over a
// tables store on fs or on MinIO, whose bucket counts the bytes read.
//
// It reports per delivered frame (a frame of a sample's window, pads
// included): media bytes read from the bucket (read_B/frame), bytes of the
// access units sent (sent_B/frame), access units sent (units/frame: the
// frames a client decodes per frame delivered), and the clips' average
// bytes per frame (file_B/frame); other_B/frame is everything else read
// (Parquet pages, manifests). cold_… are the first pass over the steps
// (media indexes not yet cached: each media object's moov is read once);
// the others every later pass. coalesce is Options.CoalesceBytes: the
// gap up to which the ranged reads of one media object in one step are
// merged (the default, and 0: every plan's range read alone).
func BenchmarkVideoBucketBytes(b *testing.B) {
	const (
		episodes = 16
		frames   = 150 // 5 s at 30 fps, one moment per frame
		batch    = 16
	)
	for _, store := range []string{"fs", "minio"} {
		for _, gop := range []int{2, 30} {
			for _, side := range []int{96, 224} {
				for _, T := range []int{16, 90} {
					for _, coalesce := range []int64{DefaultOptions().CoalesceBytes, 0} {
						b.Run(fmt.Sprintf("store=%s/gop=%d/size=%d/T=%d/coalesce=%dK", store, gop, side, T, coalesce>>10), func(b *testing.B) {
							clips := renderBenchClips(b, episodes, frames, side, gop)
							var raw bucket.Bucket
							if store == "fs" {
								var err error
								raw, err = bucket.NewFS(b.TempDir())
								require.NoError(b, err)
							} else {
								raw = s3test.SharedMinIO(b).NewBucket(b, fmt.Sprintf("bytes-%d-%d-%d-%d", gop, side, T, coalesce))
							}
							cb := &countingBucket{Bucket: raw}
							ctx := context.Background()
							e := newBytesEnv(b, cb, clips, coalesce)
							spec := make([]int, T)
							for k := range spec {
								spec[k] = k
							}
							r := &mix.Recipe{Seed: 5, BatchSize: batch, Components: []mix.Component{{Project: "p", Table: "moments", Weight: 1,
								Columns: []string{"episode_index"}, Windows: map[string]mix.Window{"cam": window(KindVideo, mustJSON(b, map[string]any{"frames": spec}))}}}}
							run, err := e.Resolve(ctx, r)
							require.NoError(b, err)
							var fileBytes, fileFrames int64
							for _, c := range clips {
								fileBytes += c.size
								fileFrames += int64(c.frames)
							}
							pass := func() (delivered, units, sent int64) {
								for st, err := range e.Steps(ctx, run, 0, 1, 0, 0) {
									require.NoError(b, err)
									s, segs := readStep(b, st.Batch)
									st.Batch.Release()
									delivered += int64(len(s) * T)
									for _, g := range segs {
										units += int64(len(g.units))
										for _, u := range g.units {
											sent += int64(len(u))
										}
									}
								}
								return
							}
							cb.reset()
							d, _, _ := pass()
							coldMedia, coldOther := cb.media.Load(), cb.other.Load()
							cb.reset()
							var delivered, units, sent int64
							b.ResetTimer()
							for range b.N {
								d, u, s := pass()
								delivered, units, sent = delivered+d, units+u, sent+s
							}
							b.StopTimer()
							per := func(n int64, of int64) float64 { return float64(n) / float64(of) }
							b.ReportMetric(per(cb.media.Load(), delivered), "read_B/frame")
							b.ReportMetric(per(sent, delivered), "sent_B/frame")
							b.ReportMetric(per(units, delivered), "units/frame")
							b.ReportMetric(per(fileBytes, fileFrames), "file_B/frame")
							b.ReportMetric(per(cb.other.Load(), delivered), "other_B/frame")
							b.ReportMetric(per(coldMedia, d), "cold_read_B/frame")
							b.ReportMetric(per(coldOther, d), "cold_other_B/frame")
						})
					}
				}
			}
		}
	}
}

// newBytesEnv is an engine with the episodes kinds over a tables store on
// b holding table "moments" of project "p": one row per frame of each
// clip (episode i is clips[i]), with a video column "cam".
func newBytesEnv(b *testing.B, bk bucket.Bucket, clips []*benchClip, coalesce int64) *mix.Engine {
	b.Helper()
	ctx := context.Background()
	v, err := versions.New(bk, versions.DefaultOptions())
	require.NoError(b, err)
	ts, err := tables.New(v, tables.DefaultOptions())
	require.NoError(b, err)
	_, err = v.CreateProject(ctx, "p")
	require.NoError(b, err)
	ko := DefaultOptions()
	ko.Media = ts
	ko.CoalesceBytes = coalesce
	kinds, err := New(ko)
	require.NoError(b, err)
	b.Cleanup(kinds.Close)
	mo := mix.DefaultOptions()
	mo.Kinds = kinds.Map()
	e, err := mix.New(ts, mo)
	require.NoError(b, err)
	b.Cleanup(e.Close)

	schema := momentsSchema(nil)
	rb := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer rb.Release()
	st := rb.Field(2).(*array.StructBuilder)
	for i, c := range clips {
		f, err := os.Open(c.path)
		require.NoError(b, err)
		_, err = ts.PutMedia(ctx, "p", f, tables.MediaInfo{SHA256: c.sha, Size: c.size, Name: filepath.Base(c.path)})
		f.Close()
		require.NoError(b, err)
		for k, t := range c.times {
			rb.Field(0).(*array.Int64Builder).Append(int64(i))
			rb.Field(1).(*array.Int64Builder).Append(int64(k))
			st.Append(true)
			st.FieldBuilder(0).(*array.StringBuilder).Append(c.sha)
			st.FieldBuilder(1).(*array.Float64Builder).Append(t)
		}
	}
	rec := rb.NewRecordBatch()
	defer rec.Release()
	rr, err := array.NewRecordReader(schema, []arrow.RecordBatch{rec})
	require.NoError(b, err)
	defer rr.Release()
	_, err = ts.AppendWith(ctx, "p", "main", "moments", rr, tables.AppendOptions{})
	require.NoError(b, err)
	return e
}
