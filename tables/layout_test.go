package tables

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCutRowGroup(t *testing.T) {
	t.Parallel()
	const mb = 1 << 20
	for _, tc := range []struct {
		name  string
		rows  int64
		bytes int64
		pages []int64
		want  []int64
	}{
		{"small", 1000, mb, nil, []int64{1000}},
		{"a little over", 1000, 5 * mb / 4, nil, []int64{1000}},
		{"even split", 1000, 4 * mb, nil, []int64{250, 250, 250, 250}},
		{"uneven split", 10, 3 * mb, nil, []int64{3, 3, 4}},
		{"page aligned", 1000, 4 * mb, []int64{0, 200, 400, 600, 800}, []int64{200, 400, 200, 200}},
		{"pages larger than blocks", 4096, 8 * mb, []int64{0, 1024, 2048, 3072}, []int64{1024, 1024, 1024, 1024}},
		{"one page", 4096, 8 * mb, []int64{0}, []int64{4096}},
		{"more blocks than rows", 3, 100 * mb, nil, []int64{1, 1, 1}},
		{"one row", 1, 100 * mb, nil, []int64{1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := cutRowGroup(tc.rows, tc.bytes, tc.pages, mb)
			require.Equal(t, tc.want, got)
		})
	}
}
