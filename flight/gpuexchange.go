package flight

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	arrowflight "github.com/apache/arrow-go/v18/arrow/flight"

	"github.com/weftdata/weft/client"
	"github.com/weftdata/weft/gpu"
	"github.com/weftdata/weft/internal/membudget"
	"github.com/weftdata/weft/mix"
	"github.com/weftdata/weft/video"
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
	norm *gpu.Normalize
}

func (c deviceColumn) dtype() gpu.DType {
	if c.norm == nil {
		return gpu.Uint8
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
// --gpu-memory-limit cannot hold them.
func (k *cudaSink) newRing(first int, slotBytes int64) (*gpu.DeviceRing, error) {
	n := max(3, k.x.s.opts.StreamSteps+ringClientSlots)
	ring, err := gpu.NewDeviceRing(k.g.Memory, gpu.RingOptions{Slots: n, SlotBytes: slotBytes, FirstSlot: first, Budget: k.g.Budget})
	for err != nil && errors.Is(err, gpu.ErrOverLimit) && n > 2 {
		n = max(2, n/2)
		ring, err = gpu.NewDeviceRing(k.g.Memory, gpu.RingOptions{Slots: n, SlotBytes: slotBytes, FirstSlot: first, Budget: k.g.Budget})
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
// device, gpu.DecodeOptions).
func (k *cudaSink) column(batch arrow.RecordBatch, i int, name string) (deviceColumn, string) {
	w, err := parseWindow(batch.Column(i))
	if err != nil {
		return deviceColumn{}, fmt.Sprintf("column %s: %v", name, err)
	}
	c := deviceColumn{name: name, index: i, t: w.t}
	for si := range w.nsegs {
		sg := w.segmentSize(si)
		if sg.height < 1 || sg.width < 1 || sg.outH < 1 || sg.outW < 1 {
			return c, fmt.Sprintf("column %s has a segment of size %dx%d (to %dx%d)", name, sg.width, sg.height, sg.outW, sg.outH)
		}
		if c.h == 0 {
			c.h, c.w = sg.outH, sg.outW
		} else if c.h != sg.outH || c.w != sg.outW {
			return c, fmt.Sprintf("column %s has frames of different sizes", name)
		}
		if si == 0 {
			c.norm = sg.norm
		} else if !sameNorm(c.norm, sg.norm) {
			return c, fmt.Sprintf("column %s has segments of different normalisations", name)
		}
		if sg.normErr != "" {
			return c, fmt.Sprintf("column %s: %s", name, sg.normErr)
		}
		cfg, err := video.ConfigFromBox(video.Codec(sg.codec), sg.config, sg.width, sg.height)
		if err != nil {
			return c, fmt.Sprintf("column %s: %v", name, err)
		}
		caps, err := k.g.Device.Caps(cfg.Codec, cfg.BitDepth)
		if err != nil {
			return c, fmt.Sprintf("column %s: %v", name, err)
		}
		if !caps.Supported || sg.width > caps.MaxWidth || sg.height > caps.MaxHeight {
			return c, fmt.Sprintf("column %s: this GPU's NVDEC does not decode %s %d-bit %dx%d", name, cfg.Codec, cfg.BitDepth, sg.width, sg.height)
		}
	}
	if c.h == 0 {
		return c, fmt.Sprintf("column %s: the first step has no segments", name)
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
	if k.host.ring == nil && k.host.plain == nil {
		// The header goes first, so that the client knows the device
		// columns before the first device message.
		ok, err := k.host.open(ctx, host)
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
		return err
	}
	meta, err := json.Marshal(StepDevice{Run: string(run), Step: step, Device: descs})
	if err != nil {
		return err
	}
	if err := k.x.stream.Send(&arrowflight.FlightData{AppMetadata: meta}); err != nil {
		return err
	}
	return k.host.send(ctx, run, step, host)
}

// decode writes the step's video windows into a device slot and
// publishes one descriptor per column, each with the step's own shape and
// offset. A step whose frames do not fit the ring's slots (larger frames
// than the steps before it) is served by a larger ring (grow).
func (k *cudaSink) decode(ctx context.Context, step int64, batch arrow.RecordBatch) ([]gpu.DeviceSlot, error) {
	rows := int(batch.NumRows())
	cols := append([]deviceColumn(nil), k.cols...)
	for i := range cols {
		h, w, err := stepFrameSize(batch.Column(cols[i].index))
		if err != nil {
			return nil, fmt.Errorf("step %d column %s: %w", step, cols[i].name, err)
		}
		cols[i].h, cols[i].w = h, w
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
		for _, c := range cols {
			if err := k.decodeColumn(ctx, u, c, batch.Column(c.index), rows); err != nil {
				return fmt.Errorf("column %s: %w", c.name, err)
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

// stepFrameSize is the frame size of a step's video window column (after
// the window's size, when it has one): every segment of the step must have
// it (one step's windows are one tensor, as on the CPU path, which refuses
// frames of different sizes in one batch).
func stepFrameSize(arr arrow.Array) (h, w int, err error) {
	win, err := parseWindow(arr)
	if err != nil {
		return 0, 0, err
	}
	for si := range win.nsegs {
		sg := win.segmentSize(si)
		switch {
		case sg.height < 1 || sg.width < 1 || sg.outH < 1 || sg.outW < 1:
			return 0, 0, fmt.Errorf("%w: a segment of size %dx%d (to %dx%d)", ErrUnavailableDelivery, sg.width, sg.height, sg.outW, sg.outH)
		case h == 0:
			h, w = sg.outH, sg.outW
		case sg.outH != h || sg.outW != w:
			return 0, 0, fmt.Errorf("%w: frames of different sizes (%dx%d, %dx%d) in one step; give the window a size", ErrUnavailableDelivery, w, h, sg.outW, sg.outH)
		}
	}
	if h == 0 {
		return 0, 0, fmt.Errorf("%w: a step without segments", ErrUnavailableDelivery)
	}
	return h, w, nil
}

func (k *cudaSink) decodeColumn(ctx context.Context, u gpu.SlotUse, c deviceColumn, arr arrow.Array, rows int) error {
	w, err := parseWindow(arr)
	if err != nil {
		return err
	}
	if w.t != c.t {
		return fmt.Errorf("%w: %d frames per window, the first step had %d", ErrUnavailableDelivery, w.t, c.t)
	}
	fb := uint64(c.h*c.w*3) * uint64(c.dtype().Size())
	want := map[int][]int64{}
	to := map[int][]uint64{}
	for i := range rows {
		for j := range c.t {
			p := i*c.t + j
			s := int(w.segIdx.Value(w.segOff + p))
			want[s] = append(want[s], w.pts.Value(w.ptsOff+p))
			to[s] = append(to[s], u.Region.Ptr+uint64(c.offset)+uint64(p)*fb)
		}
	}
	segs := make([]int, 0, len(want))
	for s := range want {
		if s < 0 || s >= w.nsegs {
			return fmt.Errorf("%w: a frame names segment %d of %d", ErrUnavailableDelivery, s, w.nsegs)
		}
		segs = append(segs, s)
	}
	slices.Sort(segs)
	// The step's segments are decoded by up to Sessions NVDEC sessions at
	// once (one Device.DecodeRGBTo each): one trainer's exchange keeps
	// several of the GPU's NVDEC engines busy, not one.
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(k.g.sessions())
	for _, s := range segs {
		sg := w.segment(s)
		if sg.outH != c.h || sg.outW != c.w {
			return errors.Join(fmt.Errorf("%w: segment %d's frames are %dx%d, the step's %dx%d", ErrUnavailableDelivery, s, sg.outW, sg.outH, c.w, c.h), g.Wait())
		}
		if sg.normErr != "" || !sameNorm(sg.norm, c.norm) {
			return errors.Join(fmt.Errorf("%w: segment %d's normalisation (%v%s) is not the first step's (%v)", ErrUnavailableDelivery, s, sg.norm, sg.normErr, c.norm), g.Wait())
		}
		cfg, err := video.ConfigFromBox(video.Codec(sg.codec), sg.config, sg.width, sg.height)
		if err != nil {
			return errors.Join(err, g.Wait())
		}
		seg := gpu.Segment{Config: cfg, Units: sg.units, PTS: sg.unitPTS}
		ws, to := want[s], to[s]
		g.Go(func() error {
			_, err := k.g.Device.DecodeRGBTo(gctx, seg, ws, to, gpu.DecodeOptions{Width: c.w, Height: c.h, Normalize: c.norm})
			return err
		})
	}
	return g.Wait()
}

func (k *cudaSink) close() error { return k.host.close() }

// window is a video window column of a step, read in place.
type window struct {
	t              int
	segIdx         *array.Int32
	segOff         int
	pts            *array.Int64
	ptsOff         int
	segs           *array.Struct // the segments; the step's are segBase..segBase+nsegs-1
	segBase, nsegs int
	codec          *array.String
	config         *array.Binary
	width, height  *array.Int32
	units          *array.List
	unitBytes      *array.Binary
	unitPTS        *array.List
	unitPTSValues  *array.Int64
	size           *array.FixedSizeList // nil when the wire has no size field
	mean, std      *array.FixedSizeList // nil when the wire has no normalisation fields
	dtype          *array.String
}

type windowSegment struct {
	codec         string
	config        []byte
	width, height int
	units         [][]byte
	unitPTS       []int64
	outH, outW    int // the frames' size: the segment's size when it has one, else its own
	norm          *gpu.Normalize
	normErr       string // a normalisation the device cannot make: why
}

// sameNorm says whether a and b are one normalisation (both nil: uint8).
func sameNorm(a, b *gpu.Normalize) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func parseWindow(arr arrow.Array) (*window, error) {
	st, ok := arr.(*array.Struct)
	if !ok {
		return nil, fmt.Errorf("%w: not a video window (struct)", ErrUnavailableDelivery)
	}
	typ := st.DataType().(*arrow.StructType)
	field := func(n string) arrow.Array {
		i, ok := typ.FieldIdx(n)
		if !ok {
			return nil // the type assertions below refuse it
		}
		return st.Field(i)
	}
	if st.NullN() > 0 {
		return nil, fmt.Errorf("%w: a video window with nulls", ErrUnavailableDelivery)
	}
	w := &window{}
	var bad bool
	sl, ok1 := field("segment").(*array.FixedSizeList)
	pl, ok2 := field("pts").(*array.FixedSizeList)
	ls, ok3 := field("segments").(*array.List)
	if !ok1 || !ok2 || !ok3 {
		return nil, fmt.Errorf("%w: a video window of unexpected type %s", ErrUnavailableDelivery, typ)
	}
	w.t = int(sl.DataType().(*arrow.FixedSizeListType).Len())
	if pt := int(pl.DataType().(*arrow.FixedSizeListType).Len()); pt != w.t {
		return nil, fmt.Errorf("%w: a video window of %d segment indexes and %d pts", ErrUnavailableDelivery, w.t, pt)
	}
	w.segIdx, ok1 = sl.ListValues().(*array.Int32)
	w.pts, ok2 = pl.ListValues().(*array.Int64)
	if !ok1 || !ok2 {
		return nil, fmt.Errorf("%w: a video window of unexpected type %s", ErrUnavailableDelivery, typ)
	}
	w.segOff = sl.Offset() * w.t
	w.ptsOff = pl.Offset() * w.t
	// The step's segments: the list values this array's rows cover.
	if ls.Len() > 0 {
		lo, _ := ls.ValueOffsets(0)
		_, hi := ls.ValueOffsets(ls.Len() - 1)
		w.segBase, w.nsegs = int(lo), int(hi-lo)
	}
	vals, ok := ls.ListValues().(*array.Struct)
	if !ok {
		return nil, fmt.Errorf("%w: segments of unexpected type", ErrUnavailableDelivery)
	}
	w.segs = vals
	sf := func(n string) arrow.Array {
		i, ok := w.segs.DataType().(*arrow.StructType).FieldIdx(n)
		if !ok {
			bad = true
			return nil
		}
		return w.segs.Field(i)
	}
	w.codec, ok1 = sf("codec").(*array.String)
	w.config, ok2 = sf("config").(*array.Binary)
	w.width, ok3 = sf("width").(*array.Int32)
	h, ok4 := sf("height").(*array.Int32)
	w.height = h
	units, ok5 := sf("units").(*array.List)
	unitPTS, ok6 := sf("unit_pts").(*array.List)
	w.units, w.unitPTS = units, unitPTS
	if bad || !ok1 || !ok2 || !ok3 || !ok4 || !ok5 || !ok6 {
		return nil, fmt.Errorf("%w: segments of unexpected type", ErrUnavailableDelivery)
	}
	w.unitBytes, ok1 = w.units.ListValues().(*array.Binary)
	w.unitPTSValues, ok2 = w.unitPTS.ListValues().(*array.Int64)
	if !ok1 || !ok2 {
		return nil, fmt.Errorf("%w: segment units of unexpected type", ErrUnavailableDelivery)
	}
	if i, ok := w.segs.DataType().(*arrow.StructType).FieldIdx("size"); ok {
		w.size, _ = w.segs.Field(i).(*array.FixedSizeList)
	}
	segType := w.segs.DataType().(*arrow.StructType)
	if i, ok := segType.FieldIdx("dtype"); ok {
		w.dtype, _ = w.segs.Field(i).(*array.String)
	}
	if i, ok := segType.FieldIdx("mean"); ok {
		w.mean, _ = w.segs.Field(i).(*array.FixedSizeList)
	}
	if i, ok := segType.FieldIdx("std"); ok {
		w.std, _ = w.segs.Field(i).(*array.FixedSizeList)
	}
	return w, nil
}

// normalize reads segment i's normalisation (its absolute index in the
// segments), or why the device cannot make it.
func (w *window) normalize(i int) (*gpu.Normalize, string) {
	n := &gpu.Normalize{DType: gpu.DType(w.dtype.Value(i))}
	for _, f := range []struct {
		l   *array.FixedSizeList
		out *[3]float32
	}{{w.mean, &n.Mean}, {w.std, &n.Std}} {
		if f.l == nil || !f.l.IsValid(i) {
			return nil, "a normalised segment without mean and std"
		}
		v, ok := f.l.ListValues().(*array.Float32)
		a, b := f.l.ValueOffsets(i)
		if !ok || b-a != 3 {
			return nil, "a normalised segment whose mean or std is not 3 float32"
		}
		copy(f.out[:], v.Float32Values()[a:b])
	}
	if err := n.Validate(); err != nil {
		return nil, err.Error()
	}
	return n, ""
}

// segment is the step's segment i.
func (w *window) segment(i int) windowSegment {
	s := w.segmentSize(i)
	i += w.segBase
	a, b := w.units.ValueOffsets(i)
	for j := a; j < b; j++ {
		s.units = append(s.units, w.unitBytes.Value(int(j)))
	}
	a, b = w.unitPTS.ValueOffsets(i)
	for j := a; j < b; j++ {
		s.unitPTS = append(s.unitPTS, w.unitPTSValues.Value(int(j)))
	}
	return s
}

// segmentSize is the step's segment i without its units: codec, config,
// coded size and the frames' size (outH, outW).
func (w *window) segmentSize(i int) windowSegment {
	i += w.segBase
	s := windowSegment{codec: w.codec.Value(i), config: w.config.Value(i), width: int(w.width.Value(i)), height: int(w.height.Value(i))}
	s.outH, s.outW = s.height, s.width
	if w.dtype != nil && w.dtype.IsValid(i) {
		s.norm, s.normErr = w.normalize(i)
	}
	if w.size != nil && w.size.IsValid(i) {
		if v, ok := w.size.ListValues().(*array.Int32); ok {
			if a, b := w.size.ValueOffsets(i); b-a == 2 {
				s.outH, s.outW = int(v.Value(int(a))), int(v.Value(int(a)+1))
			} else {
				s.outH, s.outW = 0, 0 // refused by column
			}
		} else {
			s.outH, s.outW = 0, 0
		}
	}
	return s
}
