// Package slottest builds the record batch that the slots tests (Go and
// Python, through cmd slotwriter) write into a slot: n rows of
//
//	id     int64                         i*3 - 7
//	vec    fixed_size_list<float32>[4]   i + j/4 for j in 0..3
//	blob   binary                        "row-<i>" repeated i%3+1 times
//
// so that a reader can recompute every value.
package slottest

import (
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// VecLen is the length of the vec column's lists.
const VecLen = 4

// Schema is the batch's schema.
var Schema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "vec", Type: arrow.FixedSizeListOf(VecLen, arrow.PrimitiveTypes.Float32)},
	{Name: "blob", Type: arrow.BinaryTypes.Binary},
}, nil)

// Blob is row i's blob value.
func Blob(i int) []byte { return []byte(strings.Repeat(fmt.Sprintf("row-%d", i), i%3+1)) }

// Record returns the batch of n rows; the caller releases it.
func Record(mem memory.Allocator, n int) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, Schema)
	defer b.Release()
	ids := b.Field(0).(*array.Int64Builder)
	vecs := b.Field(1).(*array.FixedSizeListBuilder)
	vals := vecs.ValueBuilder().(*array.Float32Builder)
	blobs := b.Field(2).(*array.BinaryBuilder)
	for i := range n {
		ids.Append(int64(i)*3 - 7)
		vecs.Append(true)
		for j := range VecLen {
			vals.Append(float32(i) + float32(j)/4)
		}
		blobs.Append(Blob(i))
	}
	return b.NewRecordBatch()
}
