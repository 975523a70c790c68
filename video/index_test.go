package video

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftdata/weft/errdefs"
)

// made holds the clips, rendered once per test binary.
var made struct {
	once  sync.Once
	dir   string
	paths map[string]string
	err   error
}

func clipPaths(t *testing.T) map[string]string {
	t.Helper()
	needFFmpeg(t)
	made.once.Do(func() {
		made.dir, made.err = os.MkdirTemp("", "weft-video-test-")
		if made.err != nil {
			return
		}
		made.paths = map[string]string{}
		for _, c := range clips() {
			made.paths[c.name] = makeClip(t, made.dir, c)
		}
	})
	require.NoError(t, made.err)
	return made.paths
}

func TestMain(m *testing.M) {
	code := m.Run()
	if made.dir != "" {
		os.RemoveAll(made.dir)
	}
	os.Exit(code)
}

// countingReader records every ReadAt, to prove mdat is never read.
type countingReader struct {
	f     *os.File
	mu    sync.Mutex
	reads [][2]int64
}

func (c *countingReader) ReadAt(p []byte, off int64) (int, error) {
	c.mu.Lock()
	c.reads = append(c.reads, [2]int64{off, int64(len(p))})
	c.mu.Unlock()
	return c.f.ReadAt(p, off)
}

func open(t *testing.T, path string) (*Index, *os.File, *countingReader) {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	t.Cleanup(func() { f.Close() })
	st, err := f.Stat()
	require.NoError(t, err)
	cr := &countingReader{f: f}
	x, err := Read(context.Background(), cr, st.Size())
	require.NoError(t, err)
	return x, f, cr
}

func TestIndexMatchesFFprobe(t *testing.T) {
	paths := clipPaths(t)
	for _, c := range clips() {
		t.Run(c.name, func(t *testing.T) {
			path := paths[c.name]
			x, _, cr := open(t, path)
			raw, err := os.ReadFile(path)
			require.NoError(t, err)

			require.Equal(t, c.codec, x.Config.Codec)
			require.Equal(t, c.bitDepth, x.Config.BitDepth)
			require.Equal(t, 64, x.Config.Width)
			require.Equal(t, 64, x.Config.Height)
			require.NotEmpty(t, x.Config.CodecString)
			require.True(t, bytes.Contains(raw, x.Config.Box), "config box is the file's bytes")
			s0 := x.Samples[0]
			require.Equal(t, c.editList, s0.PTS != s0.DTS+s0.CTO, "edit list shifts presentation times")
			if c.editList {
				require.True(t, bytes.Contains(raw, []byte("elst")), "edit list present")
			}

			// time base is the track timescale
			tb := ffprobe(t, path, "-show_entries", "stream=time_base")
			require.Equal(t, fmt.Sprintf("1/%d", x.Timescale), tb[0][0])

			pk := probePackets(t, path)
			require.Len(t, x.Samples, len(pk))
			for i, p := range pk {
				s := x.Samples[i]
				require.Equal(t, p.pts, s.PTS, "sample %d pts", i)
				require.Equal(t, p.dts, s.PTS-s.CTO, "sample %d dts", i)
				require.Equal(t, p.key, s.Key, "sample %d key", i)
				require.Equal(t, p.pos, s.Offset, "sample %d pos", i)
				require.Equal(t, p.size, s.Size, "sample %d size", i)
			}
			fr := probeFramePTS(t, path)
			require.Len(t, fr, x.Len())
			for i, pts := range fr {
				require.Equal(t, pts, x.Frame(i).PTS, "display frame %d", i)
			}

			var leading int
			for _, s := range x.Samples {
				if s.Leading {
					leading++
				}
			}
			require.Equal(t, c.leading, leading > 0, "open-GOP leading frames (%d)", leading)

			// mdat is never read: every read lies outside the mdat payload.
			mdat := bytes.Index(raw, []byte("mdat")) - 4
			require.Greater(t, mdat, 0)
			mdatEnd := mdat + int(be32(raw[mdat:]))
			require.Equal(t, c.moovFirst, bytes.Index(raw, []byte("moov")) < mdat, "moov before mdat")
			for _, r := range cr.reads {
				inside := r[0] >= int64(mdat+8) && r[0] < int64(mdatEnd)
				require.False(t, inside, "read [%d,+%d) inside mdat [%d,%d)", r[0], r[1], mdat, mdatEnd)
			}
			require.LessOrEqual(t, len(cr.reads), 6, "reads: %v", cr.reads)
		})
	}
}

