package importers

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLocalSourceConfined: a local source's files are opened through an
// os.Root of its directory, opened through the import root: a symlink to
// outside that appears after openLocalSource's checks (here, the source
// directory itself swapped for one) is refused at Open, where a path
// opened by name would have followed it.
func TestLocalSourceConfined(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "root")
	src := filepath.Join(root, "ds")
	outside := filepath.Join(base, "outside")
	for _, d := range []string{src, outside} {
		require.NoError(t, os.MkdirAll(d, 0o755))
	}
	require.NoError(t, os.WriteFile(filepath.Join(src, "a.txt"), []byte("inside"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(outside, "a.txt"), []byte("SECRET"), 0o644))

	s, err := OpenSource(context.Background(), src, SourceOptions{LocalAllowed: true, Roots: []string{root}})
	require.NoError(t, err)
	defer s.Close()
	rc, err := s.Open(context.Background(), "a.txt")
	require.NoError(t, err)
	b, err := io.ReadAll(rc)
	require.NoError(t, err)
	require.NoError(t, rc.Close())
	require.Equal(t, "inside", string(b))

	// The source directory is swapped for a symlink to outside the root.
	require.NoError(t, os.Rename(src, filepath.Join(root, "moved")))
	require.NoError(t, os.Symlink(outside, src))
	ls := s.(*localSource)
	f, err := ls.dir.Open("a.txt") // past resolve: the root still names the moved directory
	require.NoError(t, err)
	b, err = io.ReadAll(f)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	require.Equal(t, "inside", string(b), "the source's directory is held open: the swap does not redirect it")
	rc, err = s.Open(context.Background(), "a.txt")
	if err == nil {
		b, _ = io.ReadAll(rc)
		rc.Close()
	}
	require.NotEqual(t, "SECRET", string(b), "never a file outside the import root")

	// A symlink inside the source to outside is refused by the root too.
	require.NoError(t, os.Symlink(filepath.Join(outside, "a.txt"), filepath.Join(root, "moved", "link.txt")))
	_, err = ls.dir.Open("link.txt")
	require.Error(t, err, "os.Root refuses a symlink that leaves it")
}
