//go:build cgo && linux

package gpu

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftdata/weft/internal/membudget"
	"github.com/weftdata/weft/video"
	"github.com/weftdata/weft/video/pixnorm"
)

// fakeDriver builds testdata/fakedriver (libavcodec on the CPU standing in
// for libcuda + libnvcuvid) and returns Options that load it.
func fakeDriver(t *testing.T) Options {
	t.Helper()
	if _, err := exec.LookPath("gcc"); err != nil {
		loudSkip(t, "gcc not found: the fake-driver NVDEC tests did not run")
	}
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Dir(file)
	lib := filepath.Join(t.TempDir(), "libfakecuda.so")
	out, err := exec.Command("gcc", "-O2", "-Wall", "-fPIC", "-shared", "-I"+filepath.Join(dir, "include"), "-o", lib,
		filepath.Join(dir, "testdata/fakedriver/fake_driver.c"), "-lavcodec", "-lavutil").CombinedOutput()
	if err != nil && bytes.Contains(out, []byte("libavcodec/avcodec.h")) {
		loudSkip(t, "libavcodec-dev not installed (apt-get install libavcodec-dev): the fake-driver NVDEC tests did not run")
	}
	require.NoError(t, err, "%s", out)
	o := DefaultOptions()
	o.CudaLib, o.CuvidLib = lib, lib
	return o
}

func needFFmpeg(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		loudSkip(t, "ffmpeg not found: the fake-driver clips cannot be made")
	}
}

type fakeClip struct {
	name string
	args []string
	pix  string // ffmpeg rawvideo format of the reference
	bits int
}

const fakeSrc = "testsrc2=size=64x48:rate=25"

func fakeClips() []fakeClip {
	in := []string{"-f", "lavfi", "-i", fakeSrc}
	x264 := []string{"-c:v", "libx264", "-threads", "1", "-x264-params", "threads=1"}
	x265 := func(p string) []string {
		return []string{"-c:v", "libx265", "-threads", "1", "-x265-params", p + ":pools=1:frame-threads=1:log-level=error"}
	}
	aom := []string{"-c:v", "libaom-av1", "-cpu-used", "8", "-g", "12", "-threads", "1"}
	cat := func(parts ...[]string) (o []string) {
		for _, p := range parts {
			o = append(o, p...)
		}
		return o
	}
	return []fakeClip{
		{"h264_bframes", cat(in, []string{"-frames:v", "48", "-bf", "3", "-g", "12"}, x264), "nv12", 8},
		{"hevc_open_gop", cat(in, []string{"-frames:v", "48"}, x265("open-gop=1:keyint=12:bframes=3")), "nv12", 8},
		{"hevc_10bit", cat(in, []string{"-frames:v", "36", "-pix_fmt", "yuv420p10le"}, x265("open-gop=1:keyint=12:bframes=3")), "p010le", 10},
		// libaom's default GOP: hidden alt-ref frames shown later by show_existing_frame
		{"av1_8bit", cat(in, []string{"-frames:v", "40", "-pix_fmt", "yuv420p"}, aom), "nv12", 8},
		{"av1_10bit", cat(in, []string{"-frames:v", "36", "-pix_fmt", "yuv420p10le"}, aom), "p010le", 10},
	}
}

type clipData struct {
	x      *video.Index
	file   []byte
	frames [][]byte // ffmpeg's decode, display order, packed NV12 / p010le
}

func makeFakeClip(t *testing.T, c fakeClip) clipData {
	t.Helper()
	dir := t.TempDir()
	mp4 := filepath.Join(dir, c.name+".mp4")
	args := append([]string{"-v", "error", "-nostdin", "-y"}, c.args...)
	out, err := exec.Command("ffmpeg", append(args, mp4)...).CombinedOutput()
	require.NoError(t, err, "%s", out)
	b, err := os.ReadFile(mp4)
	require.NoError(t, err)
	x, err := video.Read(context.Background(), bytes.NewReader(b), int64(len(b)))
	require.NoError(t, err)
	raw, err := exec.Command("ffmpeg", "-v", "error", "-nostdin", "-i", mp4, "-fps_mode", "passthrough", "-f", "rawvideo", "-pix_fmt", c.pix, "-").Output()
	require.NoError(t, err)
	fb := FrameBytes(x.Config.Width, x.Config.Height, c.bits)
	require.Zero(t, len(raw)%fb)
	require.Equal(t, x.Len(), len(raw)/fb, "ffmpeg's frames vs the index")
	cd := clipData{x: x, file: b}
	for i := 0; i < len(raw); i += fb {
		cd.frames = append(cd.frames, raw[i:i+fb])
	}
	return cd
}

