//go:build cgo && linux

package gpu

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/weftdata/weft/errdefs"
	"github.com/weftdata/weft/video/pixnorm"
)

// eventSlot decodes windows (of cd's frames) into the slot u, each with
// opts, and returns the bytes they should be (the Go reference).
func eventStep(ctx context.Context, t *testing.T, d *Device, cd clipData, u SlotUse, windows [][]int, opts DecodeOptions) ([]byte, error) {
	t.Helper()
	w, h := cd.x.Config.Width, cd.x.Config.Height
	b, err := cd.x.PlanWindows(windows)
	require.NoError(t, err)
	var spec ColorSpec
	for _, p := range b.Decodes {
		var want []int64
		var to []uint64
		for _, k := range p.Keep {
			for wi, win := range windows {
				for ti, f := range win {
					if f == k.Frame {
						want = append(want, k.PTS)
						to = append(to, u.Region.Ptr+uint64((wi*len(win)+ti)*w*h*3))
					}
				}
			}
		}
		if spec, err = d.DecodeRGBTo(ctx, cd.segment(p), want, to, opts); err != nil {
			return nil, err
		}
	}
	tab, err := Tables(spec)
	require.NoError(t, err)
	var out []byte
	for _, win := range windows {
		for _, f := range win {
			rgb, err := YUV420ToRGB(Frame{Width: w, Height: h, Bits: 8, Data: cd.frames[f]}, tab)
			require.NoError(t, err)
			out = append(out, rgb...)
		}
	}
	return out, nil
}

// waitFor polls cond until it holds (a bound, not a timed assertion: the
// condition is what is tested).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); !cond(); time.Sleep(2 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
	}
}

