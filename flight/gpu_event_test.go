//go:build cgo && linux

package flight_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	arrowflight "github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"

	"github.com/weftdata/weft/client"
	"github.com/weftdata/weft/flight"
	"github.com/weftdata/weft/gpu"
	"github.com/weftdata/weft/internal/membudget"
)

// TestExchangeCudaIPCReleaseEvent: a consumer whose own GPU work reads a
// step's device slot orders its release after that work (docs/gpu.md,
// "Releases after the trainer's work"): it records an interprocess event
// per slot at each release (client.DeviceConsumer.ReleaseEvent) and sends
// the event's handle with the slot's first release. flightd's decode waits
// on it before it writes the slot again. On the fake (a consumer's event
// is a gpu.ShmEvent file, which the fake driver's cuEventQuery reads), the
// consumer holds step 0's event incomplete (a kernel still reading the
// slot): flightd, which has only that slot to decode step 2 into (a ring
// of two, the other holding step 1), reaches its write and waits, the slot
// keeps step 0's frames, and step 2 is written once the event completes.
// Every step's frames are the CPU path's. The consumer closes its handles
// in DeviceConsumer.Close and destroys its events in Ended, after the call.
func TestExchangeCudaIPCReleaseEvent(t *testing.T) {
	clip := makeMP4(t, 42) // skips loudly without ffmpeg
	d := fakeGPU(t)
	se := newSlotEnv(t)
	mem := gpu.NewShmMemory(t.TempDir())
	// a ring of two slots of a step's frames [6, 3, 48, 64, 3]
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
	require.Greater(t, run.Record.Steps, int64(3))
	pts := map[int64][][]int64{}
	for st, err := range se.c.ReadRank(ctx, run.Ranks[0]) {
		require.NoError(t, err)
		pts[st.Step] = windowPTS(t, st.Batch, "wrist_camera")
	}
	flight.SetGPU(se.svc, &flight.GPUDelivery{Device: d, Memory: mem, Budget: budget})

	events := map[int]*gpu.ShmEvent{}
	handles := map[int]*gpu.ShmHandle{}
	sent := map[int]bool{}
	final := map[int]gpu.EventState{} // each event's words when the consumer closed it
	hold := false
	dc := client.DeviceConsumer{
		ReleaseEvent: func(slot int) ([]byte, error) {
			ev := events[slot]
			if ev == nil {
				var err error
				if ev, err = gpu.NewShmEvent(""); err != nil { // flightd opens /dev/shm's only
					return nil, err
				}
				events[slot] = ev
			}
			ev.Record(hold)
			if sent[slot] {
				return nil, nil
			}
			sent[slot] = true
			return ev.Handle(), nil
		},
		Close: func() error {
			var err error
			for _, h := range handles {
				err = errors.Join(err, h.Close())
			}
			return err
		},
		Ended: func() error { // the call is over: flightd is done with the events
			var err error
			for slot, ev := range events {
				ev.Complete() // (a test that failed while holding one lets nothing wait on it)
				final[slot] = ev.State()
				err = errors.Join(err, ev.Close())
			}
			return err
		},
	}
	waitsBefore := d.Stats().EventWaits
	var slot0 int
	var snapshot []byte
	n := int64(0)
	for st, err := range se.c.ReadRankDevice(ctx, run.Ranks[0], client.DeliveryCudaIPC, dc) {
		require.NoError(t, err)
		require.Len(t, st.Device, 1)
		var ds gpu.DeviceSlot
		require.NoError(t, json.Unmarshal(st.Device[0], &ds))
		if ds.IPCHandle != "" {
			path, err := base64.StdEncoding.DecodeString(ds.IPCHandle)
			require.NoError(t, err)
			h, err := gpu.OpenShmHandle(path)
			require.NoError(t, err)
			handles[ds.Slot] = h
		}
		data := handles[ds.Slot].Mem
		fb := 48 * 64 * 3
		for i, row := range pts[st.Step] {
			for j, p := range row {
				off := int(ds.Offset) + (i*3+j)*fb
				require.True(t, bytes.Equal(ref[p], data[off:off+fb]), "step %d row %d frame %d (pts %d)", st.Step, i, j, p)
			}
		}
		switch st.Step {
		case 0:
			// step 0's kernels "still run" when the loop goes on: its release's record is held
			slot0, snapshot, hold = ds.Slot, bytes.Clone(data), true
		case 1:
			require.NotEqual(t, slot0, ds.Slot)
			hold = false
			ev := events[slot0]
			for deadline := time.Now().Add(60 * time.Second); ev.State().Blocked < 1; time.Sleep(2 * time.Millisecond) {
				require.False(t, time.Now().After(deadline), "flightd never waited on the held release event")
			}
			require.Equal(t, snapshot, handles[slot0].Mem, "flightd wrote the slot before the consumer's event completed")
			ev.Complete()
		case 2:
			require.Equal(t, slot0, ds.Slot, "step 2 in the slot step 0 released")
		}
		n++
	}
	require.Equal(t, run.Record.Steps, n)
	require.Len(t, final, 2)
	for slot, st := range final {
		require.Positive(t, st.Waits, "flightd waited on slot %d's event", slot)
		require.Equal(t, st.Recorded, st.Completed)
	}
	// only step 2's writes waited (each of its segments' sessions: they decode at once)
	require.Positive(t, final[slot0].Blocked)
	require.Zero(t, final[1-slot0].Blocked)
	require.Greater(t, d.Stats().EventWaits, waitsBefore)
	require.Eventually(t, func() bool { return len(dslotFiles(t, mem.Dir)) == 0 }, 20*time.Second, 10*time.Millisecond)
	require.Zero(t, budget.Stats().Used, "--gpu-memory-limit's bytes back")
}

