package versions_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftdata/weft/bucket"
	"github.com/weftdata/weft/versions"
)

func newStore(t *testing.T) *versions.Store {
	t.Helper()
	s, err := versions.New(bucket.NewMem(), versions.DefaultOptions())
	require.NoError(t, err)
	return s
}

// manifest stores a one-file manifest for table t with n rows.
func manifest(t *testing.T, s *versions.Store, p versions.ProjectName, table versions.TableName, n int64, files ...versions.DataFile) versions.ManifestID {
	t.Helper()
	m := &versions.Manifest{Table: table, Schema: []byte("schema"), Files: append(files, versions.DataFile{Path: fmt.Sprintf("data/%s/%d.parquet", table, n), Rows: n, Size: 10, RowGroups: []int64{n}})}
	id, err := s.PutManifest(context.Background(), p, m)
	require.NoError(t, err)
	return id
}

func TestProjectsAndBranches(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t)

	root, err := s.CreateProject(ctx, "robotics")
	require.NoError(t, err)
	require.Empty(t, root.Parent)
	require.Empty(t, root.Tables)

	_, err = s.CreateProject(ctx, "robotics")
	require.ErrorIs(t, err, versions.ErrProjectExists)
	require.ErrorIs(t, err, versions.ErrAlreadyExists)

	projects, err := s.ListProjects(ctx)
	require.NoError(t, err)
	require.Equal(t, []versions.ProjectName{"robotics"}, projects)

	head, err := s.CreateBranch(ctx, "robotics", "dev", "main")
	require.NoError(t, err)
	require.Equal(t, root.ID, head)
	_, err = s.CreateBranch(ctx, "robotics", "dev", "main")
	require.ErrorIs(t, err, versions.ErrBranchExists)
	_, err = s.CreateBranch(ctx, "robotics", "x", "nope")
	require.ErrorIs(t, err, versions.ErrRefNotFound)
	_, err = s.CreateBranch(ctx, "nope", "x", "main")
	require.ErrorIs(t, err, versions.ErrProjectNotFound)

	branches, err := s.ListBranches(ctx, "robotics")
	require.NoError(t, err)
	require.Equal(t, []versions.Branch{{Name: "dev", Head: root.ID}, {Name: "main", Head: root.ID}}, branches)
}

func TestInvalidNames(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t)
	for _, name := range []string{"", ".", "..", "a/b", "white space", "ü", strings.Repeat("a", 129), ".weft-tmp"} {
		t.Run(fmt.Sprintf("%q", name), func(t *testing.T) {
			_, err := s.CreateProject(ctx, versions.ProjectName(name))
			require.ErrorIs(t, err, versions.ErrInvalidName)
			require.ErrorIs(t, err, versions.ErrInvalid)
			_, err = versions.ParseTableName(name)
			require.ErrorIs(t, err, versions.ErrInvalidName)
		})
	}
	for _, name := range []string{"a", "A-b_c.d", strings.Repeat("z", 128), "..."} {
		_, err := versions.ParseBranchName(name)
		require.NoError(t, err, name)
	}
}

