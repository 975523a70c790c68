package gpu

import (
	"context"
	"encoding/base64"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftdata/weft/video/pixnorm"
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

// TestShmMemoryStillOpen: the fake catches a free of device memory whose
// IPC handle an importer still has open (undefined behaviour on CUDA):
// the free fails with ErrStillOpen and is counted, the file is removed all
// the same; a free after the importer closed its handle is clean. So is
// the importer's own mapping until it closes it.
func TestShmMemoryStillOpen(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		closeFirst bool
	}{
		{"closed_before_free", true},
		{"open_at_free", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			mem := NewShmMemory(dir)
			reg, err := mem.Alloc(4096)
			require.NoError(t, err)
			mem.Bytes(reg)[9] = 42
			handle, err := mem.ExportMem(reg)
			require.NoError(t, err)
			h, err := OpenShmHandle(handle)
			require.NoError(t, err)
			defer h.Close()
			require.Equal(t, byte(42), h.Mem[9])
			if tc.closeFirst {
				require.NoError(t, h.Close())
				require.NoError(t, mem.Free(reg))
				require.Zero(t, mem.StillOpen())
			} else {
				require.ErrorIs(t, mem.Free(reg), ErrStillOpen)
				require.Equal(t, 1, mem.StillOpen())
				require.Equal(t, byte(42), h.Mem[9], "the importer's mapping outlives the free on the fake")
				require.NoError(t, h.Close())
			}
			left, err := os.ReadDir(dir)
			require.NoError(t, err)
			require.Empty(t, left, "the file is removed either way")
		})
	}
}

// TestDeviceRingCloseStillOpen: a ring closed while a client has a slot's
// handle open says so (ErrStillOpen), frees every slot and returns its
// bytes all the same.
func TestDeviceRingCloseStillOpen(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	mem := NewShmMemory(t.TempDir())
	r, err := NewDeviceRing(mem, RingOptions{Slots: 2, SlotBytes: 512})
	require.NoError(t, err)
	u, err := r.Acquire(ctx)
	require.NoError(t, err)
	d, err := r.Publish(u, 0, []int{1, 1, 2, 2, 3}, pixnorm.Uint8)
	require.NoError(t, err)
	path, err := base64.StdEncoding.DecodeString(d.IPCHandle)
	require.NoError(t, err)
	h, err := OpenShmHandle(path)
	require.NoError(t, err)
	defer h.Close()
	require.ErrorIs(t, r.Close(), ErrStillOpen)
	require.Equal(t, 1, mem.StillOpen())
	left, err := os.ReadDir(mem.Dir)
	require.NoError(t, err)
	require.Empty(t, left)
}
