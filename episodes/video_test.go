package episodes

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/stretchr/testify/require"

	"github.com/weftdata/weft/mix"
)

// sampleOut is one sample of a step as a client sees it.
type sampleOut struct {
	comp  int32
	row   int64
	pts   []int64 // video window
	pad   []bool
	seg   int32
	state []int64 // rows window, when asked
	spad  []bool
}

// key is what must not depend on the world size or the resume point.
func (s sampleOut) key() string {
	return fmt.Sprint(s.comp, s.row, s.pts, s.pad, s.state, s.spad)
}

type segOut struct {
	media, codec string
	config       []byte
	w, h, ts     int32
	units        [][]byte
	dts, upts    []int64
	size         []int32
	mean, std    []float32 // the normalisation, nil for uint8 frames
	dtype        string
}

func col(t testing.TB, rec arrow.RecordBatch, name string) arrow.Array {
	t.Helper()
	i := rec.Schema().FieldIndices(name)
	require.Len(t, i, 1, name)
	return rec.Column(i[0])
}

func fslInts[T int32 | int64 | float32](a *array.FixedSizeList, i int, vals []T) []T {
	s, e := a.ValueOffsets(i)
	return slices.Clone(vals[s:e])
}

func fslBools(a *array.FixedSizeList, i int) []bool {
	s, e := a.ValueOffsets(i)
	b := a.ListValues().(*array.Boolean)
	out := make([]bool, 0, e-s)
	for k := s; k < e; k++ {
		out = append(out, b.Value(int(k)))
	}
	return out
}

// readStep decodes a batch's video window "cam" (and rows window "state"
// when present).
func readStep(t testing.TB, rec arrow.RecordBatch) ([]sampleOut, []segOut) {
	t.Helper()
	comps := col(t, rec, mix.ComponentColumn).(*array.Int32)
	rows := col(t, rec, mix.RowColumn).(*array.Int64)
	cam := col(t, rec, "cam").(*array.Struct)
	camPad := col(t, rec, "cam_is_pad").(*array.FixedSizeList)
	segIdx := cam.Field(0).(*array.FixedSizeList)
	ptsL := cam.Field(1).(*array.FixedSizeList)
	segsL := cam.Field(2).(*array.List)
	segs := segsL.ListValues().(*array.Struct)
	var state, statePad *array.FixedSizeList
	if len(rec.Schema().FieldIndices("state")) == 1 {
		state = col(t, rec, "state").(*array.FixedSizeList)
		statePad = col(t, rec, "state_is_pad").(*array.FixedSizeList)
	}
	var out []sampleOut
	var segOuts []segOut
	for i := range int(rec.NumRows()) {
		s := sampleOut{comp: comps.Value(i), row: rows.Value(i)}
		s.pts = fslInts(ptsL, i, ptsL.ListValues().(*array.Int64).Int64Values())
		idx := fslInts(segIdx, i, segIdx.ListValues().(*array.Int32).Int32Values())
		for _, k := range idx {
			require.Equal(t, idx[0], k, "one segment per window")
		}
		s.seg = idx[0]
		s.pad = fslBools(camPad, i)
		if state != nil {
			s.state = fslInts(state, i, state.ListValues().(*array.Int64).Int64Values())
			s.spad = fslBools(statePad, i)
		}
		a, b := segsL.ValueOffsets(i)
		for k := a; k < b; k++ {
			segOuts = append(segOuts, readSegment(segs, int(k)))
		}
		require.Less(t, int(s.seg), len(segOuts), "row %d: segment %d is introduced by this or an earlier sample", s.row, s.seg)
		out = append(out, s)
	}
	checkReadWindows(t, cam, out, segOuts)
	return out, segOuts
}

// checkReadWindows checks that ReadWindows reads a step's column as
// readStep reads it by hand.
func checkReadWindows(t testing.TB, cam arrow.Array, samples []sampleOut, segs []segOut) {
	t.Helper()
	w, err := ReadWindows(cam)
	require.NoError(t, err)
	require.Equal(t, len(samples), w.Rows)
	for i, s := range samples {
		require.Equal(t, len(s.pts), w.T)
		for j := range w.T {
			seg, pts := w.Frame(i, j)
			require.Equal(t, int(s.seg), seg, "row %d frame %d", s.row, j)
			require.Equal(t, s.pts[j], pts, "row %d frame %d", s.row, j)
		}
	}
	require.Len(t, w.Segments, len(segs))
	for k, g := range segs {
		got := w.Segments[k]
		want := segOut{media: got.Media, codec: string(got.Codec), config: got.Config, w: int32(got.Width), h: int32(got.Height), ts: int32(got.Timescale),
			units: got.Units, dts: got.DTS, upts: got.UnitPTS, size: got.Size}
		if n := got.Normalize; n != nil {
			m, s := n.Mean32(), n.Std32()
			want.mean, want.std, want.dtype = m[:], s[:], string(n.DType)
		}
		require.Equal(t, g, want, "segment %d", k)
	}
}