// TestFakeEventOrdersTheNextWrite: a client's release event (recorded on
// the stream that read the slot, its handle sent with the slot's first
// release) is opened once by the ring, handed out with every later use of
// the slot, and the decode waits for it on the host (polls cuEventQuery)
// before its first write: while the client holds the event incomplete (a
// kernel still reading the slot), the decode's next write into the slot
// waits (the fake event's blocked count: queries that found it
// incomplete), the slot keeps the previous step's frames, and the write
// happens once the event completes; past Options.ReleaseWait the decode
// fails (ErrReleaseWait) and the slot is not written. Both memories flightd uses: the
// device's own (cuIpcOpenEventHandle of the fake driver) and the CPU fake
// of device memory (ShmMemory, --gpu-fake-memory).
func TestFakeEventOrdersTheNextWrite(t *testing.T) {
	needFFmpeg(t)
	ctx := context.Background()
	d, err := Open(ctx, fakeDriver(t))
	require.NoError(t, err)
	defer d.Close()
	cd := makeFakeClip(t, fakeClips()[0])
	w, h := cd.x.Config.Width, cd.x.Config.Height
	steps := [][][]int{{{10, 11, 12}, {30, 31, 32}}, {{3, 4, 5}, {40, 41, 42}}, {{20, 21, 22}, {1, 2, 3}}}
	slotBytes := int64((2*3*w*h*3 + 255) / 256 * 256)
	shm := NewShmMemory(t.TempDir())
	for _, tc := range []struct {
		name   string
		mem    Memory
		read   func(Region) []byte
		handle func(*ShmEvent) []byte
	}{
		// cuIpcOpenEventHandle takes the 64 bytes of a cudaIpcEventHandle_t: the fake driver's
		// form of a client's fake event is its path, NUL-padded
		{"device memory", d.Memory(), func(r Region) []byte {
			b, err := d.ReadBack(Buffer{Ptr: r.Ptr, Size: int(r.Size)})
			require.NoError(t, err)
			return b
		}, func(e *ShmEvent) []byte { return append(e.Handle(), make([]byte, 64-len(e.Handle()))...) }},
		{"fake device memory", shm, func(r Region) []byte { return bytes.Clone(shm.Bytes(r)) }, (*ShmEvent).Handle},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := NewDeviceRing(tc.mem, RingOptions{Slots: 1, SlotBytes: slotBytes})
			require.NoError(t, err)
			defer r.Close()
			ev, err := NewShmEvent("") // /dev/shm: a path that fits in a handle
			require.NoError(t, err)
			defer ev.Close()
			handle := tc.handle(ev)

			u, err := r.Acquire(ctx)
			require.NoError(t, err)
			require.Zero(t, u.Wait, "no release event yet")
			want0, err := eventStep(ctx, t, d, cd, u, steps[0], DecodeOptions{Wait: u.Wait})
			require.NoError(t, err)
			_, err = r.Publish(u, 0, []int{2, 3, h, w, 3}, pixnorm.Uint8)
			require.NoError(t, err)
			require.Equal(t, want0, tc.read(u.Region)[:len(want0)])

			// the client's kernels still read the slot: its event is recorded, held incomplete
			ev.Record(true)
			require.ErrorIs(t, r.ReleaseAfter(u.Index, u.Generation+1, handle), ErrStaleGeneration)
			require.NoError(t, r.ReleaseAfter(u.Index, u.Generation, handle))
			u, err = r.Acquire(ctx)
			require.NoError(t, err)
			require.NotZero(t, u.Wait, "the slot's release event goes with its next use")
			waits := d.Stats().EventWaits
			type result struct {
				want []byte
				err  error
			}
			done := make(chan result, 1)
			go func() {
				want, err := eventStep(ctx, t, d, cd, u, steps[1], DecodeOptions{Wait: u.Wait})
				done <- result{want, err}
			}()
			waitFor(t, "the decode's write waits on the held event", func() bool { return ev.State().Blocked >= 1 })
			require.Equal(t, want0, tc.read(u.Region)[:len(want0)], "the slot was written before the client's event completed")
			select {
			case res := <-done:
				t.Fatalf("the decode ended while the event was held: %v", res.err)
			default:
			}
			ev.Complete()
			res := <-done
			require.NoError(t, res.err)
			require.Equal(t, res.want, tc.read(u.Region)[:len(res.want)], "the step after the event completed")
			require.Greater(t, d.Stats().EventWaits, waits)
			st := ev.State()
			require.Equal(t, uint64(1), st.Recorded)
			require.GreaterOrEqual(t, st.Waits, uint64(1))

			// later releases carry no handle; the slot keeps its event: a completed record does not block
			ev.Record(false)
			require.NoError(t, r.ReleaseAfter(u.Index, u.Generation, nil))
			u, err = r.Acquire(ctx)
			require.NoError(t, err)
			require.NotZero(t, u.Wait)
			blocked := ev.State().Blocked
			want2, err := eventStep(ctx, t, d, cd, u, steps[2], DecodeOptions{Wait: u.Wait})
			require.NoError(t, err)
			require.Equal(t, want2, tc.read(u.Region)[:len(want2)])
			require.Equal(t, blocked, ev.State().Blocked)

			// a slot's event cannot change; a handle that does not open is refused; the slot stays held
			other, err := NewShmEvent("")
			require.NoError(t, err)
			defer other.Close()
			require.ErrorIs(t, r.ReleaseAfter(u.Index, u.Generation, tc.handle(other)), ErrBadEvent)
			require.Equal(t, 1, r.Held())
			require.NoError(t, r.ReleaseAfter(u.Index, u.Generation, handle)) // the same one again is fine

			// a held event that never completes fails the decode past Options.ReleaseWait, the slot
			// unwritten (a device of a short bound, on the same driver and memory)
			o := d.opts
			o.ReleaseWait = 20 * time.Millisecond
			short, err := Open(ctx, o)
			require.NoError(t, err)
			defer short.Close()
			ev.Record(true)
			u, err = r.Acquire(ctx)
			require.NoError(t, err)
			before := tc.read(u.Region)[:len(want2)]
			_, err = eventStep(ctx, t, short, cd, u, steps[0], DecodeOptions{Wait: u.Wait})
			require.ErrorIs(t, err, ErrReleaseWait)
			require.ErrorIs(t, err, errdefs.ErrUnavailable)
			require.ErrorContains(t, err, "the trainer's release event did not complete within 20ms")
			require.Equal(t, before, tc.read(u.Region)[:len(want2)], "the slot was written though its event never completed")
			ev.Complete()
			require.NoError(t, r.Release(u.Index, u.Generation))
		})
	}
}