func TestCommitResolveAndLog(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t)
	root, err := s.CreateProject(ctx, "p")
	require.NoError(t, err)

	var ids []versions.CommitID
	for i := range 5 {
		m := manifest(t, s, "p", "t", int64(i+1))
		c, err := s.Commit(ctx, "p", "main", fmt.Sprintf("commit %d", i), func(ctx context.Context, head *versions.Commit) (map[versions.TableName]versions.ManifestID, error) {
			return map[versions.TableName]versions.ManifestID{"t": m}, nil
		})
		require.NoError(t, err)
		ids = append(ids, c.ID)
	}
	log, err := s.Log(ctx, "p", "main", 0)
	require.NoError(t, err)
	require.Len(t, log, 6)
	for i, c := range log[:5] {
		require.Equal(t, ids[4-i], c.ID, "newest first")
	}
	require.Equal(t, root.ID, log[5].ID)

	limited, err := s.Log(ctx, "p", string(ids[2]), 2)
	require.NoError(t, err)
	require.Equal(t, []versions.CommitID{ids[2], ids[1]}, []versions.CommitID{limited[0].ID, limited[1].ID})

	t.Run("full id", func(t *testing.T) {
		got, err := s.Resolve(ctx, "p", string(ids[1]))
		require.NoError(t, err)
		require.Equal(t, ids[1], got)
	})
	t.Run("prefix", func(t *testing.T) {
		got, err := s.Resolve(ctx, "p", string(ids[1][:10]))
		require.NoError(t, err)
		require.Equal(t, ids[1], got)
	})
	t.Run("short prefix", func(t *testing.T) {
		_, err := s.Resolve(ctx, "p", string(ids[1][:7]))
		require.ErrorIs(t, err, versions.ErrRefNotFound)
	})
	t.Run("unknown prefix", func(t *testing.T) {
		_, err := s.Resolve(ctx, "p", "00000000")
		if err == nil { // astronomically unlikely: a commit id starts with 8 zeros
			t.Skip("a commit id really starts with 00000000")
		}
		require.ErrorIs(t, err, versions.ErrRefNotFound)
	})
	t.Run("hex branch names refused", func(t *testing.T) {
		_, err := s.CreateBranch(ctx, "p", versions.BranchName(ids[0][:8]), string(ids[3]))
		require.ErrorIs(t, err, versions.ErrHexName)
	})
	t.Run("commit content", func(t *testing.T) {
		c, err := s.GetCommit(ctx, "p", ids[4])
		require.NoError(t, err)
		require.Equal(t, "commit 4", c.Message)
		require.Equal(t, ids[3], c.Parent)
		require.Contains(t, c.Tables, versions.TableName("t"))
	})
}

func TestAmbiguousPrefix(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := bucket.NewMem()
	s, err := versions.New(b, versions.DefaultOptions())
	require.NoError(t, err)
	_, err = s.CreateProject(ctx, "p")
	require.NoError(t, err)
	// Two fake commit keys with a shared 8-digit prefix.
	for _, id := range []string{"abcdef01" + strings.Repeat("0", 56), "abcdef01" + strings.Repeat("1", 56)} {
		_, err := b.PutIfAbsent(ctx, "projects/p/commits/"+id, []byte("{}"))
		require.NoError(t, err)
	}
	_, err = s.Resolve(ctx, "p", "abcdef01")
	require.ErrorIs(t, err, versions.ErrAmbiguousRef)
	require.ErrorIs(t, err, versions.ErrInvalid)
}

func TestCorruptObjectsAreRejected(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := bucket.NewMem()
	s, err := versions.New(b, versions.DefaultOptions())
	require.NoError(t, err)
	root, err := s.CreateProject(ctx, "p")
	require.NoError(t, err)
	key := "projects/p/commits/" + string(root.ID)
	data, _, err := b.Get(ctx, key)
	require.NoError(t, err)
	tampered := strings.Replace(string(data), "create project", "Create project", 1)
	_, err = b.Put(ctx, key, strings.NewReader(tampered), int64(len(tampered)))
	require.NoError(t, err)
	_, err = s.GetCommit(ctx, "p", root.ID)
	require.ErrorIs(t, err, versions.ErrCorrupt)
}

func TestIDsAreContentHashes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t)
	_, err := s.CreateProject(ctx, "p")
	require.NoError(t, err)
	a := manifest(t, s, "p", "t", 7)
	b := manifest(t, s, "p", "t", 7)
	c := manifest(t, s, "p", "t", 8)
	require.Equal(t, a, b, "same content, same id")
	require.NotEqual(t, a, c)
	require.Len(t, string(a), 64)
	m, err := s.GetManifest(ctx, "p", a)
	require.NoError(t, err)
	require.Equal(t, int64(7), m.Rows())

	_, err = s.PutManifest(ctx, "p", &versions.Manifest{Table: "t", Files: []versions.DataFile{{Path: "data/t/x.parquet", Rows: 3, RowGroups: []int64{1}}}})
	require.ErrorIs(t, err, versions.ErrInvalid)
}

