package flight

import (
	"errors"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/weftdata/weft/episodes"
)

// TestReadWindowsRefusesMalformed: a video window column whose types do
// not fit the wire (contract section 5) is refused with
// ErrUnavailableDelivery, never read out of bounds.
func TestReadWindowsRefusesMalformed(t *testing.T) {
	seg := episodes.SegmentType
	const segment = `{"media": "ab", "codec": "h264", "config": "", "width": 64, "height": 48, "timescale": 90000,
		"units": ["AAE="], "dts": [0], "unit_pts": [1], "size": null, "mean": null, "std": null, "dtype": null}`
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
		{"well formed", window(2, 2), `[{"segment": [0, 0], "pts": [1, 2], "segments": [` + segment + `]}]`, true},
		{"a frame names a segment the rows lack", window(2, 2), `[{"segment": [0, 1], "pts": [1, 2], "segments": [` + segment + `]}]`, false},
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
			w, err := readWindows(arr)
			if tc.ok {
				require.NoError(t, err)
				require.Len(t, w.Segments, 1)
				return
			}
			require.Error(t, err)
			require.True(t, errors.Is(err, ErrUnavailableDelivery), "%v", err)
		})
	}
}
