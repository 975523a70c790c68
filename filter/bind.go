package filter

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/weftdata/weft/errdefs"
)

// Filter is an Expr checked against a table schema, ready to evaluate on
// that table's batches (Eval) and to test against its statistics
// (MayMatch). It is immutable and safe for concurrent use.
type Filter struct {
	expr    *Expr
	root    cnode
	columns []string
}

// String is the canonical text of the filter (Expr.String).
func (f *Filter) String() string { return f.expr.text }

// Columns are the columns the filter reads, in schema order.
func (f *Filter) Columns() []string { return f.columns }

// Compile parses text within lim and binds it to schema.
func Compile(text string, schema *arrow.Schema, lim Limits) (*Filter, error) {
	e, err := Parse(text, lim)
	if err != nil {
		return nil, err
	}
	return Bind(e, schema)
}

// Bind type-checks e against schema: every column exists and has a type
// filters support (doc.go, "Types"), every literal fits its column.
func Bind(e *Expr, schema *arrow.Schema) (*Filter, error) {
	b := &binder{schema: schema, used: map[string]bool{}}
	root, err := b.bind(e.root)
	if err != nil {
		return nil, err
	}
	var cols []string
	for _, f := range schema.Fields() {
		if b.used[f.Name] {
			cols = append(cols, f.Name)
		}
	}
	return &Filter{expr: e, root: root, columns: cols}, nil
}

type binder struct {
	schema *arrow.Schema
	used   map[string]bool
}

func (b *binder) bind(n node) (cnode, error) {
	switch n := n.(type) {
	case *logical:
		out := &clogical{or: n.or}
		for _, t := range n.terms {
			c, err := b.bind(t)
			if err != nil {
				return nil, err
			}
			out.terms = append(out.terms, c)
		}
		return out, nil
	case *notNode:
		x, err := b.bind(n.x)
		if err != nil {
			return nil, err
		}
		return &cnot{x: x}, nil
	case *isNull:
		if _, _, err := b.column(n.col); err != nil {
			return nil, err
		}
		return &cnull{col: n.col.name, not: n.not}, nil
	case *boolCol:
		_, dt, err := b.column(n.col)
		if err != nil {
			return nil, err
		}
		if dt.ID() != arrow.BOOL {
			return nil, fmt.Errorf("%w: at byte %d: column %s is %s, not bool; a column alone is a predicate only when it is bool (compare it: %s = …)", ErrType, n.col.p, errdefs.Quote(n.col.name), dt, n.col)
		}
		return b.leaf(n.col, dt, opEq, []literal{{p: n.col.p, kind: litBool, b: true}})
	case *compare:
		_, dt, err := b.column(n.col)
		if err != nil {
			return nil, err
		}
		return b.leaf(n.col, dt, cmpOps[n.op], []literal{n.lit})
	case *inList:
		_, dt, err := b.column(n.col)
		if err != nil {
			return nil, err
		}
		op := opIn
		if n.not {
			op = opNotIn
		}
		return b.leaf(n.col, dt, op, n.lits)
	case *between:
		_, dt, err := b.column(n.col)
		if err != nil {
			return nil, err
		}
		op := opBetween
		if n.not {
			op = opNotBetween
		}
		return b.leaf(n.col, dt, op, []literal{n.lo, n.hi})
	case *prefix:
		_, dt, err := b.column(n.col)
		if err != nil {
			return nil, err
		}
		if domainOf(dt) != domString {
			return nil, fmt.Errorf("%w: at byte %d: column %s is %s; a prefix match (LIKE 'x%%', starts_with) needs a string or binary column", ErrType, n.p, errdefs.Quote(n.col.name), dt)
		}
		op := opPrefix
		if n.not {
			op = opNotPrefix
		}
		return b.leaf(n.col, dt, op, []literal{{p: n.p, kind: litString, text: n.prefix}})
	}
	return nil, fmt.Errorf("%w: unknown node %T", ErrSyntax, n)
}

func (b *binder) column(c column) (int, arrow.DataType, error) {
	idx := b.schema.FieldIndices(c.name)
	if len(idx) == 0 {
		names := make([]string, 0, b.schema.NumFields())
		for _, f := range b.schema.Fields() {
			names = append(names, f.Name)
		}
		return 0, nil, fmt.Errorf("%w: at byte %d: %s is not a column; columns are: %s", ErrType, c.p, errdefs.Quote(c.name), errdefs.List(names))
	}
	dt := b.schema.Field(idx[0]).Type
	if domainOf(dt) == domNone {
		return 0, nil, fmt.Errorf("%w: at byte %d: column %s has type %s, which filters do not support (bool, integers, float32/64, string, binary, date32, timestamp)", ErrType, c.p, errdefs.Quote(c.name), dt)
	}
	b.used[c.name] = true
	return idx[0], dt, nil
}

type opKind int

const (
	opEq opKind = iota
	opNe
	opLt
	opLe
	opGt
	opGe
	opIn
	opNotIn
	opBetween
	opNotBetween
	opPrefix
	opNotPrefix
)