// segment is the decode range of plan p: its access units read from the file.
func (c clipData) segment(p video.Plan) Segment {
	s := Segment{Config: c.x.Config}
	for d := p.Start; d < p.End; d++ {
		smp := c.x.Samples[d]
		s.Units = append(s.Units, c.file[smp.Offset:smp.Offset+smp.Size])
		s.PTS = append(s.PTS, smp.PTS)
	}
	return s
}

func wantPTS(p video.Plan) []int64 {
	out := make([]int64, len(p.Keep))
	for i, k := range p.Keep {
		out[i] = k.PTS
	}
	return out
}

// TestFakeNVDEC runs the whole NVDEC path (dlopen, caps, parser, pooled
// decoder, map, copy/kernel, unmap) against the fake driver and compares
// every kept frame with ffmpeg's software decode, for B-frames, an open GOP
// and 10-bit (P016).
func TestFakeNVDEC(t *testing.T) {
	needFFmpeg(t)
	opts := fakeDriver(t)
	ctx := context.Background()
	d, err := Open(ctx, opts)
	require.NoError(t, err)
	defer d.Close()
	require.Contains(t, d.Info().Name, "MOCK")
	ran, calls := 0, 0 // clips run (each its own format) and decode calls: -run may filter
	for _, c := range fakeClips() {
		t.Run(c.name, func(t *testing.T) {
			ran++
			cd := makeFakeClip(t, c)
			n := cd.x.Len()
			require.Equal(t, video.Chroma420, cd.x.Config.Chroma)
			if cd.x.Config.Codec == video.AV1 {
				// the sequence header the parser gets first (packet and CUVIDEOFORMATEX)
				require.Len(t, cd.x.Config.ParameterSets, 1, "av1C without configOBUs")
			}
			windows := map[string][]int{
				"all":        seq(0, n),
				"mid_window": {14, 15, 16, 17},
				"late_gop":   {n - 3, n - 1},
				"leading":    {12, 13},    // open GOP: frames around the second keyframe
				"rasl":       {9, 10, 11}, // open GOP: frames shown before the second keyframe, decoded after it
			}
			for wname, frames := range windows {
				t.Run(wname, func(t *testing.T) {
					p, err := cd.x.Plan(frames)
					require.NoError(t, err)
					before := d.Stats()
					got, err := d.DecodeNV12(ctx, cd.segment(p), wantPTS(p))
					require.NoError(t, err)
					calls++
					after := d.Stats()
					require.Len(t, got, len(frames))
					for i, f := range frames {
						if !bytes.Equal(got[i].Data, cd.frames[f]) {
							t.Fatalf("frame %d (pts %d): NVDEC path differs from ffmpeg", f, got[i].PTS)
						}
					}
					// decode only from the needed keyframe, keep only needed frames
					require.LessOrEqual(t, after.Decoded-before.Decoded, int64(p.End-p.Start))
					require.Equal(t, int64(len(frames)), after.Kept-before.Kept)
					if wname != "all" {
						require.Less(t, after.Decoded-before.Decoded, int64(n), "decoded the whole clip for %v", frames)
					}
				})
			}
			t.Run("rgb_on_device", func(t *testing.T) {
				frames := []int{3, 20, 21}
				p, err := cd.x.Plan(frames)
				require.NoError(t, err)
				w, h := cd.x.Config.Width, cd.x.Config.Height
				buf, err := d.Alloc(len(frames) * w * h * 3)
				require.NoError(t, err)
				defer d.Free(buf)
				before := d.Stats().FrameCopyBytes
				spec, err := d.DecodeRGB(ctx, cd.segment(p), wantPTS(p), buf)
				require.NoError(t, err)
				calls++
				require.Equal(t, before, d.Stats().FrameCopyBytes, "the RGB path copied frame bytes to the host")
				tab, err := Tables(spec)
				require.NoError(t, err)
				rgb, err := d.ReadBack(buf)
				require.NoError(t, err)
				for i, f := range frames {
					want, err := YUV420ToRGB(Frame{Width: w, Height: h, Bits: c.bits, Data: cd.frames[f]}, tab)
					require.NoError(t, err)
					require.True(t, bytes.Equal(want, rgb[i*w*h*3:(i+1)*w*h*3]), "frame %d: RGB differs from the Go reference", f)
				}
			})
			t.Run("rgb_resized_on_device", func(t *testing.T) {
				frames := []int{3, 20, 21}
				p, err := cd.x.Plan(frames)
				require.NoError(t, err)
				w, h := cd.x.Config.Width, cd.x.Config.Height
				for _, sz := range [][2]int{{29, 17}, {32, 24}, {101, 75}, {64, 33}, {21, 48}, {1, 1}} {
					ow, oh := sz[0], sz[1]
					t.Run(fmt.Sprintf("%dx%d", ow, oh), func(t *testing.T) {
						buf, err := d.Alloc(len(frames) * ow * oh * 3)
						require.NoError(t, err)
						defer d.Free(buf)
						before := d.Stats()
						spec, err := d.DecodeRGB(ctx, cd.segment(p), wantPTS(p), buf, DecodeOptions{Width: ow, Height: oh})
						require.NoError(t, err)
						calls++
						after := d.Stats()
						require.Equal(t, before.FrameCopyBytes, after.FrameCopyBytes, "the resize copied frame bytes to the host")
						require.Equal(t, int64(len(frames)), after.Kept-before.Kept)
						tab, err := Tables(spec)
						require.NoError(t, err)
						got, err := d.ReadBack(buf)
						require.NoError(t, err)
						for i, f := range frames {
							rgb, err := YUV420ToRGB(Frame{Width: w, Height: h, Bits: c.bits, Data: cd.frames[f]}, tab)
							require.NoError(t, err)
							want, err := ResizeRGB(rgb, h, w, oh, ow)
							require.NoError(t, err)
							require.True(t, bytes.Equal(want, got[i*ow*oh*3:(i+1)*ow*oh*3]),
								"frame %d resized to %dx%d: the device's bytes differ from ResizeRGB's", f, ow, oh)
						}
					})
				}
			})
			t.Run("normalized_on_device", func(t *testing.T) {
				// The kernels' normalised write (both the conversion's and the
				// resize's), every dtype and set of means and stds: the device's
				// bytes are pixnorm's RGB of the uint8 reference, bit for bit.
				frames := []int{3, 20}
				p, err := cd.x.Plan(frames)
				require.NoError(t, err)
				w, h := cd.x.Config.Width, cd.x.Config.Height
				for _, sz := range [][2]int{{w, h}, {29, 17}} {
					for _, setName := range slices.Sorted(maps.Keys(normSets)) {
						set := normSets[setName]
						for _, dt := range []pixnorm.DType{pixnorm.Float32, pixnorm.Float16, pixnorm.BFloat16} {
							ow, oh := sz[0], sz[1]
							t.Run(fmt.Sprintf("%dx%d/%s/%s", ow, oh, setName, dt), func(t *testing.T) {
								n := &pixnorm.Normalize{Mean: set[0], Std: set[1], DType: dt}
								fb := ow * oh * 3 * dt.Size()
								buf, err := d.Alloc(len(frames) * fb)
								require.NoError(t, err)
								defer d.Free(buf)
								before := d.Stats()
								spec, err := d.DecodeRGB(ctx, cd.segment(p), wantPTS(p), buf, DecodeOptions{Width: ow, Height: oh, Normalize: n})
								require.NoError(t, err)
								calls++
								require.Equal(t, before.FrameCopyBytes, d.Stats().FrameCopyBytes, "normalising copied frame bytes to the host")
								tab, err := Tables(spec)
								require.NoError(t, err)
								got, err := d.ReadBack(buf)
								require.NoError(t, err)
								for i, f := range frames {
									rgb, err := YUV420ToRGB(Frame{Width: w, Height: h, Bits: c.bits, Data: cd.frames[f]}, tab)
									require.NoError(t, err)
									if ow != w || oh != h {
										rgb, err = ResizeRGB(rgb, h, w, oh, ow)
										require.NoError(t, err)
									}
									want := n.RGB(rgb)
									require.True(t, bytes.Equal(want, got[i*fb:(i+1)*fb]),
										"frame %d as %s (%dx%d): the device's bytes differ from pixnorm's RGB", f, dt, ow, oh)
								}
							})
						}
					}
				}
			})
		})
	}
	st := d.Stats()
	t.Logf("stats: %+v", st)
	// one session per format, reused across every window and segment
	require.Equal(t, int64(ran), st.SessionsCreated)
	require.Equal(t, int64(calls-ran), st.SessionsReused, "a decode did not take its format's pooled session")
	require.Equal(t, st.SessionsCreated, st.DecodersCreated, "a pooled session recreated its decoder")
}

