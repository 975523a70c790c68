package episodes

import (
	"errors"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/weftdata/weft/mix"
	"github.com/weftdata/weft/sampler"
	"github.com/weftdata/weft/video"
	"github.com/weftdata/weft/video/pixnorm"
)

// fakeSegment is a segment of a made-up media object: n samples of a
// few bytes each, in one read, every third a keyframe, PTS two ticks
// apart with a one-tick composition offset on every other sample.
func fakeSegment(sha string, codec video.Codec, box []byte, w, h int, n int, size []int32, norm *pixnorm.Normalize) segment {
	x := &video.Index{Timescale: 90000, Config: video.Config{Codec: codec, Box: box, Width: w, Height: h}}
	var file []byte
	for i := range n {
		unit := []byte(strings.Repeat(string(rune('a'+i%26)), 1+i%5))
		x.Samples = append(x.Samples, video.Sample{Offset: int64(len(file)), Size: int64(len(unit)), PTS: int64(2*i + i%2), CTO: int64(i % 2), Key: i%3 == 0})
		file = append(file, unit...)
	}
	return segment{
		media: mediaKey{project: "p", sha: sha},
		x:     x,
		plan:  video.Plan{Start: 1, End: n}, // not from the start: a segment is a range of samples
		size:  size,
		norm:  norm,
		reads: []*mediaRead{{off: 0, size: int64(len(file)), buf: file}},
	}
}

// fakeStep is a step as Build sees it once planned.
type fakeStep struct {
	t     int
	segOf []int32 // per row: its segment
	intro []int32 // per row: the segment it introduces, or -1
	segs  []segment
}

// pts is row i's frames' PTS: its segment's decoded samples, from the
// (i+j)th on.
func (f *fakeStep) pts(i, j int) int64 {
	sg := f.segs[f.segOf[i]]
	return sg.x.Samples[sg.plan.Start+(i+j)%(sg.plan.End-sg.plan.Start)].PTS
}

// build makes the step's window column with the writer (videoStep.Build).
func (f *fakeStep) build(t *testing.T, mem memory.Allocator) arrow.Array {
	t.Helper()
	m := &videoWindow{
		env:    mix.Env{Allocator: mem},
		comps:  []videoComp{{spec: VideoSpec{Frames: make([]int64, f.t)}}},
		fields: []arrow.Field{{Name: "cam", Type: WindowType(int32(f.t))}},
	}
	p := &videoStep{m: m, samples: make([]sampler.Sample, len(f.segOf)), planned: make(chan struct{}), segOf: f.segOf, intro: f.intro, segs: f.segs}
	close(p.planned)
	for i := range f.segOf {
		var pts []int64
		for j := range f.t {
			pts = append(pts, f.pts(i, j))
		}
		p.pts = append(p.pts, pts)
		p.pads = append(p.pads, make([]bool, f.t))
	}
	cols, err := p.Build(t.Context())
	require.NoError(t, err)
	cols[1].Release()
	return cols[0]
}

// check compares w, read from f's column, with what f wrote: every field.
func (f *fakeStep) check(t *testing.T, w *Windows) {
	t.Helper()
	require.Equal(t, f.t, w.T)
	require.Equal(t, len(f.segOf), w.Rows)
	require.Len(t, w.Segment, w.Rows*w.T)
	require.Len(t, w.PTS, w.Rows*w.T)
	for i := range f.segOf {
		for j := range f.t {
			s, pts := w.Frame(i, j)
			require.Equal(t, int(f.segOf[i]), s, "row %d frame %d: segment", i, j)
			require.Equal(t, f.pts(i, j), pts, "row %d frame %d: pts", i, j)
		}
	}
	require.Len(t, w.Segments, len(f.segs))
	for k, sg := range f.segs {
		got := w.Segments[k]
		box := sg.x.Config.Box
		if len(box) >= 8 {
			box = box[8:]
		}
		require.Equal(t, sg.media.sha, got.Media)
		require.Equal(t, sg.x.Config.Codec, got.Codec)
		require.Equal(t, box, got.Config)
		require.Equal(t, sg.x.Config.Width, got.Width)
		require.Equal(t, sg.x.Config.Height, got.Height)
		require.Equal(t, int(sg.x.Timescale), got.Timescale)
		var units [][]byte
		var dts, pts []int64
		for _, s := range sg.x.Samples[sg.plan.Start:sg.plan.End] {
			units = append(units, sg.reads[0].buf[s.Offset:s.Offset+s.Size])
			dts = append(dts, s.PTS-s.CTO)
			pts = append(pts, s.PTS)
		}
		require.Equal(t, units, got.Units, "segment %d: units", k)
		require.Equal(t, dts, got.DTS, "segment %d: dts", k)
		require.Equal(t, pts, got.UnitPTS, "segment %d: unit_pts", k)
		require.Equal(t, sg.size, got.Size, "segment %d: size", k)
		oh, ow := got.OutSize()
		if sg.size != nil {
			require.Equal(t, [2]int{int(sg.size[0]), int(sg.size[1])}, [2]int{oh, ow})
		} else {
			require.Equal(t, [2]int{sg.x.Config.Height, sg.x.Config.Width}, [2]int{oh, ow})
		}
		if sg.norm == nil {
			require.Nil(t, got.Normalize, "segment %d", k)
			continue
		}
		require.NotNil(t, got.Normalize, "segment %d", k)
		require.Equal(t, sg.norm.Mean32(), got.Normalize.Mean32())
		require.Equal(t, sg.norm.Std32(), got.Normalize.Std32())
		require.Equal(t, sg.norm.DType, got.Normalize.DType)
	}
}

