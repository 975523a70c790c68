//go:build cgo && linux

package flight_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"

	"github.com/weftdata/weft/client"
	"github.com/weftdata/weft/flight"
	"github.com/weftdata/weft/gpu"
	"github.com/weftdata/weft/internal/membudget"
	"github.com/weftdata/weft/video"
)

// fakeGPU builds gpu/testdata/fakedriver (libavcodec on the CPU standing
// in for libcuda + libnvcuvid) and opens it; skips loudly without gcc or
// libavcodec-dev (fails under CI=true). set, if any, changes the options
// (the driver's paths already in).
func fakeGPU(t *testing.T, set ...func(*gpu.Options)) *gpu.Device {
	t.Helper()
	skip := func(msg string) {
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip("SKIP (loud): " + msg)
	}
	if _, err := exec.LookPath("gcc"); err != nil {
		skip("gcc not found: the cuda-ipc exchange tests (fake driver) did not run")
	}
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(file), "..", "gpu")
	lib := filepath.Join(t.TempDir(), "libfakecuda.so")
	out, err := exec.Command("gcc", "-O2", "-fPIC", "-shared", "-I"+filepath.Join(dir, "include"), "-o", lib,
		filepath.Join(dir, "testdata/fakedriver/fake_driver.c"), "-lavcodec", "-lavutil").CombinedOutput()
	if err != nil && bytes.Contains(out, []byte("libavcodec/avcodec.h")) {
		skip("libavcodec-dev not installed: the cuda-ipc exchange tests (fake driver) did not run")
	}
	require.NoError(t, err, "%s", out)
	o := gpu.DefaultOptions()
	o.CudaLib, o.CuvidLib = lib, lib
	for _, f := range set {
		f(&o)
	}
	d, err := gpu.Open(context.Background(), o)
	require.NoError(t, err)
	t.Cleanup(func() { d.Close() })
	return d
}

// refFrames is the clip's frames as RGB by PTS: ffmpeg's NV12 decode
// through the Go reference conversion (the CPU path's arithmetic).
func refFrames(t *testing.T, clip []byte) map[int64][]byte {
	t.Helper()
	x, err := video.Read(context.Background(), bytes.NewReader(clip), int64(len(clip)))
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "clip.mp4")
	require.NoError(t, os.WriteFile(path, clip, 0o600))
	raw, err := exec.Command("ffmpeg", "-v", "error", "-nostdin", "-i", path, "-fps_mode", "passthrough", "-f", "rawvideo", "-pix_fmt", "nv12", "-").Output()
	require.NoError(t, err)
	w, h := x.Config.Width, x.Config.Height
	fb := gpu.FrameBytes(w, h, 8)
	require.Equal(t, x.Len(), len(raw)/fb)
	tab, err := gpu.Tables(gpu.ColorRule(2, false, h, 8))
	require.NoError(t, err)
	out := map[int64][]byte{}
	for i := range x.Len() {
		rgb, err := gpu.YUV420ToRGB(gpu.Frame{Width: w, Height: h, Bits: 8, Data: raw[i*fb : (i+1)*fb]}, tab)
		require.NoError(t, err)
		out[x.Frame(i).PTS] = rgb
	}
	return out
}

// windowPTS is, per row of a step's video window column, its frames' PTS.
func windowPTS(t *testing.T, rec arrow.RecordBatch, name string) [][]int64 {
	idx := rec.Schema().FieldIndices(name)
	require.Len(t, idx, 1)
	w := flight.WindowPTS(rec.Column(idx[0]))
	require.NotNil(t, w)
	return w
}

