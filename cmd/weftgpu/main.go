// Command weftgpu prepares and runs `make gpu-check` (issue 15, docs/gpu.md).
//
//	weftgpu prep [--small] [--force] [--flightd BIN] DIR   (CPU machine, needs ffmpeg) clips, ffmpeg's
//	    per-frame hashes and, with --flightd, a store of
//	    the bench clips for the delivery stage, into DIR. Clips are made again only when DIR's
//	    manifest is of another version (or --force); the store always.
//	weftgpu check [flags] DIR     (GPU machine) decoder caps, exactness, RGB, resize, normalisation,
//	    IPC and decode-only throughput: RESULT key=value lines
//	weftgpu deliver [flags] DIR   (GPU machine) delivery end to end: a real flightd serve on DIR's
//	    store, N concurrent trainer processes (python TrainLoader cuda-ipc, or `weftgpu trainer`)
//	weftgpu trainer [flags]       one Go trainer of deliver (client.ReadRankExchange, cuda-ipc)
//	weftgpu annexb IN.mp4 OUT     the bench clip as Annex B, for nvdec_probe's raw NVDEC rate
//
// check flags: --cuda-lib, --cuvid-lib (default: the driver's sonames; the
// fake driver for a dry run), --secs (per throughput point), --sessions
// (default 1,4,8,16), --python (for the cross-process CUDA IPC child),
// --scripts (gpu/check, where the python children are).
package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"hash/fnv"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weftdata/weft/gpu"
	"github.com/weftdata/weft/video"
	"github.com/weftdata/weft/video/pixnorm"
)

// manifestVersion is the data's version: prep makes the clips again when a
// directory's manifest has another (an old directory lacks newer clips).
// 2: the AV1 clips, normalisation, the delivery store.
const manifestVersion = 2

type clipSpec struct {
	Name       string   `json:"name"`
	Role       string   `json:"role"` // exact, color, bench
	Bits       int      `json:"bits"`
	Pix        string   `json:"pix"`
	ColorSpace string   `json:"color_space"` // ffprobe's
	ColorRange string   `json:"color_range"`
	Hashes     []string `json:"hashes"` // FNV-1a 64 of ffmpeg's NV12/p010le frames, display order
	args       []string
}

type manifest struct {
	Version int        `json:"version"`
	Small   bool       `json:"small"`
	Made    string     `json:"made"`
	FFmpeg  string     `json:"ffmpeg"`
	Clips   []clipSpec `json:"clips"`
	// Store is the delivery stage's store (prep --flightd), nil without.
	Store *storeSpec `json:"store,omitempty"`
}

