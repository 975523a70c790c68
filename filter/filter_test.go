package filter

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/weftdata/weft/errdefs"
)

var testSchema = arrow.NewSchema([]arrow.Field{
	{Name: "i", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "f", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "b", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	{Name: "d", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
	{Name: "t", Type: &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}, Nullable: true},
	{Name: "u", Type: arrow.PrimitiveTypes.Uint64, Nullable: true},
	{Name: "small", Type: arrow.PrimitiveTypes.Int8, Nullable: true},
	{Name: "l", Type: arrow.ListOf(arrow.PrimitiveTypes.Int64), Nullable: true},
}, nil)

// testBatch: 6 rows.
//
//	i    f     s       b      d           t                     u      small
//	1    1.5   "abc"   true   2024-01-01  2024-01-01T00:00:00   1      -1
//	2    NaN   "abd"   false  2024-01-02  2024-01-01T00:00:01   2^63   5
//	null null  null    null   null        null                  null   null
//	4    -0.0  ""      true   2023-12-31  2023-12-31T23:59:59.5 0      127
//	5    1e300 "b"     false  1970-01-01  1970-01-01T00:00:00   7      0
//	6    2.5   "ab"    true   2024-01-01  2024-01-01T00:00:00   8      -128
func testBatch(t *testing.T, mem memory.Allocator) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, testSchema)
	defer b.Release()
	valid := []bool{true, true, false, true, true, true}
	b.Field(0).(*array.Int64Builder).AppendValues([]int64{1, 2, 0, 4, 5, 6}, valid)
	b.Field(1).(*array.Float64Builder).AppendValues([]float64{1.5, math.NaN(), 0, math.Copysign(0, -1), 1e300, 2.5}, valid)
	b.Field(2).(*array.StringBuilder).AppendValues([]string{"abc", "abd", "", "", "b", "ab"}, valid)
	b.Field(3).(*array.BooleanBuilder).AppendValues([]bool{true, false, false, true, false, true}, valid)
	day := func(s string) arrow.Date32 { return arrow.Date32FromTime(mustTime(s + "T00:00:00Z")) }
	b.Field(4).(*array.Date32Builder).AppendValues([]arrow.Date32{day("2024-01-01"), day("2024-01-02"), 0, day("2023-12-31"), 0, day("2024-01-01")}, valid)
	ms := func(s string) arrow.Timestamp { return arrow.Timestamp(mustTime(s).UnixMilli()) }
	b.Field(5).(*array.TimestampBuilder).AppendValues([]arrow.Timestamp{ms("2024-01-01T00:00:00Z"), ms("2024-01-01T00:00:01Z"), 0, ms("2023-12-31T23:59:59.5Z"), 0, ms("2024-01-01T00:00:00Z")}, valid)
	b.Field(6).(*array.Uint64Builder).AppendValues([]uint64{1, 1 << 63, 0, 0, 7, 8}, valid)
	b.Field(7).(*array.Int8Builder).AppendValues([]int8{-1, 5, 0, 127, 0, -128}, valid)
	lb := b.Field(8).(*array.ListBuilder)
	for range 6 {
		lb.AppendNull()
	}
	return b.NewRecordBatch()
}