// TestExchangeCudaIPC: a run with a video window over a "cuda-ipc"
// exchange served by the fake driver: the header names the device
// column, every step's frames come in a device slot (IPC handle on a
// slot's first use only, a new generation each use) equal to the CPU
// path's frames, the other columns come as host slots byte-equal to the
// plain stream's (gathered straight into their host slots once the host
// ring exists), releases come back, and the device ring is freed when
// the exchange ends; a window with a size is resized on the device (equal
// to gpu.ResizeRGB of the CPU path's frames); a run without video, and a
// server without GPU, fall back to host slots and say why.
func TestExchangeCudaIPC(t *testing.T) {
	clip := makeMP4(t, 42) // skips loudly without ffmpeg
	d := fakeGPU(t)        // closed after the server stops (cleanups run last first)
	se := newSlotEnv(t)
	mem := gpu.NewShmMemory(t.TempDir())
	// --gpu-memory-limit of two slots of a step's frames [6, 3, 48, 64, 3]:
	// the ring halves down to 2 slots, reused with new generations.
	budget, err := membudget.New(membudget.Options{Total: 2 * 6 * 3 * 48 * 64 * 3})
	require.NoError(t, err)
	ctx := ctxT(t)
	se.createProject("p")
	putEpisodes(t, se.env, clip)
	ref := refFrames(t, clip)
	recipe := client.Recipe{Seed: 7, BatchSize: 6, Components: []client.Component{{
		Project: "p", Table: "t", Weight: 1, Columns: []string{"episode_index"}, Windows: scanWindows}}}
	run, err := se.c.Resolve(ctx, recipe, 1)
	require.NoError(t, err)

	// The plain stream: what the host part must equal, and each step's PTS.
	type plainStep struct {
		bytes []byte
		pts   [][]int64
	}
	plain := map[int64]plainStep{}
	for st, err := range se.c.ReadRank(ctx, run.Ranks[0]) {
		require.NoError(t, err)
		sc := st.Batch.Schema()
		var keep []int
		for i, f := range sc.Fields() {
			if f.Name != "wrist_camera" {
				keep = append(keep, i)
			}
		}
		host := selectColumns(st.Batch, keep)
		plain[st.Step] = plainStep{bytes: ipcBytes(t, host), pts: windowPTS(t, st.Batch, "wrist_camera")}
		host.Release()
	}
	require.NotEmpty(t, plain)

	t.Run("no GPU: host slots, and why", func(t *testing.T) {
		stream, h := rawExchange(ctx, t, se.env, run.Ranks[0].Ticket, client.DeliveryCudaIPC)
		require.NotNil(t, h)
		require.Equal(t, client.DeliveryShm, h.Delivery)
		require.Contains(t, h.Fallback, "no GPU delivery")
		require.Empty(t, h.DeviceColumns)
		require.NoError(t, stream.CloseSend())
		for {
			if _, err := stream.Recv(); err != nil {
				break
			}
		}
	})

	flight.SetGPU(se.svc, &flight.GPUDelivery{Device: d, Memory: mem, Budget: budget})
	statsBefore := d.Stats()
	used := se.budget.Stats().Used
	g0, c0, rc0 := flight.SlotSteps(se.svc)
	got := 0
	slotsSeen := map[int]string{} // device slot → its file (the fake's IPC handle)
	gens := map[int]uint64{}
	for st, err := range se.c.ReadRankExchange(ctx, run.Ranks[0], client.DeliveryCudaIPC) {
		require.NoError(t, err)
		want, ok := plain[st.Step]
		require.True(t, ok, "step %d", st.Step)
		require.NotNil(t, st.Slot, "the host part in a host slot")
		require.Equal(t, want.bytes, ipcBytes(t, st.Batch), "step %d: the other columns as the plain stream's", st.Step)
		require.Len(t, st.Device, 1)
		var ds gpu.DeviceSlot
		require.NoError(t, json.Unmarshal(st.Device[0], &ds))
		require.Equal(t, "wrist_camera", ds.Column)
		require.Equal(t, mem.DeviceUUID(), ds.Device)
		require.Equal(t, "uint8", ds.DType)
		rows := int(st.Batch.NumRows())
		require.Equal(t, []int{rows, 3, 48, 64, 3}, ds.Shape)
		require.Equal(t, []int64{3 * 48 * 64 * 3, 48 * 64 * 3, 64 * 3, 3, 1}, ds.Strides)
		if _, seen := slotsSeen[ds.Slot]; seen {
			require.Empty(t, ds.IPCHandle, "the handle comes with a slot's first use only")
			require.Greater(t, ds.Generation, gens[ds.Slot])
		} else {
			h, err := base64.StdEncoding.DecodeString(ds.IPCHandle)
			require.NoError(t, err)
			slotsSeen[ds.Slot] = string(h)
		}
		gens[ds.Slot] = ds.Generation
		require.NotEmpty(t, ds.Event)
		data, err := os.ReadFile(slotsSeen[ds.Slot])
		require.NoError(t, err)
		fb := 48 * 64 * 3
		for i, row := range want.pts {
			for j, p := range row {
				off := int(ds.Offset) + (i*3+j)*fb
				require.True(t, bytes.Equal(ref[p], data[off:off+fb]), "step %d row %d frame %d (pts %d)", st.Step, i, j, p)
			}
		}
		got++
	}
	require.Equal(t, len(plain), got)
	g, c, rc := flight.SlotSteps(se.svc)
	// (Re-copied: the window columns the episodes materializers build in
	// their own memory, x and the *_is_pad columns, as on a host-slot
	// exchange.)
	t.Logf("host parts gathered into their slot %d (bytes re-copied %d), copied into one %d", g-g0, rc-rc0, c-c0)
	require.EqualValues(t, got, (g-g0)+(c-c0), "every step's host part is gathered into its slot or copied into one")
	require.Positive(t, g-g0, "once the host ring exists, the host columns are gathered into their slots")
	require.Len(t, slotsSeen, 2, "the ring fits the memory limit")
	require.Greater(t, got, 2, "slots reused")
	require.Equal(t, statsBefore.FrameCopyBytes, d.Stats().FrameCopyBytes, "no frame byte crossed to the host")
	require.Greater(t, d.Stats().Kept, statsBefore.Kept)
	se.waitFreed(used)
	for _, p := range slotsSeen {
		_, err := os.Stat(p)
		require.ErrorIs(t, err, os.ErrNotExist, "the device ring's slots are freed when the exchange ends")
	}
	require.Zero(t, budget.Stats().Used, "--gpu-memory-limit's bytes back")

	t.Run("a size: resized on the device", func(t *testing.T) {
		for _, size := range [][2]int{{24, 35}, {17, 75}} { // down; down in height and up in width, odd
			oh, ow := size[0], size[1]
			t.Run(fmt.Sprintf("%dx%d", ow, oh), func(t *testing.T) {
				r := recipe
				r.Components = []client.Component{{Project: "p", Table: "t", Weight: 1, Columns: []string{"episode_index"},
					Windows: map[string]client.Window{"wrist_camera": {Kind: "video",
						Spec: json.RawMessage(fmt.Sprintf(`{"frames":[-2,0,1],"pad":true,"size":[%d,%d]}`, oh, ow))}}}}
				run, err := se.c.Resolve(ctx, r, 1)
				require.NoError(t, err)
				before := d.Stats()
				n := 0
				files := map[int]string{} // device slot → its file
				// the same seed and components as recipe: the same samples, so plain's PTS
				for st, err := range se.c.ReadRankExchange(ctx, run.Ranks[0], client.DeliveryCudaIPC) {
					require.NoError(t, err)
					require.Len(t, st.Device, 1, "step %d: the resized column in a device slot", st.Step)
					var ds gpu.DeviceSlot
					require.NoError(t, json.Unmarshal(st.Device[0], &ds))
					rows := int(st.Batch.NumRows())
					require.Equal(t, []int{rows, 3, oh, ow, 3}, ds.Shape)
					if ds.IPCHandle != "" {
						h, err := base64.StdEncoding.DecodeString(ds.IPCHandle)
						require.NoError(t, err)
						files[ds.Slot] = string(h)
					}
					data, err := os.ReadFile(files[ds.Slot])
					require.NoError(t, err)
					fb := oh * ow * 3
					for i, row := range plain[st.Step].pts {
						for j, p := range row {
							want, err := gpu.ResizeRGB(ref[p], 48, 64, oh, ow)
							require.NoError(t, err)
							off := int(ds.Offset) + (i*3+j)*fb
							require.True(t, bytes.Equal(want, data[off:off+fb]), "step %d row %d frame %d (pts %d)", st.Step, i, j, p)
						}
					}
					n++
				}
				require.Equal(t, len(plain), n)
				require.Equal(t, before.FrameCopyBytes, d.Stats().FrameCopyBytes, "no frame byte crossed to the host")
				se.waitFreed(used)
				require.Zero(t, budget.Stats().Used)
			})
		}
	})

	t.Run("no video: host slots, and why", func(t *testing.T) {
		r := recipe
		r.Components = []client.Component{{Project: "p", Table: "t", Weight: 1, Columns: []string{"episode_index", "x"}}}
		run, err := se.c.Resolve(ctx, r, 1)
		require.NoError(t, err)
		stream, h := rawExchange(ctx, t, se.env, run.Ranks[0].Ticket, client.DeliveryCudaIPC)
		require.NotNil(t, h)
		require.Equal(t, client.DeliveryShm, h.Delivery)
		require.Contains(t, h.Fallback, "no video windows")
		require.NoError(t, stream.CloseSend())
		for {
			if _, err := stream.Recv(); err != nil {
				break
			}
		}
	})

	t.Run("another host: the plain stream", func(t *testing.T) {
		flight.SetLocalPeer(se.svc, func(context.Context) bool { return false })
		defer flight.SetLocalPeer(se.svc, func(context.Context) bool { return true })
		n := 0
		for st, err := range se.c.ReadRankExchange(ctx, run.Ranks[0], client.DeliveryCudaIPC) {
			require.NoError(t, err)
			require.Nil(t, st.Slot)
			require.Nil(t, st.Device)
			require.NotEmpty(t, windowPTS(t, st.Batch, "wrist_camera"), "the video column, for the CPU path")
			n++
		}
		require.Equal(t, len(plain), n)
	})

	t.Run("bad device release", func(t *testing.T) {
		stream, h := rawExchange(ctx, t, se.env, run.Ranks[0].Ticket, client.DeliveryCudaIPC)
		require.NotNil(t, h)
		require.Equal(t, client.DeliveryCudaIPC, h.Delivery)
		require.Equal(t, []string{"wrist_camera"}, h.DeviceColumns)
		fd, err := stream.Recv()
		require.NoError(t, err)
		var sd flight.StepDevice
		require.NoError(t, json.Unmarshal(fd.AppMetadata, &sd))
		require.Len(t, sd.Device, 1)
		sendRelease(t, stream, `{"slot": 0, "generation": 99, "device": true}`)
		for {
			if _, err = stream.Recv(); err != nil {
				break
			}
		}
		requireCode(t, err, codes.FailedPrecondition, "stale generation")
	})
	se.waitFreed(used)
	require.Zero(t, budget.Stats().Used)
}

