package video

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftdata/weft/errdefs"
)

// boxAt finds the box at path (e.g. moov/trak/mdia/mdhd, the first of each
// name; trak is the first video trak in the test clips) in an MP4 and
// returns the offsets of the path's boxes, outermost first.
func boxAt(t *testing.T, file []byte, path ...string) []int {
	t.Helper()
	var offs []int
	lo, hi := 0, len(file)
	for depth, name := range path {
		found := false
		for off := lo; off+8 <= hi; {
			sz := int(binary.BigEndian.Uint32(file[off:]))
			require.GreaterOrEqual(t, sz, 8, "box at %d", off)
			if string(file[off+4:off+8]) == name {
				offs = append(offs, off)
				lo, hi = off+8, off+sz
				switch name {
				case "stsd":
					lo += 8 // version, flags, entry count
				case "avc1", "hvc1", "hev1", "av01":
					lo += 78
				}
				found = true
				break
			}
			off += sz
		}
		require.True(t, found, "no %v", path[:depth+1])
	}
	return offs
}

// replaceBox splices box in place of the box at path and fixes the sizes
// of its ancestors.
func replaceBox(t *testing.T, file []byte, box []byte, path ...string) []byte {
	t.Helper()
	offs := boxAt(t, file, path...)
	at := offs[len(offs)-1]
	old := int(binary.BigEndian.Uint32(file[at:]))
	delta := len(box) - old
	out := append(append(append([]byte(nil), file[:at]...), box...), file[at+old:]...)
	for _, o := range offs[:len(offs)-1] {
		binary.BigEndian.PutUint32(out[o:], uint32(int(binary.BigEndian.Uint32(out[o:]))+delta))
	}
	return out
}

func fullBox(typ string, version byte, body ...[]byte) []byte {
	b := []byte{0, 0, 0, 0}
	b = append(b, typ...)
	b = append(b, version, 0, 0, 0)
	for _, p := range body {
		b = append(b, p...)
	}
	binary.BigEndian.PutUint32(b, uint32(len(b)))
	return b
}

func u32(vs ...uint32) []byte {
	var b []byte
	for _, v := range vs {
		b = binary.BigEndian.AppendUint32(b, v)
	}
	return b
}

func u64(vs ...uint64) []byte {
	var b []byte
	for _, v := range vs {
		b = binary.BigEndian.AppendUint64(b, v)
	}
	return b
}

// hugeReader serves data and then zeros up to size, like a sparse file.
type hugeReader struct {
	data []byte
	size int64
}