func be32(b []byte) uint32 {
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

func TestFrameAt(t *testing.T) {
	paths := clipPaths(t)
	for _, name := range []string{"h264_vfr", "h264_bframes_editlist", "hevc_open_gop"} {
		t.Run(name, func(t *testing.T) {
			x, _, _ := open(t, paths[name])
			gaps := map[time.Duration]bool{}
			for i := 0; i < x.Len(); i++ {
				ft := x.FrameTime(i)
				got, err := x.FrameAt(ft, time.Microsecond)
				require.NoError(t, err)
				require.Equal(t, i, got)
				got, err = x.FrameAt(ft+500*time.Microsecond, time.Millisecond)
				require.NoError(t, err)
				require.Equal(t, i, got)
				if i > 0 {
					gap := ft - x.FrameTime(i-1)
					gaps[gap] = true
					// halfway between two frames: no frame within a tight tolerance
					mid := x.FrameTime(i-1) + gap/2
					_, err := x.FrameAt(mid, gap/4)
					require.ErrorIs(t, err, ErrNoFrame)
					require.ErrorIs(t, err, errdefs.ErrInvalidArgument)
					require.Contains(t, err.Error(), "nearest is frame")
				}
			}
			if name == "h264_vfr" {
				require.Greater(t, len(gaps), 2, "variable frame rate: gaps %v", gaps)
			}
			_, err := x.FrameAt(-time.Second, time.Millisecond)
			require.ErrorIs(t, err, ErrNoFrame)
			_, err = x.FrameAt(x.FrameTime(x.Len()-1)+time.Second, time.Millisecond)
			require.ErrorContains(t, err, fmt.Sprintf("nearest is frame %d", x.Len()-1))
		})
	}
}

// windows returns seeded windows over n frames: random runs of random
// length, both edges, runs across each keyframe, and runs ending at each
// leading frame, history (reversed) and scattered offsets.
func windows(x *Index, seed int64) [][]int {
	rng := rand.New(rand.NewSource(seed))
	n := x.Len()
	clamp := func(i int) int { return min(max(i, 0), n-1) }
	run := func(a, l int) []int {
		w := make([]int, l)
		for i := range w {
			w[i] = clamp(a + i)
		}
		return w
	}
	out := [][]int{run(0, 5), run(n-4, 8), run(-3, 6), {n - 1}, {0}}
	for i := 0; i < 12; i++ {
		out = append(out, run(rng.Intn(n), 1+rng.Intn(16)))
	}
	for d, s := range x.Samples {
		p := x.DisplayIndex(d)
		if s.Key && d > 0 {
			out = append(out, run(p-3, 6), run(p, 3))
		}
		if s.Leading {
			out = append(out, []int{p}, run(p-1, 3))
		}
	}
	hist := run(n/2-9, 10)
	sort.Sort(sort.Reverse(sort.IntSlice(hist)))
	out = append(out, hist, []int{clamp(3), clamp(n / 2), clamp(n/2 + 7)})
	return out
}

// checkPlan asserts the structural properties of a plan.
func checkPlan(t *testing.T, x *Index, frames []int, p Plan) {
	t.Helper()
	require.True(t, x.Samples[p.Start].Key, "starts at a keyframe")
	last := 0
	for _, f := range frames {
		d := x.DecodeIndex(f)
		require.GreaterOrEqual(t, d, p.Start)
		last = max(last, d)
		// the start keyframe is at or before the frame's own keyframe
		k := d
		for !x.Samples[k].Key {
			k--
		}
		require.LessOrEqual(t, p.Start, k)
		if x.Samples[d].Leading {
			require.Less(t, p.Start, k, "leading frame %d pulls in the previous GOP", f)
		}
	}
	require.Equal(t, last+1, p.End, "decodes through the last needed frame in decode order")
	// ranges cover exactly the samples [Start, End), in order
	d := p.Start
	for _, r := range p.Ranges {
		require.Equal(t, d, r.First)
		var sz int64
		for ; d < r.End; d++ {
			require.Equal(t, r.Offset+sz, x.Samples[d].Offset)
			sz += x.Samples[d].Size
		}
		require.Equal(t, r.Size, sz)
	}
	require.Equal(t, p.End, d)
	require.Len(t, p.Keep, len(frames))
	for i, k := range p.Keep {
		require.Equal(t, frames[i], k.Frame)
		require.Equal(t, k.Frame, p.Output[k.Pos])
		require.Equal(t, x.Frame(k.Frame).PTS, k.PTS)
	}
}

func TestPlanDecodesLikeFFmpeg(t *testing.T) {
	paths := clipPaths(t)
	for _, c := range clips() {
		t.Run(c.name, func(t *testing.T) {
			path := paths[c.name]
			x, f, _ := open(t, path)
			all := make([]int, x.Len())
			for i := range all {
				all[i] = i
			}
			pall, err := x.Plan(all)
			require.NoError(t, err)
			if c.audio { // audio chunks interleave: the video cannot be one range
				require.Greater(t, len(pall.Ranges), 1)
			} else {
				require.Len(t, pall.Ranges, 1, "video-only samples coalesce into one range")
			}
			whole := framemd5(t, "-i", path)
			require.Len(t, whole, x.Len())
			ws := windows(x, 1)
			decoded := 0
			for wi, w := range ws {
				p, err := x.Plan(w)
				require.NoError(t, err)
				checkPlan(t, x, w, p)
				if testing.Short() && wi%3 != 0 {
					continue
				}
				es := elementaryStream(t, x, f, p)
				esPath := filepath.Join(t.TempDir(), "w.es")
				require.NoError(t, os.WriteFile(esPath, es, 0o644))
				got := framemd5(t, "-f", c.demuxer, "-i", esPath)
				require.Len(t, got, len(p.Output), "window %d %v: decoder output count (plan %d..%d)", wi, w, p.Start, p.End)
				for _, k := range p.Keep {
					require.Equal(t, whole[k.Frame], got[k.Pos], "window %d %v: frame %d", wi, w, k.Frame)
				}
				decoded++
			}
			t.Logf("%s: %d frames, %d windows, %d decoded and compared", c.name, x.Len(), len(ws), decoded)
		})
	}
}

// TestPlanDecodeCheckDetectsShortPlans proves the decode comparison can
// fail: starting an open-GOP leading frame at its own keyframe loses it.
func TestPlanDecodeCheckDetectsShortPlans(t *testing.T) {
	paths := clipPaths(t)
	x, f, _ := open(t, paths["hevc_open_gop"])
	for d, s := range x.Samples {
		if !s.Leading {
			continue
		}
		p, err := x.Plan([]int{x.DisplayIndex(d)})
		require.NoError(t, err)
		good := len(p.Output)
		k := d
		for !x.Samples[k].Key {
			k--
		}
		require.Less(t, p.Start, k)
		short := Plan{Start: k, End: p.End}
		for _, r := range p.Ranges {
			if r.End > k {
				off := x.Samples[max(r.First, k)].Offset
				short.Ranges = append(short.Ranges, ByteRange{Offset: off, Size: r.Offset + r.Size - off, First: max(r.First, k), End: r.End})
			}
		}
		esPath := filepath.Join(t.TempDir(), "short.es")
		require.NoError(t, os.WriteFile(esPath, elementaryStream(t, x, f, short), 0o644))
		got := framemd5(t, "-f", "hevc", "-i", esPath)
		require.Less(t, len(got), good-(k-p.Start), "decoding from the leading frame's own keyframe drops it")
		require.NotContains(t, got, framemd5(t, "-i", paths["hevc_open_gop"])[x.DisplayIndex(d)])
		return
	}
	t.Fatal("no leading frame in hevc_open_gop")
}

func TestPlanWindowsMergesSharedGOPs(t *testing.T) {
	paths := clipPaths(t)
	x, _, _ := open(t, paths["hevc_open_gop"])
	ws := windows(x, 2)
	b, err := x.PlanWindows(ws)
	require.NoError(t, err)
	require.Len(t, b.Windows, len(ws))
	for i := 1; i < len(b.Decodes); i++ {
		require.LessOrEqual(t, b.Decodes[i-1].End, b.Decodes[i].Start, "merged decodes do not overlap")
	}
	var separate, merged int64
	for wi, w := range ws {
		p, err := x.Plan(w)
		require.NoError(t, err)
		separate += p.Bytes()
		require.Len(t, b.Windows[wi], len(w))
		for j, r := range b.Windows[wi] {
			d := b.Decodes[r.Decode]
			require.Equal(t, w[j], d.Output[r.Pos])
			require.LessOrEqual(t, d.Start, p.Start)
			require.GreaterOrEqual(t, d.End, p.End)
		}
	}
	for _, d := range b.Decodes {
		merged += d.Bytes()
	}
	require.Less(t, len(b.Decodes), len(ws))
	require.Less(t, merged, separate)
}

func TestReadErrors(t *testing.T) {
	paths := clipPaths(t)
	good, err := os.ReadFile(paths["h264_with_audio"])
	require.NoError(t, err)
	fast, err := os.ReadFile(paths["h264_faststart"])
	require.NoError(t, err)
	moov := bytes.Index(good, []byte("moov")) - 4
	audioOnly := filepath.Join(t.TempDir(), "a.mp4")
	out, err := runFFmpeg("-f", "lavfi", "-i", "sine=frequency=440:duration=0.5", "-c:a", "aac", audioOnly)
	require.NoError(t, err, "%s", out)
	audio, err := os.ReadFile(audioOnly)
	require.NoError(t, err)
	mjpeg := filepath.Join(t.TempDir(), "m.mp4")
	out, err = runFFmpeg("-f", "lavfi", "-i", src, "-frames:v", "3", "-c:v", "mjpeg", mjpeg)
	require.NoError(t, err, "%s", out)
	mj, err := os.ReadFile(mjpeg)
	require.NoError(t, err)
	fastMdat := bytes.Index(fast, []byte("mdat"))

	for _, tc := range []struct {
		name string
		data []byte
		want error
		msg  string
	}{
		{"empty", nil, ErrMalformed, "no moov"},
		{"not mp4", []byte("hello, this is not a video file at all"), ErrMalformed, "does not start"},
		{"truncated before moov", good[:moov+100], ErrMalformed, "truncated"},
		{"moov cut off", good[:len(good)-10], ErrMalformed, "truncated"},
		{"faststart mdat truncated", fast[:fastMdat+200], ErrMalformed, "truncated"},
		{"moov garbage", append(bytes.Clone(good[:moov+8]), bytes.Repeat([]byte{0xff}, len(good)-moov-8)...), ErrMalformed, ""},
		{"no video track", audio, ErrNoVideoTrack, "none with handler"},
		{"unsupported codec", mj, ErrUnsupportedCodec, "only H.264"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Read(context.Background(), bytes.NewReader(tc.data), int64(len(tc.data)))
			require.ErrorIs(t, err, tc.want)
			require.ErrorIs(t, err, errdefs.ErrInvalidArgument)
			require.Contains(t, err.Error(), tc.msg)
		})
	}
	t.Run("frame range", func(t *testing.T) {
		x, _, _ := open(t, paths["av1"])
		for _, w := range [][]int{nil, {-1}, {x.Len()}} {
			_, err := x.Plan(w)
			require.ErrorIs(t, err, ErrFrameRange)
		}
		_, err := x.PlanWindows([][]int{{0}, {x.Len() + 3}})
		require.ErrorIs(t, err, ErrFrameRange)
		require.True(t, errors.Is(err, errdefs.ErrInvalidArgument))
	})
}
