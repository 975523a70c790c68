package importers

import (
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// MetaHFArrowType is set on a column whose Arrow type the import changed
// into one a table stores (see hfStoreType): the type datasets wrote.
const MetaHFArrowType = "weft.hf.arrow_type"

// hfStoreType is dt with the types a table does not store replaced by
// the nearest it does: timestamp[s] by timestamp[ms] (values x 1000),
// date64 by timestamp[ms] (the same milliseconds), duration by int64 (the
// same count), large_list by list (offsets that fit int32); inside
// structs, lists and fixed-size lists too. changed says whether any was.
func hfStoreType(dt arrow.DataType) (out arrow.DataType, changed bool) {
	switch t := dt.(type) {
	case *arrow.TimestampType:
		if t.Unit == arrow.Second {
			return &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: t.TimeZone}, true
		}
	case *arrow.Date64Type:
		return &arrow.TimestampType{Unit: arrow.Millisecond}, true
	case *arrow.DurationType:
		return arrow.PrimitiveTypes.Int64, true
	case *arrow.LargeListType:
		f := t.ElemField()
		f.Type, _ = hfStoreType(f.Type)
		return arrow.ListOfField(f), true
	case *arrow.ListType:
		f := t.ElemField()
		var ch bool
		if f.Type, ch = hfStoreType(f.Type); ch {
			return arrow.ListOfField(f), true
		}
	case *arrow.FixedSizeListType:
		f := t.ElemField()
		var ch bool
		if f.Type, ch = hfStoreType(f.Type); ch {
			return arrow.FixedSizeListOfField(t.Len(), f), true
		}
	case *arrow.StructType:
		fields := t.Fields()
		for i := range fields {
			var ch bool
			if fields[i].Type, ch = hfStoreType(fields[i].Type); ch {
				changed = true
			}
		}
		if changed {
			return arrow.StructOf(fields...), true
		}
	}
	return dt, false
}

// hfConvertData converts d (of a type hfStoreType changes) to type to.
func hfConvertData(d arrow.ArrayData, to arrow.DataType) (arrow.ArrayData, error) {
	bufs := d.Buffers()
	switch from := d.DataType().(type) {
	case *arrow.TimestampType:
		if from.Unit != arrow.Second {
			break
		}
		vals := arrow.Int64Traits.CastFromBytes(bufs[1].Bytes())
		out := make([]int64, len(vals))
		valid := func(i int) bool {
			return bufs[0] == nil || bitutil.BitIsSet(bufs[0].Bytes(), i)
		}
		for i := d.Offset(); i < d.Offset()+d.Len(); i++ {
			if !valid(i) {
				continue
			}
			v := vals[i]
			if v > math.MaxInt64/1000 || v < math.MinInt64/1000 {
				return nil, fmt.Errorf("timestamp %d s does not fit in milliseconds", v)
			}
			out[i] = v * 1000
		}
		return array.NewData(to, d.Len(), []*memory.Buffer{bufs[0], memory.NewBufferBytes(arrow.Int64Traits.CastToBytes(out))}, nil, d.NullN(), d.Offset()), nil
	case *arrow.Date64Type, *arrow.DurationType:
		return array.NewData(to, d.Len(), bufs, nil, d.NullN(), d.Offset()), nil
	case *arrow.LargeListType:
		offs := arrow.Int64Traits.CastFromBytes(bufs[1].Bytes())
		if len(offs) < d.Offset()+d.Len()+1 {
			return nil, fmt.Errorf("a large_list has %d offsets for %d rows", len(offs), d.Offset()+d.Len())
		}
		out := make([]int32, d.Offset()+d.Len()+1)
		for i := range out {
			if offs[i] < 0 || offs[i] > math.MaxInt32 {
				return nil, fmt.Errorf("a large_list offset %d does not fit a list (2^31 values)", offs[i])
			}
			out[i] = int32(offs[i])
		}
		child, err := hfConvertChild(d.Children()[0], to.(*arrow.ListType).Elem())
		if err != nil {
			return nil, err
		}
		defer child.Release()
		return array.NewData(to, d.Len(), []*memory.Buffer{bufs[0], memory.NewBufferBytes(arrow.Int32Traits.CastToBytes(out))}, []arrow.ArrayData{child}, d.NullN(), d.Offset()), nil
	case *arrow.ListType, *arrow.FixedSizeListType:
		child, err := hfConvertChild(d.Children()[0], to.(arrow.ListLikeType).Elem())
		if err != nil {
			return nil, err
		}
		defer child.Release()
		return array.NewData(to, d.Len(), bufs, []arrow.ArrayData{child}, d.NullN(), d.Offset()), nil
	case *arrow.StructType:
		toFields := to.(*arrow.StructType).Fields()
		children := make([]arrow.ArrayData, len(d.Children()))
		for i, c := range d.Children() {
			var err error
			if children[i], err = hfConvertChild(c, toFields[i].Type); err != nil {
				for _, done := range children[:i] {
					done.Release()
				}
				return nil, err
			}
		}
		out := array.NewData(to, d.Len(), bufs, children, d.NullN(), d.Offset())
		for _, c := range children {
			c.Release()
		}
		return out, nil
	}
	return nil, fmt.Errorf("cannot convert %s to %s", d.DataType(), to)
}

// hfConvertChild converts c if its type changes, else retains it.
func hfConvertChild(c arrow.ArrayData, to arrow.DataType) (arrow.ArrayData, error) {
	if arrow.TypeEqual(c.DataType(), to) {
		c.Retain()
		return c, nil
	}
	return hfConvertData(c, to)
}
