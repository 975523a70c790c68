package gpu

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// dslotOwnerEnv makes the test binary a process that allocates a fake
// device region in the directory it names and exits without freeing it
// (a killed test or server).
const dslotOwnerEnv = "WEFT_GPU_TEST_DSLOT_OWNER"

func TestMain(m *testing.M) {
	if dir := os.Getenv(dslotOwnerEnv); dir != "" {
		if _, err := NewShmMemory(dir).Alloc(8192); err != nil {
			os.Exit(2)
		}
		os.Exit(0) // no Free: the file stays, its owner lock goes with the process
	}
	os.Exit(m.Run())
}

// TestShmMemorySweep: Sweep removes the device-slot files of processes
// that died without freeing them and keeps this process's regions (still
// mapped, still freed by Free) and files of other names.
func TestShmMemorySweep(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for range 2 {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), dslotOwnerEnv+"="+dir)
		require.NoError(t, cmd.Run())
	}
	mem := NewShmMemory(dir)
	live, err := mem.Alloc(4096)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "weft-ring-0123456789abcdef"), []byte("x"), 0o600))
	before, err := filepath.Glob(filepath.Join(dir, dslotPrefix+"*"))
	require.NoError(t, err)
	require.Len(t, before, 3, "two dead processes' slots and ours")

	files, bytes, err := mem.Sweep()
	require.NoError(t, err)
	require.Equal(t, 2, files, "the dead processes' slots")
	require.Equal(t, int64(2*8192), bytes)
	path, err := mem.ExportMem(live)
	require.NoError(t, err)
	after, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range after {
		names = append(names, e.Name())
	}
	require.ElementsMatch(t, []string{filepath.Base(string(path)), "weft-ring-0123456789abcdef"}, names)
	mem.Bytes(live)[0] = 1 // still mapped, still ours

	files, _, err = NewShmMemory(dir).Sweep()
	require.NoError(t, err)
	require.Zero(t, files, "another fake in a live process sweeps nothing of ours")
	require.NoError(t, mem.Free(live))
	left, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, left, 1)
}
