package episodes

import (
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/weftdata/weft/video"
	"github.com/weftdata/weft/video/pixnorm"
)

// Windows is a video window column (WindowType) read in place: per row
// (sample) the segment and PTS of each of its T frames, and the segments
// its rows introduce. ReadWindows checks the column once; what it holds
// then indexes without further checks. Its slices alias the array's
// buffers: they are valid while the array is, and read only.
type Windows struct {
	// T is the number of frames per window; Rows the number of windows.
	T, Rows int
	// Segment[r*T+j] is the index in Segments of the segment that decodes
	// frame j of row r, and PTS[r*T+j] the frame's PTS (the track
	// timescale), by which the segment's decoded frames are matched.
	Segment []int32
	PTS     []int64
	// Segments are the segments the rows introduce, in row order: the
	// step's segments when the column is a whole step (the indexes of
	// Segment count from the first segment of its first row).
	Segments []WindowSegment
}

// Frame is row's frame j: the index in w.Segments of the segment that
// decodes it and its PTS.
func (w *Windows) Frame(row, j int) (segment int, pts int64) {
	k := row*w.T + j
	return int(w.Segment[k]), w.PTS[k]
}

// WindowSegment is one decode segment of a video window column
// (SegmentType): a decoder configuration and the access units a new
// decoder is fed, and what its frames become.
type WindowSegment struct {
	// Media is the sha256 hex of the media object the units come from.
	Media string
	Codec video.Codec
	// Config is the avcC/hvcC/av1C box body, without its 8-byte header.
	Config []byte
	// Width and Height are the coded frame size; Timescale the track's
	// ticks per second.
	Width, Height int
	Timescale     int
	// Units are the access units in decode order, with their DTS and PTS
	// (same length as Units).
	Units   [][]byte
	DTS     []int64
	UnitPTS []int64
	// Size is the [H, W] to resize decoded frames to; nil keeps them.
	Size []int32
	// Normalize is the frames' normalisation (its Mean and Std hold the
	// float32 numbers the wire carries, so Mean32 and Std32 return them
	// exactly); nil for uint8 frames.
	Normalize *pixnorm.Normalize
}

// OutSize is the size of the segment's frames as delivered: Size when it
// has one, else the coded size.
func (s *WindowSegment) OutSize() (h, w int) {
	if s.Size != nil {
		return int(s.Size[0]), int(s.Size[1])
	}
	return s.Height, s.Width
}

// ReadWindows reads a video window column of WindowType (VIDEO-CONTRACT
// section 5), sliced or not. An array of another layout, with a null
// where the writer writes none (a window, a frame, a segment or any of
// its fields but size, mean, std and dtype), with mean, std and dtype not
// all null or all set, a dtype that is not a normalised one
// (pixnorm.DType.Normalized), a segment whose units, dts and unit_pts differ in
// length, or a frame naming a segment the rows do not introduce, is
// refused with ErrBadWindowColumn; no array makes it panic or read out of
// range.
func ReadWindows(arr arrow.Array) (*Windows, error) {
	st, ok := arr.(*array.Struct)
	if !ok {
		return nil, badWindow("a %s array, not a struct", arr.DataType())
	}
	if err := array.Validate(arr); err != nil {
		return nil, badWindow("%v", err)
	}
	typ := st.DataType().(*arrow.StructType)
	field := func(n string) arrow.Array {
		if i, ok := typ.FieldIdx(n); ok {
			return st.Field(i)
		}
		return nil
	}
	sl, ok1 := field("segment").(*array.FixedSizeList)
	pl, ok2 := field("pts").(*array.FixedSizeList)
	ls, ok3 := field("segments").(*array.List)
	if !ok1 || !ok2 || !ok3 {
		return nil, badWindow("type %s: not struct<segment: fixed_size_list<int32>, pts: fixed_size_list<int64>, segments: list<struct>>", typ)
	}
	segIdx, ok1 := sl.ListValues().(*array.Int32)
	pts, ok2 := pl.ListValues().(*array.Int64)
	vals, ok3 := ls.ListValues().(*array.Struct)
	if !ok1 || !ok2 || !ok3 {
		return nil, badWindow("type %s: not struct<segment: fixed_size_list<int32>, pts: fixed_size_list<int64>, segments: list<struct>>", typ)
	}
	w := &Windows{T: int(sl.DataType().(*arrow.FixedSizeListType).Len()), Rows: st.Len()}
	if pt := int(pl.DataType().(*arrow.FixedSizeListType).Len()); pt != w.T {
		return nil, badWindow("%d segment indexes and %d pts per window", w.T, pt)
	}
	if st.NullN() > 0 || sl.NullN() > 0 || pl.NullN() > 0 || ls.NullN() > 0 {
		return nil, badWindow("a null window")
	}
	var err error
	if w.Segment, err = fixedValues(sl, segIdx, segIdx.Int32Values(), "segment index"); err != nil {
		return nil, err
	}
	if w.PTS, err = fixedValues(pl, pts, pts.Int64Values(), "pts"); err != nil {
		return nil, err
	}
	// The segments the rows introduce: the list values their offsets
	// cover.
	var lo, hi int64
	if w.Rows > 0 {
		lo, _ = ls.ValueOffsets(0)
		_, hi = ls.ValueOffsets(w.Rows - 1)
	}
	if lo < 0 || hi < lo || hi > int64(vals.Len()) {
		return nil, badWindow("segments [%d, %d) of %d", lo, hi, vals.Len())
	}
	sc, err := readSegmentColumns(vals)
	if err != nil {
		return nil, err
	}
	if nullIn(vals, int(lo), int(hi)) {
		return nil, badWindow("a null segment")
	}
	w.Segments = make([]WindowSegment, hi-lo)
	for i := range w.Segments {
		if w.Segments[i], err = sc.segment(int(lo) + i); err != nil {
			return nil, fmt.Errorf("%w: segment %d: %w", ErrBadWindowColumn, i, err)
		}
	}
	for k, s := range w.Segment {
		if s < 0 || int(s) >= len(w.Segments) {
			return nil, badWindow("row %d frame %d names segment %d of the %d its rows introduce (a slice of a step? read the whole step)", k/max(w.T, 1), k%max(w.T, 1), s, len(w.Segments))
		}
	}
	return w, nil
}

