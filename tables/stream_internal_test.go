package tables

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestBatchPlan: a file's scan is cut into batches that end at row group
// ends, of equal rows within a row group and at most about batchBytes;
// rows past the plan are read in one row group's batches.
func TestBatchPlan(t *testing.T) {
	for _, tc := range []struct {
		name       string
		rows       []int64 // of each row group
		raw        []int64 // uncompressed bytes of each row group
		batchBytes int64
		want       []int64 // batch sizes, then one past the plan
	}{
		{"one batch per row group", []int64{10, 20, 5}, []int64{100, 200, 50}, 1 << 30, []int64{10, 20, 5, 5}},
		{"row groups cut evenly", []int64{10, 8}, []int64{100, 80}, 30, []int64{3, 3, 3, 1, 3, 3, 2, 3}},
		{"one-row batches", []int64{3}, []int64{300}, 1, []int64{1, 1, 1, 1}},
		{"empty row group", []int64{4, 0, 4}, []int64{40, 0, 40}, 20, []int64{2, 2, 2, 2, 2}},
		{"sizes a damaged footer claims", []int64{4, 4}, []int64{1 << 62, -1}, 1 << 20, []int64{1, 1, 1, 1, 4, 4}},
		{"rows near the int64 limit", []int64{1<<63 - 2}, []int64{1 << 20}, 1 << 30, []int64{1<<63 - 2, 1<<63 - 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var plan []batchPlan
			var total int64
			for k := range tc.rows {
				plan = append(plan, newBatchPlan(total, tc.rows[k], tc.raw[k], tc.batchBytes))
				total += tc.rows[k]
			}
			var got []int64
			for at := int64(0); ; at += got[len(got)-1] {
				n := nextRows(plan, at)
				require.Positive(t, n)
				got = append(got, n)
				if at >= total {
					break
				}
			}
			require.Equal(t, tc.want, got)
		})
	}
}