func TestEval(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rec := testBatch(t, mem)
	defer rec.Release()
	for _, c := range []struct {
		filter string
		want   []int
	}{
		{"i = 2", []int{1}},
		{"i != 2", []int{0, 3, 4, 5}},
		{"2 < i", []int{3, 4, 5}},
		{"i >= 4 AND i <= 5", []int{3, 4}},
		{"i BETWEEN 2 AND 4", []int{1, 3}},
		{"i NOT BETWEEN 2 AND 4", []int{0, 4, 5}},
		{"i IN (1, 5, 9)", []int{0, 4}},
		{"i NOT IN (1, 5, 9)", []int{1, 3, 5}},
		{"i IS NULL", []int{2}},
		{"i IS NOT NULL", []int{0, 1, 3, 4, 5}},
		{"NOT i = 2", []int{0, 3, 4, 5}},
		{"NOT (i = 2 OR i IS NULL)", []int{0, 3, 4, 5}},
		{"i = 2 OR i IS NULL", []int{1, 2}},
		{"i > 1.5", []int{1, 3, 4, 5}},
		{"i = 1.5", nil},
		{"f > 1", []int{0, 4, 5}},
		{"f != 1.5", []int{1, 3, 4, 5}}, // NaN != x is true
		{"NOT f > 1", []int{1, 3}},      // NaN > 1 is false
		{"f = 0", []int{3}},             // -0.0 = 0
		{"f IN (1.5, 2.5)", []int{0, 5}},
		{"f NOT IN (1.5)", []int{1, 3, 4, 5}},
		{"f BETWEEN -1 AND 2", []int{0, 3}},
		{"f IS NULL", []int{2}},
		{"s = 'abc'", []int{0}},
		{"s LIKE 'ab%'", []int{0, 1, 5}},
		{"starts_with(s, 'ab')", []int{0, 1, 5}},
		{"s NOT LIKE 'ab%'", []int{3, 4}},
		{"s LIKE '%'", []int{0, 1, 3, 4, 5}},
		{"s < 'ab'", []int{3}},
		{"s >= 'b'", []int{4}},
		{"b", []int{0, 3, 5}},
		{"NOT b", []int{1, 4}},
		{"b = FALSE", []int{1, 4}},
		{"b != TRUE", []int{1, 4}},
		{"d = DATE '2024-01-01'", []int{0, 5}},
		{"d >= '2024-01-01'", []int{0, 1, 5}},
		{"d < DATE '1970-01-02'", []int{4}},
		{"t > TIMESTAMP '2023-12-31 23:59:59'", []int{0, 1, 3, 5}},
		{"t = TIMESTAMP '2024-01-01T00:00:01Z'", []int{1}},
		{"t = TIMESTAMP '2024-01-01T01:00:01+01:00'", []int{1}},
		{"t < DATE '2024-01-01'", []int{3, 4}},
		{"u > 5", []int{1, 4, 5}},
		{"u = 9223372036854775808", []int{1}},
		{"u > -1", []int{0, 1, 3, 4, 5}},
		{"small < -100 OR small = 127", []int{3, 5}},
		{"small > 1000", nil},
		{"(i > 1 AND f > 1) OR s = 'ab'", []int{4, 5}},
		{"\"i\" = 1", []int{0}},
		{"i = 1 and not b = false or i = 6", []int{0, 5}},
	} {
		t.Run(c.filter, func(t *testing.T) {
			f, err := Compile(c.filter, testSchema, DefaultLimits())
			require.NoError(t, err)
			keep, err := f.Eval(rec, nil)
			require.NoError(t, err)
			var got []int
			for i, k := range keep {
				if k {
					got = append(got, i)
				}
			}
			require.Equal(t, c.want, got)
			// The canonical text parses to itself.
			g, err := Compile(f.String(), testSchema, DefaultLimits())
			require.NoError(t, err, f.String())
			require.Equal(t, f.String(), g.String())
		})
	}
}

func mustTime(s string) time.Time {
	tm, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return tm
}