// selectColumns is rec's columns keep, as a new batch (release it).
func selectColumns(rec arrow.RecordBatch, keep []int) arrow.RecordBatch {
	fields := make([]arrow.Field, len(keep))
	cols := make([]arrow.Array, len(keep))
	for i, c := range keep {
		fields[i], cols[i] = rec.Schema().Field(c), rec.Column(c)
	}
	md := rec.Schema().Metadata()
	return array.NewRecordBatch(arrow.NewSchema(fields, &md), cols, rec.NumRows())
}

// TestExchangeCudaIPCFrameSizes: a mix of two tables whose cameras differ
// in size (64x48 and 96x64), one row per rank and step, so a rank's steps
// come in either size. Over "cuda-ipc", every step is served in device
// slots with its own shape: a step with larger frames than the ring's
// slots hold makes a larger ring whose slots are numbered after the first
// ring's (their handles with their first use, as any slot's), later
// smaller steps fit either; the frames are the CPU path's, releases of
// either ring's slots are taken, and both rings are freed at the end.
func TestExchangeCudaIPCFrameSizes(t *testing.T) {
	small, big := makeMP4(t, 42), makeMP4Size(t, 42, 96, 64) // skips loudly without ffmpeg
	d := fakeGPU(t)
	se := newSlotEnv(t)
	mem := gpu.NewShmMemory(t.TempDir())
	budget, err := membudget.New(membudget.Options{Total: 64 << 20})
	require.NoError(t, err)
	ctx := ctxT(t)
	se.createProject("p")
	putEpisodesIn(t, se.env, "t", "small.mp4", small)
	putEpisodesIn(t, se.env, "big", "big.mp4", big)
	ref := []map[int64][]byte{refFrames(t, small), refFrames(t, big)}
	sizes := [][2]int{{48, 64}, {64, 96}} // per component: H, W
	const world = 4
	recipe := client.Recipe{Seed: 11, BatchSize: world, Components: []client.Component{
		{Project: "p", Table: "t", Weight: 1, Columns: []string{"episode_index"}, Windows: scanWindows},
		{Project: "p", Table: "big", Weight: 1, Columns: []string{"episode_index"}, Windows: scanWindows}}}
	run, err := se.c.Resolve(ctx, recipe, world)
	require.NoError(t, err)

	// The plain streams: per rank and step, the row's component and PTS.
	type plainStep struct {
		comp int
		pts  []int64
	}
	rank := -1
	var plain map[int64]plainStep
	for r := range world {
		steps := map[int64]plainStep{}
		first, grows := -1, false
		for st, err := range se.c.ReadRank(ctx, run.Ranks[r]) {
			require.NoError(t, err)
			idx := st.Batch.Schema().FieldIndices("_component")
			require.Len(t, idx, 1)
			require.EqualValues(t, 1, st.Batch.NumRows())
			comp := int(st.Batch.Column(idx[0]).(*array.Int32).Value(0))
			steps[st.Step] = plainStep{comp: comp, pts: windowPTS(t, st.Batch, "wrist_camera")[0]}
			if first < 0 {
				first = comp
			} else if first == 0 && comp == 1 {
				grows = true
			}
		}
		if grows {
			rank, plain = r, steps
			break
		}
	}
	require.GreaterOrEqual(t, rank, 0, "no rank starts with the small camera and meets the big one later; change the seed")

	flight.SetGPU(se.svc, &flight.GPUDelivery{Device: d, Memory: mem, Budget: budget})
	used := se.budget.Stats().Used
	opened := map[int]string{} // device slot → its file (the fake's IPC handle)
	gens := map[int]uint64{}
	seen := map[int]bool{}
	before, grown := -1, false // the highest slot before the first big step; whether one came
	got := 0
	for st, err := range se.c.ReadRankExchange(ctx, run.Ranks[rank], client.DeliveryCudaIPC) {
		require.NoError(t, err)
		want, ok := plain[st.Step]
		require.True(t, ok, "step %d", st.Step)
		require.Len(t, st.Device, 1, "step %d: served in a device slot, whatever its frame size", st.Step)
		var ds gpu.DeviceSlot
		require.NoError(t, json.Unmarshal(st.Device[0], &ds))
		hw := sizes[want.comp]
		require.Equal(t, []int{1, 3, hw[0], hw[1], 3}, ds.Shape, "step %d: the step's own shape", st.Step)
		require.Equal(t, []int64{int64(3 * hw[0] * hw[1] * 3), int64(hw[0] * hw[1] * 3), int64(hw[1] * 3), 3, 1}, ds.Strides)
		if want.comp == 1 && !grown {
			grown = true
			require.Greater(t, ds.Slot, before, "step %d: the larger ring's slots are numbered after the first ring's", st.Step)
		} else if !grown {
			before = max(before, ds.Slot)
		}
		if _, ok := opened[ds.Slot]; ok {
			require.Empty(t, ds.IPCHandle, "step %d: slot %d's handle sent twice", st.Step, ds.Slot)
			require.Greater(t, ds.Generation, gens[ds.Slot])
		} else {
			require.NotEmpty(t, ds.IPCHandle, "step %d: first use of slot %d without its handle", st.Step, ds.Slot)
			require.Equal(t, uint64(1), ds.Generation, "a new slot's first use")
			h, err := base64.StdEncoding.DecodeString(ds.IPCHandle)
			require.NoError(t, err)
			require.NotContains(t, opened, ds.Slot)
			for s, p := range opened {
				require.NotEqual(t, p, string(h), "slots %d and %d share memory", s, ds.Slot)
			}
			opened[ds.Slot] = string(h)
		}
		gens[ds.Slot] = ds.Generation
		seen[want.comp] = true
		data, err := os.ReadFile(opened[ds.Slot])
		require.NoError(t, err)
		fb := hw[0] * hw[1] * 3
		require.GreaterOrEqual(t, len(data), int(ds.Offset)+3*fb, "step %d: the tensor fits its slot", st.Step)
		for j, p := range want.pts {
			off := int(ds.Offset) + j*fb
			require.True(t, bytes.Equal(ref[want.comp][p], data[off:off+fb]), "step %d frame %d (pts %d, component %d)", st.Step, j, p, want.comp)
		}
		got++
	}
	require.Equal(t, len(plain), got)
	require.True(t, seen[0] && seen[1], "both frame sizes served in device slots")
	require.True(t, grown)
	se.waitFreed(used)
	for _, p := range opened {
		_, err := os.Stat(p)
		require.ErrorIs(t, err, os.ErrNotExist, "both rings' slots are freed when the exchange ends")
	}
	require.Zero(t, budget.Stats().Used, "--gpu-memory-limit's bytes back")
}