// TestRingReleaseEvent: ReleaseAfter on the CPU fake alone (no driver):
// the slot table's refusals come first and open nothing, a handle that is
// not an event (not a regular file named /dev/shm/weft-devent-*: a link
// to one, a FIFO, a file elsewhere) is ErrBadEvent and keeps the slot
// held, and Close lets go of the opened events.
func TestRingReleaseEvent(t *testing.T) {
	ctx := context.Background()
	shm := NewShmMemory(t.TempDir())
	r, err := NewDeviceRing(shm, RingOptions{Slots: 2, SlotBytes: 256, FirstSlot: 4})
	require.NoError(t, err)
	ev, err := NewShmEvent("")
	require.NoError(t, err)
	defer ev.Close()
	elsewhere, err := NewShmEvent(t.TempDir()) // a fake event, outside /dev/shm
	require.NoError(t, err)
	defer elsewhere.Close()
	// a link and a FIFO named as events in /dev/shm
	name := fmt.Sprintf("/dev/shm/%stest-%d-", shmEventPrefix, os.Getpid())
	link, fifo := name+"link", name+"fifo"
	require.NoError(t, os.Symlink(string(ev.Handle()), link))
	t.Cleanup(func() { _ = os.Remove(link) })
	require.NoError(t, unix.Mkfifo(fifo, 0o600))
	t.Cleanup(func() { _ = os.Remove(fifo) })
	u, err := r.Acquire(ctx)
	require.NoError(t, err)
	for _, tc := range []struct {
		name   string
		index  int
		gen    uint64
		handle []byte
		want   error
	}{
		{"unknown slot", 9, u.Generation, ev.Handle(), ErrUnknownSlot},
		{"stale generation", u.Index, u.Generation + 1, ev.Handle(), ErrStaleGeneration},
		{"not an event file", u.Index, u.Generation, []byte("/dev/null"), ErrBadEvent},
		{"no such file", u.Index, u.Generation, []byte(name + "none"), ErrBadEvent},
		{"an event outside /dev/shm", u.Index, u.Generation, elsewhere.Handle(), ErrBadEvent},
		{"a link to an event", u.Index, u.Generation, []byte(link), ErrBadEvent},
		{"a FIFO", u.Index, u.Generation, []byte(fifo), ErrBadEvent},
		{"an unclean path", u.Index, u.Generation, []byte("/dev/shm/../shm/" + filepath.Base(string(ev.Handle()))), ErrBadEvent},
		{"another name", u.Index, u.Generation, []byte("/dev/shm/weft-dslot-x"), ErrBadEvent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.ErrorIs(t, r.ReleaseAfter(tc.index, tc.gen, tc.handle), tc.want)
			require.Equal(t, 1, r.Held())
		})
	}
	require.NoError(t, r.ReleaseAfter(u.Index, u.Generation, ev.Handle()))
	require.ErrorIs(t, r.ReleaseAfter(u.Index, u.Generation, ev.Handle()), ErrNotHeld)
	// the other slot first (FIFO), then u's again, with its event
	u2, err := r.Acquire(ctx)
	require.NoError(t, err)
	require.Zero(t, u2.Wait)
	u3, err := r.Acquire(ctx)
	require.NoError(t, err)
	require.Equal(t, u.Index, u3.Index)
	require.NotZero(t, u3.Wait)
	st, ok := shm.EventState(u3.Wait)
	require.True(t, ok)
	require.Equal(t, EventState{}, st)
	ev.Record(false)
	st, _ = shm.EventState(u3.Wait)
	require.Equal(t, EventState{Recorded: 1, Completed: 1}, st, "the opened event is the client's file")
	require.NoError(t, r.Close())
	_, ok = shm.EventState(u3.Wait)
	require.False(t, ok, "Close lets go of the opened events")
	require.True(t, errors.Is(r.ReleaseAfter(u3.Index, u3.Generation, nil), ErrRingClosed))
}