func (h hugeReader) ReadAt(p []byte, off int64) (int, error) {
	if off >= h.size {
		return 0, io.EOF
	}
	n := 0
	if off < int64(len(h.data)) {
		n = copy(p, h.data[off:])
	}
	for i := n; i < len(p) && off+int64(i) < h.size; i++ {
		p[i] = 0
		n++
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// TestReadHostile: sample tables that lie, each of which once made Read
// allocate gigabytes, loop for long, overflow, or index bytes outside the
// file. Each must fail with ErrMalformed, quickly and without panicking.
func TestReadHostile(t *testing.T) {
	needFFmpeg(t)
	dir := t.TempDir()
	var fast, tail []byte
	for _, c := range fuzzClips() {
		switch c.name {
		case "fz_h264_fast":
			b, err := os.ReadFile(makeClip(t, dir, c))
			require.NoError(t, err)
			fast = b
		case "fz_h264":
			b, err := os.ReadFile(makeClip(t, dir, c))
			require.NoError(t, err)
			tail = b
		}
	}
	stbl := []string{"moov", "trak", "mdia", "minf", "stbl"}
	at := func(box string) []string { return append(append([]string(nil), stbl...), box) }
	nSamples := func(file []byte) uint32 {
		o := boxAt(t, file, at("stsz")...)
		return binary.BigEndian.Uint32(file[o[len(o)-1]+16:])
	}
	// patch returns a copy of file with the uint32 at offset off into the
	// box at path set to v.
	patch := func(file []byte, off int, v uint32, path ...string) []byte {
		out := bytes.Clone(file)
		o := boxAt(t, out, path...)
		binary.BigEndian.PutUint32(out[o[len(o)-1]+off:], v)
		return out
	}

	for _, tc := range []struct {
		name string
		data []byte
		size int64 // 0: len(data)
		msg  string
	}{
		// 4 billion samples of one byte in a 1 TiB file: the index alone
		// would need 200 GiB.
		{"uniform stsz claims billions", replaceBox(t, fast, fullBox("stsz", 0, u32(1, 1<<32-1)), at("stsz")...), 1 << 40, "stsz claims"},
		// One sample per chunk, the first chunk at 2^63-1: its
		// offset+size wraps below the file size.
		{"co64 offset wraps", func() []byte {
			f := replaceBox(t, tail, fullBox("stsc", 0, u32(1, 1, 1, 1)), at("stsc")...)
			offs := []uint64{1<<63 - 1}
			for range nSamples(f) - 1 {
				offs = append(offs, 48)
			}
			return replaceBox(t, f, fullBox("co64", 0, u32(uint32(len(offs))), u64(offs...)), at("stco")...)
		}(), 0, "past the end of the file"},
		// A chunk past the end of the file.
		{"stco past the end", patch(tail, 16, 1<<31, at("stco")...), 0, "past the end of the file"},
		// stsc entries naming chunks 1..L, L+1.., 1..L, L+1.., …: each
		// pair walked all L chunks again (quadratic in the moov's size).
		{"stsc walks the chunks again and again", func() []byte {
			const chunks, pairs = 20000, 20000
			f := replaceBox(t, tail, fullBox("stco", 0, u32(chunks), bytes.Repeat(u32(48), chunks)), at("stco")...)
			ents := u32(2 * pairs)
			for range pairs {
				ents = append(ents, u32(1, 1, 1, chunks+1, 1, 1)...)
			}
			return replaceBox(t, f, fullBox("stsc", 0, ents), at("stsc")...)
		}(), 0, "stsc entry 1 names chunks [20001, 0]"},
		// Timescale 1 and a huge stts delta: times past Duration's range.
		{"stts overflows time", patch(patch(tail, 20, 1, "moov", "trak", "mdia", "mdhd"), 20, 1<<32-1, at("stts")...), 0, "stts runs past"},
		// An empty edit of 2^64-1 movie ticks.
		{"empty edit overflows", replaceBox(t, tail, fullBox("elst", 1, u32(2), u64(1<<64-1), u64(1<<64-1), u32(1<<16), u64(100), u64(0), u32(1<<16)), "moov", "trak", "edts", "elst"), 0, "empty edit"},
		// A media time of -2^63.
		{"edit media time overflows", replaceBox(t, tail, fullBox("elst", 1, u32(1), u64(100), u64(1<<63), u32(1<<16)), "moov", "trak", "edts", "elst"), 0, "media time"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			size := tc.size
			if size == 0 {
				size = int64(len(tc.data))
			}
			x, err := Read(context.Background(), hugeReader{tc.data, size}, size)
			var pe *panicError
			require.False(t, errors.As(err, &pe), "panic: %v", err)
			require.ErrorIs(t, err, ErrMalformed, "index of %d samples", func() int {
				if x == nil {
					return -1
				}
				return x.Len()
			}())
			require.ErrorIs(t, err, errdefs.ErrInvalidArgument)
			require.ErrorContains(t, err, tc.msg)
		})
	}

	t.Run("recovered panic", func(t *testing.T) {
		_, err := Read(context.Background(), panicReader{}, 100)
		require.ErrorIs(t, err, ErrMalformed)
		require.ErrorIs(t, err, errdefs.ErrInvalidArgument)
		require.ErrorContains(t, err, "internal error")
		require.ErrorContains(t, err, "reader exploded")
	})
}

// panicReader stands in for a bug deep in Read.
type panicReader struct{}

func (panicReader) ReadAt([]byte, int64) (int, error) { panic("reader exploded") }

// synthetic builds an index of n samples in decode order with keyframes
// every gop samples, each non-key sample presenting before its keyframe
// (all open-GOP leading frames, the worst case for planning).
func synthetic(n, gop int) *Index {
	x := &Index{Timescale: 1000, Samples: make([]Sample, n), display: make([]int, n), rank: make([]int, n)}
	for d := range x.Samples {
		s := &x.Samples[d]
		s.Offset, s.Size = int64(d), 1
		base := d - d%gop
		if d == base {
			s.Key, s.PTS = true, int64(base+gop-1)
		} else {
			s.Leading, s.PTS = true, int64(base+d%gop-1)
		}
	}
	for d := range x.display {
		x.display[d] = d
	}
	sort.Slice(x.display, func(a, b int) bool { return x.Samples[x.display[a]].PTS < x.Samples[x.display[b]].PTS })
	for p, d := range x.display {
		x.rank[d] = p
	}
	return x
}

// TestPlanLongGOP: a GOP over MaxPlanSamples is refused, not allocated
// for; plans within one agree with the naive planner.
func TestPlanLongGOP(t *testing.T) {
	x := synthetic(MaxPlanSamples+10, MaxPlanSamples+10)
	_, err := x.Plan([]int{x.DisplayIndex(x.Len() - 1)})
	require.ErrorIs(t, err, ErrUnsupportedCodec)
	require.ErrorIs(t, err, errdefs.ErrInvalidArgument)
	require.ErrorContains(t, err, "re-encode with more keyframes")
	p, err := x.Plan([]int{0, 5})
	require.NoError(t, err)
	require.Equal(t, naivePlan(x, []int{0, 5}), p)

	x = synthetic(4000, 100)
	for _, w := range [][]int{{0}, {150, 3000}, {3999, 1, 2500}, {99, 100, 101}} {
		p, err := x.Plan(w)
		require.NoError(t, err)
		require.Equal(t, naivePlan(x, w), p, "%v", w)
	}
}

// TestPlanWindowsLongChain: a chain of overlapping windows whose union is
// over MaxPlanSamples is planned in several decodes rather than refused.
func TestPlanWindowsLongChain(t *testing.T) {
	const gop = MaxPlanSamples / 4
	x := synthetic(5*gop, gop)
	// The first leading frame of GOPs 1 to 4 decodes from the GOP before:
	// window k spans [(k-1)·gop, k·gop+2), overlapping window k+1. Windows
	// 1-3 merge into [0, 3·gop+2); adding 4 would pass the limit.
	var ws [][]int
	for k := 1; k <= 4; k++ {
		ws = append(ws, []int{x.DisplayIndex(k*gop + 1)})
	}
	b, err := x.PlanWindows(ws)
	require.NoError(t, err)
	require.Equal(t, 2, len(b.Decodes))
	require.Equal(t, []int{0, 3*gop + 2}, []int{b.Decodes[0].Start, b.Decodes[0].End})
	for w, refs := range b.Windows {
		require.Equal(t, ws[w][0], b.Decodes[refs[0].Decode].Output[refs[0].Pos])
	}
	for _, p := range b.Decodes {
		require.LessOrEqual(t, p.End-p.Start, MaxPlanSamples)
	}
}

// TestCheckNALArrays: configuration boxes whose NAL arrays overrun them
// are refused before mp4ff loops over them.
func TestCheckNALArrays(t *testing.T) {
	box := func(typ string, body ...byte) []byte {
		return append(append(u32(uint32(8+len(body))), typ...), body...)
	}
	hvcc := func(arrays ...byte) []byte {
		return box("hvcC", append(append([]byte{1}, make([]byte, 21)...), arrays...)...)
	}
	moov := func(children ...[]byte) []byte { return box("moov", bytes.Join(children, nil)...) }
	for _, tc := range []struct {
		name string
		moov []byte
		msg  string // "" = accepted
	}{
		{"fits", moov(hvcc(1, 0x20, 0, 1, 0, 2, 0xaa, 0xbb)), ""},
		{"no arrays", moov(hvcc(0)), ""},
		{"65535 NAL units in 3 bytes", moov(hvcc(1, 0x20, 0xff, 0xff)), "hvcC box at moov offset 8 overrun"},
		{"NAL longer than the box", moov(hvcc(1, 0x20, 0, 1, 0x10, 0)), "overrun"},
		{"255 arrays", moov(hvcc(255, 0x20, 0, 0)), "overrun"},
		{"lhvC", moov(box("lhvC", 1, 0, 0, 0, 0, 1, 0x20, 0xff, 0xff)), "lhvC box"},
		{"not version 1", moov(box("hvcC", append([]byte{0}, make([]byte, 21)...)...)), ""},
		{"vvcC boxes", moov(box("vvcC"), box("vvcC"), box("vvcC"), box("vvcC"), box("vvcC")), "more than 4 vvcC"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkNALArrays(tc.moov)
			if tc.msg == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ErrMalformed)
			require.ErrorContains(t, err, tc.msg)
		})
	}
}