// TestFakeSharedGOP: windows whose frames share a GOP make one plan
// (video.PlanWindows), decoded once.
func TestFakeSharedGOP(t *testing.T) {
	needFFmpeg(t)
	d, err := Open(context.Background(), fakeDriver(t))
	require.NoError(t, err)
	defer d.Close()
	for _, c := range fakeClips() {
		if c.name != "h264_bframes" && c.name != "av1_8bit" && c.name != "av1_10bit" {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			cd := makeFakeClip(t, c)
			b, err := cd.x.PlanWindows([][]int{{13, 14, 15}, {15, 16, 17}, {18, 19}})
			require.NoError(t, err)
			require.Len(t, b.Decodes, 1, "three windows in one GOP")
			p := b.Decodes[0]
			before := d.Stats()
			got, err := d.DecodeNV12(context.Background(), cd.segment(p), wantPTS(p))
			require.NoError(t, err)
			for i, k := range p.Keep {
				require.True(t, bytes.Equal(got[i].Data, cd.frames[k.Frame]), "frame %d", k.Frame)
			}
			st := d.Stats()
			require.Equal(t, int64(p.End-p.Start), st.Decoded-before.Decoded, "the shared GOP decoded more than once")
		})
	}
}

// TestFakeConcurrent: several goroutines share the device and its pool.
func TestFakeConcurrent(t *testing.T) {
	needFFmpeg(t)
	d, err := Open(context.Background(), fakeDriver(t))
	require.NoError(t, err)
	defer d.Close()
	cd := makeFakeClip(t, fakeClips()[0])
	errs := make(chan error, 4)
	for g := 0; g < 4; g++ {
		go func(g int) {
			for i := 0; i < 5; i++ {
				f := (g*11 + i*7) % (cd.x.Len() - 2)
				p, err := cd.x.Plan([]int{f, f + 2})
				if err == nil {
					var got []Frame
					got, err = d.DecodeNV12(context.Background(), cd.segment(p), wantPTS(p))
					if err == nil && (!bytes.Equal(got[0].Data, cd.frames[f]) || !bytes.Equal(got[1].Data, cd.frames[f+2])) {
						err = fmt.Errorf("goroutine %d: frames %d, %d differ", g, f, f+2)
					}
				}
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}(g)
	}
	for g := 0; g < 4; g++ {
		require.NoError(t, <-errs)
	}
	st := d.Stats()
	require.LessOrEqual(t, st.SessionsCreated, int64(4))
	require.Equal(t, int64(20), st.SessionsCreated+st.SessionsReused)
}

// TestFakeCapsFallback: what this NVDEC cannot decode is ErrUnsupported
// (the caller's CPU path), never a decode attempt.
func TestFakeCapsFallback(t *testing.T) {
	d, err := Open(context.Background(), fakeDriver(t))
	require.NoError(t, err)
	defer d.Close()
	for _, tc := range []struct {
		name string
		cfg  video.Config
	}{
		{"h264_10bit", video.Config{Codec: video.H264, BitDepth: 10, Width: 64, Height: 48, NALLengthSize: 4}},
		{"too_large", video.Config{Codec: video.HEVC, BitDepth: 8, Width: 16384, Height: 16384, NALLengthSize: 4}},
		{"av1_12bit", video.Config{Codec: video.AV1, BitDepth: 12, Width: 64, Height: 48}},
		{"av1_422", video.Config{Codec: video.AV1, BitDepth: 8, Chroma: video.Chroma422, Width: 64, Height: 48}},
		{"hevc_444", video.Config{Codec: video.HEVC, BitDepth: 8, Chroma: video.Chroma444, Width: 64, Height: 48, NALLengthSize: 4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := d.DecodeNV12(context.Background(), Segment{Config: tc.cfg, Units: [][]byte{{0, 0, 0, 1, 9}}, PTS: []int64{0}}, []int64{0})
			require.ErrorIs(t, err, ErrUnsupported)
			t.Log(err)
		})
	}
	require.Zero(t, d.Stats().SessionsCreated)
}

// TestFakeCapsDenied: an NVDEC whose cuvidGetDecoderCaps lacks AV1 (the
// fake told so by $MOCK_DENY_CODECS) sends AV1 to the CPU path with
// ErrUnsupported; the codecs it has still decode.
func TestFakeCapsDenied(t *testing.T) {
	needFFmpeg(t)
	t.Setenv("MOCK_DENY_CODECS", "hevc,av1")
	d, err := Open(context.Background(), fakeDriver(t))
	require.NoError(t, err)
	defer d.Close()
	for _, c := range fakeClips() {
		if c.name != "av1_8bit" && c.name != "h264_bframes" {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			cd := makeFakeClip(t, c)
			p, err := cd.x.Plan([]int{0, 1})
			require.NoError(t, err)
			caps, err := d.Caps(cd.x.Config.Codec, c.bits)
			require.NoError(t, err)
			got, err := d.DecodeNV12(context.Background(), cd.segment(p), wantPTS(p))
			if cd.x.Config.Codec == video.AV1 {
				require.False(t, caps.Supported)
				require.ErrorIs(t, err, ErrUnsupported)
				t.Log(err)
				return
			}
			require.True(t, caps.Supported)
			require.NoError(t, err)
			require.True(t, bytes.Equal(got[0].Data, cd.frames[0]))
		})
	}
}

