package episodes

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/weftdata/weft/errdefs"
	"github.com/weftdata/weft/internal/membudget"
	"github.com/weftdata/weft/mix"
	"github.com/weftdata/weft/sampler"
	"github.com/weftdata/weft/tables"
	"github.com/weftdata/weft/video"
	"github.com/weftdata/weft/video/pixnorm"
)

// SegmentType is the Arrow type of one decode segment on the wire
// (VIDEO-CONTRACT section 5): a media object's decoder configuration (the
// avcC/hvcC/av1C box body, without its 8-byte header) and access units in
// decode order with their DTS and PTS in the track timescale, the
// [H, W] to resize decoded frames to, or null, and the normalisation of
// the frames (VideoSpec.Normalize): mean and std as float32 (the numbers
// the rule uses) and the dtype, all three null for uint8 frames.
var SegmentType = arrow.StructOf(
	arrow.Field{Name: "media", Type: arrow.BinaryTypes.String},
	arrow.Field{Name: "codec", Type: arrow.BinaryTypes.String},
	arrow.Field{Name: "config", Type: arrow.BinaryTypes.Binary},
	arrow.Field{Name: "width", Type: arrow.PrimitiveTypes.Int32},
	arrow.Field{Name: "height", Type: arrow.PrimitiveTypes.Int32},
	arrow.Field{Name: "timescale", Type: arrow.PrimitiveTypes.Int32},
	arrow.Field{Name: "units", Type: arrow.ListOf(arrow.BinaryTypes.Binary)},
	arrow.Field{Name: "dts", Type: arrow.ListOf(arrow.PrimitiveTypes.Int64)},
	arrow.Field{Name: "unit_pts", Type: arrow.ListOf(arrow.PrimitiveTypes.Int64)},
	arrow.Field{Name: "size", Type: arrow.FixedSizeListOf(2, arrow.PrimitiveTypes.Int32), Nullable: true},
	arrow.Field{Name: "mean", Type: arrow.FixedSizeListOf(3, arrow.PrimitiveTypes.Float32), Nullable: true},
	arrow.Field{Name: "std", Type: arrow.FixedSizeListOf(3, arrow.PrimitiveTypes.Float32), Nullable: true},
	arrow.Field{Name: "dtype", Type: arrow.BinaryTypes.String, Nullable: true},
)

// WindowType is the Arrow type of a video window key's column with t
// frames per window: per sample, the step-global segment index and the
// PTS of each frame, and the segments the sample introduces.
func WindowType(t int32) *arrow.StructType {
	return arrow.StructOf(
		arrow.Field{Name: "segment", Type: arrow.FixedSizeListOf(t, arrow.PrimitiveTypes.Int32)},
		arrow.Field{Name: "pts", Type: arrow.FixedSizeListOf(t, arrow.PrimitiveTypes.Int64)},
		arrow.Field{Name: "segments", Type: arrow.ListOf(SegmentType)},
	)
}

// videoKind makes "video" windows.
type videoKind struct{ k *Kinds }

// Canonical implements mix.Canonicalizer.
func (vk *videoKind) Canonical(spec json.RawMessage) (json.RawMessage, error) {
	s, err := ParseVideo(spec)
	if err != nil {
		return nil, err
	}
	return s.Canonical(), nil
}

