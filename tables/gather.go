package tables

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Span is a run of consecutive rows [Start, Start+N) of source Src: a
// gather copies the spans of its output in order. Rows are logical indices
// of the source array (its offset not included).
type Span struct {
	Src   int32
	Start int64
	N     int64
}

// AppendSpan adds row `row` of source src to spans, extending the last span
// when the row follows it.
func AppendSpan(spans []Span, src int32, row int64) []Span {
	if k := len(spans) - 1; k >= 0 && spans[k].Src == src && spans[k].Start+spans[k].N == row {
		spans[k].N++
		return spans
	}
	return append(spans, Span{Src: src, Start: row, N: 1})
}

// gatherArray builds an array of type dt that is the concatenation of spans of
// srcs (each of type dt), in one pass and one copy of the values. Buffers
// it fills completely come from bufs, which need not zero them; the
// fallback path allocates from mem. Fixed-width types, booleans, (large) binary and strings,
// fixed-size lists, (large) lists, maps and structs are copied directly;
// other types (dictionaries, unions, views, run-end encoded, extensions) go
// through array.Concatenate of slices.
func gatherArray(mem, bufs memory.Allocator, dt arrow.DataType, srcs []arrow.ArrayData, spans []Span) (arrow.ArrayData, error) {
	var total int64
	for _, s := range spans {
		total += s.N
	}
	if !directType(dt) {
		if total == 0 {
			a := array.MakeArrayOfNull(mem, dt, 0)
			defer a.Release()
			d := a.Data()
			d.Retain()
			return d, nil
		}
		return gatherSlow(mem, srcs, spans)
	}
	g := gatherer{mem: bufs}
	defer g.releaseAll()
	d, err := g.gather(dt, srcs, spans, total)
	if err != nil {
		return nil, err
	}
	return d, nil
}

// directType reports whether gather copies dt itself (recursively).
func directType(dt arrow.DataType) bool {
	switch t := dt.(type) {
	case *arrow.NullType, *arrow.BooleanType,
		*arrow.BinaryType, *arrow.StringType, *arrow.LargeBinaryType, *arrow.LargeStringType:
		return true
	case *arrow.FixedSizeListType:
		return directType(t.Elem())
	case *arrow.ListType:
		return directType(t.Elem())
	case *arrow.LargeListType:
		return directType(t.Elem())
	case *arrow.MapType:
		return directType(t.Elem())
	case *arrow.StructType:
		for _, f := range t.Fields() {
			if !directType(f.Type) {
				return false
			}
		}
		return true
	case arrow.ExtensionType, *arrow.DictionaryType:
		return false
	case arrow.FixedWidthDataType:
		return t.BitWidth() >= 8 && t.BitWidth()%8 == 0 && dt.Layout().Buffers[1].Kind == arrow.KindFixedWidth && len(dt.Layout().Buffers) == 2
	}
	return false
}

// gatherer tracks the buffers it allocates, to release them on every path.
type gatherer struct {
	mem  memory.Allocator
	bufs []*memory.Buffer
}

func (g *gatherer) buffer(n int64) *memory.Buffer {
	b := memory.NewResizableBuffer(g.mem)
	b.Resize(int(n))
	g.bufs = append(g.bufs, b)
	return b
}

// releaseAll drops the gatherer's references; the arrays built keep theirs.
func (g *gatherer) releaseAll() {
	for _, b := range g.bufs {
		b.Release()
	}
}