func clipList(small bool) []clipSpec {
	src := func(size string, frames int) []string {
		if small { // tests: the same clips at 160x96 and a third of the frames
			size, frames = "160x96", max(frames/3, 12)
		}
		return []string{"-f", "lavfi", "-i", "testsrc2=size=" + size + ":rate=30,noise=alls=12:allf=t", "-frames:v", strconv.Itoa(frames)}
	}
	x264 := []string{"-c:v", "libx264", "-preset", "fast", "-bf", "3", "-g", "30", "-b:v", "5M"}
	x265 := func(p, prof string) []string {
		return []string{"-c:v", "libx265", "-preset", "fast", "-profile:v", prof, "-x265-params", p + ":log-level=error", "-b:v", "4M"}
	}
	cat := func(p ...[]string) (o []string) {
		for _, x := range p {
			o = append(o, x...)
		}
		return o
	}
	color := func(cs, rng string) []string {
		return cat(src("320x240", 20), []string{"-c:v", "libx264", "-bf", "2", "-g", "10", "-pix_fmt", "yuv420p",
			"-colorspace", cs, "-color_primaries", map[string]string{"bt709": "bt709", "smpte170m": "smpte170m"}[cs],
			"-color_trc", map[string]string{"bt709": "bt709", "smpte170m": "smpte170m"}[cs], "-color_range", rng})
	}
	return []clipSpec{
		{Name: "h264_1080p_bf", Role: "bench", Bits: 8, Pix: "nv12", args: cat(src("1920x1080", 120), x264, []string{"-pix_fmt", "yuv420p"})},
		{Name: "hevc_1080p_opengop", Role: "exact", Bits: 8, Pix: "nv12", args: cat(src("1920x1080", 90), x265("bframes=4:keyint=30:min-keyint=30:scenecut=0:open-gop=1", "main"), []string{"-pix_fmt", "yuv420p"})},
		{Name: "hevc10_1080p", Role: "exact", Bits: 10, Pix: "p010le", args: cat(src("1920x1080", 60), x265("bframes=4:keyint=30:min-keyint=30:scenecut=0:open-gop=1", "main10"), []string{"-pix_fmt", "yuv420p10le"})},
		{Name: "h264_720p_bf", Role: "exact", Bits: 8, Pix: "nv12", args: cat(src("1280x720", 90), x264, []string{"-pix_fmt", "yuv420p"})},
		// AV1, LeRobot's default codec: SVT-AV1 (LeRobot's encoder) with its hidden frames shown by
		// show_existing_frame, and libaom 10-bit (P016)
		{Name: "av1_720p_svt", Role: "exact", Bits: 8, Pix: "nv12", args: cat(src("1280x720", 60), []string{"-c:v", "libsvtav1", "-preset", "10", "-g", "30", "-crf", "35", "-pix_fmt", "yuv420p"})},
		{Name: "av1_10bit_480p", Role: "exact", Bits: 10, Pix: "p010le", args: cat(src("640x480", 40), []string{"-c:v", "libaom-av1", "-cpu-used", "8", "-g", "20", "-b:v", "1M", "-pix_fmt", "yuv420p10le"})},
		{Name: "color_bt601_limited", Role: "color", Bits: 8, Pix: "nv12", args: color("smpte170m", "tv")},
		{Name: "color_bt601_full", Role: "color", Bits: 8, Pix: "nv12", args: color("smpte170m", "pc")},
		{Name: "color_bt709_limited", Role: "color", Bits: 8, Pix: "nv12", args: color("bt709", "tv")},
		{Name: "color_bt709_full", Role: "color", Bits: 8, Pix: "nv12", args: color("bt709", "pc")},
	}
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: weftgpu prep [--small] [--force] [--flightd BIN] DIR | weftgpu check [flags] DIR | weftgpu deliver [flags] DIR | weftgpu trainer [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "prep":
		err = prepMain(os.Args[2:])
	case "check":
		err = check(os.Args[2:])
	case "deliver":
		err = deliver(os.Args[2:])
	case "trainer":
		err = trainer(os.Args[2:])
	case "annexb":
		err = annexbMain(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "weftgpu:", err)
		os.Exit(1)
	}
}

func fnv64(b []byte) string {
	h := fnv.New64a()
	h.Write(b)
	return fmt.Sprintf("%016x", h.Sum64())
}

func prepMain(args []string) error {
	fs := flag.NewFlagSet("prep", flag.ContinueOnError)
	var o prepOptions
	fs.BoolVar(&o.small, "small", false, "tests: the clips at 160x96, a third of the frames")
	fs.BoolVar(&o.force, "force", false, "make the clips even when the manifest is current")
	fs.StringVar(&o.flightd, "flightd", "", "flightd binary that makes the delivery stage's store ('' for none)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return errors.New("prep: give one DIR")
	}
	return prep(fs.Arg(0), o)
}

type prepOptions struct {
	small, force bool
	flightd      string
}

// readManifest reads DIR/manifest.json.
func readManifest(dir string) (manifest, error) {
	var m manifest
	b, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		return m, err
	}
	return m, json.Unmarshal(b, &m)
}

// current: dir's clips are this version's, of this size, all present.
func (m manifest) current(dir string, small bool) bool {
	if m.Version != manifestVersion || m.Small != small || len(m.Clips) != len(clipList(small)) {
		return false
	}
	for _, c := range m.Clips {
		if _, err := os.Stat(filepath.Join(dir, c.Name+".mp4")); err != nil {
			return false
		}
	}
	return true
}