func (vk *videoKind) New(ctx context.Context, env mix.Env, key string, in []mix.Input) (mix.Materializer, error) {
	src, err := vk.k.source(env)
	if err != nil {
		return nil, err
	}
	m := &videoWindow{k: vk.k, env: env, src: src, comps: make([]videoComp, len(in))}
	for i, c := range in {
		name := fmt.Sprintf("component %d (%s/%s)", i, c.Record.Project, c.Record.Table)
		spec, err := ParseVideo(c.Spec)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if i > 0 && spec.Len() != m.comps[0].spec.Len() {
			return nil, fmt.Errorf("%w: %s has %d frames per window, component 0 has %d; every component's window has one length", ErrBadSpec, name, spec.Len(), m.comps[0].spec.Len())
		}
		if i > 0 && dtypeOf(spec) != dtypeOf(m.comps[0].spec) {
			return nil, fmt.Errorf("%w: %s's frames are %s, component 0's %s; every component's window has one dtype (one tensor)", ErrBadSpec, name, dtypeOf(spec), dtypeOf(m.comps[0].spec))
		}
		proj, err := c.Version.Projection([]string{key})
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrBadSpec, name, err)
		}
		f := proj.Field(0)
		if vc, err := tables.VideoColumns(proj); err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrBadSpec, name, err)
		} else if len(vc) == 0 {
			return nil, fmt.Errorf("%w: %s: column %s is not a video column (its field metadata has no weft.kind = \"video\"); append it with videos=… or use a \"rows\" window", ErrBadSpec, name, errdefs.Quote(key))
		}
		tol, err := tolerance(f)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		x, err := vk.k.episodeIndex(ctx, env.Reader, c.Version)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		m.comps[i] = videoComp{spec: spec, version: c.Version, episodes: x, proj: proj, tol: tol, key: key}
	}
	n := int32(m.comps[0].spec.Len())
	m.fields = []arrow.Field{
		{Name: key, Type: WindowType(n)},
		{Name: key + "_is_pad", Type: arrow.FixedSizeListOf(n, arrow.FixedWidthTypes.Boolean)},
	}
	return m, nil
}

// dtypeOf is the element type of a spec's frames.
func dtypeOf(s VideoSpec) string {
	if s.Normalize == nil {
		return "uint8"
	}
	return string(s.Normalize.DType)
}

// videoComp is one component of a video window.
type videoComp struct {
	spec     VideoSpec
	version  *tables.Version
	episodes *EpisodeIndex
	proj     *arrow.Schema // the video column
	tol      time.Duration // the column's tolerance
	key      string
}

type videoWindow struct {
	k      *Kinds
	env    mix.Env
	src    MediaSource
	comps  []videoComp
	fields []arrow.Field
}

func (m *videoWindow) Fields() []arrow.Field { return m.fields }

// Prefetch starts the step's planning in a load: it reads the video
// column's rows, indexes the media objects (cached), plans the windows
// and starts the ranged reads, each in a load of its own.
func (m *videoWindow) Prefetch(ctx context.Context, loads *mix.Loads, samples []sampler.Sample) mix.Pending {
	p := &videoStep{m: m, samples: slices.Clone(samples), planned: make(chan struct{})}
	loads.Go(ctx, func(err error) {
		defer close(p.planned)
		if err != nil {
			p.err = err
			return
		}
		p.err = p.plan(ctx, loads)
	})
	return p
}

// moment is a row of a video column.
type moment struct {
	media string
	time  float64
}

// segment is one merged decode plan of one media object.
type segment struct {
	media mediaKey
	x     *video.Index
	plan  video.Plan
	size  []int32
	norm  *pixnorm.Normalize
	reads []*mediaRead // the media object's reads in the step, by offset
}

// mediaRead is one ranged read of a media object.
type mediaRead struct {
	off, size int64
	buf       []byte
	done      chan struct{}
	err       error
}

type videoStep struct {
	m       *videoWindow
	samples []sampler.Sample
	planned chan struct{}
	err     error
	// Set by plan, valid once planned is closed and err is nil.
	pts    [][]int64 // per sample, per frame
	pads   [][]bool
	segOf  []int32 // per sample: its segment
	intro  []int32 // per sample: the segment it introduces, or -1
	segs   []segment
	reads  []*mediaRead  // every read started
	opened []io.ReaderAt // the media objects the reads read
	lease  *membudget.Lease
}