// TestFakeStreamMismatch: a configuration that lies about the stream
// (size or bit depth: the outputs are sized by it) fails in the sequence
// callback with ErrInvalidSegment, before any frame is written.
func TestFakeStreamMismatch(t *testing.T) {
	needFFmpeg(t)
	d, err := Open(context.Background(), fakeDriver(t))
	require.NoError(t, err)
	defer d.Close()
	for _, c := range fakeClips() {
		if c.name != "av1_8bit" && c.name != "hevc_10bit" {
			continue
		}
		cd := makeFakeClip(t, c)
		p, err := cd.x.Plan([]int{0, 1})
		require.NoError(t, err)
		for name, edit := range map[string]func(*video.Config){
			"larger":  func(c *video.Config) { c.Width, c.Height = 128, 96 },
			"smaller": func(c *video.Config) { c.Width, c.Height = 48, 32 },
			"depth": func(c *video.Config) {
				if c.BitDepth == 8 {
					c.BitDepth = 10
				} else {
					c.BitDepth = 8
				}
			},
		} {
			t.Run(c.name+"/"+name, func(t *testing.T) {
				seg := cd.segment(p)
				edit(&seg.Config)
				_, err := d.DecodeNV12(context.Background(), seg, wantPTS(p))
				require.ErrorIs(t, err, ErrInvalidSegment)
				t.Log(err)
				buf, err := d.Alloc(2 * seg.Config.Width * seg.Config.Height * 3)
				require.NoError(t, err)
				defer d.Free(buf)
				_, err = d.DecodeRGB(context.Background(), seg, wantPTS(p), buf)
				require.ErrorIs(t, err, ErrInvalidSegment)
			})
		}
	}
}