func TestErrors(t *testing.T) {
	for _, c := range []struct {
		filter string
		kind   error
		msg    string
	}{
		{"", ErrSyntax, "at byte 0: expected a column, a literal, NOT or (, found the end of the filter"},
		{"i = ", ErrSyntax, "at byte 4: expected a literal"},
		{"i = 1 AND", ErrSyntax, "at byte 9: expected a column"},
		{"i = 1 j = 2", ErrSyntax, "at byte 6: expected AND, OR or the end of the filter, found \"j\""},
		{"(i = 1", ErrSyntax, "at byte 6: expected AND, OR or ), found the end"},
		{"i IN (1, 2", ErrSyntax, "at byte 10: expected , or ) in the IN list"},
		{"i BETWEEN 1 OR 2", ErrSyntax, "at byte 12: expected AND (BETWEEN low AND high)"},
		{"s LIKE '%ab'", ErrSyntax, "at byte 7: expected a prefix pattern"},
		{"s LIKE 'a_%'", ErrSyntax, "at byte 7: expected a prefix pattern"},
		{"s = 'abc", ErrSyntax, "at byte 4: the string that starts here has no closing '"},
		{"i = NULL", ErrSyntax, "at byte 4: expected a literal, found NULL"},
		{"i ! 1", ErrSyntax, "at byte 2: expected != or another operator"},
		{"i = 1 # x", ErrSyntax, "at byte 6: unexpected character '#'"},
		{"i = 12abc", ErrSyntax, "at byte 4: expected a number"},
		{"nope = 1", ErrType, "at byte 0: \"nope\" is not a column; columns are:"},
		{"i = 'x'", ErrType, "at byte 4: column \"i\" is int64; expected a number, found 'x'"},
		{"s = 1", ErrType, "at byte 4: column \"s\" is utf8; expected a 'string', found 1"},
		{"b = 1", ErrType, "at byte 4: column \"b\" is bool; expected TRUE or FALSE"},
		{"b < TRUE", ErrType, "at byte 0: column \"b\" is bool; compare it with = or !="},
		{"i", ErrType, "at byte 0: column \"i\" is int64, not bool"},
		{"i LIKE 'a%'", ErrType, "at byte 0: column \"i\" is int64; a prefix match"},
		{"l = 1", ErrType, "at byte 0: column \"l\" has type list"},
		{"d = DATE '2024-13-01'", ErrType, "at byte 4: expected a date 'YYYY-MM-DD'"},
		{"d = TIMESTAMP '2024-01-01 00:00:00'", ErrType, "at byte 4: column is date32; expected a date"},
		{"t = TIMESTAMP '2024-01-01 00:00:00.0001'", ErrType, "is finer than the column's unit"},
		{"t = 5", ErrType, "expected TIMESTAMP"},
		{"i = 1e999", ErrType, "at byte 4: number 1e999 is out of range"},
		{strings.Repeat("(", 100) + "i = 1" + strings.Repeat(")", 100), ErrTooLarge, "nested deeper than 64"},
		{"i IN (" + strings.Repeat("1,", 10_000) + "1)", ErrTooLarge, "an IN list of more than 10000 literals"},
		{strings.Repeat(" ", 70_000), ErrTooLarge, "70000 bytes, at most 65536"},
		{"s = '\xff'", ErrSyntax, "at byte 5: the filter is not valid UTF-8"},
	} {
		t.Run(c.filter[:min(len(c.filter), 40)], func(t *testing.T) {
			_, err := Compile(c.filter, testSchema, DefaultLimits())
			require.Error(t, err)
			require.ErrorIs(t, err, c.kind)
			require.ErrorIs(t, err, errdefs.ErrInvalidArgument)
			require.Contains(t, err.Error(), c.msg)
		})
	}
}

// TestMayMatchSound: on random pieces of random data, a filter that says a
// piece cannot match has no matching row in it, and a piece that does
// have one is never pruned.
func TestMayMatchSound(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "i", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "f", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "b", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	}, nil)
	rng := rand.New(rand.NewPCG(1, 2))
	lit := func(col string) string {
		switch col {
		case "i", "f":
			return fmt.Sprint(rng.IntN(20) - 5)
		case "s":
			return "'" + string(rune('a'+rng.IntN(4))) + string(rune('a'+rng.IntN(4))) + "'"
		}
		return []string{"TRUE", "FALSE"}[rng.IntN(2)]
	}
	var pred func(depth int) string
	pred = func(depth int) string {
		if depth < 3 && rng.IntN(3) == 0 {
			op := []string{" AND ", " OR "}[rng.IntN(2)]
			return "(" + pred(depth+1) + op + pred(depth+1) + ")"
		}
		if depth < 3 && rng.IntN(6) == 0 {
			return "NOT " + pred(depth+1)
		}
		col := []string{"i", "f", "s", "b"}[rng.IntN(4)]
		switch k := rng.IntN(7); {
		case col == "b":
			return []string{"b", "b = " + lit(col), "b IS NULL", "b IN (" + lit(col) + ")"}[rng.IntN(4)]
		case k == 0:
			return col + " IS " + []string{"", "NOT "}[rng.IntN(2)] + "NULL"
		case k == 1:
			return col + " IN (" + lit(col) + ", " + lit(col) + ")"
		case k == 2:
			return col + " NOT BETWEEN " + lit(col) + " AND " + lit(col)
		case k == 3 && col == "s":
			return "s LIKE '" + string(rune('a'+rng.IntN(4))) + "%'"
		default:
			return col + " " + []string{"=", "!=", "<", "<=", ">", ">="}[rng.IntN(6)] + " " + lit(col)
		}
	}
	pruned, kept := 0, 0
	for iter := range 3000 {
		n := 1 + rng.IntN(8)
		bld := array.NewRecordBuilder(mem, schema)
		nullP := []int{0, 3, 100}[rng.IntN(3)]
		for range n {
			null := func() bool { return rng.IntN(100) < nullP }
			if null() {
				bld.Field(0).AppendNull()
			} else {
				bld.Field(0).(*array.Int32Builder).Append(int32(rng.IntN(12)))
			}
			switch {
			case null():
				bld.Field(1).AppendNull()
			case rng.IntN(6) == 0:
				bld.Field(1).(*array.Float64Builder).Append(math.NaN())
			default:
				bld.Field(1).(*array.Float64Builder).Append(float64(rng.IntN(12)) / 2)
			}
			if null() {
				bld.Field(2).AppendNull()
			} else {
				bld.Field(2).(*array.StringBuilder).Append(string(rune('a'+rng.IntN(4))) + string(rune('a'+rng.IntN(4))))
			}
			if null() {
				bld.Field(3).AppendNull()
			} else {
				bld.Field(3).(*array.BooleanBuilder).Append(rng.IntN(2) == 0)
			}
		}
		rec := bld.NewRecordBatch()
		bld.Release()
		text := pred(0)
		f, err := Compile(text, schema, DefaultLimits())
		require.NoError(t, err, text)
		keep, err := f.Eval(rec, nil)
		require.NoError(t, err)
		any := false
		for _, k := range keep {
			any = any || k
		}
		st := testStats(rec)
		if !f.MayMatch(st) {
			pruned++
			require.False(t, any, "iteration %d: %s pruned a piece with a matching row", iter, text)
		} else {
			kept++
		}
		rec.Release()
	}
	t.Logf("pruned %d, kept %d", pruned, kept)
	require.Greater(t, pruned, 300)
}

