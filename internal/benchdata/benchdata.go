// Package benchdata holds what the benchmarks share: the 1 KiB-row table
// of the storage and Flight benchmarks, the row shapes of the mix
// benchmarks, and the Flight ceiling server. The table has four numeric
// columns and a 1 KiB binary column of incompressible bytes; at the default
// 1 Mi rows it is about 1 GiB of Arrow data, the same rows every run.
package benchdata

import (
	"math/rand/v2"
	"os"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Schema of the benchmark table.
var Schema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "label", Type: arrow.PrimitiveTypes.Int64},
	{Name: "score", Type: arrow.PrimitiveTypes.Float64},
	{Name: "weight", Type: arrow.PrimitiveTypes.Float32},
	{Name: "blob", Type: arrow.BinaryTypes.Binary},
}, nil)

// BatchRows is the row count of each generated batch.
const BatchRows = 8192

// Rows is the table's row count: $WEFT_BENCH_ROWS, or 1 Mi.
func Rows() int64 {
	if n, err := strconv.ParseInt(os.Getenv("WEFT_BENCH_ROWS"), 10, 64); err == nil && n > 0 {
		return n
	}
	return 1 << 20
}

// Batch builds rows [start, start+n) with values drawn from rng.
func Batch(rng *rand.Rand, start, n int64) arrow.RecordBatch {
	bld := array.NewRecordBuilder(memory.DefaultAllocator, Schema)
	defer bld.Release()
	blob := make([]byte, 1024)
	for i := start; i < start+n; i++ {
		bld.Field(0).(*array.Int64Builder).Append(i)
		bld.Field(1).(*array.Int64Builder).Append(i % 1000)
		bld.Field(2).(*array.Float64Builder).Append(rng.Float64())
		bld.Field(3).(*array.Float32Builder).Append(rng.Float32())
		for j := 0; j < len(blob); j += 8 {
			v := rng.Uint64()
			for k := range 8 {
				blob[j+k] = byte(v >> (8 * k))
			}
		}
		bld.Field(4).(*array.BinaryBuilder).Append(blob)
	}
	return bld.NewRecordBatch()
}

// NewRNG is the generator every benchmark uses, so they all see the same table.
func NewRNG() *rand.Rand { return rand.New(rand.NewChaCha8([32]byte{1})) }

// Reader yields a table of rows rows in batches of BatchRows, generating
// each batch on demand, so a big table never sits in memory.
type Reader struct {
	rng       *rand.Rand
	rows, pos int64
	cur       arrow.RecordBatch
}

var _ array.RecordReader = (*Reader)(nil)

// NewReader returns a Reader over the first rows rows of the table.
func NewReader(rows int64) *Reader { return &Reader{rng: NewRNG(), rows: rows} }

func (g *Reader) Schema() *arrow.Schema { return Schema }

func (g *Reader) Next() bool {
	g.Release()
	if g.pos >= g.rows {
		return false
	}
	n := min(BatchRows, g.rows-g.pos)
	g.cur = Batch(g.rng, g.pos, n)
	g.pos += n
	return true
}

func (g *Reader) RecordBatch() arrow.RecordBatch { return g.cur }
func (g *Reader) Record() arrow.RecordBatch      { return g.cur }
func (g *Reader) Err() error                     { return nil }
func (g *Reader) Retain()                        {}

// Release drops the current batch.
func (g *Reader) Release() {
	if g.cur != nil {
		g.cur.Release()
		g.cur = nil
	}
}
