//go:build cgo && linux

package flight_test

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/weftdata/weft/client"
	"github.com/weftdata/weft/errdefs"
	"github.com/weftdata/weft/flight"
	"github.com/weftdata/weft/gpu"
	"github.com/weftdata/weft/internal/membudget"
)

// makeSVTAV1MP4 is a 64x64 AV1 clip made by SVT-AV1 (LeRobot's encoder).
// With resize, its frames change size within its one sequence (SVT-AV1's
// reference scaling, resize-mode=1: the key frames 64x64, the others
// 32x32): a stream the CPU path decodes and the fake NVDEC refuses.
func makeSVTAV1MP4(t *testing.T, frames int, resize bool) []byte {
	t.Helper()
	makeMP4(t, 1) // skips loudly without ffmpeg
	out := filepath.Join(t.TempDir(), "av1-svt.mp4")
	args := []string{"-nostdin", "-loglevel", "error", "-f", "lavfi", "-i", "testsrc2=size=64x64:rate=25",
		"-frames:v", strconv.Itoa(frames), "-c:v", "libsvtav1", "-preset", "12", "-g", "10"}
	if resize {
		args = append(args, "-svtav1-params", "resize-mode=1:resize-denom=16")
	}
	msg, err := exec.Command("ffmpeg", append(args, "-pix_fmt", "yuv420p", out)...).CombinedOutput()
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

// TestExchangeCudaIPCAV1FrameSizeChange: an AV1 clip whose frames change
// size within a sequence is refused by the (fake) NVDEC mid-decode. The
// "cuda-ipc" exchange serves the steps before it in device slots, then
// ends at the step it cannot decode with FAILED_PRECONDITION
// (flight.ErrUnavailableDelivery, the GPU's reason in the message), not
// InvalidArgument; the client then asks again from that step with "shm"
// (what the Python loader does, docs/gpu.md "Fallbacks") and gets exactly
// the plain stream's steps from there: nothing lost or repeated.
func TestExchangeCudaIPCAV1FrameSizeChange(t *testing.T) {
	bad := makeSVTAV1MP4(t, 42, true)
	good := makeSVTAV1MP4(t, 42, false)
	d := fakeGPU(t)
	se := newSlotEnv(t)
	ctx := ctxT(t)
	se.createProject("p")
	putEpisodesIn(t, se.env, "resize", "bad.mp4", bad)
	// the second table: the good clip's episodes, then the bad one's, in blocks whose order the seed picks
	putEpisodesIn(t, se.env, "mixed", "good.mp4", good)
	putEpisodesIn(t, se.env, "mixed", "bad.mp4", bad)
	win := map[string]client.Window{"wrist_camera": {Kind: "video", Spec: json.RawMessage(`{"frames":[-2,0,1],"size":[24,32]}`)}}
	budget, err := membudget.New(membudget.Options{Total: 64 << 20})
	require.NoError(t, err)
	flight.SetGPU(se.svc, &flight.GPUDelivery{Device: d, Memory: gpu.NewShmMemory(t.TempDir()), Budget: budget})

	for _, tc := range []struct {
		name, table string
		seed        uint64
		midRun      bool // the refusal comes after some steps were served in device slots
	}{
		{"at the first step", "resize", 7, false},
		{"mid-run", "mixed", 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			zero := int64(0)
			recipe := client.Recipe{Seed: tc.seed, BatchSize: 6, Shuffle: &client.Shuffle{BufferRows: zero},
				Components: []client.Component{{Project: "p", Table: tc.table, Weight: 1, Columns: []string{"episode_index"}, Windows: win}}}
			run, err := se.c.Resolve(ctx, recipe, 1)
			require.NoError(t, err)
			var plain [][][]int64 // each step's window PTS on the plain stream
			for st, err := range se.c.ReadRank(ctx, run.Ranks[0]) {
				require.NoError(t, err, "the plain stream (the CPU decode path's input) serves every step")
				require.Equal(t, int64(len(plain)), st.Step)
				plain = append(plain, windowPTS(t, st.Batch, "wrist_camera"))
			}
			require.NotEmpty(t, plain)

			before := d.Stats()
			var failed error
			served := 0 // steps served in device slots before the refusal
			for st, err := range se.c.ReadRankExchange(ctx, run.Ranks[0], client.DeliveryCudaIPC) {
				if err != nil {
					failed = err
					break
				}
				require.Equal(t, int64(served), st.Step)
				require.Len(t, st.Device, 1, "step %d in a device slot", st.Step)
				var ds gpu.DeviceSlot
				require.NoError(t, json.Unmarshal(st.Device[0], &ds))
				require.Equal(t, []int{len(plain[st.Step]), 3, 24, 32, 3}, ds.Shape, "step %d", st.Step)
				served++
			}
			require.Error(t, failed, "the GPU path cannot decode the frame-size change")
			require.Equal(t, codes.FailedPrecondition, status.Code(failed), "%v", failed)
			require.True(t, errors.Is(failed, errdefs.ErrFailedPrecondition), "%v", failed)
			require.Contains(t, failed.Error(), "cuda-ipc delivery cannot serve this step")
			require.Contains(t, failed.Error(), "step "+strconv.Itoa(served)+" column wrist_camera")
			require.Contains(t, failed.Error(), "the stream is 32x32", "the GPU's own reason is passed on")
			t.Logf("%d steps in device slots, then the refusal at step %d of %d", served, served, len(plain))
			if tc.midRun {
				require.Positive(t, served, "seed %d: the first steps hold only the good clip", tc.seed)
				require.Less(t, served, len(plain))
			} else {
				require.Zero(t, served)
			}
			require.Equal(t, before.FrameCopyBytes, d.Stats().FrameCopyBytes, "no frame byte crossed to the host")

			// The client asks again from the refused step with host slots:
			// every remaining step, as the plain stream has it.
			again, err := se.c.Resume(ctx, run.Record.Run, 1, int64(served))
			require.NoError(t, err)
			next := served
			for st, err := range se.c.ReadRankExchange(ctx, again.Ranks[0], client.DeliveryShm) {
				require.NoError(t, err)
				require.Equal(t, int64(next), st.Step)
				require.Empty(t, st.Device)
				require.Equal(t, plain[st.Step], windowPTS(t, st.Batch, "wrist_camera"), "step %d", st.Step)
				next++
			}
			require.Equal(t, len(plain), next, "nothing lost or repeated")
			// the refused exchange's device ring went back when it ended
			require.Eventually(t, func() bool { return budget.Stats().Used == 0 }, time.Minute, 10*time.Millisecond)
		})
	}
}