func prep(dir string, o prepOptions) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	m, err := readManifest(dir)
	if o.force || err != nil || !m.current(dir, o.small) {
		if m, err = prepClips(dir, o.small); err != nil {
			return err
		}
	} else {
		fmt.Printf("prep: clips of %s are current (version %d, made %s)\n", dir, m.Version, m.Made)
	}
	m.Store = nil
	if o.flightd != "" {
		st, err := prepStore(context.Background(), dir, o.flightd, m)
		if err != nil {
			return err
		}
		m.Store = &st
	}
	b, err := json.MarshalIndent(m, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "manifest.json"), b, 0o644)
}

func prepClips(dir string, small bool) (manifest, error) {
	ver, _ := exec.Command("ffmpeg", "-version").Output()
	m := manifest{Version: manifestVersion, Small: small, Made: time.Now().UTC().Format(time.RFC3339), FFmpeg: strings.SplitN(string(ver), "\n", 2)[0]}
	for _, c := range clipList(small) {
		out := filepath.Join(dir, c.Name+".mp4")
		args := append([]string{"-v", "error", "-nostdin", "-y"}, c.args...)
		if b, err := exec.Command("ffmpeg", append(args, out)...).CombinedOutput(); err != nil {
			return m, fmt.Errorf("ffmpeg %s: %v: %s", c.Name, err, b)
		}
		x, err := index(out)
		if err != nil {
			return m, err
		}
		// ffmpeg's decoder output as it is (no -pix_fmt: a conversion to nv12 would
		// also squeeze a full-range stream to limited range), interleaved here
		raw, err := exec.Command("ffmpeg", "-v", "error", "-nostdin", "-i", out, "-fps_mode", "passthrough", "-f", "rawvideo", "-").Output()
		if err != nil {
			return m, fmt.Errorf("ffmpeg decode %s: %v", c.Name, err)
		}
		w, h := x.Config.Width, x.Config.Height
		bps := 1
		if c.Bits > 8 {
			bps = 2
		}
		cw, ch := (w+1)/2, (h+1)/2
		pb := (w*h + 2*cw*ch) * bps
		if len(raw)%pb != 0 || len(raw)/pb != x.Len() {
			return m, fmt.Errorf("%s: ffmpeg gave %d bytes, %d planar frames of %d expected", c.Name, len(raw), x.Len(), pb)
		}
		for i := 0; i < len(raw); i += pb {
			c.Hashes = append(c.Hashes, fnv64(interleave(raw[i:i+pb], w, h, c.Bits)))
		}
		p, _ := exec.Command("ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries", "stream=color_space,color_range", "-of", "csv=p=0", out).Output()
		f := strings.Split(strings.TrimSpace(string(p)), ",")
		if len(f) == 2 {
			c.ColorRange, c.ColorSpace = f[0], f[1]
		}
		m.Clips = append(m.Clips, c)
		fmt.Printf("prep: %s: %d frames %dx%d %s/%s\n", c.Name, x.Len(), x.Config.Width, x.Config.Height, c.ColorSpace, c.ColorRange)
	}
	return m, nil
}

type clip struct {
	spec clipSpec
	x    *video.Index
	file []byte
}

func index(path string) (*video.Index, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return video.Read(context.Background(), bytes.NewReader(b), int64(len(b)))
}

func (c clip) segment(p video.Plan) gpu.Segment {
	s := gpu.Segment{Config: c.x.Config}
	for d := p.Start; d < p.End; d++ {
		smp := c.x.Samples[d]
		s.Units = append(s.Units, c.file[smp.Offset:smp.Offset+smp.Size])
		s.PTS = append(s.PTS, smp.PTS)
	}
	return s
}

func result(k string, v any) { fmt.Printf("RESULT %s=%v\n", k, v) }