// TestExchangeCudaIPCReleaseWaitRefuses: a consumer whose release event
// never completes (its stream is stuck: a hung collective after a peer
// died, a spinning kernel) does not hold flightd's decode forever: past
// --gpu-release-wait (gpu.Options.ReleaseWait) the exchange refuses the
// step that waits for it with FAILED_PRECONDITION
// (flight.ErrUnavailableDelivery, the reason in the message: the client
// then goes on on the host path), the slot keeps the consumer's frames,
// and the ring is freed once the consumer ended its side.
func TestExchangeCudaIPCReleaseWaitRefuses(t *testing.T) {
	clip := makeMP4(t, 42) // skips loudly without ffmpeg
	d := fakeGPU(t, func(o *gpu.Options) { o.ReleaseWait = 50 * time.Millisecond })
	se := newSlotEnv(t)
	mem := gpu.NewShmMemory(t.TempDir())
	// a ring of two slots of a step's frames [6, 3, 48, 64, 3]
	budget, err := membudget.New(membudget.Options{Total: 2 * 6 * 3 * 48 * 64 * 3})
	require.NoError(t, err)
	ctx := ctxT(t)
	se.createProject("p")
	putEpisodes(t, se.env, clip)
	recipe := client.Recipe{Seed: 7, BatchSize: 6, Components: []client.Component{{
		Project: "p", Table: "t", Weight: 1, Columns: []string{"episode_index"}, Windows: scanWindows}}}
	run, err := se.c.Resolve(ctx, recipe, 1)
	require.NoError(t, err)
	require.Greater(t, run.Record.Steps, int64(3))
	flight.SetGPU(se.svc, &flight.GPUDelivery{Device: d, Memory: mem, Budget: budget})

	events := map[int]*gpu.ShmEvent{}
	handles := map[int]*gpu.ShmHandle{}
	sent := map[int]bool{}
	slot0 := -1
	var snapshot []byte
	intact := false    // slot 0 still held step 0's frames when the consumer ended its side
	var blocked uint64 // its event's blocked word then
	dc := client.DeviceConsumer{
		ReleaseEvent: func(slot int) ([]byte, error) {
			ev := events[slot]
			if ev == nil {
				var err error
				if ev, err = gpu.NewShmEvent(""); err != nil {
					return nil, err
				}
				events[slot] = ev
			}
			ev.Record(slot == slot0) // step 0's slot: its record never completes
			if sent[slot] {
				return nil, nil
			}
			sent[slot] = true
			return ev.Handle(), nil
		},
		Close: func() error {
			if h := handles[slot0]; h != nil {
				intact = bytes.Equal(snapshot, h.Mem)
			}
			if ev := events[slot0]; ev != nil {
				blocked = ev.State().Blocked
			}
			var err error
			for _, h := range handles {
				err = errors.Join(err, h.Close())
			}
			return err
		},
		Ended: func() error {
			var err error
			for _, ev := range events {
				err = errors.Join(err, ev.Close())
			}
			return err
		},
	}
	var failed error
	served := int64(0)
	for st, err := range se.c.ReadRankDevice(ctx, run.Ranks[0], client.DeliveryCudaIPC, dc) {
		if err != nil {
			failed = err
			break
		}
		require.Equal(t, served, st.Step)
		var ds gpu.DeviceSlot
		require.NoError(t, json.Unmarshal(st.Device[0], &ds))
		if ds.IPCHandle != "" {
			path, err := base64.StdEncoding.DecodeString(ds.IPCHandle)
			require.NoError(t, err)
			h, err := gpu.OpenShmHandle(path)
			require.NoError(t, err)
			handles[ds.Slot] = h
		}
		if st.Step == 0 {
			slot0, snapshot = ds.Slot, bytes.Clone(handles[ds.Slot].Mem)
		}
		served++
	}
	require.Equal(t, int64(2), served, "steps 0 and 1; step 2 is step 0's slot, whose event never completes")
	requireCode(t, failed, codes.FailedPrecondition, "the trainer's release event did not complete within 50ms")
	require.Contains(t, failed.Error(), "cuda-ipc delivery cannot serve this step")
	require.True(t, intact, "flightd wrote the slot though the consumer's event never completed")
	require.Positive(t, blocked, "flightd waited for the held event")
	require.Eventually(t, func() bool { return len(dslotFiles(t, mem.Dir)) == 0 }, 20*time.Second, 10*time.Millisecond)
	require.Zero(t, budget.Stats().Used, "--gpu-memory-limit's bytes back")
}

