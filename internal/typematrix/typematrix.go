// Package typematrix lists every Arrow type arrow-go builds, with a few
// values each (nulls included), for the tests that check which types a
// table accepts and that accepted ones round-trip exactly: tables' own type
// matrix and the one over the wire (internal/adversarial). One list, so the
// two cannot drift apart.
package typematrix

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/extensions"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Case is one column of the type matrix: a type and a few values (as
// array.FromJSON reads them), nulls included where the type has them.
type Case struct {
	Name string
	Type arrow.DataType
	JSON string
}

// dictJSON is the buildArray form of a dictionary array over dict with
// indices [0, null, 1, 0].
func dictJSON(dict string) string {
	return `{"indices": [0, null, 1, 0], "dictionary": ` + dict + `}`
}

func mustJSONType(storage arrow.DataType) arrow.DataType {
	t, err := extensions.NewJSONType(storage)
	if err != nil {
		panic(err)
	}
	return t
}

// Cases lists every Arrow type arrow-go builds: primitives, temporal
// types with every unit (and time zones), decimals of each width, the
// string/binary family in plain, large and view forms, the list family
// nested two deep, struct, map, dictionaries with every index type, unions,
// run-end encoding and the canonical extension types.
func Cases() []Case {
	ints := `[1, null, -3, 4]`
	uints := `[1, null, 3, 250]`
	floats := `[1.5, null, -3.25, 0]`
	strs := `["a", null, "", "héllo"]`
	b64 := `["YQ==", null, "", "AAEC"]`
	lists := `[[1, 2], null, [], [3, null]]`
	nested := `[[[1], [2, 3]], null, [[]], [null, [4]]]`
	strLists := `[["a", "b"], null, [], ["c", null]]`
	strNested := `[[["a"], ["b", "c"]], null, [[]], [null, ["d"]]]`
	dec := `["1.25", null, "-3.50", "0.00"]`
	var cs []Case
	add := func(name string, typ arrow.DataType, json string) {
		cs = append(cs, Case{name, typ, json})
	}
	// Primitives.
	add("null", arrow.Null, `[null, null, null, null]`)
	add("bool", arrow.FixedWidthTypes.Boolean, `[true, null, false, true]`)
	add("int8", arrow.PrimitiveTypes.Int8, ints)
	add("int16", arrow.PrimitiveTypes.Int16, ints)
	add("int32", arrow.PrimitiveTypes.Int32, ints)
	add("int64", arrow.PrimitiveTypes.Int64, ints)
	add("uint8", arrow.PrimitiveTypes.Uint8, uints)
	add("uint16", arrow.PrimitiveTypes.Uint16, uints)
	add("uint32", arrow.PrimitiveTypes.Uint32, uints)
	add("uint64", arrow.PrimitiveTypes.Uint64, uints)
	add("float16", arrow.FixedWidthTypes.Float16, floats)
	add("float32", arrow.PrimitiveTypes.Float32, floats)
	add("float64", arrow.PrimitiveTypes.Float64, floats)
	// Temporal.
	add("date32", arrow.FixedWidthTypes.Date32, `[0, null, 19000, -1]`)
	add("date64", arrow.FixedWidthTypes.Date64, `[0, null, 86400000, -86400000]`)
	add("time32[s]", arrow.FixedWidthTypes.Time32s, `[0, null, 3600, 86399]`)
	add("time32[ms]", arrow.FixedWidthTypes.Time32ms, `[0, null, 3600000, 86399999]`)
	add("time64[us]", arrow.FixedWidthTypes.Time64us, `[0, null, 3600000000, 86399999999]`)
	add("time64[ns]", arrow.FixedWidthTypes.Time64ns, `[0, null, 3600000000000, 86399999999999]`)
	for _, unit := range []arrow.TimeUnit{arrow.Second, arrow.Millisecond, arrow.Microsecond, arrow.Nanosecond} {
		for _, tz := range []string{"", "UTC", "America/New_York", "+05:30"} {
			add("timestamp["+unit.String()+","+tz+"]", &arrow.TimestampType{Unit: unit, TimeZone: tz}, `[0, null, 1700000000, -1]`)
		}
		add("duration["+unit.String()+"]", &arrow.DurationType{Unit: unit}, `[0, null, 1700000000, -1]`)
	}
	add("interval[month]", arrow.FixedWidthTypes.MonthInterval, `[{"months": 1}, null, {"months": -2}, {"months": 0}]`)
	add("interval[day_time]", arrow.FixedWidthTypes.DayTimeInterval, `[{"days": 1, "milliseconds": 2}, null, {"days": -1, "milliseconds": 0}, {"days": 0, "milliseconds": 0}]`)
	add("interval[month_day_nano]", arrow.FixedWidthTypes.MonthDayNanoInterval, `[{"months": 1, "days": 2, "nanoseconds": 3}, null, {"months": 0, "days": 0, "nanoseconds": -1}, {"months": 0, "days": 0, "nanoseconds": 0}]`)
	// Decimals.
	add("decimal32(9,2)", &arrow.Decimal32Type{Precision: 9, Scale: 2}, dec)
	add("decimal64(18,2)", &arrow.Decimal64Type{Precision: 18, Scale: 2}, dec)
	add("decimal128(38,2)", &arrow.Decimal128Type{Precision: 38, Scale: 2}, dec)
	add("decimal128(5,2)", &arrow.Decimal128Type{Precision: 5, Scale: 2}, dec)
	add("decimal256(76,2)", &arrow.Decimal256Type{Precision: 76, Scale: 2}, dec)
	add("decimal256(10,2)", &arrow.Decimal256Type{Precision: 10, Scale: 2}, dec)
	// Strings and binaries.
	add("string", arrow.BinaryTypes.String, strs)
	add("large_string", arrow.BinaryTypes.LargeString, strs)
	add("string_view", arrow.BinaryTypes.StringView, strs)
	add("binary", arrow.BinaryTypes.Binary, b64)
	add("large_binary", arrow.BinaryTypes.LargeBinary, b64)
	add("binary_view", arrow.BinaryTypes.BinaryView, b64)
	add("fixed_size_binary[3]", &arrow.FixedSizeBinaryType{ByteWidth: 3}, `["YWJj", null, "AAEC", "eHl6"]`)
	// Lists, one and two deep.
	i32 := arrow.PrimitiveTypes.Int32
	add("list<int32>", arrow.ListOf(i32), lists)
	add("large_list<int32>", arrow.LargeListOf(i32), lists)
	add("list_view<int32>", arrow.ListViewOf(i32), lists)
	add("large_list_view<int32>", arrow.LargeListViewOf(i32), lists)
	add("fixed_size_list<int32>[2]", arrow.FixedSizeListOf(2, i32), `[[1, 2], [0, 0], [3, null], [5, 6]]`)
	add("list<string>", arrow.ListOf(arrow.BinaryTypes.String), strLists)
	add("list<large_string>", arrow.ListOf(arrow.BinaryTypes.LargeString), strLists)
	add("large_list<string>", arrow.LargeListOf(arrow.BinaryTypes.String), strLists)
	add("large_list<large_string>", arrow.LargeListOf(arrow.BinaryTypes.LargeString), strLists)
	add("list<string_view>", arrow.ListOf(arrow.BinaryTypes.StringView), strLists)
	add("list<list<int32>>", arrow.ListOf(arrow.ListOf(i32)), nested)
	add("large_list<large_list<int32>>", arrow.LargeListOf(arrow.LargeListOf(i32)), nested)
	add("list<large_list<int32>>", arrow.ListOf(arrow.LargeListOf(i32)), nested)
	add("large_list<list<int32>>", arrow.LargeListOf(arrow.ListOf(i32)), nested)
	add("list<list<string>>", arrow.ListOf(arrow.ListOf(arrow.BinaryTypes.String)), strNested)
	add("list_view<list_view<int32>>", arrow.ListViewOf(arrow.ListViewOf(i32)), nested)
	add("large_list_view<large_list_view<int32>>", arrow.LargeListViewOf(arrow.LargeListViewOf(i32)), nested)
	add("list<fixed_size_list<int32>[1]>", arrow.ListOf(arrow.FixedSizeListOf(1, i32)), `[[[1], [2]], null, [], [[null], [4]]]`)
	add("fixed_size_list<list<int32>>[2]", arrow.FixedSizeListOf(2, arrow.ListOf(i32)), `[[[1], [2, 3]], null, [[], null], [[4], []]]`)
	add("fixed_size_list<fixed_size_list<float32>[2]>[2]", arrow.FixedSizeListOf(2, arrow.FixedSizeListOf(2, arrow.PrimitiveTypes.Float32)), `[[[1, 2], [3, 4]], [[0, 0], [0, 0]], [[5, null], [0, 1]], [[7, 8], [9, 10]]]`)
	add("list<date64>", arrow.ListOf(arrow.FixedWidthTypes.Date64), `[[0, 86400000], null, [], [null]]`)
	add("list<item: int32 not null>", arrow.ListOfNonNullable(i32), `[[1, 2], null, [], [3]]`)
	add("list<x: int32>", arrow.ListOfField(arrow.Field{Name: "x", Type: i32, Nullable: true}), lists)
	add("large_list<element: int32>", arrow.LargeListOfField(arrow.Field{Name: "element", Type: i32, Nullable: true}), lists)
	// Structs and maps.
	add("struct<>", arrow.StructOf(), `[{}, null, {}, {}]`)
	add("struct<a int32 not null>", arrow.StructOf(arrow.Field{Name: "a", Type: i32}), `[{"a": 1}, {"a": 2}, {"a": 3}, {"a": 4}]`)
	st := arrow.StructOf(arrow.Field{Name: "a", Type: i32, Nullable: true}, arrow.Field{Name: "b", Type: arrow.BinaryTypes.String, Nullable: true})
	add("struct<a int32, b string>", st, `[{"a": 1, "b": "x"}, null, {"a": null, "b": null}, {"a": 4, "b": ""}]`)
	add("struct<s struct, l list<int32>>", arrow.StructOf(arrow.Field{Name: "s", Type: st, Nullable: true}, arrow.Field{Name: "l", Type: arrow.ListOf(i32), Nullable: true}),
		`[{"s": {"a": 1, "b": "x"}, "l": [1]}, null, {"s": null, "l": null}, {"s": {"a": null, "b": "y"}, "l": []}]`)
	add("list<struct>", arrow.ListOf(st), `[[{"a": 1, "b": "x"}], null, [], [null, {"a": 2, "b": null}]]`)
	add("struct<d date64>", arrow.StructOf(arrow.Field{Name: "d", Type: arrow.FixedWidthTypes.Date64, Nullable: true}), `[{"d": 0}, null, {"d": null}, {"d": 86400000}]`)
	add("map<string, int32>", arrow.MapOf(arrow.BinaryTypes.String, i32), `[[{"key": "a", "value": 1}], null, [], [{"key": "b", "value": null}, {"key": "c", "value": 3}]]`)
	add("map<string, list<int32>>", arrow.MapOf(arrow.BinaryTypes.String, arrow.ListOf(i32)), `[[{"key": "a", "value": [1]}], null, [], [{"key": "b", "value": null}]]`)
	add("list<map<string, int32>>", arrow.ListOf(arrow.MapOf(arrow.BinaryTypes.String, i32)), `[[[{"key": "a", "value": 1}]], null, [[]], [null]]`)
	add("map<int32, string>", arrow.MapOf(i32, arrow.BinaryTypes.String), `[[{"key": 1, "value": "a"}], null, [], [{"key": 2, "value": null}]]`)
	// Dictionaries, every index type.
	for _, idx := range []arrow.DataType{arrow.PrimitiveTypes.Int8, arrow.PrimitiveTypes.Int16, arrow.PrimitiveTypes.Int32, arrow.PrimitiveTypes.Int64,
		arrow.PrimitiveTypes.Uint8, arrow.PrimitiveTypes.Uint16, arrow.PrimitiveTypes.Uint32, arrow.PrimitiveTypes.Uint64} {
		add("dictionary<"+idx.String()+", string>", &arrow.DictionaryType{IndexType: idx, ValueType: arrow.BinaryTypes.String}, dictJSON(`["a", "b"]`))
	}
	add("dictionary<int32, large_string>", &arrow.DictionaryType{IndexType: i32, ValueType: arrow.BinaryTypes.LargeString}, dictJSON(`["a", "b"]`))
	add("dictionary<int32, binary>", &arrow.DictionaryType{IndexType: i32, ValueType: arrow.BinaryTypes.Binary}, dictJSON(`["YQ==", "Yg=="]`))
	add("dictionary<int32, int64>", &arrow.DictionaryType{IndexType: i32, ValueType: arrow.PrimitiveTypes.Int64}, dictJSON(`[1, 2]`))
	add("dictionary<int32, string_view>", &arrow.DictionaryType{IndexType: i32, ValueType: arrow.BinaryTypes.StringView}, dictJSON(`["a", "b"]`))
	add("dictionary<int32, date64>", &arrow.DictionaryType{IndexType: i32, ValueType: arrow.FixedWidthTypes.Date64}, dictJSON(`[0, 86400000]`))
	add("dictionary<int32, large_binary>", &arrow.DictionaryType{IndexType: i32, ValueType: arrow.BinaryTypes.LargeBinary}, dictJSON(`["YQ==", "Yg=="]`))
	add("dictionary<int32, fixed_size_binary[1]>", &arrow.DictionaryType{IndexType: i32, ValueType: &arrow.FixedSizeBinaryType{ByteWidth: 1}}, dictJSON(`["YQ==", "Yg=="]`))
	add("dictionary<int16, float64>", &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int16, ValueType: arrow.PrimitiveTypes.Float64}, dictJSON(`[1.5, 2]`))
	add("dictionary<int32, string> ordered", &arrow.DictionaryType{IndexType: i32, ValueType: arrow.BinaryTypes.String, Ordered: true}, dictJSON(`["a", "b"]`))
	add("list<dictionary<int32, string>>", arrow.ListOf(&arrow.DictionaryType{IndexType: i32, ValueType: arrow.BinaryTypes.String}), `[["a", "b"], null, [], ["a", null]]`)
	// Unions.
	uf := []arrow.Field{{Name: "i", Type: i32, Nullable: true}, {Name: "s", Type: arrow.BinaryTypes.String, Nullable: true}}
	add("sparse_union<i int32, s string>", arrow.SparseUnionOf(uf, []arrow.UnionTypeCode{0, 1}), `[[0, 1], [1, "x"], [0, null], [1, "y"]]`)
	add("dense_union<i int32, s string>", arrow.DenseUnionOf(uf, []arrow.UnionTypeCode{0, 1}), `[[0, 1], [1, "x"], [0, null], [1, "y"]]`)
	// Run-end encoded.
	add("run_end_encoded<int32, string>", arrow.RunEndEncodedOf(i32, arrow.BinaryTypes.String), `["a", "a", null, "b"]`)
	add("run_end_encoded<int16, int64>", arrow.RunEndEncodedOf(arrow.PrimitiveTypes.Int16, arrow.PrimitiveTypes.Int64), `[1, 1, null, 2]`)
	add("run_end_encoded<int64, float64>", arrow.RunEndEncodedOf(arrow.PrimitiveTypes.Int64, arrow.PrimitiveTypes.Float64), `[1.5, 1.5, null, 2]`)
	// Extension types.
	add("arrow.json<string>", mustJSONType(arrow.BinaryTypes.String), `["{\"a\": 1}", null, "[]", "2"]`)
	add("arrow.json<large_string>", mustJSONType(arrow.BinaryTypes.LargeString), `["{\"a\": 1}", null, "[]", "2"]`)
	add("arrow.json<string_view>", mustJSONType(arrow.BinaryTypes.StringView), `["{\"a\": 1}", null, "[]", "2"]`)
	add("arrow.bool8", extensions.NewBool8Type(), `[true, null, false, true]`)
	add("arrow.opaque<binary>", extensions.NewOpaqueType(arrow.BinaryTypes.Binary, "geometry", "postgis"), b64)
	add("arrow.uuid", extensions.NewUUIDType(), `["00112233-4455-6677-8899-aabbccddeeff", null, "00000000-0000-0000-0000-000000000000", "ffffffff-ffff-ffff-ffff-ffffffffffff"]`)
	add("arrow.timestamp_with_offset[ms]", extensions.NewTimestampWithOffsetType(arrow.Millisecond), `["2024-01-02T03:04:05.006+02:00", null, "1970-01-01T00:00:00Z", "2024-06-30T23:59:59-07:00"]`)
	add("arrow.parquet.variant", extensions.NewDefaultVariantType(), `[1, "x", null, {"a": [1, 2]}]`)
	add("list<arrow.uuid>", arrow.ListOf(extensions.NewUUIDType()), `[["00112233-4455-6677-8899-aabbccddeeff"], null, [], [null]]`)
	return cs
}

// Build makes tc's values. Dictionary arrays are built from their
// indices and dictionary (array.FromJSON cannot build every value type's
// dictionary); the JSON then holds {"indices": [...], "dictionary": [...]}.
func (tc Case) Build(mem memory.Allocator) (arrow.Array, error) {
	dt, ok := tc.Type.(*arrow.DictionaryType)
	if !ok || !strings.HasPrefix(tc.JSON, "{") {
		arr, _, err := array.FromJSON(mem, tc.Type, strings.NewReader(tc.JSON))
		return arr, err
	}
	var parts struct{ Indices, Dictionary json.RawMessage }
	if err := json.Unmarshal([]byte(tc.JSON), &parts); err != nil {
		return nil, err
	}
	idx, _, err := array.FromJSON(mem, dt.IndexType, bytes.NewReader(parts.Indices))
	if err != nil {
		return nil, fmt.Errorf("indices: %w", err)
	}
	defer idx.Release()
	dict, _, err := array.FromJSON(mem, dt.ValueType, bytes.NewReader(parts.Dictionary))
	if err != nil {
		return nil, fmt.Errorf("dictionary: %w", err)
	}
	defer dict.Release()
	return array.NewDictionaryArray(dt, idx, dict), nil
}