func check(args []string) error {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	o := gpu.DefaultOptions()
	fs.StringVar(&o.CudaLib, "cuda-lib", o.CudaLib, "libcuda to dlopen")
	fs.StringVar(&o.CuvidLib, "cuvid-lib", o.CuvidLib, "libnvcuvid to dlopen")
	secs := fs.Float64("secs", 6, "seconds per throughput point")
	sessions := fs.String("sessions", "1,4,8,16", "concurrent NVDEC sessions to measure")
	python := fs.String("python", "python3", "python with cupy and torch for the IPC child ('' to skip)")
	scripts := fs.String("scripts", defaultScripts(), "the directory of ipc_child.py and loader_child.py (gpu/check)")
	av1Sessions := fs.String("av1-sessions", "1,8", "concurrent NVDEC sessions for the AV1 decode-only throughput")
	normSessions := fs.String("norm-sessions", "8", "concurrent NVDEC sessions for the normalised (float16) decode-only throughput")
	if err := fs.Parse(args); err != nil {
		return err
	}
	dir := fs.Arg(0)
	m, err := readManifest(dir)
	if err != nil {
		return err
	}
	result("weft_check", fmt.Sprintf("date=%s data_made=%s data_version=%d", time.Now().UTC().Format(time.RFC3339), m.Made, m.Version))
	ctx := context.Background()
	t0 := time.Now()
	d, err := gpu.Open(ctx, o)
	result("open_ms", time.Since(t0).Milliseconds())
	if err != nil {
		result("gpu", "off "+strings.ReplaceAll(err.Error(), " ", "_"))
		return nil
	}
	defer d.Close()
	in := d.Info()
	result("gpu", fmt.Sprintf("%q driver=%d uuid=%s", in.Name, in.DriverVersion, in.UUIDString()))
	for _, c := range []struct {
		name  string
		codec video.Codec
		bits  int
	}{{"h264", video.H264, 8}, {"h264_10", video.H264, 10}, {"hevc", video.HEVC, 8}, {"hevc10", video.HEVC, 10}, {"av1", video.AV1, 8}, {"av1_10", video.AV1, 10}} {
		cp, err := d.Caps(c.codec, c.bits)
		if err != nil {
			result("caps_"+c.name, "error:"+err.Error())
			continue
		}
		result("caps_"+c.name, fmt.Sprintf("supported:%v nvdecs:%d max:%dx%d", b01(cp.Supported), cp.NVDECs, cp.MaxWidth, cp.MaxHeight))
	}
	var clips []clip
	for _, s := range m.Clips {
		p := filepath.Join(dir, s.Name+".mp4")
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		x, err := video.Read(ctx, bytes.NewReader(b), int64(len(b)))
		if err != nil {
			return err
		}
		clips = append(clips, clip{spec: s, x: x, file: b})
	}
	// 1. NV12/P016 bit-exact with ffmpeg, every frame of every clip
	for _, c := range clips {
		all := make([]int, c.x.Len())
		for i := range all {
			all[i] = i
		}
		p, err := c.x.Plan(all)
		if err != nil {
			return err
		}
		want := make([]int64, len(p.Keep))
		for i, k := range p.Keep {
			want[i] = k.PTS
		}
		t := time.Now()
		frames, err := d.DecodeNV12(ctx, c.segment(p), want)
		if err != nil {
			result("exact_"+c.spec.Name, "error "+err.Error())
			continue
		}
		same := 0
		for i, f := range frames {
			if fnv64(f.Data) == c.spec.Hashes[p.Keep[i].Frame] {
				same++
			}
		}
		result("exact_"+c.spec.Name, fmt.Sprintf("%d/%d secs=%.2f", same, len(c.spec.Hashes), time.Since(t).Seconds()))
	}
	// 2. RGB on the device vs the Go reference (from NVDEC's own NV12)
	for _, c := range clips {
		if c.spec.Role != "color" && c.spec.Bits == 8 {
			continue
		}
		if err := checkRGB(ctx, d, c); err != nil {
			result("rgb_"+c.spec.Name, "error "+err.Error())
		}
		if err := checkResize(ctx, d, c); err != nil {
			result("rgb_resize_"+c.spec.Name, "error "+err.Error())
		}
		if err := checkNormalize(ctx, d, c); err != nil {
			result("rgb_norm_"+c.spec.Name, "error "+err.Error())
		}
	}
	// 3. CUDA IPC across processes through a device ring
	if *python != "" {
		checkIPC(ctx, d, clips[0], *python, *scripts)
	}
	// 4. throughput: windows into device memory at 1..16 sessions (decode-only:
	// no flightd, no trainer; `weftgpu deliver` measures delivery)
	var bench, av1 *clip
	for i, c := range clips {
		switch {
		case c.spec.Role == "bench":
			bench = &clips[i]
		case c.spec.Name == "av1_720p_svt":
			av1 = &clips[i]
		}
	}
	dur := time.Duration(*secs * float64(time.Second))
	f16 := &pixnorm.Normalize{Mean: [3]float64{0.485, 0.456, 0.406}, Std: [3]float64{0.229, 0.224, 0.225}, DType: pixnorm.Float16}
	for _, run := range []struct {
		c    *clip
		list string
		norm *pixnorm.Normalize
	}{{bench, *sessions, nil}, {bench, *normSessions, f16}, {av1, *av1Sessions, nil}} {
		if run.c == nil {
			continue
		}
		for _, s := range strings.Split(run.list, ",") {
			if s = strings.TrimSpace(s); s == "" {
				continue
			}
			n, err := strconv.Atoi(s)
			if err != nil {
				return err
			}
			throughput(ctx, d, *run.c, n, dur, run.norm)
		}
	}
	st := d.Stats()
	result("weft_stats", fmt.Sprintf("sessions=%d reused=%d decoders=%d decoded=%d kept=%d", st.SessionsCreated, st.SessionsReused, st.DecodersCreated, st.Decoded, st.Kept))
	result("total_secs", fmt.Sprintf("%.1f", time.Since(t0).Seconds()))
	return nil
}

