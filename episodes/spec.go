package episodes

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/weftdata/weft/video/pixnorm"
)

// Limits of a spec.
const (
	maxOffsets   = 4096    // entries of offsets, frames or seconds
	maxOffset    = 1 << 30 // |k| of a row or frame offset
	maxSeconds   = 86400.0 // |s| of a time offset
	maxSize      = 16384   // H and W of a resize
	maxTolerance = 3600.0  // seconds
)

// RowsSpec is a "rows" window: the key column's values at Offsets from
// the sample's row, within its episode.
type RowsSpec struct {
	Offsets []int64
	// Pad false refuses windows that cross their episode's edge.
	Pad bool
}

// VideoSpec is a "video" window: frames at display Frames offsets from
// the moment's frame, or nearest to the moment's time plus Seconds
// (exactly one of the two).
type VideoSpec struct {
	Frames  []int64
	Seconds []float64
	// Size is the [H, W] to resize decoded frames to; nil keeps them.
	Size []int32
	// Normalize, when set, makes the frames normalised floats of its DType
	// instead of uint8 RGB (package pixnorm's rule; Mean and Std as the
	// spec writes them, so the canonical form keeps them).
	Normalize *pixnorm.Normalize
	// Pad false refuses windows that cross their episode's frame span.
	Pad bool
	// Tolerance bounds how far a Seconds offset's time may be from its
	// frame; 0 means half the frame interval there (the nearest frame).
	Tolerance float64
}

// Len is the number of frames per window.
func (s VideoSpec) Len() int { return max(len(s.Frames), len(s.Seconds)) }

// rawSpec is the JSON of either kind's spec, numbers as written.
type rawSpec struct {
	Offsets   []json.Number `json:"offsets"`
	Frames    []json.Number `json:"frames"`
	Seconds   []json.Number `json:"seconds"`
	Size      []json.Number `json:"size"`
	Normalize *rawNormalize `json:"normalize"`
	DType     *string       `json:"dtype"`
	Pad       *bool         `json:"pad"`
	Tolerance *json.Number  `json:"tolerance"`
}

// rawNormalize is the JSON of a video window's "normalize".
type rawNormalize struct {
	Mean []json.Number `json:"mean"`
	Std  []json.Number `json:"std"`
}

