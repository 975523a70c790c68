package video

import (
	"fmt"
	"sort"
)

// ByteRange is a contiguous run of the file holding the decode-order
// samples [First, End).
type ByteRange struct {
	Offset, Size int64
	First, End   int
}

// Keep names one requested frame in a Plan's output.
type Keep struct {
	// Frame is the display position asked for; PTS its presentation time
	// in the track timescale (match decoded frames by it).
	Frame int
	PTS   int64
	// Pos indexes Plan.Output: the Pos-th frame the decoder yields.
	Pos int
}

// MaxPlanSamples bounds the samples one Plan feeds a decoder, its
// keyframe's GOP included: about 36 minutes at 60 frames per second.
const MaxPlanSamples = 1 << 17

// Plan is what a decoder needs for some frames of one video: feed it the
// decode-order samples [Start, End) (their bytes are Ranges, in order,
// after the Config), and keep the frames named by Keep.
type Plan struct {
	Start, End int
	Ranges     []ByteRange
	// Output lists the display positions of the frames a decoder yields
	// from [Start, End), in presentation order: every sample in the range
	// except the open-GOP leading frames of the keyframe at Start, which
	// cannot be decoded from it (ffmpeg drops such RASL frames; a decoder
	// that emits them anyway is matched by PTS).
	Output []int
	// Keep has one entry per requested frame, in request order.
	Keep []Keep
}

// Bytes is the number of file bytes the plan reads.
func (p Plan) Bytes() int64 {
	var n int64
	for _, r := range p.Ranges {
		n += r.Size
	}
	return n
}

// startFor is the decode index decoding must start at for the frame at
// decode index d: the keyframe at or before it, or, for an open-GOP
// leading frame, the keyframe before that.
func (x *Index) startFor(d int) int {
	k := d
	for k > 0 && !x.Samples[k].Key {
		k--
	}
	if x.Samples[d].Leading {
		for k > 0 {
			k--
			if x.Samples[k].Key {
				break
			}
		}
	}
	return k
}

// Plan returns the decode plan for frames (display positions, in any
// order, repeats allowed, already clamped to [0, Len()) by the caller).
// Decoding runs from the keyframe at or before the earliest needed frame
// (the previous keyframe for an open-GOP leading frame) through the last
// needed frame in decode order: a frame's references always precede it in
// decode order, though they may follow it in display order (B-frames).
//
// A plan that would feed the decoder more than MaxPlanSamples samples (a
// file with an enormous GOP, or a hostile one) fails with
// ErrUnsupportedCodec instead of allocating for them.
func (x *Index) Plan(frames []int) (Plan, error) {
	if len(frames) == 0 {
		return Plan{}, fmt.Errorf("%w: no frames to plan", ErrFrameRange)
	}
	// startFor is monotone in d among plain frames and among leading
	// frames, so the start is that of the earliest of each: two walks
	// back to a keyframe, not one per frame.
	minPlain, minLeading, end := x.Len(), x.Len(), 0
	for _, f := range frames {
		if f < 0 || f >= x.Len() {
			return Plan{}, fmt.Errorf("%w: frame %d of %d", ErrFrameRange, f, x.Len())
		}
		d := x.display[f]
		if x.Samples[d].Leading {
			minLeading = min(minLeading, d)
		} else {
			minPlain = min(minPlain, d)
		}
		end = max(end, d+1)
	}
	start := x.Len()
	for _, d := range []int{minPlain, minLeading} {
		if d < x.Len() {
			start = min(start, x.startFor(d))
		}
	}
	if end-start > MaxPlanSamples {
		return Plan{}, fmt.Errorf("%w: decoding frame %d needs the %d samples from keyframe %d, over the %d-sample limit: re-encode with more keyframes, e.g. `ffmpeg -i in.mp4 -c:v libx264 -g 250 out.mp4`", ErrUnsupportedCodec, x.rank[end-1], end-start, start, MaxPlanSamples)
	}
	p := Plan{Start: start, End: end}
	key := start // the last keyframe at or before d
	for d := start; d < end; d++ {
		s := x.Samples[d]
		if s.Key {
			key = d
		}
		if n := len(p.Ranges); n > 0 && p.Ranges[n-1].Offset+p.Ranges[n-1].Size == s.Offset {
			p.Ranges[n-1].Size += s.Size
			p.Ranges[n-1].End = d + 1
		} else {
			p.Ranges = append(p.Ranges, ByteRange{Offset: s.Offset, Size: s.Size, First: d, End: d + 1})
		}
		// A leading frame of the start keyframe needs the keyframe before
		// it (startFor(d) < start): undecodable here. Leading frames of
		// later keyframes start at a keyframe within the plan.
		if s.Leading && key == start && start > 0 {
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
		i, ok := pos[f]
		if !ok {
			return Plan{}, fmt.Errorf("internal: frame %d planned but not in output [%d, %d)", f, start, end)
		}
		p.Keep = append(p.Keep, Keep{Frame: f, PTS: x.Frame(f).PTS, Pos: i})
	}
	return p, nil
}

// Batch is the decode work for several windows of one video: windows whose
// decode ranges overlap (they share a GOP) are merged into one Plan, so the
// shared samples are read and decoded once.
type Batch struct {
	// Decodes are the merged plans, ordered by Start; their Keep lists
	// the union of their windows' frames.
	Decodes []Plan
	// Windows[w][j] locates frame j of window w: Decodes[Decode].Output[Pos].
	Windows [][]FrameRef
}

// FrameRef locates a decoded frame within a Batch.
type FrameRef struct {
	Decode, Pos int
}

// PlanWindows plans several windows together, merging those whose decode
// ranges overlap (up to MaxPlanSamples per merged plan).
func (x *Index) PlanWindows(windows [][]int) (Batch, error) {
	type span struct{ start, end, w int }
	spans := make([]span, len(windows))
	for w, frames := range windows {
		p, err := x.Plan(frames)
		if err != nil {
			return Batch{}, fmt.Errorf("window %d: %w", w, err)
		}
		spans[w] = span{p.Start, p.End, w}
	}
	sort.Slice(spans, func(a, b int) bool { return spans[a].start < spans[b].start })
	b := Batch{Windows: make([][]FrameRef, len(windows))}
	for i := 0; i < len(spans); {
		j, end := i+1, spans[i].end
		// Merge overlapping spans while the merged plan stays within
		// MaxPlanSamples; past it, overlapping windows decode separately.
		for j < len(spans) && spans[j].start < end && max(end, spans[j].end)-spans[i].start <= MaxPlanSamples {
			end = max(end, spans[j].end)
			j++
		}
		var union []int
		seen := map[int]bool{}
		for _, s := range spans[i:j] {
			for _, f := range windows[s.w] {
				if !seen[f] {
					seen[f] = true
					union = append(union, f)
				}
			}
		}
		sort.Ints(union)
		p, err := x.Plan(union)
		if err != nil {
			return Batch{}, err
		}
		pos := make(map[int]int, len(p.Keep))
		for _, k := range p.Keep {
			pos[k.Frame] = k.Pos
		}
		di := len(b.Decodes)
		b.Decodes = append(b.Decodes, p)
		for _, s := range spans[i:j] {
			refs := make([]FrameRef, len(windows[s.w]))
			for k, f := range windows[s.w] {
				refs[k] = FrameRef{Decode: di, Pos: pos[f]}
			}
			b.Windows[s.w] = refs
		}
		i = j
	}
	return b, nil
}