// TestExchangeCudaIPCBadReleaseEvent: a device release whose event is not
// base64, or does not open (not an event), ends the exchange with
// INVALID_ARGUMENT, and the ring is freed.
func TestExchangeCudaIPCBadReleaseEvent(t *testing.T) {
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
	flight.SetGPU(se.svc, &flight.GPUDelivery{Device: d, Memory: mem})
	for _, tc := range []struct{ name, event, msg string }{
		{"not base64", "%%%", "not base64"},
		{"not an event", base64.StdEncoding.EncodeToString([]byte("/dev/null")), "release event"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stream, h := rawExchange(ctx, t, se.env, run.Ranks[0].Ticket, client.DeliveryCudaIPC)
			require.NotNil(t, h)
			require.Equal(t, client.DeliveryCudaIPC, h.Delivery)
			fd, err := stream.Recv()
			require.NoError(t, err)
			var sd flight.StepDevice
			require.NoError(t, json.Unmarshal(fd.AppMetadata, &sd))
			require.Len(t, sd.Device, 1)
			sendRelease(t, stream, fmt.Sprintf(`{"slot": %d, "generation": %d, "device": true, "event": %q}`,
				sd.Device[0].Slot, sd.Device[0].Generation, tc.event))
			for err == nil {
				_, err = stream.Recv()
			}
			requireCode(t, err, codes.InvalidArgument, tc.msg)
			require.Eventually(t, func() bool { return len(dslotFiles(t, mem.Dir)) == 0 }, 20*time.Second, 10*time.Millisecond)
		})
	}
}

