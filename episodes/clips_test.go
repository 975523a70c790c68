package episodes

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftdata/weft/errdefs"
	"github.com/weftdata/weft/internal/s3test"
	"github.com/weftdata/weft/versions"
)

// The clips of these tests, made with ffmpeg single-threaded (the
// definitions follow video/clips_test.go, which is package video's and
// unexported).

func needFFmpeg(t testing.TB) {
	t.Helper()
	for _, p := range []string{"ffmpeg", "ffprobe"} {
		if _, err := exec.LookPath(p); err != nil {
			msg := p + " not found: the episodes tests need it (apt-get install ffmpeg; .ci/run installs it)"
			if os.Getenv("CI") == "true" {
				t.Fatal(msg)
			}
			t.Skip("SKIP (loud): " + msg)
		}
	}
}

type clipDef struct {
	name string
	args []string
	cfr  bool // constant 25 fps: seconds offsets land on frames
}

const lavfiSrc = "testsrc2=size=64x64:rate=25"

func clipDefs() []clipDef {
	in := []string{"-f", "lavfi", "-i", lavfiSrc}
	x264 := []string{"-c:v", "libx264", "-profile:v", "high", "-threads", "1", "-x264-params", "threads=1"}
	j := func(parts ...[]string) []string {
		var out []string
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	return []clipDef{
		// B-frames, an edit list (media time and an offset), moov at the end.
		{name: "h264_bframes_editlist", cfr: true, args: j(in, []string{"-frames:v", "60", "-bf", "2", "-g", "12"}, x264, []string{"-output_ts_offset", "0.2"})},
		{name: "hevc_open_gop", cfr: true, args: j(in, []string{"-frames:v", "60", "-c:v", "libx265", "-threads", "1", "-x265-params", "open-gop=1:keyint=12:bframes=3:pools=1:frame-threads=1:log-level=error"})},
		{name: "av1", cfr: true, args: j(in, []string{"-frames:v", "36", "-c:v", "libaom-av1", "-cpu-used", "8", "-threads", "1", "-g", "12"})},
		{name: "h264_vfr", args: j(in, []string{"-frames:v", "50", "-vf", "settb=1/1000,setpts=(N+0.4*floor(N/3)+0.1*mod(N*N\\,5))/25/TB", "-fps_mode", "vfr", "-enc_time_base", "1/1000",
			"-video_track_timescale", "1000", "-bf", "2", "-g", "15", "-movflags", "+faststart"}, x264)},
	}
}

// clip is a rendered clip with ffprobe's view of it.
type clip struct {
	clipDef
	path   string
	sha    string
	data   []byte
	tb     [2]int64 // stream time base num/den
	pts    []int64  // frames' PTS in display order (ffprobe)
	pkts   []packet // packets in decode order (ffprobe)
	byPTS  map[int64]int
	frames int
}

type packet struct {
	pts, dts, pos, size int64
	key                 bool
}

// seconds is the frame at display position i's time in seconds.
func (c *clip) seconds(i int) float64 { return float64(c.pts[i]) * float64(c.tb[0]) / float64(c.tb[1]) }

var rendered struct {
	once  sync.Once
	dir   string
	clips []*clip
	err   error
}

func renderClips(t testing.TB) []*clip {
	t.Helper()
	needFFmpeg(t)
	rendered.once.Do(func() {
		rendered.dir, rendered.err = os.MkdirTemp("", "weft-episodes-test-")
		if rendered.err != nil {
			return
		}
		for _, d := range clipDefs() {
			c := &clip{clipDef: d, path: filepath.Join(rendered.dir, d.name+".mp4")}
			args := append([]string{"-v", "error", "-nostdin", "-y"}, d.args...)
			if b, err := exec.Command("ffmpeg", append(args, c.path)...).CombinedOutput(); err != nil {
				rendered.err = &probeError{"ffmpeg " + strings.Join(args, " ") + ": " + string(b)}
				return
			}
			if rendered.err = c.probe(); rendered.err != nil {
				return
			}
			rendered.clips = append(rendered.clips, c)
		}
	})
	require.NoError(t, rendered.err)
	return rendered.clips
}

type probeError struct{ s string }

func (e *probeError) Error() string { return e.s }

func ffprobeRows(path string, args ...string) ([][]string, error) {
	a := append([]string{"-v", "error", "-select_streams", "v:0"}, args...)
	a = append(a, "-of", "csv=p=0", path)
	b, err := exec.Command("ffprobe", a...).Output()
	if err != nil {
		return nil, &probeError{"ffprobe " + strings.Join(a, " ") + ": " + err.Error()}
	}
	var rows [][]string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			rows = append(rows, strings.Split(strings.TrimSuffix(l, ","), ","))
		}
	}
	return rows, nil
}