func fakeSteps() (a, b *fakeStep) {
	norm := &pixnorm.Normalize{Mean: [3]float64{0.485, 0.456, 0.406}, Std: [3]float64{0.229, 0.224, 0.225}, DType: pixnorm.Float16}
	a = &fakeStep{
		t:     3,
		segOf: []int32{0, 0, 1, 2, 1},
		intro: []int32{0, -1, 1, 2, -1},
		segs: []segment{
			fakeSegment("aa", video.H264, append([]byte("\x00\x00\x00\x0cavcC"), 1, 2, 3, 4), 64, 48, 9, nil, nil),
			fakeSegment("bb", video.HEVC, append([]byte("\x00\x00\x00\x0bhvcC"), 5, 6, 7), 640, 480, 12, []int32{32, 48}, norm),
			fakeSegment("cc", video.AV1, []byte{9, 9}, 16, 16, 4, nil, &pixnorm.Normalize{Mean: [3]float64{0.5, 0.5, 0.5}, Std: [3]float64{1, 2, 3}, DType: pixnorm.BFloat16}),
		},
	}
	b = &fakeStep{
		t:     3,
		segOf: []int32{0, 1, 1},
		intro: []int32{0, 1, -1},
		segs: []segment{
			fakeSegment("dd", video.H264, append([]byte("\x00\x00\x00\x0aavcC"), 7, 7), 64, 48, 5, []int32{7, 5}, nil),
			fakeSegment("aa", video.H264, append([]byte("\x00\x00\x00\x0aavcC"), 8, 8), 64, 48, 6, nil, &pixnorm.Normalize{Mean: [3]float64{0, 0, 0}, Std: [3]float64{1, 1, 1}, DType: pixnorm.Float32}),
		},
	}
	return a, b
}

// TestReadWindowsRoundTrip: ReadWindows reads every field the writer
// writes, of a whole step and of a step that is a slice of a longer array
// (steps joined), and refuses a slice whose frames name segments that
// rows before it introduce.
func TestReadWindowsRoundTrip(t *testing.T) {
	t.Parallel()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	a, b := fakeSteps()
	colA, colB := a.build(t, mem), b.build(t, mem)
	defer colA.Release()
	defer colB.Release()
	empty := (&fakeStep{t: 3}).build(t, mem)
	defer empty.Release()
	joined, err := array.Concatenate([]arrow.Array{colA, colB}, mem)
	require.NoError(t, err)
	defer joined.Release()
	n := colA.Len()

	for _, tc := range []struct {
		name string
		arr  func() arrow.Array
		want *fakeStep
	}{
		{"whole step", func() arrow.Array { colA.Retain(); return colA }, a},
		{"another step", func() arrow.Array { colB.Retain(); return colB }, b},
		{"no rows", func() arrow.Array { empty.Retain(); return empty }, &fakeStep{t: 3}},
		{"first of two steps joined", func() arrow.Array { return array.NewSlice(joined, 0, int64(n)) }, a},
		{"second of two steps joined", func() arrow.Array { return array.NewSlice(joined, int64(n), int64(joined.Len())) }, b},
		{"no rows of joined steps", func() arrow.Array { return array.NewSlice(joined, int64(n), int64(n)) }, &fakeStep{t: 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			arr := tc.arr()
			defer arr.Release()
			w, err := ReadWindows(arr)
			require.NoError(t, err)
			tc.want.check(t, w)
		})
	}

	// Every slice either reads as the rows it holds or is refused (its
	// frames name segments that rows outside it introduce); none panics.
	all, err := ReadWindows(colA)
	require.NoError(t, err)
	for lo := range n + 1 {
		for hi := lo; hi <= n; hi++ {
			s := array.NewSlice(colA, int64(lo), int64(hi))
			w, err := ReadWindows(s)
			s.Release()
			introduced := 0
			for _, k := range a.intro[:lo] {
				if k >= 0 {
					introduced++
				}
			}
			if lo == 0 || introduced == 0 {
				require.NoError(t, err, "rows [%d, %d)", lo, hi)
				require.Equal(t, all.PTS[lo*a.t:hi*a.t], append([]int64{}, w.PTS...))
				continue
			}
			if err != nil {
				require.ErrorIs(t, err, ErrBadWindowColumn, "rows [%d, %d)", lo, hi)
				continue
			}
			// In range by chance: indexes count from the slice's segments.
			for _, s := range w.Segment {
				require.Less(t, int(s), len(w.Segments))
			}
		}
	}
	last := array.NewSlice(colA, int64(n-1), int64(n))
	defer last.Release()
	_, err = ReadWindows(last)
	require.ErrorIs(t, err, ErrBadWindowColumn, "the last row names a segment an earlier row introduces")
}