func readSegment(s *array.Struct, k int) segOut {
	listBin := func(f int) [][]byte {
		l := s.Field(f).(*array.List)
		a, b := l.ValueOffsets(k)
		v := l.ListValues().(*array.Binary)
		var out [][]byte
		for i := a; i < b; i++ {
			out = append(out, bytes.Clone(v.Value(int(i))))
		}
		return out
	}
	listInt := func(f int) []int64 {
		l := s.Field(f).(*array.List)
		a, b := l.ValueOffsets(k)
		return slices.Clone(l.ListValues().(*array.Int64).Int64Values()[a:b])
	}
	g := segOut{
		media:  s.Field(0).(*array.String).Value(k),
		codec:  s.Field(1).(*array.String).Value(k),
		config: bytes.Clone(s.Field(2).(*array.Binary).Value(k)),
		w:      s.Field(3).(*array.Int32).Value(k),
		h:      s.Field(4).(*array.Int32).Value(k),
		ts:     s.Field(5).(*array.Int32).Value(k),
		units:  listBin(6), dts: listInt(7), upts: listInt(8),
	}
	if sz := s.Field(9).(*array.FixedSizeList); sz.IsValid(k) {
		g.size = fslInts(sz, k, sz.ListValues().(*array.Int32).Int32Values())
	}
	mean, std, dtype := s.Field(10).(*array.FixedSizeList), s.Field(11).(*array.FixedSizeList), s.Field(12).(*array.String)
	if mean.IsValid(k) {
		g.mean = fslInts(mean, k, mean.ListValues().(*array.Float32).Float32Values())
		g.std = fslInts(std, k, std.ListValues().(*array.Float32).Float32Values())
		g.dtype = dtype.Value(k)
	} else if std.IsValid(k) || dtype.IsValid(k) {
		g.dtype = "mean, std and dtype are not null together" // a failure where dtype is checked
	}
	return g
}

// checkSegment checks a segment against ffprobe's packets of its clip:
// each unit is the file's bytes of the packet with its PTS, the units are
// consecutive packets in decode order starting at a keyframe, and the
// wanted PTS are among them.
func checkSegment(t testing.TB, c *clip, g segOut, want []int64) {
	t.Helper()
	require.Equal(t, c.sha, g.media)
	require.NotEmpty(t, g.units)
	require.Len(t, g.dts, len(g.units))
	require.Len(t, g.upts, len(g.units))
	require.NotEmpty(t, g.config)
	require.EqualValues(t, 64, g.w)
	require.EqualValues(t, 64, g.h)
	prev := -1
	for i, u := range g.units {
		pi, ok := c.byPTS[g.upts[i]]
		require.True(t, ok, "%s: unit %d pts %d is a packet's", c.name, i, g.upts[i])
		p := c.pkts[pi]
		if i == 0 {
			require.True(t, p.key, "%s: a segment starts at a keyframe", c.name)
		} else {
			require.Equal(t, prev+1, pi, "%s: units are consecutive in decode order", c.name)
			require.Greater(t, g.dts[i], g.dts[i-1])
		}
		prev = pi
		require.Equal(t, c.data[p.pos:p.pos+p.size], u, "%s: unit %d is the file's sample", c.name, i)
	}
	for _, w := range want {
		require.Contains(t, g.upts, w, "%s: frame pts %d is decoded by its segment", c.name, w)
	}
}

// expectFrames is the brute-force window of frame offsets ks at display
// frame j of an n-frame clip.
func expectFrames(c *clip, j int, ks []int, slide bool) ([]int64, []bool) {
	ef, el := episodeOf(c.frames, j)
	if slide { // pad false: the window moves to fit inside the episode
		lo, hi := j+slices.Min(ks), j+slices.Max(ks)
		if lo < ef {
			j += ef - lo
		} else if hi > el {
			j -= hi - el
		}
	}
	var pts []int64
	var pads []bool
	for _, k := range ks {
		f := j + k
		pads = append(pads, f < ef || f > el)
		pts = append(pts, c.pts[min(max(f, ef), el)])
	}
	return pts, pads
}

// stepSamples collects a rank stream: per step, its samples and segments.
func stepSamples(t testing.TB, e *mix.Engine, run *mix.Run, rank, world int, start int64) ([][]sampleOut, [][]segOut) {
	t.Helper()
	var samples [][]sampleOut
	var segs [][]segOut
	for st, err := range e.Steps(context.Background(), run, rank, world, start, 0) {
		require.NoError(t, err)
		s, g := readStep(t, st.Batch)
		st.Batch.Release()
		samples = append(samples, s)
		segs = append(segs, g)
	}
	return samples, segs
}