var cmpOps = map[string]opKind{"=": opEq, "!=": opNe, "<": opLt, "<=": opLe, ">": opGt, ">=": opGe}

// domain is how a leaf compares values.
type domain int

const (
	domNone   domain = iota
	domInt           // int64: signed ints, uint8–32, bool (0/1), date32 (days), timestamp (its unit)
	domUint          // uint64 columns with an integral literal
	domFloat         // float64: float columns, and integer columns against fractional literals
	domString        // bytes
)

func domainOf(dt arrow.DataType) domain {
	switch dt.ID() {
	case arrow.BOOL, arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.UINT8, arrow.UINT16, arrow.UINT32,
		arrow.DATE32, arrow.TIMESTAMP:
		return domInt
	case arrow.UINT64:
		return domUint
	case arrow.FLOAT32, arrow.FLOAT64:
		return domFloat
	case arrow.STRING, arrow.LARGE_STRING, arrow.BINARY, arrow.LARGE_BINARY:
		return domString
	}
	return domNone
}

// leaf binds a predicate on one column with its literals.
func (b *binder) leaf(c column, dt arrow.DataType, op opKind, lits []literal) (cnode, error) {
	l := &cleaf{col: c.name, dt: dt, op: op, dom: domainOf(dt), nan: dt.ID() == arrow.FLOAT32 || dt.ID() == arrow.FLOAT64}
	bad := func(lit literal, want string) error {
		return fmt.Errorf("%w: at byte %d: column %s is %s; expected %s, found %s", ErrType, lit.p, errdefs.Quote(c.name), dt, want, lit)
	}
	switch dt.ID() {
	case arrow.BOOL:
		if op != opEq && op != opNe && op != opIn && op != opNotIn {
			return nil, fmt.Errorf("%w: at byte %d: column %s is bool; compare it with = or != (or IN)", ErrType, c.p, errdefs.Quote(c.name))
		}
		for _, lit := range lits {
			if lit.kind != litBool {
				return nil, bad(lit, "TRUE or FALSE")
			}
			l.ints = append(l.ints, b2i(lit.b))
		}
	case arrow.DATE32, arrow.TIMESTAMP:
		for _, lit := range lits {
			v, err := temporal(lit, dt)
			if err != nil {
				return nil, err
			}
			if v == nil {
				what := "DATE 'YYYY-MM-DD'"
				if dt.ID() == arrow.TIMESTAMP {
					what = "TIMESTAMP 'YYYY-MM-DD hh:mm:ss[.f][Z|±hh:mm]' or DATE 'YYYY-MM-DD'"
				}
				return nil, bad(lit, what)
			}
			l.ints = append(l.ints, *v)
		}
	case arrow.STRING, arrow.LARGE_STRING, arrow.BINARY, arrow.LARGE_BINARY:
		for _, lit := range lits {
			if lit.kind != litString {
				return nil, bad(lit, "a 'string'")
			}
			l.strs = append(l.strs, lit.text)
		}
	default: // numbers
		nums := make([]number, len(lits))
		for i, lit := range lits {
			if lit.kind != litNumber {
				return nil, bad(lit, "a number")
			}
			n, err := parseNumber(lit)
			if err != nil {
				return nil, err
			}
			nums[i] = n
		}
		switch l.dom {
		case domInt:
			if all(nums, func(n number) bool { return n.isInt }) {
				for _, n := range nums {
					l.ints = append(l.ints, n.i)
				}
			} else {
				l.dom = domFloat
			}
		case domUint:
			if all(nums, func(n number) bool { return n.isUint }) {
				for _, n := range nums {
					l.uints = append(l.uints, n.u)
				}
			} else {
				l.dom = domFloat
			}
		}
		if l.dom == domFloat {
			for _, n := range nums {
				l.floats = append(l.floats, n.f)
			}
		}
	}
	l.prepare()
	return l, nil
}

