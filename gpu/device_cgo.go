//go:build cgo && linux

package gpu

/*
#cgo CFLAGS: -I${SRCDIR}/include -O2 -Wall
#cgo LDFLAGS: -ldl
#include <stdlib.h>
#include "native.h"
*/
import "C"

import (
	"context"
	"fmt"
	"runtime/cgo"
	"sync"
	"unsafe"

	"github.com/weftdata/weft/internal/membudget"
	"github.com/weftdata/weft/video"
)

// Built reports whether this binary can use a GPU at all (cgo, linux).
const Built = true

// Device is one GPU opened through the driver libraries. Safe for
// concurrent use; each Decode takes a pooled NVDEC session of its format.
type Device struct {
	opts Options
	drv  *C.wg_driver
	info Info
	// events are the events of every device ring this device serves
	// (RingEvents).
	events *RingEvents

	mu      sync.Mutex
	closed  bool
	caps    map[capsKey]Caps
	pool    map[poolKey][]*C.wg_session
	tables  map[ColorSpec]C.ulonglong // tables uploaded to device memory
	filter  map[[2]int]deviceFilter   // resize filters uploaded to device memory, by (in, out) size
	specs   map[string]ColorSpec      // per configuration box: the stream's colour, once seen
	stats   Stats
	leases  []*membudget.Lease                 // tables' and filters' device memory (Options.Budget)
	scratch map[*C.wg_session]*membudget.Lease // each session's resize scratch
	active  sync.WaitGroup                     // sessions taken and not yet put back: Close waits for them
}

// deviceFilter is a ResizeFilter in device memory.
type deviceFilter struct {
	ptr  C.ulonglong
	taps int
}

type capsKey struct {
	codec video.Codec
	bits  int
}

type poolKey struct {
	codec         video.Codec
	bits          int
	width, height int
}

