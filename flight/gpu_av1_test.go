//go:build cgo && linux

package flight_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftdata/weft/client"
	"github.com/weftdata/weft/flight"
	"github.com/weftdata/weft/gpu"
)

// makeAV1MP4 is a 64x48 AV1 clip at 25 fps (libaom: hidden alt-ref
// frames), as LeRobot's default codec stores robot video.
func makeAV1MP4(t *testing.T, frames int) []byte {
	t.Helper()
	makeMP4(t, 1) // skips loudly without ffmpeg
	out := filepath.Join(t.TempDir(), "av1.mp4")
	msg, err := exec.Command("ffmpeg", "-nostdin", "-loglevel", "error", "-f", "lavfi", "-i", "testsrc2=size=64x48:rate=25",
		"-frames:v", strconv.Itoa(frames), "-c:v", "libaom-av1", "-cpu-used", "8", "-threads", "1", "-g", "10", "-pix_fmt", "yuv420p", out).CombinedOutput()
	require.NoError(t, err, "%s", msg)
	data, err := os.ReadFile(out)
	require.NoError(t, err)
	return data
}

// TestExchangeCudaIPCAV1: an AV1 video window goes "cuda-ipc" on the fake
// driver (no fallback), its frames equal to the CPU path's, with no frame
// byte copied to the host; an NVDEC whose caps lack AV1 falls back to host
// slots and says so.
func TestExchangeCudaIPCAV1(t *testing.T) {
	clip := makeAV1MP4(t, 42)
	d := fakeGPU(t)
	se := newSlotEnv(t)
	mem := gpu.NewShmMemory(t.TempDir())
	ctx := ctxT(t)
	se.createProject("p")
	putEpisodes(t, se.env, clip)
	ref := refFrames(t, clip)
	recipe := client.Recipe{Seed: 7, BatchSize: 6, Components: []client.Component{{
		Project: "p", Table: "t", Weight: 1, Columns: []string{"episode_index"}, Windows: scanWindows}}}
	run, err := se.c.Resolve(ctx, recipe, 1)
	require.NoError(t, err)
	plain := map[int64][][]int64{}
	for st, err := range se.c.ReadRank(ctx, run.Ranks[0]) {
		require.NoError(t, err)
		plain[st.Step] = windowPTS(t, st.Batch, "wrist_camera")
	}
	require.NotEmpty(t, plain)

	flight.SetGPU(se.svc, &flight.GPUDelivery{Device: d, Memory: mem})
	before := d.Stats()
	used := se.budget.Stats().Used
	files := map[int]string{}
	got := 0
	for st, err := range se.c.ReadRankExchange(ctx, run.Ranks[0], client.DeliveryCudaIPC) {
		require.NoError(t, err)
		require.Len(t, st.Device, 1, "step %d: the AV1 column in a device slot", st.Step)
		var ds gpu.DeviceSlot
		require.NoError(t, json.Unmarshal(st.Device[0], &ds))
		if ds.IPCHandle != "" {
			h, err := base64.StdEncoding.DecodeString(ds.IPCHandle)
			require.NoError(t, err)
			files[ds.Slot] = string(h)
		}
		data, err := os.ReadFile(files[ds.Slot])
		require.NoError(t, err)
		fb := 48 * 64 * 3
		for i, row := range plain[st.Step] {
			for j, p := range row {
				off := int(ds.Offset) + (i*3+j)*fb
				require.True(t, bytes.Equal(ref[p], data[off:off+fb]), "step %d row %d frame %d (pts %d)", st.Step, i, j, p)
			}
		}
		got++
	}
	require.Equal(t, len(plain), got)
	require.Equal(t, before.FrameCopyBytes, d.Stats().FrameCopyBytes, "no frame byte crossed to the host")
	require.Greater(t, d.Stats().Kept, before.Kept)
	se.waitFreed(used)

	t.Run("caps without AV1: host slots, and why", func(t *testing.T) {
		t.Setenv("MOCK_DENY_CODECS", "av1")
		flight.SetGPU(se.svc, &flight.GPUDelivery{Device: fakeGPU(t), Memory: mem})
		stream, h := rawExchange(ctx, t, se.env, run.Ranks[0].Ticket, client.DeliveryCudaIPC)
		require.NotNil(t, h)
		require.Equal(t, client.DeliveryShm, h.Delivery)
		require.Contains(t, h.Fallback, "av1")
		require.Empty(t, h.DeviceColumns)
		require.NoError(t, stream.CloseSend())
		for {
			if _, err := stream.Recv(); err != nil {
				break
			}
		}
	})
}
