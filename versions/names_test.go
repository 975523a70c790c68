package versions_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftdata/weft/bucket"
	"github.com/weftdata/weft/errdefs"
	"github.com/weftdata/weft/versions"
)

// TestHexNamesRefused: a project, branch or table name of 8 to 64 hex
// digits, in any case, could be read as a commit id or prefix.
func TestHexNamesRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t)
	_, err := s.CreateProject(ctx, "p")
	require.NoError(t, err)
	refused := []string{"deadbeef", "DEADBEEF", "DeadBeef01", "12345678", strings.Repeat("a", 64), strings.Repeat("F", 64), strings.Repeat("0", 40)}
	for _, name := range refused {
		t.Run(name, func(t *testing.T) {
			for _, parse := range []func(string) error{
				func(s string) error { _, err := versions.ParseProjectName(s); return err },
				func(s string) error { _, err := versions.ParseBranchName(s); return err },
				func(s string) error { _, err := versions.ParseTableName(s); return err },
			} {
				err := parse(name)
				require.ErrorIs(t, err, versions.ErrHexName)
				require.ErrorIs(t, err, versions.ErrInvalidName)
				require.ErrorIs(t, err, errdefs.ErrInvalidArgument)
				require.Contains(t, err.Error(), "commit id")
			}
			_, err := s.CreateBranch(ctx, "p", versions.BranchName(name), "main")
			require.ErrorIs(t, err, versions.ErrHexName)
			_, err = s.CreateProject(ctx, versions.ProjectName(name))
			require.ErrorIs(t, err, versions.ErrHexName)
		})
	}
	allowed := []string{"deadbee", "deadbeeg", "v-deadbeef", strings.Repeat("a", 65), "cafe-babe", "0x12345678"}
	for _, name := range allowed {
		_, err := versions.ParseBranchName(name)
		require.NoError(t, err, name)
	}
}

// TestLongNameMessage: a huge name yields a short message that still
// shows its start and its length.
func TestLongNameMessage(t *testing.T) {
	t.Parallel()
	name := strings.Repeat("n", 17<<20)
	_, err := versions.ParseBranchName(name)
	require.ErrorIs(t, err, versions.ErrInvalidName)
	require.Less(t, len(err.Error()), 300)
	require.Contains(t, err.Error(), fmt.Sprint(len(name), " bytes"))
	s := newStore(t)
	_, err = s.CreateProject(context.Background(), "p")
	require.NoError(t, err)
	_, err = s.Resolve(context.Background(), "p", name)
	require.ErrorIs(t, err, versions.ErrRefNotFound)
	require.Less(t, len(err.Error()), 300)
	require.Contains(t, err.Error(), fmt.Sprint(len(name), " bytes"))
}

// TestResolveLegacyHexBranches: in a store whose branches were named before
// hex names were refused (seeded here through the bucket), an exact commit
// id always wins over a branch spelled the same; a branch still wins over a
// mere prefix and stays reachable by its name.
func TestResolveLegacyHexBranches(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := bucket.NewMem()
	s, err := versions.New(b, versions.DefaultOptions())
	require.NoError(t, err)
	root, err := s.CreateProject(ctx, "p")
	require.NoError(t, err)
	m := manifest(t, s, "p", "t", 10)
	ids := []versions.CommitID{root.ID}
	for i := range 3 {
		c, err := s.Commit(ctx, "p", "main", fmt.Sprint("commit ", i), func(context.Context, *versions.Commit) (map[versions.TableName]versions.ManifestID, error) {
			return map[versions.TableName]versions.ManifestID{"t": m}, nil
		})
		require.NoError(t, err)
		ids = append(ids, c.ID)
	}
	seed := func(branch string, head versions.CommitID) {
		_, err := b.PutIfAbsent(ctx, versions.ProjectKey("p")+"refs/heads/"+branch, []byte(string(head)+"\n"))
		require.NoError(t, err)
	}
	// A branch named exactly like commit ids[1], pointing at ids[3].
	seed(string(ids[1]), ids[3])
	// A 64-hex branch that is no commit's id.
	notACommit := strings.Repeat("ab", 32)
	seed(notACommit, ids[2])
	// A branch named like a prefix of ids[0], pointing at ids[3].
	seed(string(ids[0][:8]), ids[3])
	// An upper-case hex branch.
	seed("DEADBEEF", ids[2])

	cases := []struct {
		name, ref string
		want      versions.CommitID
	}{
		{"exact commit id beats branch", string(ids[1]), ids[1]},
		{"64-hex branch that is no commit", notACommit, ids[2]},
		{"branch beats prefix", string(ids[0][:8]), ids[3]},
		{"longer prefix is not the branch", string(ids[0][:9]), ids[0]},
		{"upper-case hex branch", "DEADBEEF", ids[2]},
		{"prefix of the shadowed commit", string(ids[1][:12]), ids[1]},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.Resolve(ctx, "p", tc.ref)
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
	// Log through the shadowed id starts at the commit, not the branch.
	log, err := s.Log(ctx, "p", string(ids[1]), 0)
	require.NoError(t, err)
	require.Equal(t, ids[1], log[0].ID)
	// The branches are listed as they are.
	bs, err := s.ListBranches(ctx, "p")
	require.NoError(t, err)
	require.Len(t, bs, 5)
}
