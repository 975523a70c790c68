package bytesize_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftdata/weft/internal/bytesize"
)

func TestHuman(t *testing.T) {
	for _, tc := range []struct {
		in   int64
		want string
	}{
		{0, "0 B"},
		{1023, "1023 B"},
		{1024, "1.0 KiB"},
		{1536, "1.5 KiB"},
		{64 << 20, "64.0 MiB"},
		{3 << 30, "3.0 GiB"},
		{5 << 40, "5.0 TiB"},
		{2048 << 40, "2048.0 TiB"},
		{-2048, "-2048 B"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			require.Equal(t, tc.want, bytesize.Human(tc.in))
			require.Equal(t, tc.want, bytesize.Human(float64(tc.in)))
		})
	}
	require.Equal(t, "1.5 MiB", bytesize.Human(1.5*(1<<20)), "a rate")
}

func ExampleHuman() {
	fmt.Println(bytesize.Human(int64(200 << 20)))
	// Output: 200.0 MiB
}