// TestReadWindowsRefuses: a column the writer would not write is refused
// with ErrBadWindowColumn (an invalid argument), never read out of range.
func TestReadWindowsRefuses(t *testing.T) {
	t.Parallel()
	const seg = `{"media": "aa", "codec": "h264", "config": "AQI=", "width": 64, "height": 48, "timescale": 90000,
		"units": ["AAE=", "AAI="], "dts": [0, 1], "unit_pts": [1, 2], "size": [32, 48],
		"mean": [0.5, 0.5, 0.5], "std": [0.25, 0.25, 0.25], "dtype": "float32"}`
	row := func(segment, pts, segs string) string {
		return `{"segment": ` + segment + `, "pts": ` + pts + `, "segments": ` + segs + `}`
	}
	good := row(`[0, 0]`, `[1, 2]`, `[`+seg+`]`)
	// edit replaces old with new in the good segment.
	edit := func(old, new string) string {
		s := strings.Replace(seg, old, new, 1)
		if s == seg {
			panic("no " + old)
		}
		return `[` + row(`[0, 0]`, `[1, 2]`, `[`+s+`]`) + `]`
	}
	// segType is SegmentType with field name's type replaced by dt (nil:
	// without it).
	segType := func(name string, dt arrow.DataType) *arrow.StructType {
		var fs []arrow.Field
		for _, f := range SegmentType.Fields() {
			if f.Name == name {
				if dt == nil {
					continue
				}
				f.Type = dt
			}
			fs = append(fs, f)
		}
		return arrow.StructOf(fs...)
	}
	windowOf := func(segs arrow.DataType) arrow.DataType {
		return arrow.StructOf(
			arrow.Field{Name: "segment", Type: arrow.FixedSizeListOf(2, arrow.PrimitiveTypes.Int32)},
			arrow.Field{Name: "pts", Type: arrow.FixedSizeListOf(2, arrow.PrimitiveTypes.Int64)},
			arrow.Field{Name: "segments", Type: arrow.ListOf(segs)},
		)
	}
	for _, tc := range []struct {
		name string
		dt   arrow.DataType
		js   string
		ok   bool
	}{
		{"well formed", WindowType(2), `[` + good + `]`, true},
		{"without size and normalisation fields", windowOf(segType("size", nil)), `[` + row(`[0, 0]`, `[1, 2]`, `[`+strings.Replace(seg, `"size": [32, 48],`, ``, 1)+`]`) + `]`, true},
		{"uint8 frames", WindowType(2), edit(`"mean": [0.5, 0.5, 0.5], "std": [0.25, 0.25, 0.25], "dtype": "float32"`, `"mean": null, "std": null, "dtype": null`), true},
		{"not a struct", arrow.PrimitiveTypes.Int32, `[1]`, false},
		{"a null window", WindowType(2), `[` + good + `, null]`, false},
		{"a null segment index", WindowType(2), `[` + row(`[0, null]`, `[1, 2]`, `[`+seg+`]`) + `]`, false},
		{"a null pts", WindowType(2), `[` + row(`[0, 0]`, `[null, 2]`, `[`+seg+`]`) + `]`, false},
		{"null segments", WindowType(2), `[` + row(`[0, 0]`, `[1, 2]`, `null`) + `]`, false},
		{"a null segment", WindowType(2), `[` + row(`[0, 0]`, `[1, 2]`, `[null]`) + `]`, false},
		{"a null codec", WindowType(2), edit(`"codec": "h264"`, `"codec": null`), false},
		{"a null config", WindowType(2), edit(`"config": "AQI="`, `"config": null`), false},
		{"a null width", WindowType(2), edit(`"width": 64`, `"width": null`), false},
		{"a null timescale", WindowType(2), edit(`"timescale": 90000`, `"timescale": null`), false},
		{"null units", WindowType(2), edit(`"units": ["AAE=", "AAI="]`, `"units": null`), false},
		{"a null unit", WindowType(2), edit(`"units": ["AAE=", "AAI="]`, `"units": ["AAE=", null]`), false},
		{"a null dts", WindowType(2), edit(`"dts": [0, 1]`, `"dts": [0, null]`), false},
		{"a null unit_pts", WindowType(2), edit(`"unit_pts": [1, 2]`, `"unit_pts": [null, 2]`), false},
		{"a null in size", WindowType(2), edit(`"size": [32, 48]`, `"size": [32, null]`), false},
		{"a null in mean", WindowType(2), edit(`"mean": [0.5, 0.5, 0.5]`, `"mean": [0.5, null, 0.5]`), false},
		{"dtype without mean", WindowType(2), edit(`"mean": [0.5, 0.5, 0.5]`, `"mean": null`), false},
		{"mean and std without dtype", WindowType(2), edit(`"dtype": "float32"`, `"dtype": null`), false},
		{"an unknown dtype", WindowType(2), edit(`"dtype": "float32"`, `"dtype": "float64"`), false},
		{"fewer dts than units", WindowType(2), edit(`"dts": [0, 1]`, `"dts": [0]`), false},
		{"more unit_pts than units", WindowType(2), edit(`"unit_pts": [1, 2]`, `"unit_pts": [1, 2, 3]`), false},
		{"a frame names no segment", WindowType(2), `[` + row(`[0, 1]`, `[1, 2]`, `[`+seg+`]`) + `]`, false},
		{"a negative segment index", WindowType(2), `[` + row(`[0, -1]`, `[1, 2]`, `[`+seg+`]`) + `]`, false},
		{"frames and no segments", WindowType(2), `[` + row(`[0, 0]`, `[1, 2]`, `[]`) + `]`, false},
		{"pts longer than segment indexes", arrow.StructOf(
			arrow.Field{Name: "segment", Type: arrow.FixedSizeListOf(1, arrow.PrimitiveTypes.Int32)},
			arrow.Field{Name: "pts", Type: arrow.FixedSizeListOf(2, arrow.PrimitiveTypes.Int64)},
			arrow.Field{Name: "segments", Type: arrow.ListOf(SegmentType)},
		), `[{"segment": [0], "pts": [1, 2], "segments": [` + seg + `]}]`, false},
		{"segment indexes of int64", arrow.StructOf(
			arrow.Field{Name: "segment", Type: arrow.FixedSizeListOf(2, arrow.PrimitiveTypes.Int64)},
			arrow.Field{Name: "pts", Type: arrow.FixedSizeListOf(2, arrow.PrimitiveTypes.Int64)},
			arrow.Field{Name: "segments", Type: arrow.ListOf(SegmentType)},
		), `[` + good + `]`, false},
		{"no segments field", arrow.StructOf(
			arrow.Field{Name: "segment", Type: arrow.FixedSizeListOf(2, arrow.PrimitiveTypes.Int32)},
			arrow.Field{Name: "pts", Type: arrow.FixedSizeListOf(2, arrow.PrimitiveTypes.Int64)},
		), `[{"segment": [0, 0], "pts": [1, 2]}]`, false},
		{"segments of int32", windowOf(arrow.PrimitiveTypes.Int32), `[` + row(`[0, 0]`, `[1, 2]`, `[]`) + `]`, false},
		{"segments without media", windowOf(segType("media", nil)), `[` + row(`[0, 0]`, `[1, 2]`, `[`+strings.Replace(seg, `"media": "aa",`, ``, 1)+`]`) + `]`, false},
		{"segments without dts", windowOf(segType("dts", nil)), `[` + row(`[0, 0]`, `[1, 2]`, `[`+strings.Replace(seg, `"dts": [0, 1],`, ``, 1)+`]`) + `]`, false},
		{"a width of int64", windowOf(segType("width", arrow.PrimitiveTypes.Int64)), `[` + good + `]`, false},
		{"a size of three", windowOf(segType("size", arrow.FixedSizeListOf(3, arrow.PrimitiveTypes.Int32))), edit(`"size": [32, 48]`, `"size": [32, 48, 1]`), false},
		{"a mean of float64", windowOf(segType("mean", arrow.FixedSizeListOf(3, arrow.PrimitiveTypes.Float64))), `[` + good + `]`, false},
		{"units of strings", windowOf(segType("units", arrow.ListOf(arrow.BinaryTypes.String))), edit(`"units": ["AAE=", "AAI="]`, `"units": ["a", "b"]`), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			arr, _, err := array.FromJSON(mem, tc.dt, strings.NewReader(tc.js))
			require.NoError(t, err)
			defer arr.Release()
			w, err := ReadWindows(arr)
			if tc.ok {
				require.NoError(t, err)
				require.Len(t, w.Segments, 1)
				return
			}
			require.Error(t, err)
			require.True(t, errors.Is(err, ErrBadWindowColumn), "%v", err)
		})
	}
}
