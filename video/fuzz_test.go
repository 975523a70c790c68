package video

import (
	"bytes"
	"context"
	"errors"
	"hash/fnv"
	"math"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftdata/weft/errdefs"
)

// fuzzClips are small clips for the fuzz seed corpus: every codec, B-frames,
// open GOPs, edit lists, faststart and an interleaved audio track, kept
// tiny so that mutations are cheap.
func fuzzClips() []clip {
	in := []string{"-f", "lavfi", "-i", "testsrc2=size=32x32:rate=10"}
	return []clip{
		{name: "fz_h264", args: cat(in, []string{"-frames:v", "8", "-bf", "2", "-g", "4"}, x264, []string{"-output_ts_offset", "0.2"})},
		{name: "fz_h264_fast", args: cat(in, []string{"-frames:v", "6", "-bf", "1", "-g", "3"}, x264, []string{"-movflags", "+faststart"})},
		{name: "fz_hevc", args: cat(in, []string{"-frames:v", "8"}, x265("open-gop=1:keyint=4:bframes=2"))},
		{name: "fz_av1", args: cat(in, []string{"-frames:v", "4", "-c:v", "libaom-av1", "-cpu-used", "8", "-threads", "1", "-g", "2"})},
		{name: "fz_h264_audio", args: cat(in, []string{"-f", "lavfi", "-i", "sine=frequency=440:sample_rate=8000", "-frames:v", "6", "-g", "3"}, x264,
			[]string{"-c:a", "aac", "-shortest"})},
		{name: "fz_h264_co64", args: cat(in, []string{"-frames:v", "5", "-g", "2"}, x264, []string{"-movflags", "+faststart", "-use_editlist", "0"})},
	}
}

