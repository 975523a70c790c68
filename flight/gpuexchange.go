package flight

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	arrowflight "github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/weftdata/weft/client"
	"github.com/weftdata/weft/episodes"
	"github.com/weftdata/weft/gpu"
	"github.com/weftdata/weft/internal/membudget"
	"github.com/weftdata/weft/mix"
	"github.com/weftdata/weft/slots"
	"github.com/weftdata/weft/video"
	"github.com/weftdata/weft/video/pixnorm"
	"golang.org/x/sync/errgroup"
)

// GPUDelivery is what a "cuda-ipc" exchange decodes with (docs/gpu.md):
// an open device and where its device slots live. Memory is
// Device.Memory() on a real GPU; with the fake driver (CI) it is a
// gpu.ShmMemory, whose "device" pointers the fake's kernel writes on the
// CPU and whose IPC handles are /dev/shm paths. Budget is
// --gpu-memory-limit, a membudget.Budget apart from --memory-limit's (nil:
// unlimited).
type GPUDelivery struct {
	Device *gpu.Device
	Memory gpu.Memory
	Budget *membudget.Budget
	// Sessions is how many of a step's segments one exchange decodes at
	// once (NVDEC sessions in flight; 0: DefaultGPUSessions).
	Sessions int
}

// DefaultGPUSessions is GPUDelivery.Sessions when it is 0.
const DefaultGPUSessions = 4

func (g *GPUDelivery) sessions() int {
	if g.Sessions > 0 {
		return g.Sessions
	}
	return DefaultGPUSessions
}

// StepDevice is the app_metadata of the message (no body) that comes
// before a step's batch in a "cuda-ipc" exchange: the step's video window
// columns as device slots, one descriptor per column.
type StepDevice struct {
	Run    string           `json:"run"`
	Step   int64            `json:"step"`
	Device []gpu.DeviceSlot `json:"device"`
}

// deviceColumn is a video window column served in device slots. Its frame
// size and offset are a step's: steps of one exchange may differ in frame
// size (a mix of tables whose cameras differ), and each step's descriptor
// says its own shape and offset.
type deviceColumn struct {
	name   string
	index  int   // in the run's schema
	t      int   // frames per window
	h, w   int   // frame size of the step being served (the window's size when it has one)
	offset int64 // in the slot (of the step being served)
	// norm is the window's normalisation (nil: uint8 frames); every step
	// and segment of the column has the first step's.
	norm *pixnorm.Normalize
}

func (c deviceColumn) dtype() pixnorm.DType {
	if c.norm == nil {
		return pixnorm.Uint8
	}
	return c.norm.DType
}

// bytes is the column's bytes in a slot: rows*T*H*W*3 elements of its dtype.
func (c deviceColumn) bytes(rows int) int64 {
	return int64(rows*c.t*c.h*c.w) * 3 * int64(c.dtype().Size())
}

// isVideoWindow says whether dt is a video window's wire type (contract
// section 5): a struct with segment, pts and segments.
func isVideoWindow(dt arrow.DataType) bool {
	st, ok := dt.(*arrow.StructType)
	if !ok {
		return false
	}
	for _, n := range []string{"segment", "pts", "segments"} {
		if _, ok := st.FieldIdx(n); !ok {
			return false
		}
	}
	return true
}

// cudaSink serves a "cuda-ipc" exchange: each step's video window columns
// are decoded on the GPU into a device slot and described by a StepDevice
// message; the rest of the step goes through the host-slot sink. When the
// first step cannot be served so (no GPU, no video, a codec NVDEC lacks,
// frames of different sizes, the budget), the exchange is served
// with host slots and the header's fallback says why.
type cudaSink struct {
	x    *exchange
	g    *GPUDelivery
	run  *mix.Run
	rows int // a step's rows (the rank's share of the batch)
	host *shmSink

	decided bool
	cols    []deviceColumn
	keep    []int // the run schema's columns the host batch keeps
	schema  *arrow.Schema
	ring    *gpu.DeviceRing // the ring steps are decoded into now
}

// layout places the columns one after the other in a slot, each at a
// 256-byte-aligned offset, for a step of rows rows, and returns the slot
// bytes they take (at least 256).
func layout(cols []deviceColumn, rows int) int64 {
	var off int64
	for i := range cols {
		cols[i].offset = off
		off += (cols[i].bytes(rows) + 255) / 256 * 256
	}
	return max(off, 256)
}