func b01(b bool) int {
	if b {
		return 1
	}
	return 0
}

// decodeNV12 plans frames of c and decodes them to the host with NVDEC
// (the checks' reference input): the plan, the wanted PTS, the frames.
func decodeNV12(ctx context.Context, d *gpu.Device, c clip, frames []int) (video.Plan, []int64, []gpu.Frame, error) {
	p, err := c.x.Plan(frames)
	if err != nil {
		return video.Plan{}, nil, nil, err
	}
	want := make([]int64, len(p.Keep))
	for i, k := range p.Keep {
		want[i] = k.PTS
	}
	nv12, err := d.DecodeNV12(ctx, c.segment(p), want)
	return p, want, nv12, err
}

func checkRGB(ctx context.Context, d *gpu.Device, c clip) error {
	frames := []int{0, c.x.Len() / 2, c.x.Len() - 1}
	p, want, nv12, err := decodeNV12(ctx, d, c, frames)
	if err != nil {
		return err
	}
	w, h := c.x.Config.Width, c.x.Config.Height
	buf, err := d.Alloc(len(want) * w * h * 3)
	if err != nil {
		return err
	}
	defer d.Free(buf)
	spec, err := d.DecodeRGB(ctx, c.segment(p), want, buf)
	if err != nil {
		return err
	}
	rgb, err := d.ReadBack(buf)
	if err != nil {
		return err
	}
	tab, err := gpu.Tables(spec)
	if err != nil {
		return err
	}
	maxd, diff := 0, 0
	for i, f := range nv12 {
		ref, err := gpu.YUV420ToRGB(f, tab)
		if err != nil {
			return err
		}
		got := rgb[i*w*h*3 : (i+1)*w*h*3]
		for j := range ref {
			dd := int(ref[j]) - int(got[j])
			if dd < 0 {
				dd = -dd
			}
			if dd > 0 {
				diff++
			}
			maxd = max(maxd, dd)
		}
	}
	verdict := "ok"
	if maxd > 1 {
		verdict = "fail"
	}
	// the rule the CPU client would apply to the stream's tags (ffprobe's, at prep)
	mc := map[string]int{"bt709": 1, "fcc": 4, "bt470bg": 5, "smpte170m": 6, "smpte240m": 7, "bt2020nc": 9, "bt2020c": 10}[c.spec.ColorSpace]
	expect := gpu.ColorRule(mc, c.spec.ColorRange == "pc", h, spec.Bits)
	match := "yes"
	if expect != spec {
		match = "no"
	}
	result("rgb_"+c.spec.Name, fmt.Sprintf("%s max_lsb=%d bytes_differing=%d spec=%s/full=%v/%dbit stream=%s/%s spec_match=%s", verdict, maxd, diff,
		spec.Matrix, spec.Full, spec.Bits, c.spec.ColorSpace, c.spec.ColorRange, match))
	return nil
}