func decodeSpec(data []byte, kind string, fields string) (rawSpec, error) {
	var r rawSpec
	if len(bytes.TrimSpace(data)) == 0 {
		data = []byte("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return r, fmt.Errorf("%w: a %q window is %s: %v", ErrBadSpec, kind, fields, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return r, fmt.Errorf("%w: a %q window is one JSON object", ErrBadSpec, kind)
	}
	return r, nil
}

func parseInts(kind, name string, ns []json.Number, limit int64) ([]int64, error) {
	if len(ns) == 0 || len(ns) > maxOffsets {
		return nil, fmt.Errorf("%w: %q window: %q needs 1 to %d entries, it has %d", ErrBadSpec, kind, name, maxOffsets, len(ns))
	}
	out := make([]int64, len(ns))
	for i, n := range ns {
		v, err := strconv.ParseInt(n.String(), 10, 64)
		if err != nil {
			f, ferr := strconv.ParseFloat(n.String(), 64)
			if ferr != nil || f != math.Trunc(f) || math.Abs(f) > float64(limit) {
				return nil, fmt.Errorf("%w: %q window: %q[%d] is %s; it must be an integer in [-%d, %d]", ErrBadSpec, kind, name, i, n, limit, limit)
			}
			v = int64(f)
		}
		if v < -limit || v > limit {
			return nil, fmt.Errorf("%w: %q window: %q[%d] is %d; it must be in [-%d, %d]", ErrBadSpec, kind, name, i, v, limit, limit)
		}
		out[i] = v
	}
	return out, nil
}

func parseFloat(kind, name string, n json.Number, lo, hi float64) (float64, error) {
	f, err := strconv.ParseFloat(n.String(), 64)
	if err != nil || math.IsNaN(f) || f < lo || f > hi {
		return 0, fmt.Errorf("%w: %q window: %q is %s; it must be a number in [%g, %g]", ErrBadSpec, kind, name, n, lo, hi)
	}
	if f == 0 {
		f = 0 // no negative zero
	}
	return f, nil
}

// ParseRows reads a "rows" spec (the window's fields without "kind").
func ParseRows(data []byte) (RowsSpec, error) {
	const fields = `{"offsets": [k, …], "pad": bool}`
	r, err := decodeSpec(data, KindRows, fields)
	if err != nil {
		return RowsSpec{}, err
	}
	if r.Frames != nil || r.Seconds != nil || r.Size != nil || r.Tolerance != nil || r.Normalize != nil || r.DType != nil {
		return RowsSpec{}, fmt.Errorf("%w: a %q window is %s; frames, seconds, size, normalize, dtype and tolerance are a video window's", ErrBadSpec, KindRows, fields)
	}
	s := RowsSpec{Pad: r.Pad == nil || *r.Pad}
	if s.Offsets, err = parseInts(KindRows, "offsets", r.Offsets, maxOffset); err != nil {
		return RowsSpec{}, err
	}
	return s, nil
}

// ParseVideo reads a "video" spec (the window's fields without "kind").
func ParseVideo(data []byte) (VideoSpec, error) {
	const fields = `{"frames": [k, …]} or {"seconds": [s, …]}, with optional "size": [H, W], "normalize": {"mean": [r, g, b], "std": [r, g, b]}, "dtype": "float16"|"bfloat16"|"float32", "pad": bool, "tolerance": seconds`
	r, err := decodeSpec(data, KindVideo, fields)
	if err != nil {
		return VideoSpec{}, err
	}
	if r.Offsets != nil {
		return VideoSpec{}, fmt.Errorf("%w: a %q window takes \"frames\" (display offsets) or \"seconds\" (time offsets), not \"offsets\"", ErrBadSpec, KindVideo)
	}
	s := VideoSpec{Pad: r.Pad == nil || *r.Pad}
	switch {
	case (r.Frames == nil) == (r.Seconds == nil):
		return VideoSpec{}, fmt.Errorf("%w: a %q window needs exactly one of \"frames\" and \"seconds\"", ErrBadSpec, KindVideo)
	case r.Frames != nil:
		if s.Frames, err = parseInts(KindVideo, "frames", r.Frames, maxOffset); err != nil {
			return VideoSpec{}, err
		}
		if r.Tolerance != nil {
			return VideoSpec{}, fmt.Errorf("%w: a %q window's \"tolerance\" applies to \"seconds\" offsets only", ErrBadSpec, KindVideo)
		}
	default:
		if len(r.Seconds) == 0 || len(r.Seconds) > maxOffsets {
			return VideoSpec{}, fmt.Errorf("%w: %q window: \"seconds\" needs 1 to %d entries, it has %d", ErrBadSpec, KindVideo, maxOffsets, len(r.Seconds))
		}
		s.Seconds = make([]float64, len(r.Seconds))
		for i, n := range r.Seconds {
			if s.Seconds[i], err = parseFloat(KindVideo, fmt.Sprintf("seconds[%d]", i), n, -maxSeconds, maxSeconds); err != nil {
				return VideoSpec{}, err
			}
		}
		if r.Tolerance != nil {
			if s.Tolerance, err = parseFloat(KindVideo, "tolerance", *r.Tolerance, 0, maxTolerance); err != nil {
				return VideoSpec{}, err
			}
			if s.Tolerance == 0 {
				return VideoSpec{}, fmt.Errorf("%w: %q window: \"tolerance\" must be above 0; leave it out for the nearest frame", ErrBadSpec, KindVideo)
			}
		}
	}
	if r.Size != nil {
		hw, err := parseInts(KindVideo, "size", r.Size, maxSize)
		if err != nil || len(hw) != 2 || hw[0] < 1 || hw[1] < 1 {
			return VideoSpec{}, fmt.Errorf("%w: %q window: \"size\" is [H, W], each 1 to %d", ErrBadSpec, KindVideo, maxSize)
		}
		s.Size = []int32{int32(hw[0]), int32(hw[1])}
	}
	if s.Normalize, err = parseNormalize(r.Normalize, r.DType); err != nil {
		return VideoSpec{}, err
	}
	return s, nil
}

// parseNormalize reads "normalize" and "dtype": three means and three
// stds that pixnorm takes (ValidMean, ValidStd: finite in float32, the
// stds above 0 there, so the division is by a positive float32), and a
// dtype only with normalize (default float32).
func parseNormalize(r *rawNormalize, dtype *string) (*pixnorm.Normalize, error) {
	if r == nil {
		if dtype != nil {
			return nil, fmt.Errorf("%w: %q window: \"dtype\" applies to normalised frames only; give \"normalize\": {\"mean\": [r, g, b], \"std\": [r, g, b]} too (without it frames are uint8)", ErrBadSpec, KindVideo)
		}
		return nil, nil
	}
	n := &pixnorm.Normalize{DType: pixnorm.Float32}
	for _, f := range []struct {
		name string
		in   []json.Number
		out  *[3]float64
	}{{"mean", r.Mean, &n.Mean}, {"std", r.Std, &n.Std}} {
		if len(f.in) != 3 {
			return nil, fmt.Errorf("%w: %q window: \"normalize\".%q needs 3 numbers (R, G, B), it has %d", ErrBadSpec, KindVideo, f.name, len(f.in))
		}
		for c, num := range f.in {
			v, err := strconv.ParseFloat(num.String(), 64)
			switch {
			case err != nil || !pixnorm.ValidMean(v):
				return nil, fmt.Errorf("%w: %q window: \"normalize\".%s[%d] is %s; it must be a finite number (in float32's range)", ErrBadSpec, KindVideo, f.name, c, num)
			case f.name == "std" && !pixnorm.ValidStd(v):
				return nil, fmt.Errorf("%w: %q window: \"normalize\".std[%d] is %s; it must be above 0 (in float32)", ErrBadSpec, KindVideo, c, num)
			}
			if v == 0 {
				v = 0 // no negative zero
			}
			f.out[c] = v
		}
	}
	if dtype != nil {
		if n.DType = pixnorm.DType(*dtype); !n.DType.Normalized() {
			return nil, fmt.Errorf("%w: %q window: \"dtype\" is %q; it must be %q, %q or %q", ErrBadSpec, KindVideo, *dtype, pixnorm.Float16, pixnorm.BFloat16, pixnorm.Float32)
		}
	}
	return n, nil
}

// Canonical is the spec's canonical JSON: fields in the order offsets;
// pad omitted when true; integers as integers.
func (s RowsSpec) Canonical() json.RawMessage {
	var b strings.Builder
	b.WriteString(`{"offsets":`)
	writeInts(&b, s.Offsets)
	if !s.Pad {
		b.WriteString(`,"pad":false`)
	}
	b.WriteString("}")
	return json.RawMessage(b.String())
}

// Canonical is the spec's canonical JSON: frames or seconds, size,
// normalize and dtype (dtype always written with normalize, omitted
// without), pad (omitted when true), tolerance (omitted when 0); integers
// as integers, floats in Go's shortest 'g' form.
func (s VideoSpec) Canonical() json.RawMessage {
	var b strings.Builder
	if s.Frames != nil {
		b.WriteString(`{"frames":`)
		writeInts(&b, s.Frames)
	} else {
		b.WriteString(`{"seconds":[`)
		for i, f := range s.Seconds {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(formatFloat(f))
		}
		b.WriteString("]")
	}
	if s.Size != nil {
		fmt.Fprintf(&b, `,"size":[%d,%d]`, s.Size[0], s.Size[1])
	}
	if n := s.Normalize; n != nil {
		b.WriteString(`,"normalize":{"mean":`)
		writeFloats(&b, n.Mean[:])
		b.WriteString(`,"std":`)
		writeFloats(&b, n.Std[:])
		b.WriteString(`},"dtype":"` + string(n.DType) + `"`)
	}
	if !s.Pad {
		b.WriteString(`,"pad":false`)
	}
	if s.Tolerance != 0 {
		b.WriteString(`,"tolerance":` + formatFloat(s.Tolerance))
	}
	b.WriteString("}")
	return json.RawMessage(b.String())
}

func writeInts(b *strings.Builder, v []int64) {
	b.WriteByte('[')
	for i, k := range v {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatInt(k, 10))
	}
	b.WriteByte(']')
}

func writeFloats(b *strings.Builder, v []float64) {
	b.WriteByte('[')
	for i, f := range v {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(formatFloat(f))
	}
	b.WriteByte(']')
}

func formatFloat(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }
