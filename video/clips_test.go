package video

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// needFFmpeg skips loudly without ffmpeg/ffprobe, and fails under CI=true.
func needFFmpeg(t testing.TB) {
	t.Helper()
	for _, p := range []string{"ffmpeg", "ffprobe"} {
		if _, err := exec.LookPath(p); err != nil {
			msg := p + " not found: the video tests need it (apt-get install ffmpeg; .ci/run installs it)"
			if os.Getenv("CI") == "true" {
				t.Fatal(msg)
			}
			t.Skip("SKIP (loud): " + msg)
		}
	}
}

// clip is one test video made with ffmpeg, single-threaded so it is
// reproducible.
type clip struct {
	name string
	args []string // ffmpeg arguments between the inputs' start and the output
	// expectations
	codec     Codec
	bitDepth  int
	editList  bool // the file's elst shifts presentation times (media time or empty edit)
	leading   bool // open-GOP leading frames exist
	audio     bool
	moovFirst bool // +faststart: moov before mdat
	vfr       bool
	demuxer   string // ffmpeg demuxer for the elementary stream
}

const src = "testsrc2=size=64x64:rate=25"

var x264 = []string{"-c:v", "libx264", "-profile:v", "high", "-threads", "1", "-x264-params", "threads=1"}

func x265(params string) []string {
	return []string{"-c:v", "libx265", "-threads", "1", "-x265-params", params + ":pools=1:frame-threads=1:log-level=error"}
}

func cat(parts ...[]string) []string {
	var out []string
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func clips() []clip {
	in := []string{"-f", "lavfi", "-i", src}
	return []clip{
		{name: "h264_bframes_editlist", codec: H264, bitDepth: 8, editList: true, demuxer: "h264",
			args: cat(in, []string{"-frames:v", "60", "-bf", "2", "-g", "12"}, x264, []string{"-output_ts_offset", "0.2"})},
		{name: "h264_faststart", moovFirst: true, codec: H264, bitDepth: 8, editList: true, demuxer: "h264",
			args: cat(in, []string{"-frames:v", "40", "-bf", "3", "-g", "10"}, x264, []string{"-movflags", "+faststart"})},
		{name: "hevc_open_gop", codec: HEVC, bitDepth: 8, editList: true, leading: true, demuxer: "hevc",
			args: cat(in, []string{"-frames:v", "60"}, x265("open-gop=1:keyint=12:bframes=3"))},
		{name: "hevc_10bit", codec: HEVC, bitDepth: 10, editList: true, leading: true, demuxer: "hevc",
			args: cat(in, []string{"-frames:v", "40", "-pix_fmt", "yuv420p10le"}, x265("open-gop=1:keyint=12:bframes=3"))},
		{name: "av1", codec: AV1, bitDepth: 8, demuxer: "obu",
			args: cat(in, []string{"-frames:v", "36", "-c:v", "libaom-av1", "-cpu-used", "8", "-threads", "1", "-g", "12"})},
		{name: "av1_10bit", codec: AV1, bitDepth: 10, demuxer: "obu",
			args: cat(in, []string{"-frames:v", "24", "-pix_fmt", "yuv420p10le", "-c:v", "libaom-av1", "-cpu-used", "8", "-threads", "1", "-g", "12"})},
		{name: "h264_vfr", codec: H264, bitDepth: 8, editList: true, vfr: true, demuxer: "h264",
			// irregular gaps: frame n at (n + 0.4*floor(n/3) + 0.1*(n*n mod 5)) / 25 s
			args: cat(in, []string{"-frames:v", "50", "-vf", "settb=1/1000,setpts=(N+0.4*floor(N/3)+0.1*mod(N*N\\,5))/25/TB", "-fps_mode", "vfr", "-enc_time_base", "1/1000",
				"-video_track_timescale", "1000", "-bf", "2", "-g", "15"}, x264)},
		{name: "h264_with_audio", codec: H264, bitDepth: 8, editList: true, audio: true, demuxer: "h264",
			args: cat(in, []string{"-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000", "-frames:v", "50", "-bf", "2", "-g", "25"}, x264,
				[]string{"-c:a", "aac", "-shortest"})},
	}
}

// makeClip renders c into dir and returns its path.
func makeClip(t testing.TB, dir string, c clip) string {
	t.Helper()
	out := filepath.Join(dir, c.name+".mp4")
	args := append([]string{"-v", "error", "-nostdin", "-y"}, c.args...)
	args = append(args, out)
	b, err := exec.Command("ffmpeg", args...).CombinedOutput()
	require.NoError(t, err, "ffmpeg %s: %s", strings.Join(args, " "), b)
	return out
}

type probePacket struct {
	pts, dts, pos, size int64
	key                 bool
}

func ffprobe(t *testing.T, path string, args ...string) [][]string {
	t.Helper()
	a := append([]string{"-v", "error", "-select_streams", "v:0"}, args...)
	a = append(a, "-of", "csv=p=0", path)
	b, err := exec.Command("ffprobe", a...).Output()
	require.NoError(t, err, "ffprobe %v", a)
	var rows [][]string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			rows = append(rows, strings.Split(strings.TrimSuffix(l, ","), ","))
		}
	}
	return rows
}