// newRing makes a device ring of slotBytes slots numbered from first:
// StreamSteps + ringClientSlots slots (at least 3), halved down to 2 while
// --gpu-memory-limit cannot hold them. Every ring of every exchange
// shares the device's events (gpu.Device.RingEvents): a release event of
// a slot is checked against all of them (another exchange's descriptor
// event, or another client's release event, is refused).
func (k *cudaSink) newRing(first int, slotBytes int64) (*gpu.DeviceRing, error) {
	n := max(3, k.x.s.opts.StreamSteps+ringClientSlots)
	opts := gpu.RingOptions{Slots: n, SlotBytes: slotBytes, FirstSlot: first, Budget: k.g.Budget, Events: k.g.Device.RingEvents()}
	ring, err := gpu.NewDeviceRing(k.g.Memory, opts)
	for err != nil && errors.Is(err, gpu.ErrOverLimit) && opts.Slots > 2 {
		opts.Slots = max(2, opts.Slots/2)
		ring, err = gpu.NewDeviceRing(k.g.Memory, opts)
	}
	return ring, err
}

func (x *exchange) cudaSink(run *mix.Run, stepBytes int64, rows int) rankSink {
	return &cudaSink{x: x, g: x.s.gpu, run: run, rows: rows, host: x.shmSink(run, stepBytes).(*shmSink)}
}

// plan decides at the first step whether its video goes to device slots;
// "" when it does, else why not.
func (k *cudaSink) plan(ctx context.Context, batch arrow.RecordBatch) string {
	if k.g == nil || k.g.Device == nil {
		return "this flightd has no GPU delivery (see its start log)"
	}
	schema := k.run.Schema()
	var cols []deviceColumn
	for i, f := range schema.Fields() {
		if !isVideoWindow(f.Type) {
			k.keep = append(k.keep, i)
			continue
		}
		c, why := k.column(batch, i, f.Name)
		if why != "" {
			return why
		}
		cols = append(cols, c)
	}
	if len(cols) == 0 {
		return "the run has no video windows"
	}
	ring, err := k.newRing(0, layout(cols, k.rows))
	if err != nil {
		return fmt.Sprintf("no device ring: %v", err)
	}
	fields := make([]arrow.Field, len(k.keep))
	for i, c := range k.keep {
		fields[i] = schema.Field(c)
	}
	md := schema.Metadata()
	k.schema = arrow.NewSchema(fields, &md)
	k.cols, k.ring = cols, ring
	k.x.mu.Lock()
	k.x.drings = []*gpu.DeviceRing{ring}
	k.x.mu.Unlock()
	return ""
}

// column checks column i of the first step: every segment a codec this
// GPU decodes, one frame size (the window's size when it has one: frames
// of different sizes resized to one size are fine; the resize runs on the
// device, gpu.DecodeOptions), one normalisation.
func (k *cudaSink) column(batch arrow.RecordBatch, i int, name string) (deviceColumn, string) {
	w, err := readWindows(batch.Column(i))
	if err != nil {
		return deviceColumn{}, fmt.Sprintf("column %s: %v", name, err)
	}
	c := deviceColumn{name: name, index: i, t: w.T}
	if c.h, c.w, err = frameSize(w); err != nil {
		return c, fmt.Sprintf("column %s: %v", name, err)
	}
	for si := range w.Segments {
		sg := &w.Segments[si]
		norm, err := gpuNormalize(sg.Normalize)
		if err != nil {
			return c, fmt.Sprintf("column %s: %v", name, err)
		}
		if si == 0 {
			c.norm = norm
		} else if !sameNorm(c.norm, norm) {
			return c, fmt.Sprintf("column %s has segments of different normalisations", name)
		}
		cfg, err := video.ConfigFromBox(sg.Codec, sg.Config, sg.Width, sg.Height)
		if err != nil {
			return c, fmt.Sprintf("column %s: %v", name, err)
		}
		caps, err := k.g.Device.Caps(cfg.Codec, cfg.BitDepth)
		if err != nil {
			return c, fmt.Sprintf("column %s: %v", name, err)
		}
		if !caps.Supported || sg.Width > caps.MaxWidth || sg.Height > caps.MaxHeight {
			return c, fmt.Sprintf("column %s: this GPU's NVDEC does not decode %s %d-bit %dx%d", name, cfg.Codec, cfg.BitDepth, sg.Width, sg.Height)
		}
	}
	return c, ""
}