// checkResize: the device's resize (a window's size=) against the Go
// reference (gpu.ResizeRGB of gpu.YUV420ToRGB of NVDEC's own NV12), for a
// downscale to 224x224 and an upscale to odd sizes: ok when max ≤ 1 LSB
// (the two do the same float32 arithmetic, so 0 values should differ).
func checkResize(ctx context.Context, d *gpu.Device, c clip) error {
	frames := []int{0, c.x.Len() - 1}
	p, want, nv12, err := decodeNV12(ctx, d, c, frames)
	if err != nil {
		return err
	}
	w, h := c.x.Config.Width, c.x.Config.Height
	maxd, diff, total := 0, 0, 0
	var sizes []string
	for _, sz := range [][2]int{{224, 224}, {w*3/2 + 1, h*5/4 + 1}} {
		ow, oh := sz[0], sz[1]
		sizes = append(sizes, fmt.Sprintf("%dx%d", ow, oh))
		buf, err := d.Alloc(len(want) * ow * oh * 3)
		if err != nil {
			return err
		}
		spec, err := d.DecodeRGB(ctx, c.segment(p), want, buf, gpu.DecodeOptions{Width: ow, Height: oh})
		if err != nil {
			_ = d.Free(buf)
			return err
		}
		got, err := d.ReadBack(buf)
		_ = d.Free(buf)
		if err != nil {
			return err
		}
		tab, err := gpu.Tables(spec)
		if err != nil {
			return err
		}
		for i, f := range nv12 {
			rgb, err := gpu.YUV420ToRGB(f, tab)
			if err != nil {
				return err
			}
			ref, err := gpu.ResizeRGB(rgb, h, w, oh, ow)
			if err != nil {
				return err
			}
			for j, v := range ref {
				dd := int(v) - int(got[i*ow*oh*3+j])
				dd = max(dd, -dd)
				if dd > 0 {
					diff++
				}
				maxd = max(maxd, dd)
			}
			total += len(ref)
		}
	}
	verdict := "ok"
	if maxd > 1 {
		verdict = "fail"
	}
	result("rgb_resize_"+c.spec.Name, fmt.Sprintf("%s max_lsb=%d values_differing=%d/%d sizes=%s", verdict, maxd, diff, total, strings.Join(sizes, ",")))
	return nil
}

// interleave turns planar yuv420p / yuv420p10le (one frame) into packed NV12 /
// p010le (samples shifted to the high bits), as gpu.Frame holds them.
func interleave(p []byte, w, h, bits int) []byte {
	bps := 1
	if bits > 8 {
		bps = 2
	}
	cw, ch := (w+1)/2, (h+1)/2
	out := make([]byte, 0, gpu.FrameBytes(w, h, bits))
	put := func(b []byte) {
		if bps == 1 {
			out = append(out, b[0])
			return
		}
		v := (uint16(b[0]) | uint16(b[1])<<8) << (16 - bits)
		out = append(out, byte(v), byte(v>>8))
	}
	for i := 0; i < w*h; i++ {
		put(p[i*bps:])
	}
	u, v := p[w*h*bps:], p[(w*h+cw*ch)*bps:]
	for i := 0; i < cw*ch; i++ {
		put(u[i*bps:])
		put(v[i*bps:])
	}
	return out
}

