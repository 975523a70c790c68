package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"iter"
	"math/rand/v2"
	"net"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	arrowflight "github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"

	"github.com/weftdata/weft/client"
	"github.com/weftdata/weft/internal/benchdata"
)

// buildBatch makes one batch of n rows of a shape with random values.
func buildBatch(shape string, n, valueBytes int) (arrow.RecordBatch, error) {
	rng := rand.New(rand.NewPCG(1, 2))
	var schema *arrow.Schema
	switch shape {
	case "small":
		schema = benchdata.SmallSchema
	case "large":
		schema = benchdata.LargeSchema
	default:
		return nil, fmt.Errorf("unknown shape %q (small or large)", shape)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	buf := make([]byte, valueBytes)
	for i := range n {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		if shape == "small" {
			fl := b.Field(1).(*array.FixedSizeListBuilder)
			fv := fl.ValueBuilder().(*array.Float32Builder)
			fl.Append(true)
			for range 32 {
				fv.Append(rng.Float32())
			}
			b.Field(2).(*array.Int64Builder).Append(int64(rng.IntN(1000)))
			continue
		}
		for j := range buf {
			buf[j] = byte(rng.Uint32())
		}
		b.Field(1).(*array.BinaryBuilder).Append(buf)
	}
	return b.NewRecordBatch(), nil
}

type ceilingResult struct {
	Kind       string  `json:"kind"`
	Shape      string  `json:"shape"`
	BatchRows  int     `json:"batch_rows"`
	BatchBytes int64   `json:"batch_bytes"`
	Batches    int64   `json:"batches"`
	Rows       int64   `json:"rows"`
	Bytes      int64   `json:"bytes"`
	Secs       float64 `json:"secs"`
	RowsPerSec float64 `json:"rows_per_s"`
	MBPerSec   float64 `json:"mb_per_s"`
}

func flightCeiling(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("flight-ceiling", flag.ContinueOnError)
	fs.SetOutput(stderr)
	shape := fs.String("shape", "small", "row shape: small (id, features float32[32], label) or large (id, binary image)")
	rows := fs.Int("rows", 256, "rows of the prebuilt batch (one training step)")
	valueBytes := fs.Int("value-bytes", 100<<10, "bytes of each large-row image")
	count := fs.Int("batches", 20000, "batches to send")
	rounds := fs.Int("rounds", 1, "repetitions (one result line each)")
	if err := fs.Parse(args); err != nil || fs.NArg() > 0 {
		return errUsage
	}
	rec, err := buildBatch(*shape, *rows, *valueBytes)
	if err != nil {
		return err
	}
	defer rec.Release()

	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := grpc.NewServer(grpc.MaxSendMsgSize(1 << 30))
	arrowflight.RegisterFlightServiceServer(srv, &benchdata.Ceiling{Rec: rec, Count: *count})
	go func() { _ = srv.Serve(lis) }()
	defer srv.Stop()
	c, err := client.Dial(lis.Addr().String(), client.Options{MaxRecvMessageBytes: 1 << 30})
	if err != nil {
		return err
	}
	defer c.Close()
	for range *rounds {
		start := time.Now()
		var rerr error
		got := drainEndpoint(ctx, func(ctx context.Context) iter.Seq2[arrow.RecordBatch, int64] {
			return func(yield func(arrow.RecordBatch, int64) bool) {
				for rec, err := range c.Read(ctx, client.Endpoint{Ticket: []byte("x")}) {
					if err != nil {
						rerr = err
						return
					}
					if !yield(rec, -1) {
						return
					}
				}
			}
		}, 0)
		if rerr != nil {
			return rerr
		}
		secs := time.Since(start).Seconds()
		err = printJSON(stdout, ceilingResult{
			Kind: "flight-ceiling", Shape: *shape, BatchRows: *rows, BatchBytes: got.Bytes / max(got.Steps, 1),
			Batches: got.Steps, Rows: got.Rows, Bytes: got.Bytes, Secs: secs,
			RowsPerSec: float64(got.Rows) / secs, MBPerSec: float64(got.Bytes) / 1e6 / secs,
		})
		if err != nil {
			return err
		}
	}
	return nil
}