func (g *gatherer) gather(dt arrow.DataType, srcs []arrow.ArrayData, spans []Span, total int64) (arrow.ArrayData, error) {
	if dt.ID() == arrow.NULL {
		return array.NewData(dt, int(total), []*memory.Buffer{nil}, nil, int(total), 0), nil
	}
	validity, nulls := g.validity(srcs, spans, total)
	switch t := dt.(type) {
	case *arrow.BooleanType:
		out := g.buffer(bitutil.BytesForBits(total))
		pos := 0
		for _, s := range spans {
			src := srcs[s.Src]
			bitutil.CopyBitmap(src.Buffers()[1].Bytes(), src.Offset()+int(s.Start), int(s.N), out.Bytes(), pos)
			pos += int(s.N)
		}
		return array.NewData(dt, int(total), []*memory.Buffer{validity, out}, nil, nulls, 0), nil

	case *arrow.BinaryType, *arrow.StringType:
		offsets, values, err := g.binary(srcs, spans, total, false)
		if err != nil {
			return nil, err
		}
		return array.NewData(dt, int(total), []*memory.Buffer{validity, offsets, values}, nil, nulls, 0), nil

	case *arrow.LargeBinaryType, *arrow.LargeStringType:
		offsets, values, err := g.binary(srcs, spans, total, true)
		if err != nil {
			return nil, err
		}
		return array.NewData(dt, int(total), []*memory.Buffer{validity, offsets, values}, nil, nulls, 0), nil

	case *arrow.FixedSizeListType:
		size := int64(t.Len())
		kids := make([]arrow.ArrayData, len(srcs))
		for i, s := range srcs {
			kids[i] = s.Children()[0]
		}
		ks := make([]Span, len(spans))
		for i, s := range spans {
			ks[i] = Span{Src: s.Src, Start: (int64(srcs[s.Src].Offset()) + s.Start) * size, N: s.N * size}
		}
		child, err := g.gather(t.Elem(), kids, ks, total*size)
		if err != nil {
			return nil, err
		}
		defer child.Release()
		return array.NewData(dt, int(total), []*memory.Buffer{validity}, []arrow.ArrayData{child}, nulls, 0), nil

	case *arrow.ListType, *arrow.MapType, *arrow.LargeListType:
		large := dt.ID() == arrow.LARGE_LIST
		var elem arrow.DataType
		switch t := t.(type) {
		case *arrow.ListType:
			elem = t.Elem()
		case *arrow.MapType:
			elem = t.Elem()
		case *arrow.LargeListType:
			elem = t.Elem()
		}
		offsets, ks, childLen, err := g.listOffsets(srcs, spans, total, large)
		if err != nil {
			return nil, err
		}
		kids := make([]arrow.ArrayData, len(srcs))
		for i, s := range srcs {
			kids[i] = s.Children()[0]
		}
		child, err := g.gather(elem, kids, ks, childLen)
		if err != nil {
			return nil, err
		}
		defer child.Release()
		return array.NewData(dt, int(total), []*memory.Buffer{validity, offsets}, []arrow.ArrayData{child}, nulls, 0), nil

	case *arrow.StructType:
		children := make([]arrow.ArrayData, t.NumFields())
		defer func() {
			for _, c := range children {
				if c != nil {
					c.Release()
				}
			}
		}()
		ks := make([]Span, len(spans))
		for i, s := range spans {
			ks[i] = Span{Src: s.Src, Start: int64(srcs[s.Src].Offset()) + s.Start, N: s.N}
		}
		for f := range children {
			kids := make([]arrow.ArrayData, len(srcs))
			for i, s := range srcs {
				kids[i] = s.Children()[f]
			}
			var err error
			if children[f], err = g.gather(t.Field(f).Type, kids, ks, total); err != nil {
				return nil, err
			}
		}
		return array.NewData(dt, int(total), []*memory.Buffer{validity}, children, nulls, 0), nil

	case arrow.FixedWidthDataType:
		w := int64(t.BitWidth() / 8)
		out := g.buffer(total * w)
		dst := out.Bytes()
		pos := int64(0)
		for _, s := range spans {
			src := srcs[s.Src]
			from := (int64(src.Offset()) + s.Start) * w
			copy(dst[pos:pos+s.N*w], src.Buffers()[1].Bytes()[from:from+s.N*w])
			pos += s.N * w
		}
		return array.NewData(dt, int(total), []*memory.Buffer{validity, out}, nil, nulls, 0), nil
	}
	return nil, fmt.Errorf("gather: unsupported type %s", dt)
}

// validity builds the output validity bitmap, or nil when no source that a
// span reads can hold nulls.
func (g *gatherer) validity(srcs []arrow.ArrayData, spans []Span, total int64) (*memory.Buffer, int) {
	any := false
	for _, s := range spans {
		src := srcs[s.Src]
		if src.NullN() != 0 && src.Buffers()[0] != nil {
			any = true
			break
		}
	}
	if !any {
		return nil, 0
	}
	out := g.buffer(bitutil.BytesForBits(total))
	dst := out.Bytes()
	pos := 0
	for _, s := range spans {
		src := srcs[s.Src]
		if bm := src.Buffers()[0]; bm != nil && src.NullN() != 0 {
			bitutil.CopyBitmap(bm.Bytes(), src.Offset()+int(s.Start), int(s.N), dst, pos)
		} else {
			bitutil.SetBitsTo(dst, int64(pos), s.N, true)
		}
		pos += int(s.N)
	}
	return out, int(total) - bitutil.CountSetBits(dst, 0, int(total))
}