// TestRingRefusesItsOwnEvent: a client that sends back a slot's ready
// event (the descriptor's Event, flightd's own interprocess event) as its
// release event is refused (ErrBadEvent) and the slot stays held. The
// fake driver's cuIpcOpenEventHandle of this process's handle returns the
// event itself: taken as the slot's release event, Close destroyed it
// twice (a double free that aborted the process).
func TestRingRefusesItsOwnEvent(t *testing.T) {
	ctx := context.Background()
	d, err := Open(ctx, fakeDriver(t))
	require.NoError(t, err)
	defer d.Close()
	r, err := NewDeviceRing(d.Memory(), RingOptions{Slots: 2, SlotBytes: 256})
	require.NoError(t, err)
	defer r.Close()
	u, err := r.Acquire(ctx)
	require.NoError(t, err)
	desc, err := r.Publish(u, 0, []int{1, 1, 1, 1, 3}, pixnorm.Uint8)
	require.NoError(t, err)
	for _, tc := range []struct {
		name  string
		event string
	}{
		{"the slot's own ready event", desc.Event},
		// cuIpcOpenEventHandle fails (the fake: no such event file): the release's fault, not the driver's
		{"a handle that does not open", base64.StdEncoding.EncodeToString(append([]byte("/dev/shm/weft-devent-none"), make([]byte, 39)...))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, err := base64.StdEncoding.DecodeString(tc.event)
			require.NoError(t, err)
			err = r.ReleaseAfter(u.Index, u.Generation, h)
			require.ErrorIs(t, err, ErrBadEvent)
			require.ErrorIs(t, err, errdefs.ErrInvalidArgument)
			require.NotErrorIs(t, err, ErrDriver)
			require.Equal(t, 1, r.Held())
		})
	}
	require.NoError(t, r.Release(u.Index, u.Generation))
	// the other slot's ready event, sent for this slot
	u2, err := r.Acquire(ctx)
	require.NoError(t, err)
	d2, err := r.Publish(u2, 0, []int{1, 1, 1, 1, 3}, pixnorm.Uint8)
	require.NoError(t, err)
	require.NotEqual(t, desc.Event, d2.Event)
	u3, err := r.Acquire(ctx)
	require.NoError(t, err)
	h, err := base64.StdEncoding.DecodeString(d2.Event)
	require.NoError(t, err)
	require.ErrorIs(t, r.ReleaseAfter(u3.Index, u3.Generation, h), ErrBadEvent)
	require.NoError(t, r.Close())
}

// TestFakeEventWaitEndsWithContext: a decode whose write waits on a
// client's release event that never completes (its stream is stuck: a
// hung collective, a kernel that spins) ends when its ctx ends, with
// ctx's error, long before Options.ReleaseWait (the default, 30 s), and
// the device closes after it. (It used to wait in cuStreamWaitEvent then
// cuStreamSynchronize in native.c's on_display, which no ctx reaches: on
// a real GPU, forever; review rvevt.)
func TestFakeEventWaitEndsWithContext(t *testing.T) {
	needFFmpeg(t)
	d, err := Open(context.Background(), fakeDriver(t))
	require.NoError(t, err)
	defer d.Close()
	cd := makeFakeClip(t, fakeClips()[0])
	w, h := cd.x.Config.Width, cd.x.Config.Height
	shm := NewShmMemory(t.TempDir())
	r, err := NewDeviceRing(shm, RingOptions{Slots: 1, SlotBytes: int64((3*w*h*3 + 255) / 256 * 256)})
	require.NoError(t, err)
	defer r.Close()
	ev, err := NewShmEvent("")
	require.NoError(t, err)
	defer ev.Close()
	u, err := r.Acquire(context.Background())
	require.NoError(t, err)
	ev.Record(true) // never completed
	require.NoError(t, r.ReleaseAfter(u.Index, u.Generation, ev.Handle()))
	u, err = r.Acquire(context.Background())
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := eventStep(ctx, t, d, cd, u, [][]int{{3, 4, 5}}, DecodeOptions{Wait: u.Wait})
		done <- err
	}()
	waitFor(t, "the decode's write waits on the held event", func() bool { return ev.State().Blocked >= 1 })
	cancel()
	err = <-done
	require.ErrorIs(t, err, context.Canceled)
	require.NotErrorIs(t, err, ErrReleaseWait)
	require.Zero(t, ev.State().Completed, "the decode ended while the event was still held")
	ev.Complete()
	require.NoError(t, d.Close())
}