func badWindow(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrBadWindowColumn, fmt.Sprintf(format, args...))
}

// fixedValues is the values l's rows cover (all of them, in row order),
// checked to lie in values and to hold no null.
func fixedValues[T any](l *array.FixedSizeList, values arrow.Array, all []T, name string) ([]T, error) {
	if l.Len() == 0 {
		return nil, nil
	}
	lo, _ := l.ValueOffsets(0)
	_, hi := l.ValueOffsets(l.Len() - 1)
	if lo < 0 || hi < lo || hi > int64(len(all)) || hi > int64(values.Len()) {
		return nil, badWindow("%s values [%d, %d) of %d", name, lo, hi, values.Len())
	}
	if nullIn(values, int(lo), int(hi)) {
		return nil, badWindow("a null %s", name)
	}
	return all[lo:hi], nil
}

// nullIn says whether a has a null in [lo, hi).
func nullIn(a arrow.Array, lo, hi int) bool {
	if a.NullN() == 0 {
		return false
	}
	for i := lo; i < hi; i++ {
		if a.IsNull(i) {
			return true
		}
	}
	return false
}

// segmentColumns are the fields of a video window's segments.
type segmentColumns struct {
	media, codec          *array.String
	config                *array.Binary
	width, height, tscale *array.Int32
	units, dts, unitPTS   *array.List
	unitBytes             *array.Binary
	dtsValues, ptsValues  *array.Int64
	size                  *array.FixedSizeList // nil when the type has no size field
	sizeValues            *array.Int32
	mean, std             *array.FixedSizeList // nil when the type has no normalisation fields
	meanValues, stdValues *array.Float32
	dtype                 *array.String
}

func readSegmentColumns(vals *array.Struct) (*segmentColumns, error) {
	typ := vals.DataType().(*arrow.StructType)
	field := func(n string) arrow.Array {
		if i, ok := typ.FieldIdx(n); ok {
			return vals.Field(i)
		}
		return nil
	}
	bad := func() error { return badWindow("segments of type %s, not %s", typ, SegmentType) }
	ok := true
	c := &segmentColumns{
		media:   as[*array.String](field("media"), &ok),
		codec:   as[*array.String](field("codec"), &ok),
		config:  as[*array.Binary](field("config"), &ok),
		width:   as[*array.Int32](field("width"), &ok),
		height:  as[*array.Int32](field("height"), &ok),
		tscale:  as[*array.Int32](field("timescale"), &ok),
		units:   as[*array.List](field("units"), &ok),
		dts:     as[*array.List](field("dts"), &ok),
		unitPTS: as[*array.List](field("unit_pts"), &ok),
	}
	if !ok {
		return nil, bad()
	}
	c.unitBytes = as[*array.Binary](c.units.ListValues(), &ok)
	c.dtsValues = as[*array.Int64](c.dts.ListValues(), &ok)
	c.ptsValues = as[*array.Int64](c.unitPTS.ListValues(), &ok)
	// size, mean, std and dtype are nullable; a type without them (the
	// layout before them) reads as all null.
	if f := field("size"); f != nil {
		if c.size = as[*array.FixedSizeList](f, &ok); ok && fixedLen(c.size) == 2 {
			c.sizeValues = as[*array.Int32](c.size.ListValues(), &ok)
		} else {
			ok = false
		}
	}
	if mean, std, dtype := field("mean"), field("std"), field("dtype"); mean != nil || std != nil || dtype != nil {
		c.mean = as[*array.FixedSizeList](mean, &ok)
		c.std = as[*array.FixedSizeList](std, &ok)
		c.dtype = as[*array.String](dtype, &ok)
		if ok && fixedLen(c.mean) == 3 && fixedLen(c.std) == 3 {
			c.meanValues = as[*array.Float32](c.mean.ListValues(), &ok)
			c.stdValues = as[*array.Float32](c.std.ListValues(), &ok)
		} else {
			ok = false
		}
	}
	if !ok {
		return nil, bad()
	}
	return c, nil
}