// TestOpenUnavailable: no driver is ErrUnavailable naming the library.
func TestOpenUnavailable(t *testing.T) {
	o := DefaultOptions()
	o.CudaLib = "/nonexistent/libcuda.so.1"
	_, err := Open(context.Background(), o)
	require.ErrorIs(t, err, ErrUnavailable)
	require.True(t, strings.Contains(err.Error(), "/nonexistent/libcuda.so.1"), "%v", err)
	st := Probe(context.Background(), o)
	require.False(t, st.On)
	require.NotEmpty(t, st.Reason)
}

func seq(a, b int) []int {
	var o []int
	for i := a; i < b; i++ {
		o = append(o, i)
	}
	return o
}

// TestFakeDeviceSlots: a step's window decoded by DecodeRGB straight into a
// device slot of a ring on the (fake) CUDA memory, published with the
// driver's IPC handle and event, read back equal to the Go reference, and
// no frame byte copied to the host on the way.
func TestFakeDeviceSlots(t *testing.T) {
	needFFmpeg(t)
	ctx := context.Background()
	d, err := Open(ctx, fakeDriver(t))
	require.NoError(t, err)
	defer d.Close()
	cd := makeFakeClip(t, fakeClips()[1])
	w, h := cd.x.Config.Width, cd.x.Config.Height
	windows := [][]int{{10, 11, 12}, {30, 31, 32}}
	stepBytes := int64(len(windows) * 3 * w * h * 3)
	slotBytes := (stepBytes + 255) / 256 * 256
	budget, err := membudget.New(membudget.Options{Total: 8 * slotBytes})
	require.NoError(t, err)
	r, err := NewDeviceRing(d.Memory(), RingOptions{Slots: 2, SlotBytes: slotBytes, Budget: budget})
	require.NoError(t, err)
	defer r.Close()
	for step := 0; step < 3; step++ {
		u, err := r.Acquire(ctx)
		require.NoError(t, err)
		before := d.Stats().FrameCopyBytes
		b, err := cd.x.PlanWindows(windows)
		require.NoError(t, err)
		// each plan decoded once; its kept frames go to their windows' places in the slot
		require.Len(t, b.Decodes, 2)
		var spec ColorSpec
		decodedBefore := d.Stats().Decoded
		planned := 0
		for _, p := range b.Decodes {
			var want []int64
			var to []uint64
			for _, k := range p.Keep {
				for wi, win := range windows {
					for ti, f := range win {
						if f == k.Frame {
							want = append(want, k.PTS)
							to = append(to, u.Region.Ptr+uint64((wi*len(win)+ti)*w*h*3))
						}
					}
				}
			}
			spec, err = d.DecodeRGBTo(ctx, cd.segment(p), want, to)
			require.NoError(t, err)
			planned += p.End - p.Start
		}
		require.LessOrEqual(t, d.Stats().Decoded-decodedBefore, int64(planned))
		require.Equal(t, before, d.Stats().FrameCopyBytes, "frames crossed to the host")
		desc, err := r.Publish(u, 0, []int{len(windows), 3, h, w, 3}, pixnorm.Uint8)
		require.NoError(t, err)
		require.Equal(t, "GPU-46414b45-2d47-5055-2d55-5549442d3031", desc.Device) // "FAKE-GPU-UUID-01"
		if step < 2 {
			hd, err := base64.StdEncoding.DecodeString(desc.IPCHandle)
			require.NoError(t, err)
			require.Len(t, hd, 64)
			require.Equal(t, "FAKEIPCM", string(hd[:8]))
		} else {
			require.Empty(t, desc.IPCHandle)
		}
		got, err := d.ReadBack(Buffer{Ptr: u.Region.Ptr, Size: int(stepBytes)})
		require.NoError(t, err)
		tab, err := Tables(spec)
		require.NoError(t, err)
		for wi, win := range windows {
			for ti, f := range win {
				want, err := YUV420ToRGB(Frame{Width: w, Height: h, Bits: 8, Data: cd.frames[f]}, tab)
				require.NoError(t, err)
				off := (wi*len(win) + ti) * w * h * 3
				require.True(t, bytes.Equal(want, got[off:off+w*h*3]), "window %d frame %d", wi, f)
			}
		}
		require.NoError(t, r.Release(desc.Slot, desc.Generation))
	}
}