// TestExchangeCudaIPCGrownRingRefusesOldRingsEvent: after the exchange's
// device ring grows (a step with larger frames than its slots hold: a new
// ring, the old one kept until the exchange ends), a release of a new
// ring's slot whose event is one of the old ring's own ready events (a
// descriptor's Event sent back) is refused: INVALID_ARGUMENT
// (gpu.ErrBadEvent), and the rings are freed. On the fake driver
// (Device.Memory) the handle of this process's own event opens as that
// very event: taken as the new slot's release event, flightd would wait on
// its own event and destroy it twice at the end (once per ring). The
// check used to cover only the new ring's own events.
func TestExchangeCudaIPCGrownRingRefusesOldRingsEvent(t *testing.T) {
	small, big := makeMP4(t, 42), makeMP4Size(t, 42, 96, 64) // skips loudly without ffmpeg
	d := fakeGPU(t)
	se := newSlotEnv(t)
	budget, err := membudget.New(membudget.Options{Total: 64 << 20})
	require.NoError(t, err)
	ctx := ctxT(t)
	se.createProject("p")
	putEpisodesIn(t, se.env, "t", "small.mp4", small)
	putEpisodesIn(t, se.env, "big", "big.mp4", big)
	const world = 4
	recipe := client.Recipe{Seed: 11, BatchSize: world, Components: []client.Component{
		{Project: "p", Table: "t", Weight: 1, Columns: []string{"episode_index"}, Windows: scanWindows},
		{Project: "p", Table: "big", Weight: 1, Columns: []string{"episode_index"}, Windows: scanWindows}}}
	run, err := se.c.Resolve(ctx, recipe, world)
	require.NoError(t, err)
	// a rank whose first step has the small frames and a later one the big
	rank := -1
	for r := range world {
		first, grows := -1, false
		for st, err := range se.c.ReadRank(ctx, run.Ranks[r]) {
			require.NoError(t, err)
			idx := st.Batch.Schema().FieldIndices("_component")
			require.Len(t, idx, 1)
			comp := int(st.Batch.Column(idx[0]).(*array.Int32).Value(0))
			if first < 0 {
				first = comp
			} else if first == 0 && comp == 1 {
				grows = true
			}
		}
		if grows {
			rank = r
			break
		}
	}
	require.GreaterOrEqual(t, rank, 0, "no rank starts with the small camera and meets the big one later; change the seed")

	// the fake driver's memory: its own events' handles open as the events themselves
	flight.SetGPU(se.svc, &flight.GPUDelivery{Device: d, Memory: d.Memory(), Budget: budget})
	first := map[int]bool{} // the first ring's slots
	var oldEvent []byte     // one of the first ring's ready events
	firstSize := -1
	grown, sent := false, false
	var failed error
	dc := client.DeviceConsumer{
		ReleaseEvent: func(slot int) ([]byte, error) {
			if first[slot] || sent {
				return nil, nil
			}
			sent = true
			return oldEvent, nil // a slot of the larger ring: the first ring's event as its release event
		},
	}
	for st, err := range se.c.ReadRankDevice(ctx, run.Ranks[rank], client.DeliveryCudaIPC, dc) {
		if err != nil {
			failed = err
			break
		}
		require.Len(t, st.Device, 1)
		var ds gpu.DeviceSlot
		require.NoError(t, json.Unmarshal(st.Device[0], &ds))
		if firstSize < 0 {
			firstSize = ds.Shape[3]
		}
		if !grown && ds.Shape[3] != firstSize {
			grown = true
		}
		if !grown {
			first[ds.Slot] = true
			oldEvent, err = base64.StdEncoding.DecodeString(ds.Event)
			require.NoError(t, err)
		}
	}
	require.True(t, grown, "the ring grew")
	require.True(t, sent, "a release of the larger ring's slot carried the first ring's event")
	requireCode(t, failed, codes.InvalidArgument, "release event")
	require.Eventually(t, func() bool { return budget.Stats().Used == 0 }, 20*time.Second, 10*time.Millisecond,
		"--gpu-memory-limit's bytes back: both rings freed")
}

