//go:build cgo && linux

package flight_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/weftdata/weft/client"
	"github.com/weftdata/weft/flight"
	"github.com/weftdata/weft/gpu"
)

// makeAV1ResizeMP4 is a 64x64 AV1 clip whose frames change size within
// its one sequence (SVT-AV1's reference scaling, resize-mode=1: the key
// frames 64x64, the others 32x32).
func makeAV1ResizeMP4(t *testing.T, frames int) []byte {
	t.Helper()
	makeMP4(t, 1) // skips loudly without ffmpeg
	out := filepath.Join(t.TempDir(), "av1-resize.mp4")
	msg, err := exec.Command("ffmpeg", "-nostdin", "-loglevel", "error", "-f", "lavfi", "-i", "testsrc2=size=64x64:rate=25",
		"-frames:v", strconv.Itoa(frames), "-c:v", "libsvtav1", "-preset", "12", "-g", "10", "-svtav1-params", "resize-mode=1:resize-denom=16",
		"-pix_fmt", "yuv420p", out).CombinedOutput()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("ffmpeg with libsvtav1: %v\n%s", err, msg)
		}
		t.Skipf("SKIP (loud): ffmpeg cannot encode with libsvtav1 (%v): the AV1 frame-size change test did not run\n%s", err, msg)
	}
	data, err := os.ReadFile(out)
	require.NoError(t, err)
	return data
}

// TestExchangeCudaIPCAV1FrameSizeChange records what a user meets today
// when an AV1 clip's frames change size within a sequence: the fake
// driver's sequence callback refuses the smaller frames and the exchange
// fails at its first step with InvalidArgument (gpu.ErrInvalidSegment); it
// does NOT fall back to the CPU decode path. Wanted instead (not built):
// the GPU decode's refusal classified as ErrUnavailableDelivery and the
// loader re-reading from that step with CPU decode (see the report of
// branch norm1). When that is built, this test flips.
func TestExchangeCudaIPCAV1FrameSizeChange(t *testing.T) {
	clip := makeAV1ResizeMP4(t, 42)
	d := fakeGPU(t)
	se := newSlotEnv(t)
	ctx := ctxT(t)
	se.createProject("p")
	putEpisodes(t, se.env, clip)
	win := map[string]client.Window{"wrist_camera": {Kind: "video", Spec: json.RawMessage(`{"frames":[-2,0,1],"size":[24,32]}`)}}
	recipe := client.Recipe{Seed: 7, BatchSize: 6, Components: []client.Component{{
		Project: "p", Table: "t", Weight: 1, Columns: []string{"episode_index"}, Windows: win}}}
	run, err := se.c.Resolve(ctx, recipe, 1)
	require.NoError(t, err)
	steps := 0
	for _, err := range se.c.ReadRank(ctx, run.Ranks[0]) {
		require.NoError(t, err, "the plain stream (the CPU decode path's input) serves every step")
		steps++
	}
	require.NotZero(t, steps)

	flight.SetGPU(se.svc, &flight.GPUDelivery{Device: d, Memory: gpu.NewShmMemory(t.TempDir())})
	var failed error
	for _, err := range se.c.ReadRankExchange(ctx, run.Ranks[0], client.DeliveryCudaIPC) {
		if err != nil {
			failed = err
			break
		}
	}
	require.Error(t, failed, "today the cuda-ipc exchange fails at the size change")
	require.Equal(t, codes.InvalidArgument, status.Code(failed), "%v", failed)
	require.Contains(t, failed.Error(), "the stream is 32x32")
}
