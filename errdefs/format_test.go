package errdefs_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftdata/weft/errdefs"
)

func TestQuote(t *testing.T) {
	cases := []struct {
		name, in, want string
	}{
		{"short", "abc", `"abc"`},
		{"exactly max", strings.Repeat("a", 64), `"` + strings.Repeat("a", 64) + `"`},
		{"long", strings.Repeat("a", 100), `"` + strings.Repeat("a", 64) + `…" (100 bytes)`},
		{"utf8 boundary", strings.Repeat("a", 63) + "éé", `"` + strings.Repeat("a", 63) + `…" (67 bytes)`},
		{"huge", strings.Repeat("x", 17<<20), `"` + strings.Repeat("x", 64) + `…" (17825792 bytes)`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, errdefs.Quote(tc.in))
		})
	}
}

func TestList(t *testing.T) {
	many := make([]string, 1000)
	for i := range many {
		many[i] = fmt.Sprintf("c%d", i)
	}
	cases := []struct {
		name string
		in   []string
		want string
	}{
		{"empty", nil, ""},
		{"one", []string{"a"}, `"a"`},
		{"few", []string{"a", "b", "c"}, `"a", "b", "c"`},
		{"many", many, `"c0", "c1", "c2", "c3", "c4", "c5", "c6", "c7" and 992 more`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, errdefs.List(tc.in))
		})
	}
}
