package gpu

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/weftdata/weft/internal/membudget"
	"github.com/weftdata/weft/video/pixnorm"
)

// clientOpen is what a client does with a descriptor's handle on the CPU
// fake: map the slot's file read-only (CUDA: cudaIpcOpenMemHandle).
func clientOpen(t *testing.T, d DeviceSlot, size int64) []byte {
	t.Helper()
	path, err := base64.StdEncoding.DecodeString(d.IPCHandle)
	require.NoError(t, err)
	f, err := os.Open(string(path))
	require.NoError(t, err)
	defer f.Close()
	mem, err := unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
	require.NoError(t, err)
	t.Cleanup(func() { _ = unix.Munmap(mem) })
	return mem
}

func TestDeviceRingProtocol(t *testing.T) {
	ctx := context.Background()
	mem := NewShmMemory(t.TempDir())
	budget, err := membudget.New(membudget.Options{Total: 4 * 4096})
	require.NoError(t, err)
	r, err := NewDeviceRing(mem, RingOptions{Slots: 3, SlotBytes: 4096, Budget: budget})
	require.NoError(t, err)
	require.Equal(t, int64(3*4096), budget.Stats().Used)

	opened := map[int][]byte{} // the client's mappings, opened once per slot
	shape := []int{2, 3, 4, 5, 3}
	for step := 0; step < 7; step++ {
		u, err := r.Acquire(ctx)
		require.NoError(t, err)
		// the "kernel": write the step's frames into the slot
		b := mem.Bytes(u.Region)
		for i := 0; i < 360; i++ {
			b[64+i] = byte(step*7 + i)
		}
		desc, err := r.Publish(u, 64, shape, pixnorm.Uint8)
		require.NoError(t, err)
		// over the wire and back, strictly
		wire, err := json.Marshal(desc)
		require.NoError(t, err)
		var got DeviceSlot
		dec := json.NewDecoder(bytes.NewReader(wire))
		dec.DisallowUnknownFields()
		require.NoError(t, dec.Decode(&got))
		require.Equal(t, []int64{180, 60, 15, 3, 1}, got.Strides)
		require.Equal(t, "uint8", got.DType)
		require.NotEmpty(t, got.Event)
		require.Equal(t, mem.DeviceUUID(), got.Device)
		if _, ok := opened[got.Slot]; ok {
			require.Empty(t, got.IPCHandle, "step %d: slot %d's handle sent twice", step, got.Slot)
		} else {
			require.NotEmpty(t, got.IPCHandle, "step %d: first use of slot %d without a handle", step, got.Slot)
			opened[got.Slot] = clientOpen(t, got, 4096)
		}
		view := opened[got.Slot][got.Offset : got.Offset+360]
		for i := range view {
			require.Equal(t, byte(step*7+i), view[i], "step %d byte %d", step, i)
		}
		require.NoError(t, r.Release(got.Slot, got.Generation))
		require.ErrorIs(t, r.Release(got.Slot, got.Generation), ErrNotHeld)
		require.ErrorIs(t, r.Release(got.Slot, got.Generation-1), ErrStaleGeneration)
	}
	require.Len(t, opened, 3)
	require.ErrorIs(t, r.Release(3, 1), ErrUnknownSlot)
	require.ErrorIs(t, r.Release(-1, 1), ErrUnknownSlot)

	// all held: Acquire waits (a cancelled context ends the wait)
	var uses []SlotUse
	for i := 0; i < 3; i++ {
		u, err := r.Acquire(ctx)
		require.NoError(t, err)
		uses = append(uses, u)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, err = r.Acquire(cctx)
	require.ErrorIs(t, err, context.Canceled)
	// the client died: its slots come back
	require.Equal(t, 3, r.ReleaseAll())
	require.Zero(t, r.Held())
	require.ErrorIs(t, r.Release(uses[0].Index, uses[0].Generation), ErrNotHeld)
	u, err := r.Acquire(ctx)
	require.NoError(t, err)
	require.Greater(t, u.Generation, uint64(1))

	// the budget refuses a second ring that does not fit
	_, err = NewDeviceRing(mem, RingOptions{Slots: 2, SlotBytes: 4096, Budget: budget})
	require.ErrorIs(t, err, ErrOverLimit)
	require.NoError(t, r.Close())
	require.Zero(t, budget.Stats().Used)
	_, err = r.Acquire(ctx)
	require.ErrorIs(t, err, ErrRingClosed)
	ents, err := os.ReadDir(mem.Dir)
	require.NoError(t, err)
	require.Empty(t, ents, "slot files left behind")
}

func TestRingOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    RingOptions
	}{
		{"no_slots", RingOptions{Slots: 0, SlotBytes: 256}},
		{"unaligned", RingOptions{Slots: 1, SlotBytes: 300}},
		{"tiny", RingOptions{Slots: 1, SlotBytes: 0}},
		{"negative_first_slot", RingOptions{Slots: 1, SlotBytes: 256, FirstSlot: -1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.ErrorIs(t, tc.o.Validate(), ErrInvalidOptions)
		})
	}
}

// TestDeviceRingFirstSlot: a ring that replaces another within one
// exchange numbers its slots after the other's: it hands out and publishes
// those indices (the handle with each one's first use), refuses the
// others, and its budget comes back at Close.
func TestDeviceRingFirstSlot(t *testing.T) {
	ctx := context.Background()
	mem := NewShmMemory(t.TempDir())
	r, err := NewDeviceRing(mem, RingOptions{Slots: 2, SlotBytes: 512, FirstSlot: 5})
	require.NoError(t, err)
	defer r.Close()
	require.Equal(t, 5, r.FirstSlot())
	require.True(t, r.Contains(5) && r.Contains(6))
	require.False(t, r.Contains(4) || r.Contains(7))
	seen := map[int]bool{}
	for step := range 4 {
		u, err := r.Acquire(ctx)
		require.NoError(t, err)
		require.True(t, r.Contains(u.Index), "step %d: slot %d", step, u.Index)
		d, err := r.Publish(u, 0, []int{1, 1, 8, 8, 3}, pixnorm.Uint8)
		require.NoError(t, err)
		require.Equal(t, u.Index, d.Slot)
		require.Equal(t, !seen[d.Slot], d.IPCHandle != "", "step %d: the handle with slot %d's first use only", step, d.Slot)
		seen[d.Slot] = true
		require.NoError(t, r.Release(d.Slot, d.Generation))
	}
	require.ErrorIs(t, r.Release(0, 1), ErrUnknownSlot)
	require.ErrorIs(t, r.Release(7, 1), ErrUnknownSlot)
}
