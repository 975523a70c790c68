//go:build cgo && linux

package gpu

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftdata/weft/video"
	"github.com/weftdata/weft/video/pixnorm"
)

// TestRealGPU runs on a machine with an NVIDIA driver (a test binary
// carried there: `go test -c ./gpu/`); elsewhere it skips loudly (also
// under CI=true: CI has no GPU). The full check is `make gpu-check`.
func TestRealGPU(t *testing.T) {
	d, err := Open(context.Background(), DefaultOptions())
	if errors.Is(err, ErrUnavailable) {
		t.Skip("SKIP (loud): no GPU here, so the real driver, the PTX JIT and CUDA IPC never ran in this test: " + err.Error())
	}
	require.NoError(t, err)
	defer d.Close()
	t.Logf("device %q driver %d %s", d.Info().Name, d.Info().DriverVersion, d.Info().UUIDString())
	c, err := d.Caps(video.H264, 8)
	require.NoError(t, err)
	require.True(t, c.Supported, "H.264 8-bit 4:2:0 on NVDEC")
	r, err := NewDeviceRing(d.Memory(), RingOptions{Slots: 2, SlotBytes: 1 << 20})
	require.NoError(t, err)
	defer r.Close()
	u, err := r.Acquire(context.Background())
	require.NoError(t, err)
	desc, err := r.Publish(u, 0, []int{1, 1, 16, 16, 3}, pixnorm.Uint8)
	require.NoError(t, err)
	require.NotEmpty(t, desc.IPCHandle)
	require.NotEmpty(t, desc.Event)
}
