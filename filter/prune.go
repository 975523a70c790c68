package filter

import (
	"cmp"
	"math"
	"slices"
	"strings"
)

// ColumnStats are what a piece of a table (a Parquet row group or page)
// says of one column: its rows and nulls, and the least and greatest
// non-null values. Min and Max hold int64 for bool (0/1), signed
// integers, uint8–uint32, date32 (days) and timestamp (the column's unit)
// columns; uint64 for uint64; float64 for float columns (NaN excluded);
// string for string and binary columns.
type ColumnStats struct {
	Rows      int64
	Nulls     int64 // -1: unknown
	HasMinMax bool
	Min, Max  any
}

// Stats gives a column's statistics; ok false when there are none (the
// filter then assumes any value).
type Stats func(column string) (st ColumnStats, ok bool)

// outcomes is a set of three-valued results: which a predicate can take on
// some row.
type outcomes uint8

const (
	oFalse outcomes = 1 << vFalse
	oTrue  outcomes = 1 << vTrue
	oUnk   outcomes = 1 << vUnknown
	oAll            = oFalse | oTrue | oUnk
)

// MayMatch reports whether a row with the given statistics can make the
// filter true. False means no row can: the piece need not be read.
func (f *Filter) MayMatch(st Stats) bool { return f.root.may(st)&oTrue != 0 }

func combine(a, b outcomes, op func(x, y byte) byte) outcomes {
	var out outcomes
	for x := vFalse; x <= vUnknown; x++ {
		if a&(1<<x) == 0 {
			continue
		}
		for y := vFalse; y <= vUnknown; y++ {
			if b&(1<<y) != 0 {
				out |= 1 << op(x, y)
			}
		}
	}
	return out
}

func (n *clogical) may(st Stats) outcomes {
	out := n.terms[0].may(st)
	op := and3
	if n.or {
		op = or3
	}
	for _, t := range n.terms[1:] {
		out = combine(out, t.may(st), op)
	}
	return out
}

func (n *cnot) may(st Stats) outcomes {
	x := n.x.may(st)
	var out outcomes
	for v := vFalse; v <= vUnknown; v++ {
		if x&(1<<v) != 0 {
			out |= 1 << not3(v)
		}
	}
	return out
}

func (n *cnull) may(st Stats) outcomes {
	s, ok := st(n.col)
	if !ok || s.Nulls < 0 {
		return oFalse | oTrue
	}
	var out outcomes
	isNull, notNull := oTrue, oFalse
	if n.not {
		isNull, notNull = oFalse, oTrue
	}
	if s.Nulls > 0 {
		out |= isNull
	}
	if s.Nulls < s.Rows {
		out |= notNull
	}
	return out
}

func (l *cleaf) may(st Stats) outcomes {
	s, ok := st(l.col)
	if !ok {
		return oAll
	}
	var out outcomes
	if s.Nulls != 0 {
		out |= oUnk
	}
	if s.Nulls >= 0 && s.Nulls >= s.Rows {
		return out // every value is null
	}
	if !s.HasMinMax {
		return out | oTrue | oFalse
	}
	var t, f bool
	switch l.dom {
	case domInt:
		lo, ok1 := s.Min.(int64)
		hi, ok2 := s.Max.(int64)
		if !ok1 || !ok2 {
			return oAll
		}
		t, f = mayRange(l.op, l.ints, lo, hi, nil)
	case domUint:
		lo, ok1 := s.Min.(uint64)
		hi, ok2 := s.Max.(uint64)
		if !ok1 || !ok2 {
			return oAll
		}
		t, f = mayRange(l.op, l.uints, lo, hi, nil)
	case domFloat:
		lo, hi := toFloat(s.Min), toFloat(s.Max)
		if math.IsNaN(lo) || math.IsNaN(hi) {
			return oAll
		}
		t, f = mayRange(l.op, l.floats, lo, hi, nil)
		if l.nan {
			// NaN is outside min/max: it makes every comparison false,
			// and !=, NOT IN, NOT BETWEEN true.
			f = true
			switch l.op {
			case opNe, opNotIn, opNotBetween:
				t = true
			}
		}
	case domString:
		lo, ok1 := s.Min.(string)
		hi, ok2 := s.Max.(string)
		if !ok1 || !ok2 {
			return oAll
		}
		t, f = mayRange(l.op, l.strs, lo, hi, strings.HasPrefix)
	}
	if t {
		out |= oTrue
	}
	if f {
		out |= oFalse
	}
	return out
}

// toFloat is a statistic as a float64: NaN for a type that is not a number.
func toFloat(v any) float64 {
	switch v := v.(type) {
	case float64:
		return v
	case int64:
		return float64(v)
	case uint64:
		return float64(v)
	}
	return math.NaN()
}

// mayRange says whether op with lits can be true, and can be false, for
// some value in [lo, hi] (values compared with Go's operators).
func mayRange[T cmp.Ordered](op opKind, lits []T, lo, hi T, hasPrefix func(T, T) bool) (canTrue, canFalse bool) {
	one := lo == hi
	switch op {
	case opEq, opNe:
		c := lits[0]
		t, f := lo <= c && c <= hi, !(one && lo == c)
		if op == opNe {
			t, f = f, t
		}
		return t, f
	case opLt:
		return lo < lits[0], hi >= lits[0]
	case opLe:
		return lo <= lits[0], hi > lits[0]
	case opGt:
		return hi > lits[0], lo <= lits[0]
	case opGe:
		return hi >= lits[0], lo < lits[0]
	case opIn, opNotIn:
		t := false
		for _, c := range lits { // sorted
			if lo <= c && c <= hi {
				t = true
				break
			}
		}
		f := !(one && slices.Contains(lits, lo))
		if op == opNotIn {
			t, f = f, t
		}
		return t, f
	case opBetween, opNotBetween:
		a, b := lits[0], lits[1]
		t := hi >= a && lo <= b && a <= b
		f := lo < a || hi > b || a > b
		if op == opNotBetween {
			t, f = f, t
		}
		return t, f
	case opPrefix, opNotPrefix:
		// Values with prefix p lie in [p, p+"\xff…"): they can occur
		// when that interval meets [lo, hi]; every value has it when lo
		// and hi both do (everything between them does too).
		p := lits[0]
		t := hi >= p && (lo <= p || hasPrefix(lo, p))
		f := !(hasPrefix(lo, p) && hasPrefix(hi, p))
		if op == opNotPrefix {
			t, f = f, t
		}
		return t, f
	}
	return true, true
}
