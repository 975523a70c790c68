package importers

import (
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"
)

func TestHFConvert(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	build := func(dt arrow.DataType, js string) arrow.Array {
		a, _, err := array.FromJSON(mem, dt, stringsReader(js))
		require.NoError(t, err)
		return a
	}
	for _, tc := range []struct {
		name     string
		from, to arrow.DataType
		in, want string
		slice    [2]int64 // rows [i, j) of the input; zero: all
		err      string
	}{
		{"timestamp s", &arrow.TimestampType{Unit: arrow.Second}, &arrow.TimestampType{Unit: arrow.Millisecond},
			`[1, null, -2]`, `[1000, null, -2000]`, [2]int64{}, ""},
		{"timestamp sliced", &arrow.TimestampType{Unit: arrow.Second}, &arrow.TimestampType{Unit: arrow.Millisecond},
			`[1, null, -2]`, `[null, -2000]`, [2]int64{1, 3}, ""},
		{"timestamp overflow", &arrow.TimestampType{Unit: arrow.Second}, &arrow.TimestampType{Unit: arrow.Millisecond},
			`[` + itoa(math.MaxInt64/100) + `]`, ``, [2]int64{}, "does not fit"},
		{"duration", &arrow.DurationType{Unit: arrow.Millisecond}, arrow.PrimitiveTypes.Int64, `[3, null]`, `[3, null]`, [2]int64{}, ""},
		{"large list sliced", arrow.LargeListOf(arrow.PrimitiveTypes.Int32), arrow.ListOf(arrow.PrimitiveTypes.Int32),
			`[[1], null, [2, 3], []]`, `[[2, 3], []]`, [2]int64{2, 4}, ""},
		{"struct of list of duration", arrow.StructOf(arrow.Field{Name: "l", Type: arrow.ListOf(&arrow.DurationType{Unit: arrow.Second}), Nullable: true}),
			arrow.StructOf(arrow.Field{Name: "l", Type: arrow.ListOf(arrow.PrimitiveTypes.Int64), Nullable: true}),
			`[{"l": [1, 2]}, null, {"l": null}]`, `[{"l": [1, 2]}, null, {"l": null}]`, [2]int64{}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			to, ch := hfStoreType(tc.from)
			require.True(t, ch)
			require.True(t, arrow.TypeEqual(tc.to, to), "%s", to)
			in := build(tc.from, tc.in)
			defer func() { in.Release() }()
			if tc.slice != [2]int64{} {
				s := array.NewSlice(in, tc.slice[0], tc.slice[1])
				in.Release()
				in = s
			}
			d, err := hfConvertData(in.Data(), to)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			got := array.MakeFromData(d)
			d.Release()
			defer got.Release()
			want := build(to, tc.want)
			defer want.Release()
			require.True(t, array.Equal(want, got), "got %s, want %s", got, want)
		})
	}
	_, ch := hfStoreType(arrow.StructOf(arrow.Field{Name: "a", Type: arrow.BinaryTypes.String}))
	require.False(t, ch)
}

func stringsReader(s string) *strings.Reader { return strings.NewReader(s) }

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