func TestVideoWindows(t *testing.T) {
	clips := renderClips(t)
	en := newEnv(t, newTestMedia(clips))
	ctx := context.Background()
	for i, c := range clips {
		en.appendMoments(tableName(c), int64(i), clipRows(c), nil)
	}
	type tc struct {
		name   string
		clips  []*clip
		spec   string
		ks     []int // the frame offsets the spec means (CFR: seconds/0.04)
		rows   string
		rowsKs []int
		slide  bool // pad false: windows slide into their episode
	}
	var cfr []*clip
	for _, c := range clips {
		if c.cfr {
			cfr = append(cfr, c)
		}
	}
	cases := []tc{
		{name: "frames", clips: clips, spec: `{"frames":[-14,-5,-1,0,1,2,13],"size":[32,48]}`, ks: []int{-14, -5, -1, 0, 1, 2, 13},
			rows: `{"offsets":[-2,0,1,30]}`, rowsKs: []int{-2, 0, 1, 30}},
		{name: "seconds", clips: cfr, spec: `{"seconds":[-0.2,-0.04,0,0.08,0.52],"normalize":{"mean":[0.485,0.456,0.406],"std":[0.229,0.224,0.225]},"dtype":"bfloat16"}`, ks: []int{-5, -1, 0, 2, 13}},
		// The middle episode has 5 frames: windows spanning 5 fit everywhere.
		{name: "no padding", clips: clips, spec: `{"frames":[-4,-1,0],"pad":false}`, ks: []int{-4, -1, 0},
			rows: `{"offsets":[-1,0,3],"pad":false}`, rowsKs: []int{-1, 0, 3}, slide: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := &mix.Recipe{Seed: 7, BatchSize: 8}
			for _, c := range tc.clips {
				ws := map[string]mix.Window{"cam": window(KindVideo, tc.spec)}
				if tc.rows != "" {
					ws["state"] = window(KindRows, tc.rows)
				}
				r.Components = append(r.Components, mix.Component{Project: "p", Table: tableName(c), Weight: 1, Windows: ws, Columns: []string{"episode_index"}})
			}
			run, err := en.e.Resolve(ctx, r)
			require.NoError(t, err)
			full, segs := stepSamples(t, en.e, run, 0, 1, 0)
			require.EqualValues(t, run.Steps(), len(full))
			var pads, shared int
			for st := range full {
				for _, s := range full[st] {
					c := tc.clips[s.comp]
					j := int(s.row) // one row per frame, in display order
					pts, pad := expectFrames(c, j, tc.ks, tc.slide)
					require.Equal(t, pts, s.pts, "%s row %d: frame pts", c.name, s.row)
					require.Equal(t, pad, s.pad, "%s row %d: is_pad", c.name, s.row)
					checkSegment(t, c, segs[st][s.seg], s.pts)
					if tc.slide {
						require.NotContains(t, pad, true, "pad false never pads")
					}
					if tc.name == "frames" {
						require.Equal(t, []int32{32, 48}, segs[st][s.seg].size)
					} else {
						require.Nil(t, segs[st][s.seg].size)
					}
					if tc.name == "seconds" {
						sg := segs[st][s.seg]
						require.Equal(t, []float32{0.485, 0.456, 0.406}, sg.mean)
						require.Equal(t, []float32{0.229, 0.224, 0.225}, sg.std)
						require.Equal(t, "bfloat16", sg.dtype)
					} else {
						require.Nil(t, segs[st][s.seg].mean)
						require.Empty(t, segs[st][s.seg].dtype)
					}
					if slices.Contains(pad, true) {
						pads++
					}
					if tc.rows != "" {
						ef, el := episodeOf(c.frames, j)
						jr := j
						if tc.slide {
							lo, hi := j+slices.Min(tc.rowsKs), j+slices.Max(tc.rowsKs)
							if lo < ef {
								jr += ef - lo
							} else if hi > el {
								jr -= hi - el
							}
						}
						for k, off := range tc.rowsKs {
							rr := min(max(jr+off, ef), el)
							require.Equal(t, int64(rr)*10+int64(slices.Index(clips, c)), s.state[k], "%s row %d: state[%d]", c.name, s.row, k)
							require.Equal(t, jr+off != rr, s.spad[k])
						}
					}
				}
				shared += len(full[st]) - len(segs[st])
			}
			if !tc.slide {
				require.Positive(t, pads, "some windows reach past an episode edge")
			}
			require.Positive(t, shared, "some samples share a segment")

			// The same windows at W = 2 and 4, and resumed at a later step.
			for _, w := range []int{2, 4} {
				for rank := range w {
					got, gsegs := stepSamples(t, en.e, run, rank, w, 0)
					require.Len(t, got, len(full))
					for st := range got {
						for i, s := range got[st] {
							require.Equal(t, full[st][rank+w*i].key(), s.key(), "W=%d rank %d step %d position %d", w, rank, st, rank+w*i)
							checkSegment(t, tc.clips[s.comp], gsegs[st][s.seg], s.pts)
						}
					}
				}
			}
			require.Equal(t, en.media.opens.Load(), en.media.closed.Load(), "every media reader opened is closed")
			resume := run.Steps() / 2
			loaded, err := en.engine().Load(ctx, run.ID(), "p")
			require.NoError(t, err)
			got, _ := stepSamples(t, en.e, loaded, 0, 1, resume)
			for st := range got {
				for i, s := range got[st] {
					require.Equal(t, full[int(resume)+st][i].key(), s.key())
				}
			}
		})
	}
}