// TestFakeResizeErrors: a resize to a bad size is refused before any
// decode, and a stream whose size is not its configuration's fails
// (the filters are for the configured size) instead of reading outside
// the picture.
func TestFakeResizeErrors(t *testing.T) {
	needFFmpeg(t)
	ctx := context.Background()
	d, err := Open(ctx, fakeDriver(t))
	require.NoError(t, err)
	defer d.Close()
	cd := makeFakeClip(t, fakeClips()[0])
	p, err := cd.x.Plan([]int{2})
	require.NoError(t, err)
	buf, err := d.Alloc(1 << 16)
	require.NoError(t, err)
	defer d.Free(buf)
	for _, tc := range []struct {
		name string
		opts []DecodeOptions
	}{
		{"zero_width", []DecodeOptions{{Width: 0, Height: 5}}},
		{"negative", []DecodeOptions{{Width: -3, Height: 5}}},
		{"two_options", []DecodeOptions{{Width: 3, Height: 5}, {Width: 3, Height: 5}}},
		{"too_large_for_buffer", []DecodeOptions{{Width: 300, Height: 300}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := d.DecodeRGB(ctx, cd.segment(p), wantPTS(p), buf, tc.opts...)
			require.ErrorIs(t, err, ErrInvalidSegment)
			t.Log(err)
		})
	}
	require.Zero(t, d.Stats().Decoded)
	seg := cd.segment(p)
	seg.Config.Height -= 2
	_, err = d.DecodeRGB(ctx, seg, wantPTS(p), buf, DecodeOptions{Width: 16, Height: 16})
	require.ErrorIs(t, err, ErrInvalidSegment)
	require.Contains(t, err.Error(), "the stream is 64x48")
	t.Log(err)
	// the same size as the stream is no resize
	_, err = d.DecodeRGB(ctx, cd.segment(p), wantPTS(p), buf, DecodeOptions{Width: 64, Height: 48})
	require.NoError(t, err)
}

