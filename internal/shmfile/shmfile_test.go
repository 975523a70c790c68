package shmfile_test

import (
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftdata/weft/internal/shmfile"
)

func TestCreateRemove(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	path, mem, err := shmfile.Create(dir, "weft-test-", 4096)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(path, dir+"/weft-test-"))
	require.Len(t, mem, 4096)
	fi, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "only the server's user may open it, whatever the umask")
	require.Equal(t, int64(4096), fi.Size())
	mem[4095] = 7
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, byte(7), data[4095], "the mapping is the file's")

	path2, mem2, err := shmfile.Create(dir, "weft-test-", 64)
	require.NoError(t, err)
	require.NotEqual(t, path, path2)
	require.NoError(t, shmfile.Remove(path2, mem2))

	require.NoError(t, shmfile.Remove(path, mem))
	_, err = os.Stat(path)
	require.ErrorIs(t, err, os.ErrNotExist)
	require.NoError(t, shmfile.Remove(path, nil), "a file already gone")
}

func TestCreateRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		dir  func(t *testing.T) string
		size int64
	}{
		{"no such dir", func(t *testing.T) string { return t.TempDir() + "/missing" }, 64},
		{"no bytes", func(t *testing.T) string { return t.TempDir() }, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := tc.dir(t)
			_, _, err := shmfile.Create(dir, "weft-test-", tc.size)
			require.Error(t, err)
			left, _ := os.ReadDir(dir)
			require.Empty(t, left, "a refused file leaves nothing behind")
		})
	}
}
