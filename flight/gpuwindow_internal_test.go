package flight

import (
	"errors"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"
)

// TestParseWindowRefusesMalformed: a video window column whose types do
// not fit the wire (contract section 5) is refused with
// ErrUnavailableDelivery, never read out of bounds.
func TestParseWindowRefusesMalformed(t *testing.T) {
	seg := arrow.StructOf(
		arrow.Field{Name: "codec", Type: arrow.BinaryTypes.String},
		arrow.Field{Name: "config", Type: arrow.BinaryTypes.Binary},
		arrow.Field{Name: "width", Type: arrow.PrimitiveTypes.Int32},
		arrow.Field{Name: "height", Type: arrow.PrimitiveTypes.Int32},
		arrow.Field{Name: "units", Type: arrow.ListOf(arrow.BinaryTypes.Binary)},
		arrow.Field{Name: "unit_pts", Type: arrow.ListOf(arrow.PrimitiveTypes.Int64)},
	)
	window := func(segN, ptsN int32) arrow.DataType {
		return arrow.StructOf(
			arrow.Field{Name: "segment", Type: arrow.FixedSizeListOf(segN, arrow.PrimitiveTypes.Int32)},
			arrow.Field{Name: "pts", Type: arrow.FixedSizeListOf(ptsN, arrow.PrimitiveTypes.Int64)},
			arrow.Field{Name: "segments", Type: arrow.ListOf(seg)},
		)
	}
	for _, tc := range []struct {
		name string
		dt   arrow.DataType
		js   string
		ok   bool
	}{
		{"well formed", window(2, 2), `[{"segment": [0, 0], "pts": [1, 2], "segments": []}]`, true},
		{"pts longer than segment indexes", window(1, 3), `[{"segment": [0], "pts": [1, 2, 3], "segments": []}]`, false},
		{"pts shorter than segment indexes", window(3, 1), `[{"segment": [0, 0, 0], "pts": [1], "segments": []}]`, false},
		{"segments of another type", arrow.StructOf(
			arrow.Field{Name: "segment", Type: arrow.FixedSizeListOf(1, arrow.PrimitiveTypes.Int32)},
			arrow.Field{Name: "pts", Type: arrow.FixedSizeListOf(1, arrow.PrimitiveTypes.Int64)},
			arrow.Field{Name: "segments", Type: arrow.ListOf(arrow.PrimitiveTypes.Int32)},
		), `[{"segment": [0], "pts": [1], "segments": []}]`, false},
		{"no pts", arrow.StructOf(
			arrow.Field{Name: "segment", Type: arrow.FixedSizeListOf(1, arrow.PrimitiveTypes.Int32)},
			arrow.Field{Name: "segments", Type: arrow.ListOf(seg)},
		), `[{"segment": [0], "segments": []}]`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			arr, _, err := array.FromJSON(memory.DefaultAllocator, tc.dt, strings.NewReader(tc.js))
			require.NoError(t, err)
			defer arr.Release()
			w, err := parseWindow(arr)
			if tc.ok {
				require.NoError(t, err)
				require.Equal(t, 0, w.nsegs)
				return
			}
			require.Error(t, err)
			require.True(t, errors.Is(err, ErrUnavailableDelivery), "%v", err)
		})
	}
}