// where names a sample's row for messages.
func (p *videoStep) where(s sampler.Sample) string {
	c := &p.m.comps[s.Component]
	e, _, _ := c.episodes.Episode(s.Row)
	return fmt.Sprintf("component %d (%s/%s@%s), row %d (episode %s)", s.Component, c.version.Project, c.version.Table, c.version.Commit.Short(), s.Row, c.episodes.Value(e))
}

func (p *videoStep) plan(ctx context.Context, loads *mix.Loads) error {
	m := p.m
	// The moments of the samples' rows and of their episodes' edges.
	moments := make([]map[int64]moment, len(m.comps))
	need := make([]map[int64]bool, len(m.comps))
	for _, s := range p.samples {
		c := &m.comps[s.Component]
		if need[s.Component] == nil {
			need[s.Component] = map[int64]bool{}
		}
		_, first, last := c.episodes.Episode(s.Row)
		need[s.Component][s.Row], need[s.Component][first], need[s.Component][last] = true, true, true
	}
	for ci, rows := range need {
		if rows == nil {
			continue
		}
		var err error
		if moments[ci], err = p.readMoments(ctx, ci, slices.Sorted(maps.Keys(rows))); err != nil {
			return err
		}
	}
	// Resolve each window's frames.
	indexes := map[mediaKey]*video.Index{}
	frames := make([][]int, len(p.samples))
	p.pts = make([][]int64, len(p.samples))
	p.pads = make([][]bool, len(p.samples))
	type group struct {
		media   mediaKey
		size    []int32
		norm    *pixnorm.Normalize
		samples []int
	}
	var groups []*group
	groupOf := map[string]*group{}
	for i, s := range p.samples {
		c := &m.comps[s.Component]
		mo := moments[s.Component][s.Row]
		mk := mediaKey{project: c.version.Project, sha: mo.media}
		x, ok := indexes[mk]
		if !ok {
			var err error
			if x, err = m.k.mediaIndex(ctx, m.src, mk.project, mk.sha); err != nil {
				return fmt.Errorf("%s: %s: %w", p.where(s), c.key, err)
			}
			indexes[mk] = x
		}
		e, first, last := c.episodes.Episode(s.Row)
		f, ps, err := resolve(x, c, mo, moments[s.Component][first], moments[s.Component][last])
		if err != nil {
			return fmt.Errorf("%s: %w", p.where(s), err)
		}
		if !c.spec.Pad && slices.Contains(ps, true) {
			return fmt.Errorf("%w: %s: %s window does not fit in the episode's frames (episode %s: rows %d..%d): with \"pad\": false a frames window slides to fit inside its episode, which this episode is too short for, and a seconds window must not reach past its edges; leave padding on (the edge frame repeats, flagged in %s_is_pad)", ErrPadding, p.where(s), c.key, c.episodes.Value(e), first, last, c.key)
		}
		frames[i], p.pads[i] = f, ps
		p.pts[i] = make([]int64, len(f))
		for j, fr := range f {
			p.pts[i][j] = x.Frame(fr).PTS
		}
		gk := fmt.Sprintf("%s\x00%s\x00%v\x00%v", mk.project, mk.sha, c.spec.Size, c.spec.Normalize)
		g := groupOf[gk]
		if g == nil {
			g = &group{media: mk, size: c.spec.Size, norm: c.spec.Normalize}
			groupOf[gk] = g
			groups = append(groups, g)
		}
		g.samples = append(g.samples, i)
	}
	// Plan each group's windows together; number segments in sample order.
	p.segOf = make([]int32, len(p.samples))
	p.intro = make([]int32, len(p.samples))
	type planned struct {
		g     *group
		batch video.Batch
	}
	ref := make([]struct{ plan, decode int }, len(p.samples))
	var plans []planned
	for gi, g := range groups {
		x := indexes[g.media]
		ws := make([][]int, len(g.samples))
		for w, i := range g.samples {
			ws[w] = frames[i]
		}
		b, err := x.PlanWindows(ws)
		if err != nil {
			return fmt.Errorf("%s: plan media %s: %w", p.where(p.samples[g.samples[0]]), shortSHA(g.media.sha), err)
		}
		for w, i := range g.samples {
			d := b.Windows[w][0].Decode
			for _, r := range b.Windows[w] {
				if r.Decode != d {
					return fmt.Errorf("internal: window of %s spans decodes %d and %d", p.where(p.samples[i]), d, r.Decode)
				}
			}
			ref[i] = struct{ plan, decode int }{gi, d}
		}
		plans = append(plans, planned{g: g, batch: b})
	}
	number := map[[2]int]int32{}
	for i := range p.samples {
		k := [2]int{ref[i].plan, ref[i].decode}
		n, ok := number[k]
		p.intro[i] = -1
		if !ok {
			n = int32(len(p.segs))
			number[k] = n
			pl := plans[ref[i].plan]
			p.segs = append(p.segs, segment{media: pl.g.media, x: indexes[pl.g.media], plan: pl.batch.Decodes[ref[i].decode], size: pl.g.size, norm: pl.g.norm})
			p.intro[i] = n
		}
		p.segOf[i] = n
	}
	// Start the reads: per media object, its segments' ranges by offset,
	// merged across small gaps.
	byMedia := map[mediaKey][]int{} // media -> segments
	var order []mediaKey
	for si, sg := range p.segs {
		if _, ok := byMedia[sg.media]; !ok {
			order = append(order, sg.media)
		}
		byMedia[sg.media] = append(byMedia[sg.media], si)
	}
	// Plan every media object's reads, then check and lease their bytes
	// before any read starts.
	readsOf := make(map[mediaKey][]*mediaRead, len(order))
	var total int64
	for _, mk := range order {
		var ranges []video.ByteRange
		for _, si := range byMedia[mk] {
			ranges = append(ranges, p.segs[si].plan.Ranges...)
		}
		sort.Slice(ranges, func(a, b int) bool { return ranges[a].Offset < ranges[b].Offset })
		var reads []*mediaRead
		for _, r := range ranges {
			if n := len(reads); n > 0 && r.Offset <= reads[n-1].off+reads[n-1].size+m.k.opts.CoalesceBytes {
				reads[n-1].size = max(reads[n-1].size, r.Offset+r.Size-reads[n-1].off)
				continue
			}
			reads = append(reads, &mediaRead{off: r.Offset, size: r.Size, done: make(chan struct{})})
		}
		for _, si := range byMedia[mk] {
			p.segs[si].reads = reads
		}
		for _, rd := range reads {
			total += rd.size
		}
		readsOf[mk] = reads
	}
	if total > m.k.opts.MaxStepBytes {
		return fmt.Errorf("%w: this step's video windows (%s) need %d bytes of access units, over the %d-byte step limit (--max-step-size): use shorter windows, fewer samples per rank (a larger world size or smaller batch), or videos with shorter GOPs", ErrTooLarge, m.fields[0].Name, total, m.k.opts.MaxStepBytes)
	}
	lease, err := m.k.opts.Budget.Acquire(ctx, 2*total, fmt.Sprintf("the video window %s of a step", m.fields[0].Name))
	if err != nil {
		return err
	}
	p.lease = lease
	for _, mk := range order {
		reads := readsOf[mk]
		ra, _, err := m.src.OpenMedia(ctx, mk.project, mk.sha)
		if err != nil {
			return fmt.Errorf("open media %s: %w", shortSHA(mk.sha), err)
		}
		p.opened = append(p.opened, ra) // closed by Release, after the reads
		for _, rd := range reads {
			p.reads = append(p.reads, rd)
			loads.Go(ctx, func(err error) {
				defer close(rd.done)
				if err != nil {
					rd.err = err
					return
				}
				rd.buf = make([]byte, rd.size)
				n, err := ra.ReadAt(rd.buf, rd.off)
				if n == len(rd.buf) {
					err = nil
				} else if err == nil || err == io.EOF {
					err = fmt.Errorf("%w: short read: %d of %d bytes", errdefs.ErrCorrupt, n, rd.size)
				}
				if err != nil {
					rd.buf = nil
					rd.err = fmt.Errorf("read media %s bytes [%d, %d): %w", shortSHA(mk.sha), rd.off, rd.off+rd.size, err)
				}
			})
		}
	}
	return nil
}