// Open loads the driver libraries, initialises CUDA, retains device
// opts.Device's primary context and loads the RGB kernel. Every failure
// wraps ErrUnavailable with the reason (what flightd logs at start).
func Open(ctx context.Context, opts Options) (*Device, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	drv := (*C.wg_driver)(C.calloc(1, C.sizeof_wg_driver))
	cuda, cuvid := C.CString(opts.CudaLib), C.CString(opts.CuvidLib)
	defer C.free(unsafe.Pointer(cuda))
	defer C.free(unsafe.Pointer(cuvid))
	var msg [512]C.char
	rc := C.wg_open(drv, cuda, cuvid, C.int(opts.Device), &msg[0], C.size_t(len(msg)))
	if rc != C.WG_OK {
		reason := C.GoString(&msg[0])
		C.wg_close(drv)
		C.free(unsafe.Pointer(drv))
		what := map[C.int]string{
			C.WG_NO_LIBCUDA: "no NVIDIA driver (" + opts.CudaLib + " not loadable)", C.WG_CUDA_SYMBOL: "the CUDA driver is too old",
			C.WG_CUINIT: "cuInit failed (no usable GPU)", C.WG_NO_DEVICE: "no such CUDA device", C.WG_CONTEXT: "no CUDA context",
			C.WG_NO_LIBNVCUVID: "no NVDEC library (" + opts.CuvidLib + " not loadable)", C.WG_CUVID_SYMBOL: "the NVDEC library is too old",
		}[rc]
		return nil, fmt.Errorf("%w: %s: %s", ErrUnavailable, what, reason)
	}
	d := &Device{opts: opts, drv: drv, events: NewRingEvents(), caps: map[capsKey]Caps{}, pool: map[poolKey][]*C.wg_session{},
		tables: map[ColorSpec]C.ulonglong{}, filter: map[[2]int]deviceFilter{}, specs: map[string]ColorSpec{},
		scratch: map[*C.wg_session]*membudget.Lease{}}
	d.info = Info{Name: C.GoString(&drv.name[0]), DriverVersion: int(drv.driver_version)}
	for i := range d.info.UUID {
		d.info.UUID[i] = byte(drv.uuid[i])
	}
	ptx := C.CString(string(rgbPTX))
	defer C.free(unsafe.Pointer(ptx))
	name, vname, hname := C.CString(rgbKernel), C.CString(vresizeKernel), C.CString(hresizeKernel)
	defer C.free(unsafe.Pointer(name))
	defer C.free(unsafe.Pointer(vname))
	defer C.free(unsafe.Pointer(hname))
	if r := C.wg_load_kernel(drv, ptx, name, vname, hname); r != 0 {
		err := d.driverErr("cuModuleLoadData(rgb.ptx)", C.int(r))
		d.Close()
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return d, nil
}

func (d *Device) driverErr(call string, r C.int) error {
	return fmt.Errorf("%w: %s: %s (%d)", ErrDriver, call, C.GoString(C.wg_err_name(d.drv, C.CUresult(r))), int(r))
}

// lease takes n bytes of device memory for what from Options.Budget,
// without waiting: ErrOverLimit when they are not free.
func (d *Device) lease(n int64, what string) (*membudget.Lease, error) {
	l, ok := d.opts.Budget.TryAcquire(n)
	if !ok {
		st := d.opts.Budget.Stats()
		return nil, fmt.Errorf("%w: %s needs %d bytes, %d of %d in use", ErrOverLimit, what, n, st.Used, st.Total)
	}
	return l, nil
}

// reserveScratch makes s's resize scratch at least n bytes, leased from
// Options.Budget (the session's earlier lease goes back once the larger
// one is held); the C side grows the allocation to the same size.
func (d *Device) reserveScratch(s *C.wg_session, n int64) error {
	d.mu.Lock()
	old := d.scratch[s]
	d.mu.Unlock()
	if old != nil && old.Bytes() >= n {
		return nil
	}
	l, err := d.lease(n, "a session's resize scratch")
	if err != nil {
		return err
	}
	if r := C.wg_session_reserve_scratch(s, C.size_t(n)); r != 0 {
		l.Release()
		return d.driverErr("cuMemAlloc(resize scratch)", r)
	}
	d.mu.Lock()
	d.scratch[s] = l
	d.mu.Unlock()
	if old != nil {
		old.Release()
	}
	return nil
}

// freeSession frees s and gives its scratch lease back. Callers hold no lock.
func (d *Device) freeSession(s *C.wg_session) {
	C.wg_session_free(s)
	C.free(unsafe.Pointer(s))
	d.mu.Lock()
	l := d.scratch[s]
	delete(d.scratch, s)
	d.mu.Unlock()
	if l != nil {
		l.Release()
	}
}

// enter counts a use of the driver that Close waits for (d.active), or
// says ErrClosed after Close: a check of closed alone would let Close free
// the driver while the call still uses it. Each enter is ended by
// d.active.Done().
func (d *Device) enter() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return ErrClosed
	}
	d.active.Add(1)
	return nil
}

// Info describes the opened device.
func (d *Device) Info() Info { return d.info }

// Caps is cuvidGetDecoderCaps for 4:2:0 streams of codec at bits, cached.
func (d *Device) Caps(codec video.Codec, bits int) (Caps, error) {
	id, err := codecID(codec)
	if err != nil {
		return Caps{}, err
	}
	if bits < 8 {
		bits = 8
	}
	k := capsKey{codec, bits}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return Caps{}, ErrClosed
	}
	if c, ok := d.caps[k]; ok {
		return c, nil
	}
	var c C.wg_caps
	if r := C.wg_decoder_caps(d.drv, C.int(id), C.int(bits-8), &c); r != 0 {
		return Caps{}, d.driverErr("cuvidGetDecoderCaps", C.int(r))
	}
	out := Caps{Supported: c.supported != 0, NVDECs: int(c.nvdecs), MaxWidth: int(c.max_w), MaxHeight: int(c.max_h),
		MinWidth: int(c.min_w), MinHeight: int(c.min_h)}
	d.caps[k] = out
	return out, nil
}