// FuzzRead feeds hostile bytes to Read and, when it indexes them, to the
// Index's methods. Read must never panic, never allocate far beyond its
// input, fail only with InvalidArgument kinds, and every index it returns
// must be self-consistent and point inside the file; plans on it must stay
// inside the file too.
//
// The seed corpus is the clips above (rendered with ffmpeg when present;
// skipped loudly otherwise), their truncations and byte flips, plus the
// checked-in inputs under testdata/fuzz/FuzzRead (past crashers).
func FuzzRead(f *testing.F) {
	if !haveFFmpeg() {
		msg := "ffmpeg not found: FuzzRead runs on its checked-in corpus only (apt-get install ffmpeg)"
		if os.Getenv("CI") == "true" {
			f.Fatal(msg)
		}
		f.Log("SKIP (loud): " + msg)
	} else {
		dir := f.TempDir()
		for _, c := range fuzzClips() {
			b, err := os.ReadFile(makeClip(f, dir, c))
			if err != nil {
				f.Fatal(err)
			}
			f.Add(b)
			rng := rand.New(rand.NewSource(int64(len(b))))
			for _, cut := range []int{len(b) / 2, len(b) - 1, len(b) - 37} {
				if cut > 0 {
					f.Add(bytes.Clone(b[:cut]))
				}
			}
			for range 4 {
				m := bytes.Clone(b)
				// Flip bytes in the moov, where the sample tables are.
				lo := max(bytes.Index(m, []byte("moov"))-4, 0)
				for range 3 {
					m[lo+rng.Intn(len(m)-lo)] ^= byte(1 + rng.Intn(255))
				}
				f.Add(m)
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkRead(t, data)
	})
}

func haveFFmpeg() bool {
	for _, p := range []string{"ffmpeg", "ffprobe"} {
		if _, err := exec.LookPath(p); err != nil {
			return false
		}
	}
	return true
}

// allocSlack and allocPerByte bound what Read may allocate for an input:
// the moov is copied a few times while it decodes, and the index holds
// about 64 bytes per sample, each described by at least one moov byte.
const (
	allocSlack   = 4 << 20
	allocPerByte = 128
)

func checkRead(t *testing.T, data []byte) {
	size := int64(len(data))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	x, err := Read(context.Background(), bytes.NewReader(data), size)
	runtime.ReadMemStats(&after)
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > allocSlack+allocPerByte*uint64(size) {
		t.Fatalf("Read of %d bytes allocated %d bytes (limit %d)", size, alloc, allocSlack+allocPerByte*uint64(size))
	}
	if err != nil {
		var pe *panicError
		if errors.As(err, &pe) {
			t.Fatalf("Read panicked: %v\n%s", pe.value, pe.stack)
		}
		if !errors.Is(err, errdefs.ErrInvalidArgument) {
			t.Fatalf("Read error is not InvalidArgument: %v", err)
		}
		if x != nil {
			t.Fatalf("Read returned an index and an error: %v", err)
		}
		return
	}
	checkIndex(t, x, size)
	h := fnv.New64a()
	h.Write(data)
	checkPlans(t, x, size, rand.New(rand.NewSource(int64(h.Sum64()))))
}

// checkIndex checks an index's invariants against the file's size.
func checkIndex(t *testing.T, x *Index, size int64) {
	n := x.Len()
	if n == 0 || len(x.display) != n || len(x.rank) != n {
		t.Fatalf("index of %d samples has %d display and %d rank entries", n, len(x.display), len(x.rank))
	}
	if x.Timescale == 0 {
		t.Fatal("timescale 0")
	}
	if len(x.Config.Box) < 8 || x.Config.CodecString == "" {
		t.Fatalf("config box of %d bytes, codec string %q", len(x.Config.Box), x.Config.CodecString)
	}
	if !x.Samples[0].Key {
		t.Fatal("first sample is not a keyframe")
	}
	shift := x.Samples[0].PTS - x.Samples[0].DTS - x.Samples[0].CTO
	seen := make([]bool, n)
	for d, s := range x.Samples {
		if s.Offset < 0 || s.Size < 0 || s.Offset > size || s.Size > size-s.Offset {
			t.Fatalf("sample %d at [%d, +%d) is outside the %d-byte file", d, s.Offset, s.Size, size)
		}
		if d > 0 && s.DTS < x.Samples[d-1].DTS {
			t.Fatalf("sample %d DTS %d before sample %d DTS %d", d, s.DTS, d-1, x.Samples[d-1].DTS)
		}
		if s.PTS-s.DTS-s.CTO != shift {
			t.Fatalf("sample %d: PTS %d != DTS %d + CTO %d + shift %d", d, s.PTS, s.DTS, s.CTO, shift)
		}
		p := x.DisplayIndex(d)
		if p < 0 || p >= n || x.DecodeIndex(p) != d || seen[p] {
			t.Fatalf("sample %d: display position %d is not a permutation", d, p)
		}
		seen[p] = true
		if s.Leading && s.Key {
			t.Fatalf("sample %d is both key and leading", d)
		}
	}
	for p := 1; p < n; p++ {
		if x.Frame(p).PTS <= x.Frame(p-1).PTS || x.FrameTime(p) < x.FrameTime(p-1) {
			t.Fatalf("display %d PTS %d (%v) not after display %d PTS %d (%v)", p, x.Frame(p).PTS, x.FrameTime(p), p-1, x.Frame(p-1).PTS, x.FrameTime(p-1))
		}
	}
}

// checkPlans plans random windows and resolves random times; nothing may
// panic and every range must lie inside the file.
func checkPlans(t *testing.T, x *Index, size int64, rng *rand.Rand) {
	n := x.Len()
	var ws [][]int
	for range 4 {
		w := make([]int, 1+rng.Intn(4))
		a := rng.Intn(n)
		for i := range w {
			w[i] = min(a+rng.Intn(3*(i+1)), n-1)
		}
		ws = append(ws, w)
		p, err := x.Plan(w)
		if err != nil {
			t.Fatalf("Plan(%v): %v", w, err)
		}
		checkPlanRanges(t, x, size, w, p)
		if want := naivePlan(x, w); !reflect.DeepEqual(p, want) {
			t.Fatalf("Plan(%v) = %+v, the naive plan is %+v", w, p, want)
		}
	}
	b, err := x.PlanWindows(ws)
	if err != nil {
		t.Fatalf("PlanWindows(%v): %v", ws, err)
	}
	for _, p := range b.Decodes {
		checkPlanRanges(t, x, size, nil, p)
	}
	for w, refs := range b.Windows {
		for j, r := range refs {
			if r.Decode < 0 || r.Decode >= len(b.Decodes) || r.Pos < 0 || r.Pos >= len(b.Decodes[r.Decode].Output) || b.Decodes[r.Decode].Output[r.Pos] != ws[w][j] {
				t.Fatalf("window %d frame %d: ref %+v does not locate frame %d", w, j, r, ws[w][j])
			}
		}
	}
	for _, bad := range [][]int{nil, {-1}, {n}, {math.MaxInt}, {math.MinInt}} {
		if _, err := x.Plan(bad); !errors.Is(err, ErrFrameRange) {
			t.Fatalf("Plan(%v): %v, want ErrFrameRange", bad, err)
		}
	}
	for range 4 {
		f := rng.Intn(n)
		got, err := x.FrameAt(x.FrameTime(f), 0)
		if err != nil || got != f {
			t.Fatalf("FrameAt(FrameTime(%d) = %v) = %d, %v", f, x.FrameTime(f), got, err)
		}
	}
	for _, at := range []time.Duration{0, -1, math.MinInt64, math.MaxInt64, time.Duration(rng.Int63()), -time.Duration(rng.Int63())} {
		for _, tol := range []time.Duration{0, time.Millisecond, -1, math.MaxInt64} {
			got, err := x.FrameAt(at, tol)
			if err != nil {
				if !errors.Is(err, ErrNoFrame) {
					t.Fatalf("FrameAt(%v, %v): %v", at, tol, err)
				}
				continue
			}
			if got < 0 || got >= n {
				t.Fatalf("FrameAt(%v, %v) = %d of %d", at, tol, got, n)
			}
		}
	}
}

// naivePlan is Plan as first written: a walk back to a keyframe for every
// frame and sample. Plan must agree with it.
func naivePlan(x *Index, frames []int) Plan {
	start, end := x.Len(), 0
	for _, f := range frames {
		d := x.display[f]
		start = min(start, x.startFor(d))
		end = max(end, d+1)
	}
	p := Plan{Start: start, End: end}
	for d := start; d < end; d++ {
		s := x.Samples[d]
		if n := len(p.Ranges); n > 0 && p.Ranges[n-1].Offset+p.Ranges[n-1].Size == s.Offset {
			p.Ranges[n-1].Size += s.Size
			p.Ranges[n-1].End = d + 1
		} else {
			p.Ranges = append(p.Ranges, ByteRange{Offset: s.Offset, Size: s.Size, First: d, End: d + 1})
		}
		if s.Leading && x.startFor(d) < start {
			continue
		}
		p.Output = append(p.Output, x.rank[d])
	}
	sort.Ints(p.Output)
	pos := make(map[int]int, len(p.Output))
	for i, f := range p.Output {
		pos[f] = i
	}
	for _, f := range frames {
		p.Keep = append(p.Keep, Keep{Frame: f, PTS: x.Frame(f).PTS, Pos: pos[f]})
	}
	return p
}

func checkPlanRanges(t *testing.T, x *Index, size int64, frames []int, p Plan) {
	if p.Start < 0 || p.End > x.Len() || p.Start >= p.End {
		t.Fatalf("plan range [%d, %d) of %d", p.Start, p.End, x.Len())
	}
	next := p.Start
	for _, r := range p.Ranges {
		if r.Offset < 0 || r.Size < 0 || r.Offset > size || r.Size > size-r.Offset {
			t.Fatalf("plan range %+v outside the %d-byte file", r, size)
		}
		if r.First != next || r.End <= r.First {
			t.Fatalf("plan ranges do not tile [%d, %d): %+v", p.Start, p.End, p.Ranges)
		}
		next = r.End
	}
	if next != p.End {
		t.Fatalf("plan ranges end at %d, not %d", next, p.End)
	}
	for i, k := range p.Keep {
		if k.Pos < 0 || k.Pos >= len(p.Output) || p.Output[k.Pos] != k.Frame {
			t.Fatalf("keep %+v does not name an output frame", k)
		}
		if frames != nil && frames[i] != k.Frame {
			t.Fatalf("keep %d is frame %d, asked %d", i, k.Frame, frames[i])
		}
	}
}

// TestFuzzSeeds: the checked-in seeds (tiny ffmpeg clips, so that fuzzing
// without ffmpeg starts from files that index) do index, and pass the
// fuzz properties.
func TestFuzzSeeds(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join("testdata", "fuzz", "FuzzRead", "seed_*"))
	require.NoError(t, err)
	require.NotEmpty(t, paths)
	for _, p := range paths {
		t.Run(filepath.Base(p), func(t *testing.T) {
			b, err := os.ReadFile(p)
			require.NoError(t, err)
			s := strings.TrimSpace(strings.TrimPrefix(string(b), "go test fuzz v1\n"))
			s = strings.TrimSuffix(strings.TrimPrefix(s, "[]byte("), ")")
			data, err := strconv.Unquote(s)
			require.NoError(t, err)
			x, err := Read(context.Background(), strings.NewReader(data), int64(len(data)))
			require.NoError(t, err)
			require.Greater(t, x.Len(), 1)
			checkRead(t, []byte(data))
		})
	}
}