// readMoments reads the video column of component ci at rows.
func (p *videoStep) readMoments(ctx context.Context, ci int, rows []int64) (map[int64]moment, error) {
	c := &p.m.comps[ci]
	rec, err := p.m.env.Reader.GatherRows(ctx, c.version, rows, c.proj)
	if err != nil {
		return nil, fmt.Errorf("component %d (%s/%s@%s): read %s: %w", ci, c.version.Project, c.version.Table, c.version.Commit.Short(), c.key, err)
	}
	defer rec.Release()
	st := rec.Column(0).(*array.Struct)
	media, ok1 := st.Field(0).(*array.String)
	times, ok2 := st.Field(1).(*array.Float64)
	if !ok1 || !ok2 {
		return nil, fmt.Errorf("internal: video column %s reads as %s", c.key, st.DataType())
	}
	out := make(map[int64]moment, len(rows))
	for i, row := range rows {
		if st.IsNull(i) || media.IsNull(i) || times.IsNull(i) {
			return nil, fmt.Errorf("%w: component %d (%s/%s), row %d: video column %s is null; every row of a video column names a media object and a time", ErrBadMedia, ci, c.version.Project, c.version.Table, row, errdefs.Quote(c.key))
		}
		out[row] = moment{media: media.Value(i), time: times.Value(i)}
	}
	return out, nil
}