// TestExchangeCudaIPCBreakEndsBeforeEvents: a consumer that breaks out
// of the loop while flightd's decode waits on its release event (step
// 0's, held: a kernel still reading the slot) has its handles closed
// (DeviceConsumer.Close) while flightd still has the event open; the
// client then ends its side and reads the call to its status, and only
// then destroys its events (DeviceConsumer.Ended): flightd stopped at
// the client's end, freed the ring and closed (unmapped) the event it
// opened before it ended the call (docs/gpu.md, "The end of an
// exchange"). ReadRankDevice destroyed them before it cancelled the call
// once, while flightd still polled the event. The same order holds when
// flightd waits on no event but for a release ("not held"). A plain
// exchange (no device slots, no events) is cancelled at the break, and
// Close and Ended run all the same, once each.
func TestExchangeCudaIPCBreakEndsBeforeEvents(t *testing.T) {
	clip := makeMP4(t, 42) // skips loudly without ffmpeg
	d := fakeGPU(t)
	se := newSlotEnv(t)
	mem := gpu.NewShmMemory(t.TempDir())
	// a ring of two slots of a step's frames [6, 3, 48, 64, 3]
	budget, err := membudget.New(membudget.Options{Total: 2 * 6 * 3 * 48 * 64 * 3})
	require.NoError(t, err)
	ctx := ctxT(t)
	se.createProject("p")
	putEpisodes(t, se.env, clip)
	recipe := client.Recipe{Seed: 7, BatchSize: 6, Components: []client.Component{{
		Project: "p", Table: "t", Weight: 1, Columns: []string{"episode_index"}, Windows: scanWindows}}}
	run, err := se.c.Resolve(ctx, recipe, 1)
	require.NoError(t, err)
	require.Greater(t, run.Record.Steps, int64(3))
	flight.SetGPU(se.svc, &flight.GPUDelivery{Device: d, Memory: mem, Budget: budget})

	// what the consumer saw of step 0's event and of the ring at its Close and Ended
	type seen struct {
		maps   int   // mappings of the event's file in this process: the consumer's, and flightd's while it has it open
		used   int64 // --gpu-memory-limit's bytes in use
		dslots int   // the ring's slot files
	}
	for _, tc := range []struct {
		name     string
		delivery string
		hold     bool // step 0's event stays incomplete: flightd waits on it to write step 2
		atClose  seen // (plain: not looked at)
	}{
		{name: "held", delivery: client.DeliveryCudaIPC, hold: true, atClose: seen{maps: 2, used: budget.Stats().Total, dslots: 2}},
		{name: "not_held", delivery: client.DeliveryCudaIPC, atClose: seen{maps: 2, used: budget.Stats().Total, dslots: 2}},
		{name: "plain", delivery: client.DeliveryFlight},
	} {
		t.Run(tc.name, func(t *testing.T) {
			events := map[int]*gpu.ShmEvent{}
			handles := map[int]*gpu.ShmHandle{}
			sent := map[int]bool{}
			hold := false
			slot0 := -1
			var calls []string
			look := func() seen {
				if slot0 < 0 {
					return seen{}
				}
				return seen{maps: fileMaps(t, string(events[slot0].Handle())), used: budget.Stats().Used, dslots: len(dslotFiles(t, mem.Dir))}
			}
			var atClose, atEnded seen
			dc := client.DeviceConsumer{
				ReleaseEvent: func(slot int) ([]byte, error) {
					calls = append(calls, "event")
					ev := events[slot]
					if ev == nil {
						var err error
						if ev, err = gpu.NewShmEvent(""); err != nil {
							return nil, err
						}
						events[slot] = ev
					}
					ev.Record(hold)
					if sent[slot] {
						return nil, nil
					}
					sent[slot] = true
					return ev.Handle(), nil
				},
				Close: func() error {
					calls = append(calls, "close")
					atClose = look()
					var err error
					for _, h := range handles {
						err = errors.Join(err, h.Close())
					}
					return err
				},
				Ended: func() error {
					calls = append(calls, "ended")
					atEnded = look()
					var err error
					for _, ev := range events {
						ev.Complete() // (were flightd still waiting, it would go on)
						err = errors.Join(err, ev.Close())
					}
					return err
				},
			}
			n := int64(0)
			for st, err := range se.c.ReadRankDevice(ctx, run.Ranks[0], tc.delivery, dc) {
				require.NoError(t, err)
				n++
				if tc.delivery != client.DeliveryCudaIPC {
					require.Empty(t, st.Device)
					if n == 2 {
						break
					}
					continue
				}
				require.Len(t, st.Device, 1)
				var ds gpu.DeviceSlot
				require.NoError(t, json.Unmarshal(st.Device[0], &ds))
				if ds.IPCHandle != "" {
					path, err := base64.StdEncoding.DecodeString(ds.IPCHandle)
					require.NoError(t, err)
					h, err := gpu.OpenShmHandle(path)
					require.NoError(t, err)
					handles[ds.Slot] = h
				}
				if st.Step == 0 {
					// held: step 0's kernels "still run" when the loop goes on
					slot0, hold = ds.Slot, tc.hold
					continue
				}
				// step 1, in the other slot: flightd decodes step 2 into
				// step 0's slot once it queried step 0's event (held: it
				// waits on it)
				ev := events[slot0]
				queried := func(st gpu.EventState) bool { return st.Waits > 0 && (!tc.hold || st.Blocked > 0) }
				for deadline := time.Now().Add(60 * time.Second); !queried(ev.State()); time.Sleep(2 * time.Millisecond) {
					require.False(t, time.Now().After(deadline), "flightd never queried the release event: %+v", ev.State())
				}
				require.Equal(t, 2, fileMaps(t, string(ev.Handle())), "flightd has the consumer's event open")
				break
			}
			require.Equal(t, int64(2), n)
			if tc.delivery != client.DeliveryCudaIPC {
				require.Equal(t, []string{"close", "ended"}, calls, "no device slot, no event: Close and Ended once each")
				return
			}
			require.Equal(t, []string{"event", "close", "ended"}, calls, "step 0's release, then Close and Ended once each")
			require.Equal(t, tc.atClose, atClose, "flightd still had the event open and the ring when the consumer closed its handles")
			require.Equal(t, seen{maps: 1}, atEnded,
				"when the consumer destroys its events flightd has closed the one it opened (only the consumer's own mapping is left) and freed the ring")
			for _, ev := range events {
				_, err := os.Stat(string(ev.Handle()))
				require.ErrorIs(t, err, os.ErrNotExist, "the consumer's event files are gone")
			}
			require.Zero(t, mem.StillOpen(), "no slot freed while the consumer had its handle open")
		})
	}
}