// check is the caps gate before a decode: ErrUnsupported sends the
// segment to the CPU path.
func (d *Device) check(cfg video.Config) (int, error) {
	id, err := codecID(cfg.Codec)
	if err != nil {
		return 0, err
	}
	if cfg.Chroma != "" && cfg.Chroma != video.Chroma420 {
		return 0, fmt.Errorf("%w: %s %s: only 4:2:0 goes to NVDEC", ErrUnsupported, cfg.Codec, cfg.Chroma)
	}
	bits := max(cfg.BitDepth, 8)
	c, err := d.Caps(cfg.Codec, bits)
	if err != nil {
		return 0, err
	}
	switch {
	case !c.Supported:
		return 0, fmt.Errorf("%w: %s %d-bit 4:2:0 is not supported by this GPU's NVDEC", ErrUnsupported, cfg.Codec, bits)
	case cfg.Width > c.MaxWidth || cfg.Height > c.MaxHeight || cfg.Width < c.MinWidth || cfg.Height < c.MinHeight:
		return 0, fmt.Errorf("%w: %s %dx%d is outside NVDEC's %dx%d..%dx%d", ErrUnsupported, cfg.Codec,
			cfg.Width, cfg.Height, c.MinWidth, c.MinHeight, c.MaxWidth, c.MaxHeight)
	}
	return id, nil
}

func (d *Device) session(cfg video.Config, id int) (*C.wg_session, poolKey, error) {
	k := poolKey{cfg.Codec, max(cfg.BitDepth, 8), cfg.Width, cfg.Height}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, k, ErrClosed
	}
	if l := d.pool[k]; len(l) > 0 {
		s := l[len(l)-1]
		d.pool[k] = l[:len(l)-1]
		d.stats.SessionsReused++
		d.active.Add(1)
		return s, k, nil
	}
	s := (*C.wg_session)(C.calloc(1, C.sizeof_wg_session))
	if r := C.wg_session_init(s, d.drv, C.int(id)); r != 0 {
		C.wg_session_free(s)
		C.free(unsafe.Pointer(s))
		return nil, k, d.driverErr("cuvidCtxLockCreate/cuStreamCreate", r)
	}
	d.stats.SessionsCreated++
	d.active.Add(1)
	return s, k, nil
}

func (d *Device) put(k poolKey, s *C.wg_session, ok bool) {
	defer d.active.Done()
	d.mu.Lock()
	d.stats.Decoded += int64(s.n_decoded)
	d.stats.Displayed += int64(s.n_displayed)
	d.stats.Kept += int64(s.n_kept)
	d.stats.DecodersCreated += int64(s.n_decoders_created)
	d.stats.EventWaits += int64(s.n_waits)
	s.n_decoded, s.n_displayed, s.n_kept, s.n_decoders_created, s.n_waits = 0, 0, 0, 0, 0
	if ok && !d.closed && len(d.pool[k]) < d.opts.MaxDecoders {
		d.pool[k] = append(d.pool[k], s)
		d.mu.Unlock()
		return
	}
	d.mu.Unlock()
	d.freeSession(s)
}

// run decodes seg once in s with the output already set up in s.
func (d *Device) run(s *C.wg_session, seg Segment, want []int64) (missing []int64, err error) {
	bs, err := parserInput(seg)
	if err != nil {
		return nil, err
	}
	data, off := bs.data, bs.off
	n := len(seg.Units)
	cdata := C.CBytes(data)
	defer C.free(cdata)
	var cseq unsafe.Pointer
	if len(bs.seqhdr) > 0 {
		cseq = C.CBytes(bs.seqhdr)
		defer C.free(cseq)
	}
	coff := (*[1 << 28]C.size_t)(C.malloc(C.size_t(8 * (n + 1))))[: n+1 : n+1]
	defer C.free(unsafe.Pointer(&coff[0]))
	cts := (*[1 << 28]C.int64_t)(C.malloc(C.size_t(8 * n)))[:n:n]
	defer C.free(unsafe.Pointer(&cts[0]))
	for i := range n {
		coff[i], cts[i] = C.size_t(off[i]), C.int64_t(seg.PTS[i])
	}
	coff[n] = C.size_t(off[n])
	cwant := (*[1 << 28]C.int64_t)(C.malloc(C.size_t(8 * max(len(want), 1))))[:len(want):len(want)]
	defer C.free(unsafe.Pointer(&cwant[0]))
	kept := (*[1 << 28]C.int)(C.calloc(C.size_t(max(len(want), 1)), 4))[:len(want):len(want)]
	defer C.free(unsafe.Pointer(&kept[0]))
	for i, p := range want {
		cwant[i] = C.int64_t(p)
	}
	s.want, s.nwant, s.kept = &cwant[0], C.int(len(want)), &kept[0]
	if len(want) == 0 {
		s.want, s.kept = nil, nil
	}
	// the stream must be the configuration's size and depth: the outputs are sized by it
	s.expect_w, s.expect_h, s.expect_bits = C.int(seg.Config.Width), C.int(seg.Config.Height), C.int(max(seg.Config.BitDepth, 8))
	r := C.wg_session_decode(s, (*C.uchar)(cseq), C.size_t(len(bs.seqhdr)), (*C.uchar)(cdata), &coff[0], &cts[0], C.int(n))
	s.want, s.kept, s.nwant = nil, nil, 0
	if r != 0 {
		if s.bad_stream != 0 {
			return nil, fmt.Errorf("%w: %s", ErrInvalidSegment, C.GoString(&s.errmsg[0]))
		}
		return nil, fmt.Errorf("%w: %s", ErrDriver, C.GoString(&s.errmsg[0]))
	}
	for i, k := range kept {
		if k == 0 {
			missing = append(missing, want[i])
		}
	}
	return missing, nil
}

