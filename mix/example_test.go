package mix_test

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/weftdata/weft/bucket"
	"github.com/weftdata/weft/mix"
	"github.com/weftdata/weft/tables"
	"github.com/weftdata/weft/versions"
)

func Example() {
	ctx := context.Background()
	vs, _ := versions.New(bucket.NewMem(), versions.DefaultOptions())
	ts, _ := tables.New(vs, tables.DefaultOptions())
	vs.CreateProject(ctx, "robotics")
	schema := arrow.NewSchema([]arrow.Field{{Name: "episode", Type: arrow.PrimitiveTypes.Int64}}, nil)
	for table, rows := range map[string]int{"failed_grasps": 300, "nominal_grasps": 700} {
		b := array.NewInt64Builder(memory.DefaultAllocator)
		for i := range rows {
			b.Append(int64(i))
		}
		col := b.NewArray()
		rec := array.NewRecordBatch(schema, []arrow.Array{col}, int64(rows))
		rr, _ := array.NewRecordReader(schema, []arrow.RecordBatch{rec})
		ts.Append(ctx, "robotics", "main", versions.TableName(table), rr, "")
	}

	engine, _ := mix.New(ts, mix.DefaultOptions())
	defer engine.Close()
	recipe, err := mix.ParseRecipe([]byte(`{"seed": 2048, "batch_size": 64, "components": [
		{"project": "robotics", "table": "failed_grasps", "weight": 0.3},
		{"project": "robotics", "table": "nominal_grasps", "weight": 0.7}]}`))
	if err != nil {
		panic(err)
	}
	run, err := engine.Resolve(ctx, recipe)
	if err != nil {
		panic(err)
	}
	fmt.Println("steps:", run.Steps())
	// Rank 1 of 4, steps 0..2: 16 rows each, with their component and row.
	for st, err := range engine.Steps(ctx, run, 1, 4, 0, 3) {
		if err != nil {
			panic(err)
		}
		comps := st.Batch.Column(1).(*array.Int32)
		n := [2]int{}
		for i := range comps.Len() {
			n[comps.Value(i)]++
		}
		fmt.Printf("step %d: %d rows, %d failed + %d nominal; global batch shares %v\n", st.Step, st.Batch.NumRows(), n[0], n[1], run.Plan().Counts(st.Step))
		st.Batch.Release()
	}
	// Output:
	// steps: 16
	// step 0: 16 rows, 4 failed + 12 nominal; global batch shares [19 45]
	// step 1: 16 rows, 6 failed + 10 nominal; global batch shares [19 45]
	// step 2: 16 rows, 7 failed + 9 nominal; global batch shares [20 44]
}