// fileMaps counts this process's mappings of the file at path
// (/proc/self/maps).
func fileMaps(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/maps")
	require.NoError(t, err)
	n := 0
	for line := range strings.Lines(string(b)) {
		if strings.HasSuffix(strings.TrimSuffix(line, "\n"), " "+path) {
			n++
		}
	}
	return n
}

// TestExchangeCudaIPCClientEndsBeforeRing: a "cuda-ipc" client that ends
// its side right after its command, before the server made its rings,
// stops the exchange once they are made: the header (delivery
// "cuda-ipc"), then OK with no step; the device ring and the host ring
// are freed and --gpu-memory-limit's bytes back before that status.
func TestExchangeCudaIPCClientEndsBeforeRing(t *testing.T) {
	clip := makeMP4(t, 42) // skips loudly without ffmpeg
	d := fakeGPU(t)
	se := newSlotEnv(t)
	mem := gpu.NewShmMemory(t.TempDir())
	budget, err := membudget.New(membudget.Options{Total: 64 << 20})
	require.NoError(t, err)
	ctx := ctxT(t)
	se.createProject("p")
	putEpisodes(t, se.env, clip)
	recipe := client.Recipe{Seed: 7, BatchSize: 6, Components: []client.Component{{
		Project: "p", Table: "t", Weight: 1, Columns: []string{"episode_index"}, Windows: scanWindows}}}
	run, err := se.c.Resolve(ctx, recipe, 1)
	require.NoError(t, err)
	flight.SetGPU(se.svc, &flight.GPUDelivery{Device: d, Memory: mem, Budget: budget})
	base := se.budget.Stats().Used

	got := se.endBeforeRing(ctx, t, run.Ranks[0].Ticket, client.DeliveryCudaIPC)
	require.Len(t, got, 2)
	var h client.SlotsHeader
	require.NoError(t, client.Decode("header", got[0].AppMetadata, &h))
	require.Equal(t, client.DeliveryCudaIPC, h.Delivery, "served with device slots: %s", h.Fallback)
	_, err = os.Stat(h.Ring)
	require.ErrorIs(t, err, os.ErrNotExist, "the host ring is freed before the call's status")
	require.Equal(t, base, se.budget.Stats().Used)
	require.Empty(t, dslotFiles(t, mem.Dir), "the device ring is freed before the call's status")
	require.Zero(t, budget.Stats().Used, "--gpu-memory-limit's bytes back")
}

