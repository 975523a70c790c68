package shmfile_test

import (
	"os"
	"os/exec"
	"path/filepath"
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
	f, err := shmfile.Create(dir, "weft-test-", 4096)
	require.NoError(t, err)
	path, mem := f.Path, f.Mem
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

	f2, err := shmfile.Create(dir, "weft-test-", 64)
	require.NoError(t, err)
	require.NotEqual(t, path, f2.Path)
	require.NoError(t, f2.Remove())

	require.NoError(t, f.Remove())
	_, err = os.Stat(path)
	require.ErrorIs(t, err, os.ErrNotExist)
	require.NoError(t, f.Remove(), "a file already gone")
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
			_, err := shmfile.Create(dir, "weft-test-", tc.size)
			require.Error(t, err)
			left, _ := os.ReadDir(dir)
			require.Empty(t, left, "a refused file leaves nothing behind")
		})
	}
}

// ownerEnv makes the test binary a process that creates a file in the
// directory it names and exits without removing it (a crashed server).
const ownerEnv = "WEFT_SHMFILE_TEST_OWNER"

func TestMain(m *testing.M) {
	if dir := os.Getenv(ownerEnv); dir != "" {
		f, err := shmfile.Create(dir, "weft-test-", 8192)
		if err != nil {
			os.Exit(2)
		}
		_ = f
		os.Exit(0) // no Remove: the file stays, its lock goes with the process
	}
	os.Exit(m.Run())
}

// TestSweep: Sweep removes the files whose owner died (a child process
// that created one and exited, a creator killed inside Create after it
// allocated its new file), and keeps a file this process owns, a file
// Create is still making (locked), an empty new file (its creator may not
// hold its lock yet), and files of other names.
func TestSweep(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for range 2 {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), ownerEnv+"="+dir)
		require.NoError(t, cmd.Run())
	}
	live, err := shmfile.Create(dir, "weft-test-", 4096)
	require.NoError(t, err)
	defer live.Remove()
	other := []string{"weft-test-notours", "weft-test-new-notours", "something-else", "weft-test-new-00000000ffffffff"}
	for _, n := range other {
		require.NoError(t, os.WriteFile(dir+"/"+n, []byte("x"), 0o600))
	}
	require.NoError(t, os.Truncate(dir+"/weft-test-new-00000000ffffffff", 0))
	// a creator killed inside Create: its new file, unlocked
	require.NoError(t, os.WriteFile(dir+"/weft-test-new-0123456789abcdef", make([]byte, 100), 0o600))
	// a Create under way: its new file, locked
	making := "weft-test-new-fedcba9876543210"
	mf, err := os.OpenFile(dir+"/"+making, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	require.NoError(t, err)
	defer mf.Close()
	require.NoError(t, syscall.Flock(int(mf.Fd()), syscall.LOCK_SH))
	require.NoError(t, mf.Truncate(100))
	other = append(other, making)
	before, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, before, 2+1+1+len(other))

	files, bytes, err := shmfile.Sweep(dir, "weft-test-")
	require.NoError(t, err)
	require.Equal(t, 3, files, "the dead owners' files and the dead creator's")
	require.Equal(t, int64(2*8192+100), bytes)
	after, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range after {
		names = append(names, e.Name())
	}
	require.ElementsMatch(t, append([]string{filepath.Base(live.Path)}, other...), names)
	live.Mem[0] = 1 // still mapped, still ours

	files, _, err = shmfile.Sweep(dir, "weft-test-")
	require.NoError(t, err)
	require.Zero(t, files, "nothing more")
}

// TestSweepRacesCreate: sweeps running all along never take a file of a
// Create under way, nor one it returned.
func TestSweepRacesCreate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	stop := make(chan struct{})
	swept := make(chan int)
	go func() {
		n := 0
		for {
			select {
			case <-stop:
				swept <- n
				return
			default:
			}
			files, _, err := shmfile.Sweep(dir, "weft-test-")
			if err != nil {
				panic(err)
			}
			n += files
		}
	}()
	var made []*shmfile.File
	for range 300 {
		f, err := shmfile.Create(dir, "weft-test-", 4096)
		require.NoError(t, err)
		made = append(made, f)
	}
	close(stop)
	require.Zero(t, <-swept, "no file of a live owner was swept")
	for _, f := range made {
		_, err := os.Stat(f.Path)
		require.NoError(t, err)
		require.NoError(t, f.Remove())
	}
	left, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Empty(t, left)
}

// TestUnshared: the owner sees whether another open file of its file
// holds a flock (an importer's open handle), and keeps its owner lock
// either way: Sweep still cannot take the file.
func TestUnshared(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	f, err := shmfile.Create(dir, "weft-test-", 4096)
	require.NoError(t, err)
	defer f.Remove()
	ok, err := f.Unshared()
	require.NoError(t, err)
	require.True(t, ok)
	r, err := os.Open(f.Path)
	require.NoError(t, err)
	require.NoError(t, syscall.Flock(int(r.Fd()), syscall.LOCK_SH))
	ok, err = f.Unshared()
	require.NoError(t, err)
	require.False(t, ok, "a reader holds the file")
	require.NoError(t, r.Close())
	files, _, err := shmfile.Sweep(dir, "weft-test-")
	require.NoError(t, err)
	require.Zero(t, files, "the owner lock holds after Unshared")
	ok, err = f.Unshared()
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, f.Remove())
	_, err = f.Unshared()
	require.Error(t, err)
}