func missingErr(missing []int64) error {
	return fmt.Errorf("%w: no decoded frame has pts %v (not in the segment, or an open-GOP leading frame of its first keyframe)", ErrInvalidSegment, missing)
}

// DecodeNV12 decodes seg and returns the frames whose PTS is in want, in
// want's order, copied to the host (NV12, or P016 as p010le for more than
// 8 bits: the bytes ffmpeg writes). This is the test and check path: it
// copies frames device→host (counted in Stats.FrameCopyBytes); delivery
// uses DecodeRGB.
func (d *Device) DecodeNV12(ctx context.Context, seg Segment, want []int64) ([]Frame, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	id, err := d.check(seg.Config)
	if err != nil {
		return nil, err
	}
	s, k, err := d.session(seg.Config, id)
	if err != nil {
		return nil, err
	}
	bits := max(seg.Config.BitDepth, 8)
	fb := FrameBytes(seg.Config.Width, seg.Config.Height, bits)
	host := C.calloc(C.size_t(max(len(want), 1)), C.size_t(fb))
	defer C.free(host)
	s.mode, s.host_out, s.host_frame_bytes = C.WG_OUT_NV12_HOST, (*C.uchar)(host), C.size_t(fb)
	missing, err := d.run(s, seg, want)
	s.host_out = nil
	d.put(k, s, err == nil)
	if err != nil {
		return nil, err
	}
	if int(s.width) != seg.Config.Width || int(s.height) != seg.Config.Height || int(s.bit_depth) != bits {
		return nil, fmt.Errorf("%w: stream is %dx%d at %d bits, the configuration says %dx%d at %d", ErrInvalidSegment,
			s.width, s.height, s.bit_depth, seg.Config.Width, seg.Config.Height, bits)
	}
	if len(missing) > 0 {
		return nil, missingErr(missing)
	}
	all := C.GoBytes(host, C.int(fb*len(want)))
	out := make([]Frame, len(want))
	for i, p := range want {
		out[i] = Frame{PTS: p, Width: seg.Config.Width, Height: seg.Config.Height, Bits: bits, Data: all[i*fb : (i+1)*fb : (i+1)*fb]}
	}
	return out, nil
}

// Buffer is device memory allocated by Alloc.
type Buffer struct {
	Ptr  uint64
	Size int
}

// Alloc allocates n bytes of device memory.
func (d *Device) Alloc(n int) (Buffer, error) {
	if err := d.enter(); err != nil {
		return Buffer{}, err
	}
	defer d.active.Done()
	var p C.ulonglong
	if r := C.wg_alloc(d.drv, C.size_t(n), &p); r != 0 {
		return Buffer{}, d.driverErr("cuMemAlloc", r)
	}
	return Buffer{Ptr: uint64(p), Size: n}, nil
}

// free releases b without the closed check (for callers that may hold
// d.mu; the driver is alive while they run).
func (d *Device) free(b Buffer) { C.wg_free(d.drv, C.ulonglong(b.Ptr)) }

// Free releases b.
func (d *Device) Free(b Buffer) error {
	if err := d.enter(); err != nil {
		return err
	}
	defer d.active.Done()
	if r := C.wg_free(d.drv, C.ulonglong(b.Ptr)); r != 0 {
		return d.driverErr("cuMemFree", r)
	}
	return nil
}