func (k *cudaSink) send(ctx context.Context, run mix.RunID, step int64, batch arrow.RecordBatch) error {
	if !k.decided {
		k.decided = true
		if why := k.plan(ctx, batch); why != "" {
			k.x.s.log.InfoContext(ctx, "cuda-ipc delivery unavailable: serving host slots", "why", why)
			k.host.fallback = "cuda-ipc: " + why
			k.cols = nil
		} else {
			k.host.schema = k.schema
			k.host.delivery = client.DeliveryCudaIPC
			for _, c := range k.cols {
				k.host.deviceColumns = append(k.host.deviceColumns, c.name)
			}
		}
	}
	if k.cols == nil {
		return k.host.send(ctx, run, step, batch)
	}
	cols := make([]arrow.Array, len(k.keep))
	for i, c := range k.keep {
		cols[i] = batch.Column(c)
	}
	host := array.NewRecordBatch(k.schema, cols, batch.NumRows())
	defer host.Release()
	var msg *slots.Message // the first step's host message: encoded once, to open the ring and for its slot
	if k.host.ring == nil && k.host.plain == nil {
		// The header goes first, so that the client knows the device
		// columns before the first device message.
		m, err := slots.Encode(host)
		if err != nil {
			return err
		}
		defer m.Release()
		msg = m
		ok, err := k.host.open(ctx, msg)
		if err != nil {
			return err
		}
		if !ok {
			// No host ring (no /dev/shm, the memory budget): nothing was
			// sent, so the exchange is served plainly, video included.
			k.x.s.log.InfoContext(ctx, "cuda-ipc delivery unavailable: no host ring; serving the plain stream")
			k.cols = nil
			k.x.mu.Lock()
			k.x.drings = nil
			k.x.mu.Unlock()
			_ = k.ring.Close()
			k.host.plain = k.x.s.newPlainSink(k.x.stream, k.run)
			return k.host.plain.send(ctx, run, step, batch)
		}
	}
	descs, err := k.decode(ctx, step, batch)
	if err != nil {
		if errors.Is(err, ErrUnavailableDelivery) {
			k.refuse(ctx, run)
		}
		return err
	}
	meta, err := json.Marshal(StepDevice{Run: string(run), Step: step, Device: descs})
	if err != nil {
		return err
	}
	if err := k.x.stream.Send(&arrowflight.FlightData{AppMetadata: meta}); err != nil {
		return err
	}
	return k.host.sendEncoded(ctx, run, step, host, msg)
}

// refuse ends the exchange's steps before a step it cannot serve in
// device slots (ErrUnavailableDelivery, which the caller then returns:
// the client asks again from that step with "shm"). The earlier steps'
// messages may still be on their way, and their device slots (and host
// slots) must outlive the client's use of them: so the end message goes
// first, as after a run's last step, and the call ends (freeing the rings)
// only once the client has ended its side, which it does after that
// message, once it has released every step before it and closed its IPC
// handles, or when ctx ends (awaitClientEnd).
func (k *cudaSink) refuse(ctx context.Context, run mix.RunID) {
	_ = k.x.end(ctx, run) // a send error: the client is gone; the refusal is the error
}

// StepAllocator (mix.StepMemory) is the memory of step's columns: the
// host sink's (an arena in a host slot, once its ring exists), so that the
// columns the step keeps on the host are gathered straight into their
// slot, as on a host-slot exchange; the video window columns, which go to
// a device slot, are not built there (their materializer builds in its own
// memory).
func (k *cudaSink) StepAllocator(ctx context.Context, step int64) (memory.Allocator, error) {
	return k.host.StepAllocator(ctx, step)
}