func (c *clip) probe() error {
	var err error
	if c.data, err = os.ReadFile(c.path); err != nil {
		return err
	}
	sum := sha256.Sum256(c.data)
	c.sha = hex.EncodeToString(sum[:])
	rows, err := ffprobeRows(c.path, "-show_entries", "stream=time_base")
	if err != nil {
		return err
	}
	tb := strings.Split(rows[0][0], "/")
	c.tb[0], _ = strconv.ParseInt(tb[0], 10, 64)
	c.tb[1], _ = strconv.ParseInt(tb[1], 10, 64)
	if rows, err = ffprobeRows(c.path, "-show_entries", "frame=pts"); err != nil {
		return err
	}
	for _, r := range rows {
		v, _ := strconv.ParseInt(r[0], 10, 64)
		c.pts = append(c.pts, v)
	}
	sort.Slice(c.pts, func(a, b int) bool { return c.pts[a] < c.pts[b] })
	if rows, err = ffprobeRows(c.path, "-show_entries", "packet=pts,dts,pos,size,flags"); err != nil {
		return err
	}
	c.byPTS = map[int64]int{}
	for _, r := range rows {
		var p packet
		p.pts, _ = strconv.ParseInt(r[0], 10, 64)
		p.dts, _ = strconv.ParseInt(r[1], 10, 64)
		p.size, _ = strconv.ParseInt(r[2], 10, 64)
		p.pos, _ = strconv.ParseInt(r[3], 10, 64)
		p.key = strings.Contains(r[4], "K")
		c.byPTS[p.pts] = len(c.pkts)
		c.pkts = append(c.pkts, p)
	}
	c.frames = len(c.pts)
	return nil
}

func TestMain(m *testing.M) {
	code := s3test.Main(m) // stops the shared MinIO of the benchmarks
	if rendered.dir != "" {
		os.RemoveAll(rendered.dir)
	}
	if benchClips.dir != "" {
		os.RemoveAll(benchClips.dir)
	}
	os.Exit(code)
}

// testMedia serves the clips (and others) by sha, counting bytes read.
type testMedia struct {
	mu     sync.Mutex
	files  map[string][]byte // sha -> bytes
	read   atomic.Int64
	opens  atomic.Int64
	closed atomic.Int64
}

func newTestMedia(clips []*clip) *testMedia {
	m := &testMedia{files: map[string][]byte{}}
	for _, c := range clips {
		m.files[c.sha] = c.data
	}
	return m
}

func (m *testMedia) add(sha string, data []byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.files[sha] = data
}

func (m *testMedia) OpenMedia(_ context.Context, p versions.ProjectName, sha string) (io.ReaderAt, int64, error) {
	m.mu.Lock()
	data, ok := m.files[sha]
	m.mu.Unlock()
	if !ok {
		return nil, 0, fmt.Errorf("media %s of project %s: %w", sha, p, errdefs.ErrNotFound)
	}
	m.opens.Add(1)
	return countingReader{data: data, n: &m.read, closed: &m.closed}, int64(len(data)), nil
}

type countingReader struct {
	data   []byte
	n      *atomic.Int64
	closed *atomic.Int64
}

// Close counts, so tests can check every opened reader is closed.
func (r countingReader) Close() error {
	r.closed.Add(1)
	return nil
}

func (r countingReader) ReadAt(p []byte, off int64) (int, error) {
	if off >= int64(len(r.data)) {
		return 0, io.EOF
	}
	n := copy(p, r.data[off:])
	r.n.Add(int64(n))
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}