func atoi(t *testing.T, s string) int64 {
	t.Helper()
	v, err := strconv.ParseInt(s, 10, 64)
	require.NoError(t, err, "%q", s)
	return v
}

func probePackets(t *testing.T, path string) []probePacket {
	var out []probePacket
	for _, r := range ffprobe(t, path, "-show_entries", "packet=pts,dts,pos,size,flags") {
		require.Len(t, r, 5, "%v", r)
		out = append(out, probePacket{pts: atoi(t, r[0]), dts: atoi(t, r[1]), size: atoi(t, r[2]), pos: atoi(t, r[3]), key: strings.Contains(r[4], "K")})
	}
	return out
}

func probeFramePTS(t *testing.T, path string) []int64 {
	var out []int64
	for _, r := range ffprobe(t, path, "-show_entries", "frame=pts") {
		out = append(out, atoi(t, r[0]))
	}
	return out
}

// framemd5 decodes an input with ffmpeg and returns one md5 per output frame.
func framemd5(t *testing.T, inArgs ...string) []string {
	t.Helper()
	args := append([]string{"-v", "error", "-nostdin", "-threads", "1"}, inArgs...)
	args = append(args, "-map", "0:v:0", "-fps_mode", "passthrough", "-f", "framemd5", "-")
	b, err := exec.Command("ffmpeg", args...).CombinedOutput()
	require.NoError(t, err, "ffmpeg %v: %s", args, b)
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		f := strings.Split(l, ",")
		out = append(out, strings.TrimSpace(f[len(f)-1]))
	}
	return out
}

// elementaryStream writes the plan's samples, read from the file at the
// planned byte ranges only, as an Annex-B (H.264, HEVC) or low-overhead
// OBU (AV1) stream ffmpeg can decode on its own.
func elementaryStream(t *testing.T, x *Index, f *os.File, p Plan) []byte {
	t.Helper()
	var data []byte // the planned bytes, concatenated
	for _, r := range p.Ranges {
		b := make([]byte, r.Size)
		_, err := f.ReadAt(b, r.Offset)
		require.NoError(t, err)
		data = append(data, b...)
	}
	var es bytes.Buffer
	sc := []byte{0, 0, 0, 1}
	off := int64(0)
	for d := p.Start; d < p.End; d++ {
		s := data[off : off+x.Samples[d].Size]
		off += x.Samples[d].Size
		switch x.Config.Codec {
		case AV1:
			es.Write([]byte{0x12, 0x00}) // temporal delimiter
			if d == p.Start {
				for _, ps := range x.Config.ParameterSets {
					es.Write(ps)
				}
			}
			es.Write(s)
		default:
			if d == p.Start {
				for _, ps := range x.Config.ParameterSets {
					es.Write(sc)
					es.Write(ps)
				}
			}
			n := x.Config.NALLengthSize
			for len(s) > 0 {
				require.GreaterOrEqual(t, len(s), n)
				var l int
				for i := 0; i < n; i++ {
					l = l<<8 | int(s[i])
				}
				require.GreaterOrEqual(t, len(s)-n, l, "sample %d NAL length", d)
				es.Write(sc)
				es.Write(s[n : n+l])
				s = s[n+l:]
			}
		}
	}
	require.Equal(t, int64(len(data)), off)
	return es.Bytes()
}

func runFFmpeg(args ...string) ([]byte, error) {
	a := append([]string{"-v", "error", "-nostdin", "-y", "-threads", "1"}, args...)
	return exec.Command("ffmpeg", a...).CombinedOutput()
}