// TestFakeDeviceMemoryBudget: the device memory a Device allocates for
// itself (colour tables, resize filters, each session's resize scratch)
// is leased from Options.Budget (--gpu-memory-limit): a resize whose
// scratch does not fit fails with ErrOverLimit before any decode; with
// room, the budget holds exactly what was allocated, a larger resize
// grows the scratch lease, and Close gives everything back.
func TestFakeDeviceMemoryBudget(t *testing.T) {
	needFFmpeg(t)
	ctx := context.Background()
	cd := makeFakeClip(t, fakeClips()[0])
	p, err := cd.x.Plan([]int{2, 3})
	require.NoError(t, err)
	w, h := cd.x.Config.Width, cd.x.Config.Height
	tables, err := Tables(ColorRule(2, false, h, 8))
	require.NoError(t, err)
	tableBytes := int64(len(tables.Flat) * 2)
	filterBytes := func(in, out int) int64 {
		f, err := ResizeWeights(in, out)
		require.NoError(t, err)
		return int64(len(f.deviceBytes()))
	}

	t.Run("too small", func(t *testing.T) {
		b, err := membudget.New(membudget.Options{Total: tableBytes + filterBytes(h, 40) + filterBytes(w, 30) + 100})
		require.NoError(t, err)
		opts := fakeDriver(t)
		opts.Budget = b
		d, err := Open(ctx, opts)
		require.NoError(t, err)
		buf, err := d.Alloc(2 * 30 * 40 * 3)
		require.NoError(t, err)
		_, err = d.DecodeRGB(ctx, cd.segment(p), wantPTS(p), buf, DecodeOptions{Width: 30, Height: 40})
		require.ErrorIs(t, err, ErrOverLimit)
		require.Contains(t, err.Error(), "resize scratch")
		require.Zero(t, d.Stats().Decoded, "refused before decoding")
		require.NoError(t, d.Free(buf))
		require.NoError(t, d.Close())
		require.Zero(t, b.Stats().Used, "Close gave the tables and filters back")
	})

	t.Run("room", func(t *testing.T) {
		b, err := membudget.New(membudget.Options{Total: 64 << 20})
		require.NoError(t, err)
		opts := fakeDriver(t)
		opts.Budget = b
		d, err := Open(ctx, opts)
		require.NoError(t, err)
		buf, err := d.Alloc(2 * 50 * 60 * 3)
		require.NoError(t, err)
		_, err = d.DecodeRGB(ctx, cd.segment(p), wantPTS(p), buf, DecodeOptions{Width: 30, Height: 40})
		require.NoError(t, err)
		fixed := tableBytes + filterBytes(h, 40) + filterBytes(w, 30)
		require.Equal(t, fixed+int64(40*w*12), b.Stats().Used, "tables, two filters, one session's scratch")
		_, err = d.DecodeRGB(ctx, cd.segment(p), wantPTS(p), buf, DecodeOptions{Width: 50, Height: 60})
		require.NoError(t, err)
		fixed += filterBytes(h, 60) + filterBytes(w, 50)
		require.Equal(t, fixed+int64(60*w*12), b.Stats().Used, "the pooled session's scratch grew; its smaller lease went back")
		require.NoError(t, d.Free(buf))
		require.NoError(t, d.Close())
		require.ErrorIs(t, d.Free(buf), ErrClosed, "after Close")
		require.Zero(t, b.Stats().Used)
	})
}

