package tables

import (
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/weftdata/weft/errdefs"
)

// validateBatch checks what the Parquet writer would trip over or write
// wrong in an appended batch (arrays that arrive over the wire are only as
// sound as the client that built them): dictionary indices outside their
// dictionary, list and binary offsets that are not ascending or run past
// their data, children shorter than their parent, and null entries of a
// fixed_size_list, which the store's Parquet writer cannot hold. It returns
// ErrBadData naming the column (a path for nested columns).
func validateBatch(schema *arrow.Schema, rec arrow.RecordBatch) (err error) {
	// arrow-go's own validators index buffers before checking them; an
	// array bad enough to make them panic is just as much bad input.
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: an array is malformed (%v)", ErrBadData, r)
		}
	}()
	for i, f := range schema.Fields() {
		if err := validateArray(f.Name, rec.Column(i)); err != nil {
			return err
		}
	}
	return nil
}

func validateArray(path string, arr arrow.Array) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: column %s: %s", ErrBadData, errdefs.Quote(path), fmt.Sprintf(format, args...))
	}
	if err := checkOffsets(arr); err != nil {
		return bad("%v", err)
	}
	if v, ok := arr.(interface{ ValidateFull() error }); ok {
		if err := v.ValidateFull(); err != nil {
			return bad("%v", err)
		}
	}
	switch a := arr.(type) {
	case *array.Dictionary:
		idx, dict := a.Indices(), a.Dictionary()
		n := int64(dict.Len())
		for i := range idx.Len() {
			if idx.IsNull(i) {
				continue
			}
			if k, ok := indexAt(idx, i); !ok || k < 0 || k >= n {
				return bad("dictionary index %s at row %d is outside the dictionary of %d values", idx.ValueStr(i), i, n)
			}
		}
		return validateArray(path+".dictionary", dict)
	case *array.FixedSizeList:
		// pqarrow cannot write a null entry of a fixed_size_list of a
		// non-list type ("lists with non-zero length null components").
		if _, listElem := a.DataType().(*arrow.FixedSizeListType).Elem().(*arrow.ListType); a.NullN() > 0 && !listElem {
			for i := range a.Len() {
				if a.IsNull(i) {
					return bad("row %d is a null %s; the store cannot hold null fixed_size_list entries: send a list of nulls instead, or use a list type", i, a.DataType())
				}
			}
		}
		return validateArray(path+"."+a.DataType().(*arrow.FixedSizeListType).ElemField().Name, a.ListValues())
	case array.ListLike: // list, large_list, map (their offsets were checked by ValidateFull)
		name := "item"
		if f, ok := a.DataType().(interface{ ElemField() arrow.Field }); ok {
			name = f.ElemField().Name
		}
		return validateArray(path+"."+name, a.ListValues())
	case *array.Struct:
		st := a.DataType().(*arrow.StructType)
		for k := range a.NumField() {
			child := a.Field(k)
			if child.Len() < a.Len() {
				return bad("field %s has %d values for %d rows", errdefs.Quote(st.Field(k).Name), child.Len(), a.Len())
			}
			if err := validateArray(path+"."+st.Field(k).Name, child); err != nil {
				return err
			}
		}
	}
	return nil
}

// indexAt is index i of a dictionary's integer indices.
func indexAt(idx arrow.Array, i int) (int64, bool) {
	switch x := idx.(type) {
	case *array.Int8:
		return int64(x.Value(i)), true
	case *array.Int16:
		return int64(x.Value(i)), true
	case *array.Int32:
		return int64(x.Value(i)), true
	case *array.Int64:
		return x.Value(i), true
	case *array.Uint8:
		return int64(x.Value(i)), true
	case *array.Uint16:
		return int64(x.Value(i)), true
	case *array.Uint32:
		return int64(x.Value(i)), true
	case *array.Uint64:
		v := x.Value(i)
		return int64(v), v <= math.MaxInt64
	}
	return 0, false
}

// checkOffsets checks that the offsets of a binary, string, list, large list
// or map array are ascending and stay within its data or child, which
// arrow-go's ValidateFull assumes before it looks.
func checkOffsets(arr arrow.Array) error {
	d := arr.Data()
	var offsets []int64
	var limit int64
	n := d.Offset() + d.Len() + 1
	bufs := d.Buffers()
	switch arr.DataType().ID() {
	case arrow.STRING, arrow.BINARY, arrow.LIST, arrow.MAP:
		if len(bufs) < 2 || bufs[1] == nil {
			return nil
		}
		o := arrow.Int32Traits.CastFromBytes(bufs[1].Bytes())
		if len(o) < n {
			return fmt.Errorf("%d offsets for %d rows", len(o), d.Len())
		}
		offsets = make([]int64, 0, d.Len()+1)
		for _, v := range o[d.Offset():n] {
			offsets = append(offsets, int64(v))
		}
	case arrow.LARGE_STRING, arrow.LARGE_BINARY, arrow.LARGE_LIST:
		if len(bufs) < 2 || bufs[1] == nil {
			return nil
		}
		o := arrow.Int64Traits.CastFromBytes(bufs[1].Bytes())
		if len(o) < n {
			return fmt.Errorf("%d offsets for %d rows", len(o), d.Len())
		}
		offsets = o[d.Offset():n]
	default:
		return nil
	}
	switch arr.DataType().ID() {
	case arrow.STRING, arrow.BINARY, arrow.LARGE_STRING, arrow.LARGE_BINARY:
		if len(bufs) > 2 && bufs[2] != nil {
			limit = int64(bufs[2].Len())
		}
	default:
		if ch := d.Children(); len(ch) > 0 {
			limit = int64(ch[0].Len())
		}
	}
	for i := 1; i < len(offsets); i++ {
		if offsets[i] < offsets[i-1] {
			return fmt.Errorf("offsets descend at row %d", i-1)
		}
	}
	if len(offsets) > 0 && (offsets[0] < 0 || offsets[len(offsets)-1] > limit) {
		return fmt.Errorf("offsets run from %d to %d, outside the %d values there are", offsets[0], offsets[len(offsets)-1], limit)
	}
	return nil
}