// as is a as a T; ok becomes false when it is not one (or nil).
func as[T arrow.Array](a arrow.Array, ok *bool) T {
	t, is := a.(T)
	*ok = *ok && is
	return t
}

func fixedLen(l *array.FixedSizeList) int32 { return l.DataType().(*arrow.FixedSizeListType).Len() }

// segment reads and checks the segment at index i of the segments'
// values; its error says what is wrong, the caller gives it its kind.
func (c *segmentColumns) segment(i int) (WindowSegment, error) {
	for _, f := range []struct {
		name string
		a    arrow.Array
	}{{"media", c.media}, {"codec", c.codec}, {"config", c.config}, {"width", c.width}, {"height", c.height},
		{"timescale", c.tscale}, {"units", c.units}, {"dts", c.dts}, {"unit_pts", c.unitPTS}} {
		if f.a.IsNull(i) {
			return WindowSegment{}, fmt.Errorf("a null %s", f.name)
		}
	}
	s := WindowSegment{
		Media:     c.media.Value(i),
		Codec:     video.Codec(c.codec.Value(i)),
		Config:    c.config.Value(i),
		Width:     int(c.width.Value(i)),
		Height:    int(c.height.Value(i)),
		Timescale: int(c.tscale.Value(i)),
	}
	ua, ub := c.units.ValueOffsets(i)
	da, db := c.dts.ValueOffsets(i)
	pa, pb := c.unitPTS.ValueOffsets(i)
	switch {
	case ua < 0 || ub < ua || ub > int64(c.unitBytes.Len()),
		da < 0 || db < da || db > int64(c.dtsValues.Len()),
		pa < 0 || pb < pa || pb > int64(c.ptsValues.Len()):
		return s, errors.New("units, dts or unit_pts out of their values")
	case ub-ua != db-da || ub-ua != pb-pa:
		return s, fmt.Errorf("%d units, %d dts and %d unit_pts", ub-ua, db-da, pb-pa)
	case nullIn(c.unitBytes, int(ua), int(ub)), nullIn(c.dtsValues, int(da), int(db)), nullIn(c.ptsValues, int(pa), int(pb)):
		return s, errors.New("a null unit, dts or unit_pts")
	}
	s.Units = make([][]byte, 0, ub-ua)
	for j := ua; j < ub; j++ {
		s.Units = append(s.Units, c.unitBytes.Value(int(j)))
	}
	s.DTS = c.dtsValues.Int64Values()[da:db]
	s.UnitPTS = c.ptsValues.Int64Values()[pa:pb]
	if c.size != nil && c.size.IsValid(i) {
		a, b := c.size.ValueOffsets(i)
		if a < 0 || b != a+2 || b > int64(c.sizeValues.Len()) || nullIn(c.sizeValues, int(a), int(b)) {
			return s, errors.New("a size that is not [H, W]")
		}
		s.Size = c.sizeValues.Int32Values()[a:b]
	}
	if c.dtype == nil {
		return s, nil
	}
	set := c.dtype.IsValid(i)
	if c.mean.IsValid(i) != set || c.std.IsValid(i) != set {
		return s, errors.New("mean, std and dtype not all null or all set")
	}
	if !set {
		return s, nil
	}
	n := &pixnorm.Normalize{DType: pixnorm.DType(c.dtype.Value(i))}
	if !n.DType.Normalized() {
		return s, fmt.Errorf("dtype %q (%s, %s or %s)", n.DType, pixnorm.Float32, pixnorm.Float16, pixnorm.BFloat16)
	}
	for _, f := range []struct {
		l   *array.FixedSizeList
		v   *array.Float32
		out *[3]float64
	}{{c.mean, c.meanValues, &n.Mean}, {c.std, c.stdValues, &n.Std}} {
		a, b := f.l.ValueOffsets(i)
		if a < 0 || b != a+3 || b > int64(f.v.Len()) || nullIn(f.v, int(a), int(b)) {
			return s, errors.New("a mean or std that is not 3 float32")
		}
		for k, x := range f.v.Float32Values()[a:b] {
			f.out[k] = float64(x)
		}
	}
	s.Normalize = n
	return s, nil
}