// TestFakeFilterRace: decodes that build one resize filter at once all
// get the one filter kept (the losers free theirs; that Free once waited
// on the lock its caller held, and the decode hung).
func TestFakeFilterRace(t *testing.T) {
	d, err := Open(context.Background(), fakeDriver(t))
	require.NoError(t, err)
	defer d.Close()
	const goroutines, keys = 8, 40
	start := make(chan struct{})
	got := make([][keys]deviceFilter, goroutines)
	errs := make(chan error, goroutines)
	for g := range goroutines {
		go func() {
			<-start
			for k := range keys {
				f, err := d.deviceFilter(48+k, 24)
				if err != nil {
					errs <- err
					return
				}
				got[g][k] = f
			}
			errs <- nil
		}()
	}
	close(start)
	for range goroutines {
		require.NoError(t, <-errs)
	}
	for g := range goroutines {
		require.Equal(t, got[0], got[g], "goroutine %d", g)
	}
}

// TestFakeDeviceAfterClose: every use of the driver after Close says
// ErrClosed (the device memory calls of a DeviceRing, the event calls,
// ReadBack) instead of calling through the freed driver, and Stats still
// answers; decodes racing Close each succeed or say ErrClosed, and give
// every lease back.
func TestFakeDeviceAfterClose(t *testing.T) {
	needFFmpeg(t)
	ctx := context.Background()
	cd := makeFakeClip(t, fakeClips()[0])
	p, err := cd.x.Plan([]int{2, 3})
	require.NoError(t, err)

	t.Run("calls after Close", func(t *testing.T) {
		d, err := Open(ctx, fakeDriver(t))
		require.NoError(t, err)
		m := d.Memory()
		r, err := m.Alloc(1 << 10)
		require.NoError(t, err)
		ev, _, err := m.NewEvent()
		require.NoError(t, err)
		require.NoError(t, d.Close())
		_, err = m.ExportMem(r)
		require.ErrorIs(t, err, ErrClosed, "ExportMem")
		_, _, err = m.NewEvent()
		require.ErrorIs(t, err, ErrClosed, "NewEvent")
		require.ErrorIs(t, m.Record(ev), ErrClosed, "Record")
		require.ErrorIs(t, m.DestroyEvent(ev), ErrClosed, "DestroyEvent")
		require.ErrorIs(t, m.Free(r), ErrClosed, "Free")
		_, err = d.ReadBack(Buffer{Ptr: r.Ptr, Size: int(r.Size)})
		require.ErrorIs(t, err, ErrClosed, "ReadBack")
		_, err = m.Alloc(1 << 10)
		require.ErrorIs(t, err, ErrClosed, "Alloc")
		require.Zero(t, d.Stats().MemTotal, "Stats does not ask the freed driver")
	})

	t.Run("decodes racing Close", func(t *testing.T) {
		b, err := membudget.New(membudget.Options{Total: 64 << 20})
		require.NoError(t, err)
		opts := fakeDriver(t)
		opts.Budget = b
		d, err := Open(ctx, opts)
		require.NoError(t, err)
		bufs := make([]Buffer, 8)
		for i := range bufs {
			bufs[i], err = d.Alloc(2 * 40 * 40 * 3)
			require.NoError(t, err)
		}
		errs := make(chan error, len(bufs))
		for i, buf := range bufs {
			go func() {
				// each its own resize: filters uploaded while Close runs
				_, err := d.DecodeRGB(ctx, cd.segment(p), wantPTS(p), buf, DecodeOptions{Width: 20 + i, Height: 30 + i})
				errs <- err
			}()
		}
		require.NoError(t, d.Close())
		for range bufs {
			if err := <-errs; err != nil {
				require.ErrorIs(t, err, ErrClosed)
			}
		}
		require.Zero(t, b.Stats().Used, "every lease went back")
	})
}