// offsetAt reads offset i of a (large) offsets buffer.
func offsetAt(b []byte, i int64, large bool) int64 {
	if large {
		return int64(binary.LittleEndian.Uint64(b[i*8:]))
	}
	return int64(int32(binary.LittleEndian.Uint32(b[i*4:])))
}

func putOffset(b []byte, i, v int64, large bool) {
	if large {
		binary.LittleEndian.PutUint64(b[i*8:], uint64(v))
	} else {
		binary.LittleEndian.PutUint32(b[i*4:], uint32(int32(v)))
	}
}

// binary gathers the offsets and values of binary-like arrays.
func (g *gatherer) binary(srcs []arrow.ArrayData, spans []Span, total int64, large bool) (*memory.Buffer, *memory.Buffer, error) {
	width := int64(4)
	if large {
		width = 8
	}
	var size int64
	for _, s := range spans {
		src := srcs[s.Src]
		offs := src.Buffers()[1].Bytes()
		i := int64(src.Offset()) + s.Start
		size += offsetAt(offs, i+s.N, large) - offsetAt(offs, i, large)
	}
	if !large && size > math.MaxInt32 {
		return nil, nil, fmt.Errorf("%w: %d bytes in one binary column exceed Arrow's 2 GiB limit for one batch; use more ranks or a smaller batch", ErrTooLarge, size)
	}
	offsets := g.buffer((total + 1) * width)
	values := g.buffer(size)
	ob, vb := offsets.Bytes(), values.Bytes()
	var row, pos int64
	for _, s := range spans {
		src := srcs[s.Src]
		offs := src.Buffers()[1].Bytes()
		var data []byte
		if src.Buffers()[2] != nil {
			data = src.Buffers()[2].Bytes()
		}
		i := int64(src.Offset()) + s.Start
		first := offsetAt(offs, i, large)
		last := offsetAt(offs, i+s.N, large)
		for k := int64(0); k < s.N; k++ {
			putOffset(ob, row+k, pos+offsetAt(offs, i+k, large)-first, large)
		}
		copy(vb[pos:], data[first:last])
		row += s.N
		pos += last - first
	}
	putOffset(ob, total, pos, large)
	return offsets, values, nil
}

// listOffsets gathers the offsets of list-like arrays and returns the spans
// of their children to gather.
func (g *gatherer) listOffsets(srcs []arrow.ArrayData, spans []Span, total int64, large bool) (*memory.Buffer, []Span, int64, error) {
	width := int64(4)
	if large {
		width = 8
	}
	offsets := g.buffer((total + 1) * width)
	ob := offsets.Bytes()
	ks := make([]Span, 0, len(spans))
	var row, pos int64
	for _, s := range spans {
		src := srcs[s.Src]
		offs := src.Buffers()[1].Bytes()
		i := int64(src.Offset()) + s.Start
		first := offsetAt(offs, i, large)
		last := offsetAt(offs, i+s.N, large)
		for k := int64(0); k < s.N; k++ {
			putOffset(ob, row+k, pos+offsetAt(offs, i+k, large)-first, large)
		}
		if last > first {
			ks = append(ks, Span{Src: s.Src, Start: first, N: last - first})
		}
		row += s.N
		pos += last - first
	}
	if !large && pos > math.MaxInt32 {
		return nil, nil, 0, fmt.Errorf("%w: %d list elements in one column exceed Arrow's limit for one batch", ErrTooLarge, pos)
	}
	putOffset(ob, total, pos, large)
	return offsets, ks, pos, nil
}

// gatherSlow concatenates slices: for types gather does not copy itself.
func gatherSlow(mem memory.Allocator, srcs []arrow.ArrayData, spans []Span) (arrow.ArrayData, error) {
	arrs := make([]arrow.Array, len(srcs))
	for i, s := range srcs {
		arrs[i] = array.MakeFromData(s)
	}
	parts := make([]arrow.Array, len(spans))
	defer func() {
		for _, a := range arrs {
			a.Release()
		}
		for _, p := range parts {
			if p != nil {
				p.Release()
			}
		}
	}()
	for i, s := range spans {
		parts[i] = array.NewSlice(arrs[s.Src], s.Start, s.Start+s.N)
	}
	out, err := array.Concatenate(parts, mem)
	if err != nil {
		return nil, fmt.Errorf("gather: %w", err)
	}
	d := out.Data()
	d.Retain()
	out.Release()
	return d, nil
}
