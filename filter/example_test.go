package filter_test

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/weftdata/weft/filter"
)

func Example() {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "episode", Type: arrow.PrimitiveTypes.Int64},
		{Name: "success", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	}, nil)
	f, err := filter.Compile("success = false AND episode >= 100", schema, filter.DefaultLimits())
	if err != nil {
		panic(err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).AppendValues([]int64{99, 100, 101, 102}, nil)
	b.Field(1).(*array.BooleanBuilder).AppendValues([]bool{false, false, true, false}, []bool{true, true, true, false})
	rec := b.NewRecordBatch()
	defer rec.Release()
	keep, _ := f.Eval(rec, nil)
	fmt.Println(f.Columns(), keep)
	// A row group whose episodes are all below 100 is never read.
	fmt.Println(f.MayMatch(func(col string) (filter.ColumnStats, bool) {
		if col == "episode" {
			return filter.ColumnStats{Rows: 1000, Nulls: 0, HasMinMax: true, Min: int64(0), Max: int64(99)}, true
		}
		return filter.ColumnStats{}, false
	}))
	_, err = filter.Compile("episode >= ", schema, filter.DefaultLimits())
	fmt.Println(err)
	// Output:
	// [episode success] [false true false false]
	// false
	// filter syntax error: invalid argument: at byte 11: expected a literal (number, 'string', TRUE, FALSE, DATE '…' or TIMESTAMP '…'), found the end of the filter
}
