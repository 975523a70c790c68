package client_test

import (
	"context"
	"fmt"
	"net"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/weftdata/weft/bucket"
	"github.com/weftdata/weft/client"
	"github.com/weftdata/weft/flight"
	"github.com/weftdata/weft/mix"
	"github.com/weftdata/weft/tables"
	"github.com/weftdata/weft/versions"
)

// A complete mix read: write two tables, resolve a 0.25/0.75 recipe for
// two ranks, read rank 0's steps.
func Example() {
	ctx := context.Background()
	addr, stop := startFlightd() // a flightd over an in-memory store
	defer stop()

	c := must(client.Dial(addr, client.Options{}))
	defer c.Close()
	must(c.CreateProject(ctx, "robotics"))
	for _, table := range []string{"failed", "nominal"} {
		must(c.Put(ctx, client.PutDescriptor{Project: "robotics", Branch: "main", Table: table}, ids(100)))
	}
	plan := must(c.Resolve(ctx, client.Recipe{Seed: 7, BatchSize: 8, Components: []client.Component{
		{Project: "robotics", Table: "failed", Weight: 0.25},
		{Project: "robotics", Table: "nominal", Weight: 0.75},
	}}, 2))
	fmt.Println(plan.Record.Steps, "steps,", len(plan.Ranks), "ranks")
	rows := 0
	for st, err := range c.ReadRank(ctx, plan.Ranks[0]) {
		rows += int(must(st, err).Batch.NumRows())
	}
	fmt.Println("rank 0 read", rows, "rows")
	// Output:
	// 25 steps, 2 ranks
	// rank 0 read 100 rows
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// ids is a table of n rows with an int64 "id".
func ids(n int64) array.RecordReader {
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)
	b := array.NewInt64Builder(memory.DefaultAllocator)
	defer b.Release()
	for i := range n {
		b.Append(i)
	}
	col := b.NewArray()
	defer col.Release()
	rec := array.NewRecordBatch(schema, []arrow.Array{col}, n)
	defer rec.Release()
	r, _ := array.NewRecordReader(schema, []arrow.RecordBatch{rec})
	return r
}

// startFlightd serves a Flight service over an in-memory bucket on a free
// loopback port.
func startFlightd() (string, func()) {
	v, err := versions.New(bucket.NewMem(), versions.DefaultOptions())
	if err != nil {
		panic(err)
	}
	ts, err := tables.New(v, tables.DefaultOptions())
	if err != nil {
		panic(err)
	}
	engine, err := mix.New(ts, mix.DefaultOptions())
	if err != nil {
		panic(err)
	}
	svc, err := flight.New(flight.Parts{Tables: ts, Mix: engine}, flight.DefaultOptions())
	if err != nil {
		panic(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = svc.Serve(ctx, lis); close(done) }()
	return lis.Addr().String(), func() { cancel(); <-done; engine.Close() }
}
