package mix

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftdata/weft/bucket"
	"github.com/weftdata/weft/errdefs"
	"github.com/weftdata/weft/versions"
)

// TestFindRunPrefixes plants run records whose ids share a prefix in two
// projects (FindRun reads only their keys) and checks unique, ambiguous,
// unknown and per-project lookups.
func TestFindRunPrefixes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	en := newEnv(t, bucket.NewMem(), envOpts{})
	en.project("p")
	en.project("q")
	idP := "abcdef01" + strings.Repeat("0", 56)
	idQ := "abcdef01" + strings.Repeat("1", 56)
	idU := "12345678" + strings.Repeat("2", 56)
	for _, r := range []struct{ p, id string }{{"p", idP}, {"q", idQ}, {"p", idU}} {
		_, _, err := en.v.PutRunRecord(ctx, versions.ProjectName(r.p), r.id, []byte("{}"))
		require.NoError(t, err)
	}
	only := func(ps ...versions.ProjectName) func(versions.ProjectName) bool {
		return func(p versions.ProjectName) bool {
			for _, q := range ps {
				if p == q {
					return true
				}
			}
			return false
		}
	}
	for _, tc := range []struct {
		name, ref string
		visible   func(versions.ProjectName) bool
		want      string
		kind      error
		msg       string
	}{
		{name: "unique prefix", ref: "12345678", want: idU},
		{name: "longer unique prefix", ref: idP[:20], want: idP},
		{name: "full id is returned as is", ref: idQ, want: idQ},
		{name: "ambiguous", ref: "abcdef01", kind: errdefs.ErrInvalidArgument, msg: "2 runs start with it"},
		{name: "ambiguous becomes unique within the readable projects", ref: "abcdef01", visible: only("q"), want: idQ},
		{name: "unknown", ref: "fedcba98", kind: errdefs.ErrNotFound, msg: "no run starts with fedcba98"},
		{name: "a run of an unreadable project is not found", ref: "12345678", visible: only("q"), kind: errdefs.ErrNotFound},
		{name: "too short", ref: "abcdef0", kind: errdefs.ErrInvalidArgument, msg: "at least 8"},
		{name: "not hex", ref: "abcdefgh", kind: errdefs.ErrInvalidArgument},
		{name: "upper case", ref: "ABCDEF01", kind: errdefs.ErrInvalidArgument},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := en.e.FindRunIn(ctx, tc.ref, tc.visible)
			if tc.kind != nil {
				require.ErrorIs(t, err, tc.kind)
				require.Contains(t, err.Error(), tc.msg)
				return
			}
			require.NoError(t, err)
			require.Equal(t, RunID(tc.want), got)
		})
	}
}