// decode writes the step's video windows into a device slot and
// publishes one descriptor per column, each with the step's own shape and
// offset. A step whose frames do not fit the ring's slots (larger frames
// than the steps before it) is served by a larger ring (grow).
func (k *cudaSink) decode(ctx context.Context, step int64, batch arrow.RecordBatch) ([]gpu.DeviceSlot, error) {
	rows := int(batch.NumRows())
	cols := append([]deviceColumn(nil), k.cols...)
	wins := make([]*episodes.Windows, len(cols))
	for i := range cols {
		w, err := readWindows(batch.Column(cols[i].index))
		if err != nil {
			return nil, fmt.Errorf("step %d column %s: %w", step, cols[i].name, err)
		}
		if cols[i].h, cols[i].w, err = frameSize(w); err != nil {
			return nil, fmt.Errorf("%w: step %d column %s: %w", ErrUnavailableDelivery, step, cols[i].name, err)
		}
		wins[i] = w
	}
	if need := layout(cols, rows); need > k.ring.SlotBytes() {
		if err := k.grow(ctx, step, need); err != nil {
			return nil, err
		}
	}
	u, err := k.ring.Acquire(ctx) // waits while the client holds every slot
	if err != nil {
		return nil, err
	}
	var descs []gpu.DeviceSlot
	err = func() error {
		for i, c := range cols {
			if err := k.decodeColumn(ctx, u, c, wins[i]); err != nil {
				return fmt.Errorf("step %d column %s: %w", step, c.name, err)
			}
			d, err := k.ring.Publish(u, c.offset, []int{rows, c.t, c.h, c.w, 3}, c.dtype())
			if err != nil {
				return err
			}
			d.Column = c.name
			descs = append(descs, d)
		}
		return nil
	}()
	if err != nil {
		_ = k.ring.Release(u.Index, u.Generation)
		return nil, err
	}
	return descs, nil
}

// grow replaces the ring steps are decoded into by one whose slots hold
// need bytes. Its slots are numbered after every earlier ring's, so that a
// slot index names one memory for the whole exchange and its IPC handle
// still goes with its first use only: a client opens the new slots as it
// opened the first ones. The earlier rings are kept (their slots still
// released as they come back) until the exchange ends: a client may hold
// their steps, and on CUDA the server must not free memory a client still
// has open. Their bytes stay counted against --gpu-memory-limit; a larger
// ring that does not fit in what is left ends the exchange
// (ErrUnavailableDelivery).
func (k *cudaSink) grow(ctx context.Context, step int64, need int64) error {
	old := k.ring
	ring, err := k.newRing(old.FirstSlot()+old.Slots(), need)
	if err != nil {
		return fmt.Errorf("%w: step %d's frames need %d-byte device slots, the ring's are %d bytes, and no larger ring can be made: %w",
			ErrUnavailableDelivery, step, need, old.SlotBytes(), err)
	}
	k.x.mu.Lock()
	k.x.drings = append(k.x.drings, ring)
	k.x.mu.Unlock()
	k.ring = ring
	k.x.s.log.DebugContext(ctx, "cuda-ipc: a larger device ring for steps with larger frames", "step", step,
		"slot_bytes", need, "slots", ring.Slots(), "first_slot", ring.FirstSlot())
	return nil
}

// frameSize is the frame size of a step's video window column (after
// the window's size, when it has one): every segment of the step must have
// it (one step's windows are one tensor, as on the CPU path, which refuses
// frames of different sizes in one batch). Its error says which rule the
// step breaks; the caller gives it its kind.
func frameSize(win *episodes.Windows) (h, w int, err error) {
	for si := range win.Segments {
		sg := &win.Segments[si]
		oh, ow := sg.OutSize()
		switch {
		case sg.Height < 1 || sg.Width < 1 || oh < 1 || ow < 1:
			return 0, 0, fmt.Errorf("a segment of size %dx%d (to %dx%d)", sg.Width, sg.Height, ow, oh)
		case h == 0:
			h, w = oh, ow
		case oh != h || ow != w:
			return 0, 0, fmt.Errorf("frames of different sizes (%dx%d, %dx%d) in one step; give the window a size", w, h, ow, oh)
		}
	}
	if h == 0 {
		return 0, 0, errors.New("a step without segments")
	}
	return h, w, nil
}