// checkIPC: a ring of 20 device slots, each filled with a window and
// published; a child process (python: cupy + torch) opens every handle,
// waits on the event, hashes the bytes and wraps them with DLPack.
func checkIPC(ctx context.Context, d *gpu.Device, c clip, python, self string) {
	w, h := c.x.Config.Width, c.x.Config.Height
	frames := []int{0, 1, 2, 3}
	p, err := c.x.Plan(frames)
	if err != nil {
		result("ipc", "fail "+err.Error())
		return
	}
	want := make([]int64, len(p.Keep))
	for i, k := range p.Keep {
		want[i] = k.PTS
	}
	size := int64(len(want) * w * h * 3)
	slotBytes := (size + 255) / 256 * 256
	r, err := gpu.NewDeviceRing(d.Memory(), gpu.RingOptions{Slots: 20, SlotBytes: slotBytes})
	if err != nil {
		result("ipc", "fail "+err.Error())
		return
	}
	defer r.Close()
	var descs []gpu.DeviceSlot
	var sums []string
	for i := 0; i < 20; i++ {
		u, err := r.Acquire(ctx)
		if err == nil {
			_, err = d.DecodeRGB(ctx, c.segment(p), want, gpu.Buffer{Ptr: u.Region.Ptr, Size: int(size)})
		}
		var desc gpu.DeviceSlot
		if err == nil {
			desc, err = r.Publish(u, 0, []int{1, len(want), h, w, 3}, pixnorm.Uint8)
		}
		var b []byte
		if err == nil {
			b, err = d.ReadBack(gpu.Buffer{Ptr: u.Region.Ptr, Size: int(size)})
		}
		if err != nil {
			result("ipc", "fail "+err.Error())
			return
		}
		descs = append(descs, desc)
		sums = append(sums, fmt.Sprintf("%x", sha256.Sum256(b)))
	}
	in, _ := json.Marshal(descs)
	defer loaderIPC(ctx, python, self, in, sums) // whatever ipc_child.py (CuPy) gives
	cctx, cancel := context.WithTimeout(ctx, ipcChildTimeout)
	defer cancel()
	cmd := exec.CommandContext(cctx, python, filepath.Join(self, "ipc_child.py"))
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		result("ipc", fmt.Sprintf("fail child: %v: %s", err, lastLine(stderr.Bytes())))
		return
	}
	var got struct {
		Hashes  []string  `json:"hashes"`
		OpenMS  []float64 `json:"open_ms"`
		Torch   string    `json:"torch"`
		Version string    `json:"versions"`
	}
	if err := json.Unmarshal(bytes.TrimSpace(lastLine(out)), &got); err != nil {
		result("ipc", "fail child output: "+firstLine(out))
		return
	}
	ok := len(got.Hashes) == len(sums)
	for i := range sums {
		ok = ok && got.Hashes[i] == sums[i]
	}
	sort.Float64s(got.OpenMS)
	pct := func(q float64) float64 {
		if len(got.OpenMS) == 0 {
			return -1
		}
		return got.OpenMS[int(q*float64(len(got.OpenMS)-1))]
	}
	verdict := "ok"
	if !ok {
		verdict = "fail data_mismatch"
	}
	result("ipc", fmt.Sprintf("%s slots=%d open_ms_p50=%.3f open_ms_p99=%.3f torch_dlpack=%s %s", verdict, len(sums), pct(0.5), pct(0.99), got.Torch, got.Version))
}

// ipcChildTimeout bounds each IPC child (a hung one would otherwise cost the
// check stage's throughput lines after it).
const ipcChildTimeout = 40 * time.Second

// loaderIPC: the same descriptors opened by the loader's own code
// (python/weft/_device.py through gpu/check/loader_child.py): same bytes,
// a torch tensor on the slot's memory (no copy), open latency.
func loaderIPC(ctx context.Context, python, self string, in []byte, sums []string) {
	ctx, cancel := context.WithTimeout(ctx, ipcChildTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, python, filepath.Join(self, "loader_child.py"))
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		result("loader_ipc", fmt.Sprintf("fail child: %v: %s", err, lastLine(stderr.Bytes())))
		return
	}
	var got struct {
		Hashes   []string  `json:"hashes"`
		OpenMS   []float64 `json:"open_ms"`
		ZeroCopy string    `json:"zero_copy"`
		Version  string    `json:"versions"`
	}
	if err := json.Unmarshal(bytes.TrimSpace(lastLine(out)), &got); err != nil {
		result("loader_ipc", "fail child output: "+firstLine(out))
		return
	}
	ok := len(got.Hashes) == len(sums)
	for i := range sums {
		ok = ok && got.Hashes[i] == sums[i]
	}
	sort.Float64s(got.OpenMS)
	p50, p99 := -1.0, -1.0
	if n := len(got.OpenMS); n > 0 {
		p50, p99 = got.OpenMS[int(0.5*float64(n-1))], got.OpenMS[int(0.99*float64(n-1))]
	}
	verdict := "ok"
	if !ok {
		verdict = "fail data_mismatch"
	}
	result("loader_ipc", fmt.Sprintf("%s slots=%d open_ms_p50=%.3f open_ms_p99=%.3f zero_copy=%s %s", verdict, len(sums), p50, p99,
		strings.ReplaceAll(got.ZeroCopy, " ", "_"), got.Version))
}

