package tables

import (
	"encoding/base64"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"
)

// randJSON writes a random JSON value of type dt (null with probability
// 1/6 where nullable).
func randJSON(rng *rand.Rand, dt arrow.DataType, sb *strings.Builder, nullable bool) {
	if nullable && rng.IntN(6) == 0 {
		sb.WriteString("null")
		return
	}
	switch t := dt.(type) {
	case *arrow.Int8Type:
		fmt.Fprint(sb, rng.IntN(256)-128)
	case *arrow.Int32Type, *arrow.Date32Type:
		fmt.Fprint(sb, rng.Int32N(1<<30))
	case *arrow.Int64Type:
		fmt.Fprint(sb, rng.Int64())
	case *arrow.Float32Type:
		fmt.Fprint(sb, float32(rng.NormFloat64()))
	case *arrow.BooleanType:
		fmt.Fprint(sb, rng.IntN(2) == 0)
	case *arrow.StringType, *arrow.LargeStringType:
		fmt.Fprintf(sb, "%q", strings.Repeat("x", rng.IntN(9))+fmt.Sprint(rng.IntN(1000)))
	case *arrow.BinaryType:
		b := make([]byte, rng.IntN(12))
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		fmt.Fprintf(sb, "%q", base64.StdEncoding.EncodeToString(b))
	case *arrow.FixedSizeBinaryType:
		fmt.Fprintf(sb, "%q", strings.Repeat("Zm9v", 1)) // "foo" base64, 3 bytes
	case *arrow.FixedSizeListType:
		sb.WriteByte('[')
		for i := range int(t.Len()) {
			if i > 0 {
				sb.WriteByte(',')
			}
			randJSON(rng, t.Elem(), sb, t.ElemField().Nullable)
		}
		sb.WriteByte(']')
	case *arrow.ListType, *arrow.LargeListType:
		elem := t.(arrow.ListLikeType).ElemField()
		sb.WriteByte('[')
		for i := range rng.IntN(4) {
			if i > 0 {
				sb.WriteByte(',')
			}
			randJSON(rng, elem.Type, sb, elem.Nullable)
		}
		sb.WriteByte(']')
	case *arrow.StructType:
		sb.WriteByte('{')
		for i, f := range t.Fields() {
			if i > 0 {
				sb.WriteByte(',')
			}
			fmt.Fprintf(sb, "%q:", f.Name)
			randJSON(rng, f.Type, sb, f.Nullable)
		}
		sb.WriteByte('}')
	case *arrow.MapType:
		sb.WriteByte('[')
		for i := range rng.IntN(3) {
			if i > 0 {
				sb.WriteByte(',')
			}
			fmt.Fprintf(sb, `{"key":"k%d","value":%d}`, i, rng.IntN(100))
		}
		sb.WriteByte(']')
	case *arrow.DictionaryType:
		fmt.Fprintf(sb, "%q", []string{"a", "b", "c"}[rng.IntN(3)])
	default:
		panic(fmt.Sprintf("randJSON: %s", dt))
	}
}

func randArray(t *testing.T, mem memory.Allocator, rng *rand.Rand, dt arrow.DataType, n int) arrow.Array {
	var sb strings.Builder
	sb.WriteByte('[')
	for i := range n {
		if i > 0 {
			sb.WriteByte(',')
		}
		randJSON(rng, dt, &sb, true)
	}
	sb.WriteByte(']')
	a, _, err := array.FromJSON(mem, dt, strings.NewReader(sb.String()))
	require.NoError(t, err, "%s: %s", dt, sb.String())
	return a
}

// TestGather: gathering random spans of sliced sources equals
// concatenating one-row slices, for every layout gather copies itself and
// for one it hands to array.Concatenate.
func TestGather(t *testing.T) {
	t.Parallel()
	types := []arrow.DataType{
		arrow.PrimitiveTypes.Int8, arrow.PrimitiveTypes.Int64, arrow.PrimitiveTypes.Float32, arrow.FixedWidthTypes.Date32,
		arrow.FixedWidthTypes.Boolean, arrow.BinaryTypes.String, arrow.BinaryTypes.LargeString, arrow.BinaryTypes.Binary,
		&arrow.FixedSizeBinaryType{ByteWidth: 3},
		arrow.FixedSizeListOf(3, arrow.PrimitiveTypes.Float32),
		arrow.FixedSizeListOfNonNullable(2, arrow.PrimitiveTypes.Int64),
		arrow.ListOf(arrow.PrimitiveTypes.Int32),
		arrow.LargeListOf(arrow.BinaryTypes.String),
		arrow.StructOf(arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int64, Nullable: true}, arrow.Field{Name: "b", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true}),
		arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int32),
		&arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int8, ValueType: arrow.BinaryTypes.String},
	}
	for _, dt := range types {
		t.Run(dt.String(), func(t *testing.T) {
			t.Parallel()
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			rng := rand.New(rand.NewPCG(1, uint64(len(dt.String()))))
			for trial := range 30 {
				// Sources: sliced, so that their offsets are not 0.
				nsrc := 1 + rng.IntN(4)
				srcs := make([]arrow.Array, nsrc)
				datas := make([]arrow.ArrayData, nsrc)
				for i := range srcs {
					full := randArray(t, mem, rng, dt, 40)
					lo := rng.IntN(10)
					srcs[i] = array.NewSlice(full, int64(lo), int64(lo+20+rng.IntN(40-lo-20+1)))
					full.Release()
					datas[i] = srcs[i].Data()
				}
				var spans []Span
				var parts []arrow.Array
				for range rng.IntN(50) {
					s := rng.IntN(nsrc)
					row := rng.IntN(srcs[s].Len())
					spans = AppendSpan(spans, int32(s), int64(row))
					parts = append(parts, array.NewSlice(srcs[s], int64(row), int64(row+1)))
					if rng.IntN(3) == 0 && row+1 < srcs[s].Len() { // a following row: spans merge
						spans = AppendSpan(spans, int32(s), int64(row+1))
						parts = append(parts, array.NewSlice(srcs[s], int64(row+1), int64(row+2)))
					}
				}
				got, err := gatherArray(mem, dirty{mem}, dt, datas, spans)
				require.NoError(t, err)
				ga := array.MakeFromData(got)
				got.Release()
				if len(parts) == 0 {
					require.Equal(t, 0, ga.Len())
				} else {
					want, err := array.Concatenate(parts, mem)
					require.NoError(t, err)
					require.True(t, array.Equal(want, ga), "trial %d\nwant %v\ngot  %v", trial, want, ga)
					require.Equal(t, want.NullN(), ga.NullN())
					want.Release()
				}
				ga.Release()
				for _, p := range parts {
					p.Release()
				}
				for _, s := range srcs {
					s.Release()
				}
			}
		})
	}
}

// dirty hands out buffers full of garbage, as a recycling allocator may:
// gather must write every byte it later reads.
type dirty struct{ memory.Allocator }

func (d dirty) Allocate(n int) []byte {
	b := d.Allocator.Allocate(n)
	for i := range b {
		b[i] = 0xa5
	}
	return b
}

func (d dirty) Reallocate(n int, b []byte) []byte {
	nb := d.Allocate(n)
	copy(nb, b)
	d.Free(b)
	return nb
}