// testStats computes statistics as a Parquet writer does: NaN left out of
// min and max.
func testStats(rec arrow.RecordBatch) Stats {
	return func(col string) (ColumnStats, bool) {
		a := rec.Column(rec.Schema().FieldIndices(col)[0])
		st := ColumnStats{Rows: rec.NumRows(), Nulls: int64(a.NullN())}
		for i := range a.Len() {
			if a.IsNull(i) {
				continue
			}
			var v any
			switch a := a.(type) {
			case *array.Int32:
				v = int64(a.Value(i))
			case *array.Float64:
				if math.IsNaN(a.Value(i)) {
					continue
				}
				v = a.Value(i)
			case *array.String:
				v = a.Value(i)
			case *array.Boolean:
				v = b2i(a.Value(i))
			}
			if !st.HasMinMax {
				st.Min, st.Max, st.HasMinMax = v, v, true
				continue
			}
			if less(v, st.Min) {
				st.Min = v
			}
			if less(st.Max, v) {
				st.Max = v
			}
		}
		return st, true
	}
}

func less(a, b any) bool {
	switch a := a.(type) {
	case int64:
		return a < b.(int64)
	case float64:
		return a < b.(float64)
	case string:
		return a < b.(string)
	}
	return false
}

func TestCanonical(t *testing.T) {
	for _, c := range [][2]string{
		{"a=1 and (b or c)", "a = 1 AND (b OR c)"},
		{"NOT (a = 1 OR a <> 2)", "NOT (a = 1 OR a != 2)"},
		{"x between 1 and 2 and y", "(x BETWEEN 1 AND 2) AND y"},
		{"s like 'it''s%'", "starts_with(s, 'it''s')"},
		{`"and" = 1`, `"and" = 1`},
		{"1 < x", "x > 1"},
		{"x not in (1,2)", "x NOT IN (1, 2)"},
		{"t >= timestamp '2024-01-01 00:00:00'", "t >= TIMESTAMP '2024-01-01 00:00:00'"},
		{"x = -3", "x = -3"},
	} {
		t.Run(c[0], func(t *testing.T) {
			e, err := Parse(c[0], DefaultLimits())
			require.NoError(t, err)
			require.Equal(t, c[1], e.String())
			e2, err := Parse(e.String(), DefaultLimits())
			require.NoError(t, err)
			require.Equal(t, e.String(), e2.String())
		})
	}
}

func TestErrorIsInvalidArgument(t *testing.T) {
	_, err := Parse("(", DefaultLimits())
	require.True(t, errors.Is(err, errdefs.ErrInvalidArgument))
}