// frameAt resolves a moment's frame in x within the column's tolerance.
func frameAt(x *video.Index, c *videoComp, mo moment) (int, error) {
	if math.IsNaN(mo.time) || math.IsInf(mo.time, 0) {
		return 0, fmt.Errorf("%w: %s time %v in media %s is not a number", ErrBadMedia, c.key, mo.time, shortSHA(mo.media))
	}
	f, err := x.FrameAt(seconds(mo.time), c.tol)
	if err != nil {
		return 0, fmt.Errorf("%w: %s time %s has no frame in media %s within %s: %w", ErrBadMedia, c.key, formatSeconds(seconds(mo.time)), shortSHA(mo.media), formatSeconds(c.tol), err)
	}
	return f, nil
}

// resolve returns the display positions of a sample's window and which
// are padding: the moment's frame moved by the spec's offsets, clamped
// into the episode's frame span (the frames of its first and last
// moments, when they are in the same media object; the file's ends
// otherwise).
func resolve(x *video.Index, c *videoComp, mo, first, last moment) ([]int, []bool, error) {
	f0, err := frameAt(x, c, mo)
	if err != nil {
		return nil, nil, err
	}
	ff, fl := 0, x.Len()-1
	if first.media == mo.media {
		if ff, err = frameAt(x, c, first); err != nil {
			return nil, nil, fmt.Errorf("the episode's first row: %w", err)
		}
	}
	if last.media == mo.media {
		if fl, err = frameAt(x, c, last); err != nil {
			return nil, nil, fmt.Errorf("the episode's last row: %w", err)
		}
	}
	ff, fl = min(ff, f0), max(fl, f0)
	s := &c.spec
	frames := make([]int, s.Len())
	pads := make([]bool, s.Len())
	if s.Frames != nil && !s.Pad {
		// Without padding the window slides to fit inside the span; an
		// episode too short for it is padded, which the caller refuses.
		lo, hi := f0+int(slices.Min(s.Frames)), f0+int(slices.Max(s.Frames))
		d := 0
		switch {
		case hi-lo > fl-ff:
		case lo < ff:
			d = ff - lo
		case hi > fl:
			d = fl - hi
		}
		f0 += d
	}
	for j := range frames {
		if s.Frames != nil {
			f := f0 + int(s.Frames[j])
			frames[j], pads[j] = min(max(f, ff), fl), f < ff || f > fl
			continue
		}
		target := seconds(mo.time + s.Seconds[j])
		f, pad, err := nearest(x, target, ff, fl, seconds(s.Tolerance))
		if err != nil {
			return nil, nil, fmt.Errorf("%w: %s: seconds offset %s: %w", ErrBadMedia, c.key, formatFloat(s.Seconds[j]), err)
		}
		frames[j], pads[j] = f, pad
	}
	return frames, pads, nil
}

