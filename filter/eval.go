package filter

import (
	"fmt"
	"strings"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// Three-valued results, one byte per row.
const (
	vFalse   byte = 0
	vTrue    byte = 1
	vUnknown byte = 2
)

// cnode is a bound node: it evaluates to one three-valued result per row,
// and says which results a row group with given statistics can give.
type cnode interface {
	eval(rec arrow.RecordBatch, out []byte) error
	may(st Stats) outcomes
}

// Eval evaluates the filter on rec, which must hold (at least) the
// filter's columns, by name, with the types it was bound to. keep[i]
// reports whether row i matches (the filter is true; false and unknown
// rows do not). keep is reused when it is long enough.
func (f *Filter) Eval(rec arrow.RecordBatch, keep []bool) ([]bool, error) {
	n := int(rec.NumRows())
	out := make([]byte, n)
	if err := f.root.eval(rec, out); err != nil {
		return nil, err
	}
	if cap(keep) < n {
		keep = make([]bool, n)
	}
	keep = keep[:n]
	for i, v := range out {
		keep[i] = v == vTrue
	}
	return keep, nil
}

type clogical struct {
	or    bool
	terms []cnode
}

func (n *clogical) eval(rec arrow.RecordBatch, out []byte) error {
	if err := n.terms[0].eval(rec, out); err != nil {
		return err
	}
	tmp := make([]byte, len(out))
	for _, t := range n.terms[1:] {
		if err := t.eval(rec, tmp); err != nil {
			return err
		}
		if n.or {
			for i, v := range tmp {
				out[i] = or3(out[i], v)
			}
		} else {
			for i, v := range tmp {
				out[i] = and3(out[i], v)
			}
		}
	}
	return nil
}

func and3(a, b byte) byte {
	if a == vFalse || b == vFalse {
		return vFalse
	}
	if a == vUnknown || b == vUnknown {
		return vUnknown
	}
	return vTrue
}

func or3(a, b byte) byte {
	if a == vTrue || b == vTrue {
		return vTrue
	}
	if a == vUnknown || b == vUnknown {
		return vUnknown
	}
	return vFalse
}

func not3(a byte) byte {
	switch a {
	case vTrue:
		return vFalse
	case vFalse:
		return vTrue
	}
	return vUnknown
}

type cnot struct{ x cnode }

func (n *cnot) eval(rec arrow.RecordBatch, out []byte) error {
	if err := n.x.eval(rec, out); err != nil {
		return err
	}
	for i, v := range out {
		out[i] = not3(v)
	}
	return nil
}

type cnull struct {
	col string
	not bool
}

func (n *cnull) eval(rec arrow.RecordBatch, out []byte) error {
	a, err := columnOf(rec, n.col)
	if err != nil {
		return err
	}
	isNull, notNull := vTrue, vFalse
	if n.not {
		isNull, notNull = vFalse, vTrue
	}
	if a.NullN() == 0 {
		fill(out, notNull)
		return nil
	}
	for i := range out {
		if a.IsNull(i) {
			out[i] = isNull
		} else {
			out[i] = notNull
		}
	}
	return nil
}

func fill(out []byte, v byte) {
	for i := range out {
		out[i] = v
	}
}

func columnOf(rec arrow.RecordBatch, name string) (arrow.Array, error) {
	idx := rec.Schema().FieldIndices(name)
	if len(idx) == 0 {
		return nil, fmt.Errorf("%w: the batch lacks column %q that the filter reads", ErrType, name)
	}
	return rec.Column(idx[0]), nil
}

func (l *cleaf) eval(rec arrow.RecordBatch, out []byte) error {
	a, err := columnOf(rec, l.col)
	if err != nil {
		return err
	}
	if !arrow.TypeEqual(a.DataType(), l.dt) {
		return fmt.Errorf("%w: column %q is %s in the batch, %s in the filter's schema", ErrType, l.col, a.DataType(), l.dt)
	}
	switch l.dom {
	case domInt:
		p := pred(l.op, l.ints, l.intSet, nil)
		switch a := a.(type) {
		case *array.Boolean:
			for i := range out {
				if a.IsNull(i) {
					out[i] = vUnknown
				} else {
					out[i] = b3(p(b2i(a.Value(i))))
				}
			}
		case *array.Int8:
			evalInts(a, a.Int8Values(), p, out)
		case *array.Int16:
			evalInts(a, a.Int16Values(), p, out)
		case *array.Int32:
			evalInts(a, a.Int32Values(), p, out)
		case *array.Int64:
			evalInts(a, a.Int64Values(), p, out)
		case *array.Uint8:
			evalInts(a, a.Uint8Values(), p, out)
		case *array.Uint16:
			evalInts(a, a.Uint16Values(), p, out)
		case *array.Uint32:
			evalInts(a, a.Uint32Values(), p, out)
		case *array.Date32:
			evalInts(a, a.Date32Values(), p, out)
		case *array.Timestamp:
			evalInts(a, a.TimestampValues(), p, out)
		default:
			return fmt.Errorf("%w: column %q: unexpected array %T", ErrType, l.col, a)
		}
	case domUint:
		p := pred(l.op, l.uints, l.uintSet, nil)
		evalVals(a, a.(*array.Uint64).Uint64Values(), p, out)
	case domFloat:
		p := pred(l.op, l.floats, l.floatSet, nil)
		switch a := a.(type) {
		case *array.Float32:
			evalFloats(a, a.Float32Values(), p, out)
		case *array.Float64:
			evalFloats(a, a.Float64Values(), p, out)
		case *array.Int8:
			evalFloats(a, a.Int8Values(), p, out)
		case *array.Int16:
			evalFloats(a, a.Int16Values(), p, out)
		case *array.Int32:
			evalFloats(a, a.Int32Values(), p, out)
		case *array.Int64:
			evalFloats(a, a.Int64Values(), p, out)
		case *array.Uint8:
			evalFloats(a, a.Uint8Values(), p, out)
		case *array.Uint16:
			evalFloats(a, a.Uint16Values(), p, out)
		case *array.Uint32:
			evalFloats(a, a.Uint32Values(), p, out)
		case *array.Uint64:
			evalFloats(a, a.Uint64Values(), p, out)
		default:
			return fmt.Errorf("%w: column %q: unexpected array %T", ErrType, l.col, a)
		}
	case domString:
		p := pred(l.op, l.strs, l.strSet, strings.HasPrefix)
		switch a := a.(type) {
		case *array.String:
			evalStrings(a, a.Value, p, out)
		case *array.LargeString:
			evalStrings(a, a.Value, p, out)
		case *array.Binary:
			evalStrings(a, func(i int) string { return bytesString(a.Value(i)) }, p, out)
		case *array.LargeBinary:
			evalStrings(a, func(i int) string { return bytesString(a.Value(i)) }, p, out)
		default:
			return fmt.Errorf("%w: column %q: unexpected array %T", ErrType, l.col, a)
		}
	}
	return nil
}

// bytesString views b as a string without copying; the string does not
// outlive the comparison.
func bytesString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

func b3(b bool) byte {
	if b {
		return vTrue
	}
	return vFalse
}

type integer interface {
	~int8 | ~int16 | ~int32 | ~int64 | ~uint8 | ~uint16 | ~uint32 | ~uint64
}

func evalInts[T integer](a arrow.Array, vals []T, p func(int64) bool, out []byte) {
	if a.NullN() == 0 {
		for i, v := range vals[:len(out)] {
			out[i] = b3(p(int64(v)))
		}
		return
	}
	for i, v := range vals[:len(out)] {
		if a.IsNull(i) {
			out[i] = vUnknown
		} else {
			out[i] = b3(p(int64(v)))
		}
	}
}

func evalVals[T any](a arrow.Array, vals []T, p func(T) bool, out []byte) {
	for i, v := range vals[:len(out)] {
		if a.IsNull(i) {
			out[i] = vUnknown
		} else {
			out[i] = b3(p(v))
		}
	}
}

func evalFloats[T integer | ~float32 | ~float64](a arrow.Array, vals []T, p func(float64) bool, out []byte) {
	nulls := a.NullN() > 0
	for i, v := range vals[:len(out)] {
		if nulls && a.IsNull(i) {
			out[i] = vUnknown
		} else {
			out[i] = b3(p(float64(v)))
		}
	}
}

func evalStrings(a arrow.Array, value func(int) string, p func(string) bool, out []byte) {
	for i := range out {
		if a.IsNull(i) {
			out[i] = vUnknown
		} else {
			out[i] = b3(p(value(i)))
		}
	}
}