// ReadBack copies b to the host: for tests and `make gpu-check` only
// (counted in Stats.FrameCopyBytes, which delivery must leave at 0).
func (d *Device) ReadBack(b Buffer) ([]byte, error) {
	if err := d.enter(); err != nil {
		return nil, err
	}
	defer d.active.Done()
	p := C.malloc(C.size_t(max(b.Size, 1)))
	defer C.free(p)
	if r := C.wg_dtoh(d.drv, p, C.ulonglong(b.Ptr), C.size_t(b.Size)); r != 0 {
		return nil, d.driverErr("cuMemcpyDtoH", r)
	}
	return C.GoBytes(p, C.int(b.Size)), nil
}

// deviceTables is spec's conversion tables in device memory and their
// length (Tables' N, 1<<spec.Bits), built and uploaded on first use.
func (d *Device) deviceTables(spec ColorSpec) (C.ulonglong, int, error) {
	if err := d.enter(); err != nil { // Close keeps the maps and the driver until it returns
		return 0, 0, err
	}
	defer d.active.Done()
	d.mu.Lock()
	p, ok := d.tables[spec]
	d.mu.Unlock()
	if ok {
		return p, 1 << spec.Bits, nil
	}
	t, err := Tables(spec)
	if err != nil {
		return 0, 0, err
	}
	l, err := d.lease(int64(len(t.Flat)*2), "colour tables")
	if err != nil {
		return 0, 0, err
	}
	b, err := d.Alloc(len(t.Flat) * 2)
	if err != nil {
		l.Release()
		return 0, 0, err
	}
	if r := C.wg_htod(d.drv, C.ulonglong(b.Ptr), unsafe.Pointer(&t.Flat[0]), C.size_t(len(t.Flat)*2)); r != 0 {
		d.free(b)
		l.Release()
		return 0, 0, d.driverErr("cuMemcpyHtoD(tables)", r)
	}
	d.mu.Lock()
	if q, ok := d.tables[spec]; ok {
		d.mu.Unlock()
		d.free(b)
		l.Release()
		return q, t.N, nil
	}
	d.tables[spec] = C.ulonglong(b.Ptr)
	d.leases = append(d.leases, l)
	d.mu.Unlock()
	return C.ulonglong(b.Ptr), t.N, nil
}