// TestExchangeCudaIPCEndOrder: the order at an exchange's end (docs/gpu.md,
// "The end of an exchange"). A consumer that opens the device slots'
// handles (the fake's: a shared flock on each slot's file, gpu.OpenShmHandle)
// and closes them in DeviceConsumer.Close, at the end or at a break,
// closes them before flightd frees the slots: the fake's Free finds none
// open; DeviceConsumer.Ended comes after Close, once each (without
// release events a break cancels the call at once). One that closes them
// after the loop (after the call ended) is what the fake catches: flightd
// freed slots still open (gpu.ErrStillOpen).
func TestExchangeCudaIPCEndOrder(t *testing.T) {
	clip := makeMP4(t, 42) // skips loudly without ffmpeg
	d := fakeGPU(t)
	se := newSlotEnv(t)
	mem := gpu.NewShmMemory(t.TempDir())
	ctx := ctxT(t)
	se.createProject("p")
	putEpisodes(t, se.env, clip)
	recipe := client.Recipe{Seed: 7, BatchSize: 6, Components: []client.Component{{
		Project: "p", Table: "t", Weight: 1, Columns: []string{"episode_index"}, Windows: scanWindows}}}
	run, err := se.c.Resolve(ctx, recipe, 1)
	require.NoError(t, err)
	require.Greater(t, run.Record.Steps, int64(2))
	flight.SetGPU(se.svc, &flight.GPUDelivery{Device: d, Memory: mem})

	// read opens each slot's handle at its first use and keeps it open
	// across steps (as the Python loader does); closeDevice closes them.
	type reader struct {
		open map[int]*gpu.ShmHandle
	}
	newReader := func() *reader { return &reader{open: map[int]*gpu.ShmHandle{}} }
	closeAll := func(r *reader) func() error {
		return func() error {
			var err error
			for _, h := range r.open {
				err = errors.Join(err, h.Close())
			}
			return err
		}
	}
	step := func(t *testing.T, r *reader, st *client.Step) {
		require.Len(t, st.Device, 1)
		var ds gpu.DeviceSlot
		require.NoError(t, json.Unmarshal(st.Device[0], &ds))
		if ds.IPCHandle != "" {
			path, err := base64.StdEncoding.DecodeString(ds.IPCHandle)
			require.NoError(t, err)
			h, err := gpu.OpenShmHandle(path)
			require.NoError(t, err)
			r.open[ds.Slot] = h
		}
		h := r.open[ds.Slot]
		require.NotNil(t, h, "slot %d used before its handle came", ds.Slot)
		require.Greater(t, len(h.Mem), int(ds.Offset))
	}
	for _, tc := range []struct {
		name      string
		breakAt   int64 // -1: read to the end
		closeLate bool  // close the handles after the loop (wrong), not in closeDevice
		stillOpen int   // the frees that found a handle open
	}{
		{name: "closed_at_the_end", breakAt: -1},
		{name: "closed_at_a_break", breakAt: 1},
		{name: "closed_after_the_loop_is_caught", breakAt: -1, closeLate: true, stillOpen: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := mem.StillOpen()
			r := newReader()
			var calls []string
			closeDevice := func() error {
				calls = append(calls, "close")
				return closeAll(r)()
			}
			if tc.closeLate {
				closeDevice = nil
			}
			// no release events: at a break the call is cancelled at once, then Ended runs
			ended := func() error { calls = append(calls, "ended"); return nil }
			dc := client.DeviceConsumer{Close: closeDevice, Ended: ended}
			n := int64(0)
			for st, err := range se.c.ReadRankDevice(ctx, run.Ranks[0], client.DeliveryCudaIPC, dc) {
				require.NoError(t, err)
				step(t, r, st)
				n++
				if n-1 == tc.breakAt {
					break
				}
			}
			if tc.breakAt < 0 {
				require.Equal(t, run.Record.Steps, n)
			}
			if tc.closeLate {
				require.Equal(t, []string{"ended"}, calls)
				require.NoError(t, closeAll(r)())
			} else {
				require.Equal(t, []string{"close", "ended"}, calls, "Close, then Ended, once each")
			}
			// the ring is freed when the call ends (a break's cancel reaches the server a little later)
			require.Eventually(t, func() bool { return len(dslotFiles(t, mem.Dir)) == 0 }, 20*time.Second, 10*time.Millisecond)
			if tc.stillOpen > 0 {
				require.GreaterOrEqual(t, mem.StillOpen()-before, tc.stillOpen, "the fake catches a free of a slot still open")
			} else {
				require.Equal(t, before, mem.StillOpen(), "no slot freed while its handle was open")
			}
		})
	}
}

// dslotFiles are the fake's device slot files in dir.
func dslotFiles(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "weft-dslot-*"))
	require.NoError(t, err)
	return m
}