// nearest returns the frame of [ff, fl] nearest to target: within tol
// (0: half the frame interval on target's side of that frame), or the
// span's edge frame as padding when target lies beyond it.
func nearest(x *video.Index, target time.Duration, ff, fl int, tol time.Duration) (int, bool, error) {
	best, bestD := x.Nearest(target, ff, fl)
	if tol == 0 {
		// Half the interval to the neighbouring frame in the file, on
		// target's side (the other side at the file's ends).
		nb := best + 1
		if target < x.FrameTime(best) {
			nb = best - 1
		}
		if nb < 0 || nb >= x.Len() {
			nb = 2*best - nb
		}
		if nb >= 0 && nb < x.Len() {
			gap := x.FrameTime(nb) - x.FrameTime(best)
			if gap < 0 {
				gap = -gap
			}
			tol = gap / 2
		}
	}
	switch {
	case bestD <= tol:
		return best, false, nil
	case target < x.FrameTime(ff) || target > x.FrameTime(fl):
		return best, true, nil
	}
	return 0, false, fmt.Errorf("time %s has no frame within %s; the nearest is frame %d at %s", formatSeconds(target), formatSeconds(tol), best, formatSeconds(x.FrameTime(best)))
}

// Build waits for the step's plan and reads and makes the window columns.
func (p *videoStep) Build(ctx context.Context) ([]arrow.Array, error) {
	select {
	case <-p.planned:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if p.err != nil {
		return nil, p.err
	}
	for _, rd := range p.reads {
		select {
		case <-rd.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if rd.err != nil {
			return nil, rd.err
		}
	}
	var unitBytes int64
	for _, sg := range p.segs {
		unitBytes += sg.plan.Bytes()
	}
	if unitBytes > math.MaxInt32 {
		return nil, fmt.Errorf("%w: %d bytes of access units in one rank's step", ErrTooLarge, unitBytes)
	}
	mem := p.m.env.Allocator
	t := int32(p.m.comps[0].spec.Len())
	sb := array.NewStructBuilder(mem, p.m.fields[0].Type.(*arrow.StructType))
	defer sb.Release()
	segIdx := sb.FieldBuilder(0).(*array.FixedSizeListBuilder)
	segIdxV := segIdx.ValueBuilder().(*array.Int32Builder)
	ptsB := sb.FieldBuilder(1).(*array.FixedSizeListBuilder)
	ptsV := ptsB.ValueBuilder().(*array.Int64Builder)
	segsB := sb.FieldBuilder(2).(*array.ListBuilder)
	seg := segsB.ValueBuilder().(*array.StructBuilder)
	pads := array.NewFixedSizeListBuilder(mem, t, arrow.FixedWidthTypes.Boolean)
	defer pads.Release()
	padV := pads.ValueBuilder().(*array.BooleanBuilder)
	for i := range p.samples {
		sb.Append(true)
		segIdx.Append(true)
		ptsB.Append(true)
		pads.Append(true)
		for j := range t {
			segIdxV.Append(p.segOf[i])
			ptsV.Append(p.pts[i][j])
			padV.Append(p.pads[i][j])
		}
		segsB.Append(true)
		if n := p.intro[i]; n >= 0 {
			if err := appendSegment(seg, &p.segs[n]); err != nil {
				return nil, err
			}
		}
	}
	return []arrow.Array{sb.NewArray(), pads.NewArray()}, nil
}

// appendSegment writes one segment: its configuration and access units.
func appendSegment(b *array.StructBuilder, sg *segment) error {
	x, cfg := sg.x, sg.x.Config
	b.Append(true)
	b.FieldBuilder(0).(*array.StringBuilder).Append(sg.media.sha)
	b.FieldBuilder(1).(*array.StringBuilder).Append(string(cfg.Codec))
	body := cfg.Box
	if len(body) >= 8 {
		body = body[8:]
	}
	b.FieldBuilder(2).(*array.BinaryBuilder).Append(body)
	b.FieldBuilder(3).(*array.Int32Builder).Append(int32(cfg.Width))
	b.FieldBuilder(4).(*array.Int32Builder).Append(int32(cfg.Height))
	b.FieldBuilder(5).(*array.Int32Builder).Append(int32(x.Timescale))
	units, dts, pts := b.FieldBuilder(6).(*array.ListBuilder), b.FieldBuilder(7).(*array.ListBuilder), b.FieldBuilder(8).(*array.ListBuilder)
	units.Append(true)
	dts.Append(true)
	pts.Append(true)
	uv := units.ValueBuilder().(*array.BinaryBuilder)
	dv, pv := dts.ValueBuilder().(*array.Int64Builder), pts.ValueBuilder().(*array.Int64Builder)
	uv.ReserveData(int(sg.plan.Bytes()))
	for d := sg.plan.Start; d < sg.plan.End; d++ {
		s := x.Samples[d]
		unit, err := sg.bytes(s.Offset, s.Size)
		if err != nil {
			return err
		}
		uv.Append(unit)
		dv.Append(s.PTS - s.CTO) // DTS on the PTS timeline (edit list applied)
		pv.Append(s.PTS)
	}
	size := b.FieldBuilder(9).(*array.FixedSizeListBuilder)
	if sg.size == nil {
		size.AppendNull()
	} else {
		size.Append(true)
		size.ValueBuilder().(*array.Int32Builder).AppendValues(sg.size, nil)
	}
	mean, std := b.FieldBuilder(10).(*array.FixedSizeListBuilder), b.FieldBuilder(11).(*array.FixedSizeListBuilder)
	dtype := b.FieldBuilder(12).(*array.StringBuilder)
	if sg.norm == nil {
		mean.AppendNull()
		std.AppendNull()
		dtype.AppendNull()
		return nil
	}
	m32, s32 := sg.norm.Mean32(), sg.norm.Std32()
	mean.Append(true)
	mean.ValueBuilder().(*array.Float32Builder).AppendValues(m32[:], nil)
	std.Append(true)
	std.ValueBuilder().(*array.Float32Builder).AppendValues(s32[:], nil)
	dtype.Append(string(sg.norm.DType))
	return nil
}

// bytes returns the file's bytes [off, off+size) from the segment's reads.
func (sg *segment) bytes(off, size int64) ([]byte, error) {
	i := sort.Search(len(sg.reads), func(i int) bool { return sg.reads[i].off+sg.reads[i].size > off })
	if i == len(sg.reads) || sg.reads[i].off > off || off+size > sg.reads[i].off+sg.reads[i].size {
		return nil, fmt.Errorf("internal: media %s bytes [%d, %d) were not read", shortSHA(sg.media.sha), off, off+size)
	}
	rd := sg.reads[i]
	return rd.buf[off-rd.off : off-rd.off+size], nil
}

func (p *videoStep) Release() {
	<-p.planned
	for _, rd := range p.reads {
		<-rd.done
		rd.buf = nil
	}
	for _, r := range p.opened {
		closeMedia(r)
	}
	p.segs, p.opened = nil, nil
	if p.lease != nil {
		p.lease.Release()
	}
}
