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
func validateBatch(schema *arrow.Schema, rec arrow.RecordBatch) error {
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
		if a.NullN() > 0 {
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