// TestConcurrentCommits: 8 writers × 25 commits on one branch give one linear
// history of 200 commits, each writer's change applied exactly once.
func TestConcurrentCommits(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t)
	root, err := s.CreateProject(ctx, "p")
	require.NoError(t, err)

	const writers, each = 8, 25
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			table := versions.TableName(fmt.Sprintf("t%d", w))
			for i := range each {
				_, err := s.Commit(ctx, "p", "main", fmt.Sprintf("w%d-%d", w, i), func(ctx context.Context, head *versions.Commit) (map[versions.TableName]versions.ManifestID, error) {
					// Each writer counts its commits in its own table's row count.
					var n int64
					if id, ok := head.Tables[table]; ok {
						m, err := s.GetManifest(ctx, "p", id)
						if err != nil {
							return nil, err
						}
						n = m.Rows()
					}
					m := &versions.Manifest{Table: table, Files: []versions.DataFile{{Path: "data/t/f.parquet", Rows: n + 1, RowGroups: []int64{n + 1}}}}
					id, err := s.PutManifest(ctx, "p", m)
					return map[versions.TableName]versions.ManifestID{table: id}, err
				})
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	log, err := s.Log(ctx, "p", "main", 0)
	require.NoError(t, err)
	require.Len(t, log, writers*each+1)
	require.Equal(t, root.ID, log[len(log)-1].ID)
	seen := map[string]bool{}
	for _, c := range log[:len(log)-1] {
		require.False(t, seen[c.Message], "message %s twice", c.Message)
		seen[c.Message] = true
	}
	head := log[0]
	for w := range writers {
		m, err := s.GetManifest(ctx, "p", head.Tables[versions.TableName(fmt.Sprintf("t%d", w))])
		require.NoError(t, err)
		require.Equal(t, int64(each), m.Rows(), "writer %d", w)
	}
}

func TestCommitChangeErrorCommitsNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t)
	root, err := s.CreateProject(ctx, "p")
	require.NoError(t, err)
	boom := errors.New("boom")
	_, err = s.Commit(ctx, "p", "main", "x", func(context.Context, *versions.Commit) (map[versions.TableName]versions.ManifestID, error) {
		return nil, boom
	})
	require.ErrorIs(t, err, boom)
	head, err := s.Head(ctx, "p", "main")
	require.NoError(t, err)
	require.Equal(t, root.ID, head)
	_, err = s.Commit(ctx, "p", "nobranch", "x", nil)
	require.ErrorIs(t, err, versions.ErrBranchNotFound)
	_, err = s.Commit(ctx, "nope", "main", "x", nil)
	require.ErrorIs(t, err, versions.ErrProjectNotFound)
}

// plainBucket is a Bucket of another package: bucket.GetSmall falls back
// to its Get.
type plainBucket struct{ bucket.Bucket }

// TestHugeObjectsAreCorrupt: a ref, commit, manifest or run record over
// the size this package ever writes (another tool's object at its key, a
// damaged one) is Corrupt, refused before it is read into memory (by the
// backends of package bucket; any other Bucket still gets the error, after
// reading it).
func TestHugeObjectsAreCorrupt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	huge := strings.Repeat("x", bucket.MaxConditionalSize+1)
	for _, tc := range []struct {
		name string
		key  func(root *versions.Commit) string
		read func(s *versions.Store, root *versions.Commit) error
	}{
		{"ref", func(*versions.Commit) string { return versions.RefKey("p", "main") }, func(s *versions.Store, _ *versions.Commit) error {
			_, err := s.Resolve(ctx, "p", "main")
			return err
		}},
		{"commit", func(root *versions.Commit) string { return versions.CommitKey("p", root.ID) }, func(s *versions.Store, root *versions.Commit) error {
			_, err := s.GetCommit(ctx, "p", root.ID)
			return err
		}},
		{"manifest", func(*versions.Commit) string {
			return versions.ManifestKey("p", versions.ManifestID(strings.Repeat("ab", 32)))
		}, func(s *versions.Store, _ *versions.Commit) error {
			_, err := s.GetManifest(ctx, "p", versions.ManifestID(strings.Repeat("ab", 32)))
			return err
		}},
		{"run record", func(*versions.Commit) string { return versions.RunKey("p", strings.Repeat("cd", 32)) }, func(s *versions.Store, _ *versions.Commit) error {
			_, err := s.GetRunRecord(ctx, "p", strings.Repeat("cd", 32))
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, b := range []bucket.Bucket{bucket.NewMem(), plainBucket{bucket.NewMem()}} {
				s, err := versions.New(b, versions.DefaultOptions())
				require.NoError(t, err)
				root, err := s.CreateProject(ctx, "p")
				require.NoError(t, err)
				_, err = b.Put(ctx, tc.key(root), strings.NewReader(huge), int64(len(huge)))
				require.NoError(t, err)
				err = tc.read(s, root)
				require.ErrorIs(t, err, versions.ErrCorrupt)
				require.ErrorIs(t, err, bucket.ErrObjectTooLarge)
			}
		})
	}
}