// reopening is a gpu.Memory whose OpenEvent of a handle it has open
// returns the event it opened (as a driver may: CUDA does not say whether
// cuIpcOpenEventHandle of a handle opened before gives a new event).
type reopening struct {
	gpu.Memory
	mu     sync.Mutex
	opened map[string]uint64
}

func (m *reopening) OpenEvent(handle []byte) (uint64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if ev, ok := m.opened[string(handle)]; ok {
		return ev, nil
	}
	ev, err := m.Memory.OpenEvent(handle)
	if err == nil {
		m.opened[string(handle)] = ev
	}
	return ev, err
}

func (m *reopening) CloseEvent(ev uint64) error {
	m.mu.Lock()
	for h, e := range m.opened {
		if e == ev {
			delete(m.opened, h)
		}
	}
	m.mu.Unlock()
	return m.Memory.CloseEvent(ev)
}

func (m *reopening) isOpen(handle []byte) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.opened[string(handle)]
	return ok
}

// nextStepDevice reads stream's messages up to a step's device message.
func nextStepDevice(t *testing.T, stream arrowflight.FlightService_DoExchangeClient) flight.StepDevice {
	t.Helper()
	for {
		fd, err := stream.Recv()
		require.NoError(t, err)
		var sd flight.StepDevice
		if len(fd.DataHeader) == 0 && json.Unmarshal(fd.AppMetadata, &sd) == nil && len(sd.Device) > 0 {
			return sd
		}
	}
}