// reopening is a Memory whose OpenEvent of a handle it has open returns
// the event it opened (as a driver may: CUDA does not say whether
// cuIpcOpenEventHandle of a handle opened before gives a new event), and
// whose CloseEvent of an event it does not have open fails (ShmMemory's:
// a second close of one event).
type reopening struct {
	Memory
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

// TestRingsOfOneClientRefuseEachOthersEvents: the device rings that share
// a RingEvents (an exchange's first ring and the larger one it grows; or
// the rings of two exchanges, with the device's set, Device.RingEvents,
// which flightd gives every ring) refuse as a slot's release event any
// event of the other ring's: one of its own ready events (a descriptor's Event sent
// back: the fake driver opens this process's handle as the event itself)
// or the release event opened for one of its slots (a driver that opens a
// handle again as the same event). Taken, the slot's decode would wait on
// flightd's own event, and the event would be destroyed twice (once per
// ring's Close). The release is ErrBadEvent, the slot stays held, both
// rings close cleanly, and their events leave the set.
func TestRingsOfOneClientRefuseEachOthersEvents(t *testing.T) {
	ctx := context.Background()
	d, err := Open(ctx, fakeDriver(t))
	require.NoError(t, err)
	defer d.Close()
	pad := func(h []byte) []byte { return append(h, make([]byte, 64-len(h))...) } // the fake driver's handle of a fake event file
	for _, tc := range []struct {
		name string
		mem  Memory
		// clientHandle is what a release carries for the client's event ev
		clientHandle func(ev *ShmEvent) []byte
		// bad is the release event sent for the second ring's slot
		bad func(first DeviceSlot, firstRelease []byte) []byte
	}{
		{"the first ring's ready event", d.Memory(), func(ev *ShmEvent) []byte { return pad(ev.Handle()) },
			func(first DeviceSlot, _ []byte) []byte {
				h, err := base64.StdEncoding.DecodeString(first.Event)
				require.NoError(t, err)
				return h
			}},
		{"the release event of the first ring's slot", &reopening{Memory: NewShmMemory(t.TempDir()), opened: map[string]uint64{}},
			(*ShmEvent).Handle, func(_ DeviceSlot, firstRelease []byte) []byte { return firstRelease }},
	} {
		for _, set := range []struct {
			name   string
			events *RingEvents
			first  int // b's first slot
		}{
			{"one exchange's rings", NewRingEvents(), 1},
			{"two exchanges' rings (the device's set)", d.RingEvents(), 0},
		} {
			t.Run(tc.name+"/"+set.name, func(t *testing.T) {
				testRingsRefuseEachOthersEvents(t, tc.mem, set.events, set.first, tc.clientHandle, tc.bad)
			})
		}
	}
	require.Same(t, d.RingEvents(), d.RingEvents(), "one set per device")
}

// testRingsRefuseEachOthersEvents is TestRingsOfOneClientRefuseEachOthersEvents
// for rings a and b made on mem with events, b's slots from first.
func testRingsRefuseEachOthersEvents(t *testing.T, mem Memory, events *RingEvents, first int,
	clientHandle func(ev *ShmEvent) []byte, bad func(first DeviceSlot, firstRelease []byte) []byte) {
	ctx := context.Background()
	a, err := NewDeviceRing(mem, RingOptions{Slots: 1, SlotBytes: 256, Events: events})
	require.NoError(t, err)
	defer a.Close()
	b, err := NewDeviceRing(mem, RingOptions{Slots: 1, SlotBytes: 256, FirstSlot: first, Events: events})
	require.NoError(t, err)
	defer b.Close()
	ev, err := NewShmEvent("")
	require.NoError(t, err)
	defer ev.Close()

	ua, err := a.Acquire(ctx)
	require.NoError(t, err)
	da, err := a.Publish(ua, 0, []int{1, 1, 1, 1, 3}, pixnorm.Uint8)
	require.NoError(t, err)
	ev.Record(false)
	release := clientHandle(ev)
	require.NoError(t, a.ReleaseAfter(ua.Index, ua.Generation, release))

	ub, err := b.Acquire(ctx)
	require.NoError(t, err)
	_, err = b.Publish(ub, 0, []int{1, 1, 1, 1, 3}, pixnorm.Uint8)
	require.NoError(t, err)
	err = b.ReleaseAfter(ub.Index, ub.Generation, bad(da, release))
	require.ErrorIs(t, err, ErrBadEvent)
	require.ErrorIs(t, err, errdefs.ErrInvalidArgument)
	require.Equal(t, 1, b.Held(), "the refused release changed nothing")
	require.NoError(t, b.Release(ub.Index, ub.Generation))
	ub, err = b.Acquire(ctx)
	require.NoError(t, err)
	require.Zero(t, ub.Wait, "the second ring's slot has no release event")
	require.NoError(t, b.Release(ub.Index, ub.Generation))

	require.NoError(t, b.Close())
	require.NoError(t, a.Close(), "each event closed once")
	events.mu.Lock()
	defer events.mu.Unlock()
	require.Empty(t, events.m, "every event left the set with its ring")
}