func (k *cudaSink) decodeColumn(ctx context.Context, u gpu.SlotUse, c deviceColumn, w *episodes.Windows) error {
	if w.T != c.t {
		return fmt.Errorf("%w: %d frames per window, the first step had %d", ErrUnavailableDelivery, w.T, c.t)
	}
	fb := uint64(c.h*c.w*3) * uint64(c.dtype().Size())
	want := map[int][]int64{}
	to := map[int][]uint64{}
	for i := range w.Rows {
		for j := range c.t {
			p := i*c.t + j
			s, pts := w.Frame(i, j)
			want[s] = append(want[s], pts)
			to[s] = append(to[s], u.Region.Ptr+uint64(c.offset)+uint64(p)*fb)
		}
	}
	segs := slices.Sorted(maps.Keys(want))
	// The step's segments are decoded by up to Sessions NVDEC sessions at
	// once (one Device.DecodeRGBTo each): one trainer's exchange keeps
	// several of the GPU's NVDEC engines busy, not one.
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(k.g.sessions())
	for _, s := range segs {
		sg := &w.Segments[s]
		if oh, ow := sg.OutSize(); oh != c.h || ow != c.w {
			return errors.Join(fmt.Errorf("%w: segment %d's frames are %dx%d, the step's %dx%d", ErrUnavailableDelivery, s, ow, oh, c.w, c.h), g.Wait())
		}
		norm, err := gpuNormalize(sg.Normalize)
		if err != nil || !sameNorm(norm, c.norm) {
			return errors.Join(fmt.Errorf("%w: segment %d's normalisation (%v) is not the first step's (%v)", ErrUnavailableDelivery, s, sg.Normalize, c.norm), err, g.Wait())
		}
		cfg, err := video.ConfigFromBox(sg.Codec, sg.Config, sg.Width, sg.Height)
		if err != nil {
			// the first step's check sends such a column to the host path; a later step does too
			return errors.Join(fmt.Errorf("%w: segment %d: %w", ErrUnavailableDelivery, s, err), g.Wait())
		}
		seg := gpu.Segment{Config: cfg, Units: sg.Units, PTS: sg.UnitPTS}
		ws, to := want[s], to[s]
		g.Go(func() error {
			// Wait: the client's release event of the slot, if it sent one (its kernels on the
			// slot's previous step first; docs/gpu.md, "Releases after the trainer's work"): the
			// decode polls it before its first write, until gctx ends or --gpu-release-wait passes
			// (gpu.ErrReleaseWait: the step is refused, the client goes on on the host path)
			_, err := k.g.Device.DecodeRGBTo(gctx, seg, ws, to, gpu.DecodeOptions{Width: c.w, Height: c.h, Normalize: c.norm, Wait: u.Wait})
			return decodeErr(ctx, s, err)
		})
	}
	return g.Wait()
}

// decodeErr classifies the error of a segment's GPU decode. Everything
// the GPU path refuses is ErrUnavailableDelivery (the client asks again
// from this step on the host path and decodes on the CPU; docs/gpu.md,
// "Fallbacks"): a codec, depth or size this NVDEC lacks
// (gpu.ErrUnsupported), a stream its parser or decoder refuses or that
// differs from its configuration, say AV1 frames that change size within
// a sequence (gpu.ErrInvalidSegment), a failed driver call
// (gpu.ErrDriver), no device memory for the session's scratch
// (gpu.ErrOverLimit), a client's release event that did not complete
// within --gpu-release-wait (gpu.ErrReleaseWait: its stream is stuck; the
// slot was not written). gpu.ErrInvalidSegment also covers hostile framing
// the GPU path checks itself (OBUs, NAL lengths), which the CPU path may
// refuse too, or may not: the host path then gives exactly what a
// delivery="flight" run gives at that step, its frames or its own error,
// instead of a GPU-only error. Left as they are: the exchange's own end
// (ctx, not the errgroup's: a sibling's failure cancels that one) and a
// closed device (the server is stopping).
func decodeErr(ctx context.Context, seg int, err error) error {
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return errors.Join(ctx.Err(), err)
	case errors.Is(err, gpu.ErrClosed):
		return err
	}
	return fmt.Errorf("%w: the GPU decode of segment %d failed: %w", ErrUnavailableDelivery, seg, err)
}

func (k *cudaSink) close() error { return k.host.close() }

// readWindows reads a step's video window column; a malformed one is
// ErrUnavailableDelivery.
func readWindows(arr arrow.Array) (*episodes.Windows, error) {
	w, err := episodes.ReadWindows(arr)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnavailableDelivery, err)
	}
	return w, nil
}

// gpuNormalize is a segment's normalisation as the device makes it (nil:
// uint8 frames; the device rounds Mean and Std to float32 as the rule
// does, and the wire carries them as float32), or why the device cannot
// make it.
func gpuNormalize(n *pixnorm.Normalize) (*pixnorm.Normalize, error) {
	if n == nil {
		return nil, nil
	}
	if err := n.Validate(); err != nil {
		return nil, err
	}
	return n, nil
}

// sameNorm says whether a and b are one normalisation (both nil: uint8).
func sameNorm(a, b *pixnorm.Normalize) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(*b)
}