// deviceFilter is ResizeWeights(nIn, nOut) in device memory, built and
// uploaded on first use (kept until Close, like the colour tables).
func (d *Device) deviceFilter(nIn, nOut int) (deviceFilter, error) {
	if err := d.enter(); err != nil { // Close keeps the maps and the driver until it returns
		return deviceFilter{}, err
	}
	defer d.active.Done()
	k := [2]int{nIn, nOut}
	d.mu.Lock()
	f, ok := d.filter[k]
	d.mu.Unlock()
	if ok {
		return f, nil
	}
	rf, err := ResizeWeights(nIn, nOut)
	if err != nil {
		return deviceFilter{}, err
	}
	b := rf.deviceBytes()
	l, err := d.lease(int64(len(b)), fmt.Sprintf("a resize filter %d→%d", nIn, nOut))
	if err != nil {
		return deviceFilter{}, err
	}
	buf, err := d.Alloc(len(b))
	if err != nil {
		l.Release()
		return deviceFilter{}, err
	}
	if r := C.wg_htod(d.drv, C.ulonglong(buf.Ptr), unsafe.Pointer(&b[0]), C.size_t(len(b))); r != 0 {
		d.free(buf)
		l.Release()
		return deviceFilter{}, d.driverErr("cuMemcpyHtoD(resize filter)", r)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if q, ok := d.filter[k]; ok {
		d.free(buf)
		l.Release()
		return q, nil
	}
	f = deviceFilter{ptr: C.ulonglong(buf.Ptr), taps: rf.Taps}
	d.filter[k] = f
	d.leases = append(d.leases, l)
	return f, nil
}

// DecodeRGB decodes seg and converts the frames whose PTS is in want to
// packed RGB uint8 straight into device memory: frame i of want at
// dst + i*Height*Width*3, at the stream's size or opts' (a resize on the
// device, see DecodeRGBTo); with opts' Normalize, elements of its DType
// (frame i at dst + i*Height*Width*3*DType.Size()). No frame byte crosses to the host. It returns
// the colour rule the stream's signalling gave (its matrix and range; a
// stream first seen with other colours than assumed is converted again).
func (d *Device) DecodeRGB(ctx context.Context, seg Segment, want []int64, dst Buffer, opts ...DecodeOptions) (ColorSpec, error) {
	w, h, _, err := outSize(opts, seg.Config.Width, seg.Config.Height)
	if err != nil {
		return ColorSpec{}, err
	}
	dt, _, err := outDType(opts)
	if err != nil {
		return ColorSpec{}, err
	}
	fb := w * h * 3 * dt.Size()
	if need := len(want) * fb; dst.Size < need {
		return ColorSpec{}, fmt.Errorf("%w: %d frames of %dx%d RGB %s need %d bytes, the buffer has %d", ErrInvalidSegment,
			len(want), w, h, dt, need, dst.Size)
	}
	to := make([]uint64, len(want))
	for i := range to {
		to[i] = dst.Ptr + uint64(i*fb)
	}
	return d.DecodeRGBTo(ctx, seg, want, to, opts...)
}

// DecodeRGBTo is DecodeRGB with each wanted frame's own destination (the
// frame's place in a step's [B, T, H, W, 3] tensor): a segment shared by
// several windows is decoded once and each kept frame written where its
// windows want it (a PTS repeated in want is written to each place).
//
// With opts (at most one) naming another size than the stream's, each
// frame is resized on the device to Width×Height (Width*Height*3 bytes at
// its destination): the conversion and the vertical pass in one kernel
// into a float32 scratch of the session (Height*streamWidth*12 bytes, kept
// with the pooled session and leased from Options.Budget), then the
// horizontal pass into the destination, with ResizeWeights' filters,
// uploaded once per (in, out) size. The result is ResizeRGB's, exactly.
//
// With opts' Normalize, the last kernel (the conversion, or the resize's
// horizontal pass) writes each value normalised to its DType instead of
// uint8 (pixnorm's Normalize.RGB of the uint8 it computed; Width*Height*3*DType.Size()
// bytes at each destination): mean and std are kernel arguments.
func (d *Device) DecodeRGBTo(ctx context.Context, seg Segment, want []int64, to []uint64, opts ...DecodeOptions) (ColorSpec, error) {
	if err := ctx.Err(); err != nil {
		return ColorSpec{}, err
	}
	if len(to) != len(want) {
		return ColorSpec{}, fmt.Errorf("%w: %d destinations for %d frames", ErrInvalidSegment, len(to), len(want))
	}
	cfg := seg.Config
	ow, oh, resize, err := outSize(opts, cfg.Width, cfg.Height)
	if err != nil {
		return ColorSpec{}, err
	}
	dt, norm, err := outDType(opts)
	if err != nil {
		return ColorSpec{}, err
	}
	id, err := d.check(cfg)
	if err != nil {
		return ColorSpec{}, err
	}
	var vf, hf deviceFilter
	if resize {
		if vf, err = d.deviceFilter(cfg.Height, oh); err != nil {
			return ColorSpec{}, err
		}
		if hf, err = d.deviceFilter(cfg.Width, ow); err != nil {
			return ColorSpec{}, err
		}
	}
	bits := max(cfg.BitDepth, 8)
	d.mu.Lock()
	spec, known := d.specs[string(cfg.Box)]
	d.mu.Unlock()
	if !known {
		spec = ColorRule(2, false, cfg.Height, bits)
	}
	outs := (*[1 << 28]C.ulonglong)(C.malloc(C.size_t(8 * max(len(to), 1))))[:len(to):len(to)]
	defer C.free(unsafe.Pointer(&outs[0]))
	for i, p := range to {
		outs[i] = C.ulonglong(p)
	}
	var wait *releaseWait
	if len(opts) > 0 && opts[0].Wait != 0 {
		wait = &releaseWait{ctx: ctx, d: d, bound: d.opts.ReleaseWait}
		h := cgo.NewHandle(wait)
		defer h.Delete()
		wait.handle = C.ulonglong(h)
	}
	for attempt := 0; ; attempt++ {
		tp, n, err := d.deviceTables(spec)
		if err != nil {
			return ColorSpec{}, err
		}
		s, k, err := d.session(cfg, id)
		if err != nil {
			return ColorSpec{}, err
		}
		s.mode, s.tables, s.table_n = C.WG_OUT_RGB_DEVICE, C.CUdeviceptr(tp), C.int(n)
		if len(to) > 0 {
			s.dev_outs = &outs[0]
		}
		s.out_kind = C.unsigned(outKind(dt))
		if wait != nil && !wait.done {
			s.wait_event, s.wait_handle = C.ulonglong(opts[0].Wait), wait.handle
		}
		if norm != nil {
			m, sd := norm.Mean32(), norm.Std32()
			for c := range 3 {
				s.norm[c], s.norm[3+c] = C.float(m[c]), C.float(sd[c])
			}
		}
		if resize {
			if err := d.reserveScratch(s, int64(oh)*int64(cfg.Width)*12); err != nil {
				d.put(k, s, true)
				return ColorSpec{}, err
			}
			s.in_w, s.in_h, s.out_w, s.out_h = C.int(cfg.Width), C.int(cfg.Height), C.int(ow), C.int(oh)
			s.vfilter, s.vtaps = C.CUdeviceptr(vf.ptr), C.unsigned(vf.taps)
			s.hfilter, s.htaps = C.CUdeviceptr(hf.ptr), C.unsigned(hf.taps)
		}
		missing, err := d.run(s, seg, want)
		if wait != nil && s.wait_event == 0 {
			wait.done = true // a second attempt (other colours) does not wait again
		}
		if wait != nil && s.wait_failed != 0 && wait.err != nil {
			err = wait.err // ctx's end, ErrReleaseWait, or cuEventQuery's failure, not the parser's
		}
		s.dev_outs, s.wait_event, s.wait_handle, s.wait_failed = nil, 0, 0, 0
		s.in_w, s.in_h, s.out_w, s.out_h, s.vfilter, s.hfilter = 0, 0, 0, 0, 0, 0
		s.out_kind = 0
		if err != nil && resize && (int(s.width) != cfg.Width || int(s.height) != cfg.Height) {
			err = fmt.Errorf("%w: the stream is %dx%d, the configuration says %dx%d (resize to %dx%d): %w", ErrInvalidSegment,
				s.width, s.height, cfg.Width, cfg.Height, ow, oh, err)
		}
		got := ColorRule(int(s.color_primaries_matrix), s.full_range != 0, int(s.height), int(s.bit_depth))
		d.put(k, s, err == nil)
		if err != nil {
			return ColorSpec{}, err
		}
		if len(missing) > 0 {
			return ColorSpec{}, missingErr(missing)
		}
		d.mu.Lock()
		d.specs[string(cfg.Box)] = got
		d.mu.Unlock()
		if got == spec || attempt > 0 {
			return got, nil
		}
		spec = got
	}
}

// RingEvents is the one set of events of every device ring this device
// serves (RingOptions.Events): the rings of all of flightd's exchanges, so
// that a release event is checked against every ring's events, not only
// those of its own exchange's rings (a client may send another exchange's
// descriptor event, or another client's release event).
func (d *Device) RingEvents() *RingEvents { return d.events }

// Stats are the device's counters since Open.
func (d *Device) Stats() Stats {
	d.mu.Lock()
	defer d.mu.Unlock()
	st := d.stats
	if d.closed {
		return st // the driver is gone (or going: Close frees it unlocked)
	}
	st.FrameCopyBytes = int64(C.wg_frame_copy_bytes(d.drv))
	var free, total C.size_t
	if C.wg_mem_info(d.drv, &free, &total) == 0 {
		st.MemUsed, st.MemTotal = int64(total-free), int64(total)
	}
	return st
}

// Close frees the pooled decoders and tables and releases the context.
func (d *Device) Close() error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil
	}
	d.closed = true
	d.mu.Unlock()
	d.active.Wait() // decodes in flight put their sessions back (and free them: closed)
	d.mu.Lock()
	pool, tables, filters, leases := d.pool, d.tables, d.filter, d.leases
	d.pool, d.tables, d.filter, d.leases = nil, nil, nil, nil
	d.mu.Unlock()
	for _, l := range pool {
		for _, s := range l {
			d.freeSession(s)
		}
	}
	for _, p := range tables {
		C.wg_free(d.drv, p)
	}
	for _, f := range filters {
		C.wg_free(d.drv, f.ptr)
	}
	for _, l := range leases {
		l.Release()
	}
	C.wg_close(d.drv)
	C.free(unsafe.Pointer(d.drv))
	return nil
}