// TestExchangeCudaIPCRefusesOtherExchangesEvents: the events of every
// device ring of one flightd's device are one set (gpu.Device.RingEvents),
// so a release on exchange B whose event is one of exchange A's (A's
// descriptor event, a ready event of A's ring, on the fake driver's
// memory, whose handle of this process's own event opens as that event;
// or the release event A's client sent for A's slot, on a memory that
// opens a handle again as the same event) is refused: B ends with
// INVALID_ARGUMENT (gpu.ErrBadEvent). Taken, B's decode would wait on an
// event A owns, and the event be destroyed twice (once per exchange's
// ring). A is not disturbed: it ends with OK when its client ends its
// side, and both exchanges' rings are freed. The check used to cover only
// the rings of B's own exchange.
func TestExchangeCudaIPCRefusesOtherExchangesEvents(t *testing.T) {
	clip := makeMP4(t, 42) // skips loudly without ffmpeg
	d := fakeGPU(t)
	se := newSlotEnv(t)
	ctx := ctxT(t)
	se.createProject("p")
	putEpisodes(t, se.env, clip)
	recipe := client.Recipe{Seed: 7, BatchSize: 6, Components: []client.Component{{
		Project: "p", Table: "t", Weight: 1, Columns: []string{"episode_index"}, Windows: scanWindows}}}
	run, err := se.c.Resolve(ctx, recipe, 1)
	require.NoError(t, err)
	require.Greater(t, run.Record.Steps, int64(3))
	for _, tc := range []struct {
		name string
		mem  func(t *testing.T) gpu.Memory
		// bad is the release event B's client sends, given A's stream and
		// A's first step's device message
		bad func(t *testing.T, mem gpu.Memory, a arrowflight.FlightService_DoExchangeClient, sd flight.StepDevice) []byte
	}{
		{"the other exchange's ready event", func(*testing.T) gpu.Memory { return d.Memory() },
			func(t *testing.T, _ gpu.Memory, _ arrowflight.FlightService_DoExchangeClient, sd flight.StepDevice) []byte {
				h, err := base64.StdEncoding.DecodeString(sd.Device[0].Event)
				require.NoError(t, err)
				return h
			}},
		{"the other client's release event",
			func(t *testing.T) gpu.Memory {
				return &reopening{Memory: gpu.NewShmMemory(t.TempDir()), opened: map[string]uint64{}}
			},
			func(t *testing.T, mem gpu.Memory, a arrowflight.FlightService_DoExchangeClient, sd flight.StepDevice) []byte {
				ev, err := gpu.NewShmEvent("")
				require.NoError(t, err)
				t.Cleanup(func() { ev.Close() })
				ev.Record(false)
				sendRelease(t, a, fmt.Sprintf(`{"slot": %d, "generation": %d, "device": true, "event": %q}`,
					sd.Device[0].Slot, sd.Device[0].Generation, base64.StdEncoding.EncodeToString(ev.Handle())))
				for !mem.(*reopening).isOpen(ev.Handle()) { // A's exchange opened it
					require.NoError(t, ctx.Err(), "A's exchange did not open its client's release event")
					time.Sleep(time.Millisecond)
				}
				return ev.Handle()
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := tc.mem(t)
			// five slots of a step's frames [6, 3, 48, 64, 3]: A's ring gets
			// three (12 and 6 do not fit), B's two; each exchange then waits
			// for a release (the run has more steps), so neither has sent
			// its end message, after which a release's event is not opened
			budget, err := membudget.New(membudget.Options{Total: 5 * 6 * 3 * 48 * 64 * 3})
			require.NoError(t, err)
			flight.SetGPU(se.svc, &flight.GPUDelivery{Device: d, Memory: mem, Budget: budget})
			base := se.budget.Stats().Used
			a, ha := rawExchange(ctx, t, se.env, run.Ranks[0].Ticket, client.DeliveryCudaIPC)
			require.Equal(t, client.DeliveryCudaIPC, ha.Delivery, "A served with device slots: %s", ha.Fallback)
			sa := nextStepDevice(t, a)
			b, hb := rawExchange(ctx, t, se.env, run.Ranks[0].Ticket, client.DeliveryCudaIPC)
			require.Equal(t, client.DeliveryCudaIPC, hb.Delivery, "B served with device slots: %s", hb.Fallback)
			sb := nextStepDevice(t, b)
			bad := tc.bad(t, mem, a, sa)

			sendRelease(t, b, fmt.Sprintf(`{"slot": %d, "generation": %d, "device": true, "event": %q}`,
				sb.Device[0].Slot, sb.Device[0].Generation, base64.StdEncoding.EncodeToString(bad)))
			require.NoError(t, b.CloseSend()) // taken, the release would be followed by B's OK end
			for err == nil {
				_, err = b.Recv()
			}
			requireCode(t, err, codes.InvalidArgument, "release event")

			require.NoError(t, a.CloseSend())
			for err = nil; err == nil; {
				_, err = a.Recv()
			}
			require.ErrorIs(t, err, io.EOF, "A ends with OK")
			require.Zero(t, budget.Stats().Used, "--gpu-memory-limit's bytes back: both exchanges' rings freed")
			require.Equal(t, base, se.budget.Stats().Used)
			if m, ok := mem.(*reopening); ok {
				require.Empty(t, dslotFiles(t, m.Memory.(*gpu.ShmMemory).Dir))
				require.Empty(t, m.opened, "every release event opened was closed")
			}
		})
	}
}
