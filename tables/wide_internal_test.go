package tables

import (
	"bytes"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"
)

// TestWideColumns: a binary column gets no statistics only when every
// value of the first batch is over Parquet's limit for one (they would
// all be dropped).
func TestWideColumns(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	wide, narrow := bytes.Repeat([]byte{1}, 4097), bytes.Repeat([]byte{1}, 4096)
	for _, tc := range []struct {
		name   string
		values [][]byte // nil: null
		want   []string
	}{
		{"all wide", [][]byte{wide, wide}, []string{"b"}},
		{"wide and null", [][]byte{wide, nil}, []string{"b"}},
		{"one at the limit", [][]byte{wide, narrow}, nil},
		{"all null", [][]byte{nil, nil}, nil},
		{"narrow", [][]byte{{1}, {2}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "b", Type: arrow.BinaryTypes.Binary, Nullable: true}}, nil)
			b := array.NewRecordBuilder(mem, schema)
			defer b.Release()
			for i, v := range tc.values {
				b.Field(0).(*array.Int64Builder).Append(int64(i))
				if v == nil {
					b.Field(1).AppendNull()
				} else {
					b.Field(1).(*array.BinaryBuilder).Append(v)
				}
			}
			rec := b.NewRecordBatch()
			defer rec.Release()
			require.Equal(t, tc.want, wideColumns(schema, rec))
		})
	}
}
