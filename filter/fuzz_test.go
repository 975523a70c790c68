package filter

import (
	"errors"
	"testing"

	"github.com/weftdata/weft/errdefs"
)

// FuzzParse: any text parses or fails with InvalidArgument, never panics;
// a filter that parses prints a canonical text that parses to itself.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"i = 1", "a AND NOT (b OR c)", "s LIKE 'x%'", "x IN (1, 2, -3.5e2)", "t >= TIMESTAMP '2024-01-01'",
		"x IS NOT NULL", "x NOT BETWEEN 1 AND 2", `"q""x" = 'it''s'`, "starts_with(s, 'a')", "((((", "- 1 < x"} {
		f.Add(s)
	}
	lim := Limits{MaxBytes: 4096, MaxDepth: 16, MaxInList: 64}
	f.Fuzz(func(t *testing.T, text string) {
		e, err := Parse(text, lim)
		if err != nil {
			if !errors.Is(err, errdefs.ErrInvalidArgument) {
				t.Fatalf("%q: error %v is not InvalidArgument", text, err)
			}
			return
		}
		e2, err := Parse(e.String(), Limits{MaxBytes: 1 << 20, MaxDepth: 1 << 10, MaxInList: 1 << 10})
		if err != nil {
			t.Fatalf("%q: canonical %q does not parse: %v", text, e.String(), err)
		}
		if e2.String() != e.String() {
			t.Fatalf("%q: canonical %q reparses as %q", text, e.String(), e2.String())
		}
		_, _ = Bind(e, testSchema)
	})
}