func all[T any](s []T, f func(T) bool) bool {
	for _, v := range s {
		if !f(v) {
			return false
		}
	}
	return true
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

type number struct {
	isInt, isUint bool
	i             int64
	u             uint64
	f             float64
}

func parseNumber(lit literal) (number, error) {
	text := lit.text
	if lit.neg {
		text = "-" + text
	}
	var n number
	f, err := strconv.ParseFloat(text, 64)
	if err != nil && !strings.Contains(err.Error(), "range") {
		return n, fmt.Errorf("%w: at byte %d: expected a number, found %s", ErrSyntax, lit.p, text)
	}
	if math.IsInf(f, 0) {
		return n, fmt.Errorf("%w: at byte %d: number %s is out of range", ErrType, lit.p, text)
	}
	n.f = f
	if i, err := strconv.ParseInt(text, 10, 64); err == nil {
		n.isInt, n.i = true, i
	}
	if u, err := strconv.ParseUint(text, 10, 64); err == nil {
		n.isUint, n.u = true, u
	}
	return n, nil
}

var tsLayouts = []string{
	"2006-01-02T15:04:05.999999999Z07:00", "2006-01-02 15:04:05.999999999Z07:00",
	"2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999",
	"2006-01-02T15:04Z07:00", "2006-01-02 15:04Z07:00", "2006-01-02T15:04", "2006-01-02 15:04",
}

// temporal converts a literal to a date32 or timestamp column's int64
// value; nil when the literal is of another kind.
func temporal(lit literal, dt arrow.DataType) (*int64, error) {
	if lit.kind != litDate && lit.kind != litTimestamp && lit.kind != litString {
		return nil, nil
	}
	var t time.Time
	isDate := false
	if d, err := time.Parse("2006-01-02", lit.text); err == nil && lit.kind != litTimestamp {
		t, isDate = d, true
	} else if lit.kind == litDate {
		return nil, fmt.Errorf("%w: at byte %d: expected a date 'YYYY-MM-DD', found %s", ErrType, lit.p, quoteString(lit.text))
	} else {
		ok := false
		for _, layout := range tsLayouts {
			if ts, err := time.Parse(layout, lit.text); err == nil {
				t, ok = ts, true
				break
			}
		}
		if !ok {
			return nil, fmt.Errorf("%w: at byte %d: expected a timestamp 'YYYY-MM-DD hh:mm:ss[.fraction][Z|±hh:mm]', found %s", ErrType, lit.p, quoteString(lit.text))
		}
	}
	sec, nsec := t.Unix(), int64(t.Nanosecond())
	if dt.ID() == arrow.DATE32 {
		if !isDate {
			return nil, fmt.Errorf("%w: at byte %d: column is date32; expected a date 'YYYY-MM-DD', found %s", ErrType, lit.p, lit)
		}
		v := sec / 86400
		return &v, nil
	}
	var per int64
	switch dt.(*arrow.TimestampType).Unit {
	case arrow.Second:
		per = 1
	case arrow.Millisecond:
		per = 1e3
	case arrow.Microsecond:
		per = 1e6
	default:
		per = 1e9
	}
	step := int64(1e9) / per
	if nsec%step != 0 {
		return nil, fmt.Errorf("%w: at byte %d: %s is finer than the column's unit (%s)", ErrType, lit.p, lit, dt)
	}
	if sec > math.MaxInt64/per || sec < math.MinInt64/per {
		return nil, fmt.Errorf("%w: at byte %d: %s is out of range for %s", ErrType, lit.p, lit, dt)
	}
	v := sec*per + nsec/step
	return &v, nil
}

// cleaf is a predicate on one column: op with literals in its domain.
type cleaf struct {
	col    string
	dt     arrow.DataType
	op     opKind
	dom    domain
	nan    bool // the column is float: it may hold NaN
	ints   []int64
	uints  []uint64
	floats []float64
	strs   []string
	// IN lists, as sets
	intSet   map[int64]struct{}
	uintSet  map[uint64]struct{}
	floatSet map[float64]struct{}
	strSet   map[string]struct{}
}

func (l *cleaf) prepare() {
	if l.op != opIn && l.op != opNotIn {
		return
	}
	switch l.dom {
	case domInt:
		l.intSet = set(l.ints)
		slices.Sort(l.ints)
	case domUint:
		l.uintSet = set(l.uints)
		slices.Sort(l.uints)
	case domFloat:
		l.floatSet = set(l.floats)
		slices.Sort(l.floats)
	case domString:
		l.strSet = set(l.strs)
		slices.Sort(l.strs)
	}
}

func set[T comparable](s []T) map[T]struct{} {
	m := make(map[T]struct{}, len(s))
	for _, v := range s {
		m[v] = struct{}{}
	}
	return m
}

// pred returns the leaf's test of one non-null value of domain T.
func pred[T cmp.Ordered](op opKind, lits []T, in map[T]struct{}, hasPrefix func(T, T) bool) func(T) bool {
	switch op {
	case opEq:
		c := lits[0]
		return func(v T) bool { return v == c }
	case opNe:
		c := lits[0]
		return func(v T) bool { return v != c }
	case opLt:
		c := lits[0]
		return func(v T) bool { return v < c }
	case opLe:
		c := lits[0]
		return func(v T) bool { return v <= c }
	case opGt:
		c := lits[0]
		return func(v T) bool { return v > c }
	case opGe:
		c := lits[0]
		return func(v T) bool { return v >= c }
	case opIn:
		if len(lits) <= 8 {
			return func(v T) bool { return slices.Contains(lits, v) }
		}
		return func(v T) bool { _, ok := in[v]; return ok }
	case opNotIn:
		if len(lits) <= 8 {
			return func(v T) bool { return !slices.Contains(lits, v) }
		}
		return func(v T) bool { _, ok := in[v]; return !ok }
	case opBetween:
		lo, hi := lits[0], lits[1]
		return func(v T) bool { return lo <= v && v <= hi }
	case opNotBetween:
		lo, hi := lits[0], lits[1]
		return func(v T) bool { return !(lo <= v && v <= hi) }
	case opPrefix:
		p := lits[0]
		return func(v T) bool { return hasPrefix(v, p) }
	case opNotPrefix:
		p := lits[0]
		return func(v T) bool { return !hasPrefix(v, p) }
	}
	panic("filter: unknown op")
}