// defaultScripts is gpu/check of the checkout the binary lies in (bin/weftgpu
// or gpu/check/data/bin/weftgpu), else ./gpu/check.
func defaultScripts() string {
	exe, err := os.Executable()
	if err == nil {
		for d := filepath.Dir(exe); d != filepath.Dir(d); d = filepath.Dir(d) {
			if _, err := os.Stat(filepath.Join(d, "gpu", "check", "ipc_child.py")); err == nil {
				return filepath.Join(d, "gpu", "check")
			}
		}
	}
	return filepath.Join("gpu", "check")
}

func firstLine(b []byte) string {
	s, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	return s
}

func lastLine(b []byte) []byte {
	l := bytes.Split(bytes.TrimSpace(b), []byte("\n"))
	return l[len(l)-1]
}

// throughput: n goroutines, each with its own device buffer, decode
// windows of 8 consecutive frames at rotating positions of the clip into it
// (RGB, or normalised with norm, on the device) for dur.
func throughput(ctx context.Context, d *gpu.Device, c clip, n int, dur time.Duration, norm *pixnorm.Normalize) {
	const T = 8
	w, h := c.x.Config.Width, c.x.Config.Height
	es := 1
	var opts []gpu.DecodeOptions
	if norm != nil {
		es = norm.DType.Size()
		opts = append(opts, gpu.DecodeOptions{Normalize: norm})
	}
	before := d.Stats()
	var windows, frames atomic.Int64
	var wg sync.WaitGroup
	var firstErr atomic.Value
	memBefore := before.MemUsed
	deadline := time.Now().Add(dur)
	start := time.Now()
	for g := 0; g < n; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			buf, err := d.Alloc(T * w * h * 3 * es)
			if err != nil {
				firstErr.CompareAndSwap(nil, err)
				return
			}
			defer d.Free(buf)
			for i := g; time.Now().Before(deadline); i += n {
				s := (i * 13) % (c.x.Len() - T)
				win := make([]int, T)
				for j := range win {
					win[j] = s + j
				}
				p, err := c.x.Plan(win)
				if err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
				want := make([]int64, len(p.Keep))
				for j, k := range p.Keep {
					want[j] = k.PTS
				}
				if _, err := d.DecodeRGB(ctx, c.segment(p), want, buf, opts...); err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
				windows.Add(1)
				frames.Add(T)
			}
		}(g)
	}
	wg.Wait()
	secs := time.Since(start).Seconds()
	after := d.Stats()
	key := fmt.Sprintf("weft_%s_s%d", c.x.Config.Codec, n)
	if norm != nil {
		key = fmt.Sprintf("weft_%s_%s_s%d", c.x.Config.Codec, map[pixnorm.DType]string{pixnorm.Float16: "f16", pixnorm.BFloat16: "bf16", pixnorm.Float32: "f32"}[norm.DType], n)
	}
	if e := firstErr.Load(); e != nil {
		result(key, "error "+e.(error).Error())
		return
	}
	result(key, fmt.Sprintf("windows_per_s=%.1f frames_per_s=%.1f decoded_per_s=%.1f secs=%.1f size=%dx%d frame_copy_bytes=%d mem_used_mib=%d mem_per_session_mib=%.1f",
		float64(windows.Load())/secs, float64(frames.Load())/secs, float64(after.Decoded-before.Decoded)/secs, secs, w, h,
		after.FrameCopyBytes-before.FrameCopyBytes, after.MemUsed>>20, float64(after.MemUsed-memBefore)/float64(n)/(1<<20)))
}
