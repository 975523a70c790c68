package video

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"math/big"
	"math/bits"
	"runtime/debug"
	"sort"
	"time"

	"github.com/Eyevinn/mp4ff/mp4"
)

// maxMoovBytes bounds the metadata read of one file. A moov this large
// would index tens of millions of samples; anything bigger is refused
// rather than buffered.
const maxMoovBytes = 256 << 20

// maxTopLevelBoxes bounds the box headers Read walks before the moov: a
// real MP4 has a handful (ftyp, free, mdat, moov); a file of millions of
// tiny boxes would cost a ranged read each.
const maxTopLevelBoxes = 4096

// maxSeconds bounds every decode and presentation time and edit (about 17
// years), so that sums of times cannot overflow int64 and times convert to
// time.Duration exactly.
const maxSeconds = 1 << 29

// Codec names a video coding format.
type Codec string

// The codecs an Index accepts.
const (
	H264 Codec = "h264"
	HEVC Codec = "hevc"
	AV1  Codec = "av1"
)

// Chroma sampling of a Config.
const (
	Chroma420  = "420"
	Chroma422  = "422"
	Chroma444  = "444"
	ChromaMono = "mono"
)

// ChromaFromIDC names an H.264/HEVC chroma_format_idc (0 monochrome,
// 1 4:2:0, 2 4:2:2, 3 4:4:4); "" for any other value.
func ChromaFromIDC(idc int) string {
	switch idc {
	case 0:
		return ChromaMono
	case 1:
		return Chroma420
	case 2:
		return Chroma422
	case 3:
		return Chroma444
	}
	return ""
}

// ChromaAV1 names an AV1 color_config's sampling (av1C's mono_chrome,
// chroma_subsampling_x and _y); "" for the combination AV1 forbids.
func ChromaAV1(mono, subX, subY int) string {
	switch {
	case mono != 0:
		return ChromaMono
	case subX == 1 && subY == 1:
		return Chroma420
	case subX == 1 && subY == 0:
		return Chroma422
	case subX == 0 && subY == 0:
		return Chroma444
	}
	return ""
}

// Config is what a decoder needs before the first access unit.
type Config struct {
	Codec Codec
	// SampleEntry is the MP4 sample entry type: avc1, avc3, hvc1, hev1, av01.
	SampleEntry string
	// CodecString is the RFC 6381 codecs parameter, e.g. "avc1.64001f".
	CodecString string
	// Box is the decoder configuration box exactly as stored in the file
	// (avcC, hvcC or av1C), header included.
	Box []byte
	// Width and Height are the sample entry's dimensions in pixels.
	Width, Height int
	// BitDepth is the luma bit depth (8, 10, 12), 0 when unknown.
	BitDepth int
	// Chroma is the chroma sampling: Chroma420, Chroma422, Chroma444 or
	// ChromaMono; "" when the configuration does not say (a Config built
	// by hand).
	Chroma string
	// NALLengthSize is the byte length of each NAL unit's size prefix in
	// samples (H.264, HEVC); 0 for AV1.
	NALLengthSize int
	// ParameterSets are the configuration's NAL units (VPS, SPS, PPS in
	// that order) for H.264 and HEVC, or the configOBUs for AV1.
	ParameterSets [][]byte
}

// Sample is one access unit of the video track.
type Sample struct {
	// Offset and Size locate the sample's bytes in the file.
	Offset, Size int64
	// DTS is the decode time and CTO the composition offset, both in the
	// track timescale, as stored.
	DTS int64
	CTO int64
	// PTS is the presentation time in the track timescale after the edit
	// list: DTS + CTO - media time of the first non-empty edit + duration of
	// any leading empty edits.
	PTS int64
	// Key: a sync sample (stss; every sample when stss is absent).
	Key bool
	// Leading: an open-GOP leading frame, i.e. a frame after a keyframe in
	// decode order whose PTS is before that keyframe's PTS. Decoding it
	// needs the previous GOP.
	Leading bool
}

// Index is the sample table of an MP4's video track. It is immutable and
// safe for concurrent use.
type Index struct {
	// TrackID is the video track's id; Timescale its ticks per second.
	TrackID   uint32
	Timescale uint32
	Config    Config
	// Samples in decode order.
	Samples []Sample

	display []int // display position -> decode index
	rank    []int // decode index -> display position
}

// Read indexes the MP4 in r (size bytes). It reads box headers along the
// top level and then the whole moov box, wherever it is; it never reads
// mdat.
// ctx is checked between reads; r's ReadAt is called from one goroutine.
//
// The bytes are hostile: every count, offset and time in them is checked
// before it is used, and a file that contradicts itself fails with
// ErrMalformed. As a second line of defence, Read also turns a panic while
// indexing (a bug in those checks, or in the MP4 decoder) into an error
// wrapping ErrMalformed that carries the panic value, so that a bad upload
// cannot kill the process that indexes it, including a background
// goroutine. FuzzRead fails on such a recovered panic: it is a bug to fix,
// not a way to reject input.
func Read(ctx context.Context, r io.ReaderAt, size int64) (x *Index, err error) {
	defer func() {
		if p := recover(); p != nil {
			x, err = nil, &panicError{value: p, stack: debug.Stack()}
		}
	}()
	return read(ctx, r, size)
}

// panicError is a panic recovered by Read. It wraps ErrMalformed.
type panicError struct {
	value any
	stack []byte
}

func (e *panicError) Error() string {
	return fmt.Sprintf("%v: indexing failed on an unexpected layout (internal error, please report it with the file: %v)", ErrMalformed, e.value)
}

func (e *panicError) Unwrap() error { return ErrMalformed }

func read(ctx context.Context, r io.ReaderAt, size int64) (*Index, error) {
	if size < 0 {
		return nil, fmt.Errorf("%w: negative file size %d", ErrMalformed, size)
	}
	moovOff, moovBytes, err := findMoov(ctx, r, size)
	if err != nil {
		return nil, err
	}
	moov, err := decodeMoov(moovOff, moovBytes)
	if err != nil {
		return nil, err
	}
	if moov.Mvex != nil {
		return nil, fmt.Errorf("%w: fragmented mp4 (moov has mvex): remux it unfragmented, e.g. `ffmpeg -i in.mp4 -c copy out.mp4`", ErrUnsupportedCodec)
	}
	trakPos := -1
	for i, t := range moov.Traks {
		if t.Mdia != nil && t.Mdia.Hdlr != nil && t.Mdia.Hdlr.HandlerType == "vide" {
			trakPos = i
			break
		}
	}
	if trakPos < 0 {
		return nil, fmt.Errorf("%w: %d tracks, none with handler 'vide'", ErrNoVideoTrack, len(moov.Traks))
	}
	trak := moov.Traks[trakPos]
	rawTrak, err := nthChild(moovBytes[8:], "trak", trakPos)
	if err != nil {
		return nil, err
	}
	x, err := buildIndex(trak, moov, rawTrak, int64(len(moovBytes)), size)
	if err != nil {
		return nil, fmt.Errorf("video track %d: %w", x.trackIDOr(trak), err)
	}
	return x, nil
}

func (x *Index) trackIDOr(t *mp4.TrakBox) uint32 {
	if x != nil {
		return x.TrackID
	}
	if t.Tkhd != nil {
		return t.Tkhd.TrackID
	}
	return 0
}

// findMoov walks the top-level boxes by their headers and returns the moov
// box's offset and bytes.
func findMoov(ctx context.Context, r io.ReaderAt, size int64) (int64, []byte, error) {
	var hdr [16]byte
	for off, boxes := int64(0), 0; off < size; boxes++ {
		if err := ctx.Err(); err != nil {
			return 0, nil, err
		}
		if boxes == maxTopLevelBoxes {
			return 0, nil, fmt.Errorf("%w: no moov among the first %d top-level boxes", ErrMalformed, maxTopLevelBoxes)
		}
		if size-off < 8 {
			return 0, nil, fmt.Errorf("%w: %d stray bytes at offset %d after the last box: the file is truncated or not an MP4", ErrMalformed, size-off, off)
		}
		if _, err := readAt(r, hdr[:8], off); err != nil {
			return 0, nil, fmt.Errorf("%w: read box header at %d: %w", ErrMalformed, off, err)
		}
		boxSize := int64(binary.BigEndian.Uint32(hdr[:4]))
		typ := string(hdr[4:8])
		hdrLen := int64(8)
		switch boxSize {
		case 1:
			if size-off < 16 {
				return 0, nil, fmt.Errorf("%w: box %q at %d is truncated", ErrMalformed, typ, off)
			}
			if _, err := readAt(r, hdr[8:16], off+8); err != nil {
				return 0, nil, fmt.Errorf("%w: read box header at %d: %w", ErrMalformed, off, err)
			}
			boxSize = int64(binary.BigEndian.Uint64(hdr[8:16]))
			hdrLen = 16
		case 0:
			boxSize = size - off
		}
		if off == 0 && !topLevel[typ] {
			return 0, nil, fmt.Errorf("%w: the file does not start with an MP4 box (first bytes %x)", ErrMalformed, hdr[:8])
		}
		if boxSize < hdrLen || !printable(typ) {
			return 0, nil, fmt.Errorf("%w: bad box header at offset %d (type %q, size %d)", ErrMalformed, off, typ, boxSize)
		}
		if boxSize > size-off {
			return 0, nil, fmt.Errorf("%w: box %q at offset %d claims %d bytes but the file ends after %d: the file is truncated", ErrMalformed, typ, off, boxSize, size-off)
		}
		if typ == "moov" {
			if boxSize > maxMoovBytes {
				return 0, nil, fmt.Errorf("%w: moov of %d bytes is over the %d-byte limit", ErrUnsupportedCodec, boxSize, maxMoovBytes)
			}
			buf := make([]byte, boxSize)
			if _, err := readAt(r, buf, off); err != nil {
				return 0, nil, fmt.Errorf("%w: read moov at %d: %w", ErrMalformed, off, err)
			}
			if hdrLen == 16 { // normalise to a compact header for the decoder
				binary.BigEndian.PutUint32(buf[8:12], uint32(boxSize-8))
				copy(buf[12:16], "moov")
				buf = buf[8:]
				off += 8
			}
			return off, buf, nil
		}
		off += boxSize
	}
	return 0, nil, fmt.Errorf("%w: no moov box (sample table) at the top level: the file is truncated or still being written", ErrMalformed)
}

// topLevel are the box types an MP4 may start with.
var topLevel = map[string]bool{"ftyp": true, "styp": true, "moov": true, "mdat": true, "free": true, "skip": true, "wide": true, "pdin": true, "uuid": true, "meta": true}

// readAt is ReadAt that accepts io.EOF with a full read, as the io.ReaderAt
// contract allows at the end of the input.
func readAt(r io.ReaderAt, p []byte, off int64) (int, error) {
	n, err := r.ReadAt(p, off)
	if n == len(p) {
		return n, nil
	}
	return n, err
}

func printable(typ string) bool {
	for i := 0; i < len(typ); i++ {
		if typ[i] < 0x20 || typ[i] > 0x7e {
			return false
		}
	}
	return true
}

func decodeMoov(off int64, buf []byte) (moov *mp4.MoovBox, err error) {
	if err := checkNALArrays(buf); err != nil {
		return nil, err
	}
	defer func() {
		if p := recover(); p != nil {
			moov, err = nil, fmt.Errorf("%w: moov does not decode: %v", ErrMalformed, p)
		}
	}()
	b, err := mp4.DecodeBox(uint64(off), bytes.NewReader(buf))
	if err != nil {
		return nil, fmt.Errorf("%w: moov does not decode: %w", ErrMalformed, err)
	}
	m, ok := b.(*mp4.MoovBox)
	if !ok {
		return nil, fmt.Errorf("%w: moov decodes as %T", ErrMalformed, b)
	}
	return m, nil
}

// maxVVCConfigs bounds the vvcC boxes a moov may hold (one per VVC track
// in a real file; this package indexes none of them).
const maxVVCConfigs = 4

// checkNALArrays vets the HEVC (hvcC, lhvC) and VVC (vvcC) configuration
// boxes in a moov before mp4ff decodes it. mp4ff reads their NAL unit
// arrays with 16-bit counts and keeps looping after the box's bytes run
// out, so a 40-byte hvcC claiming 65535 NAL units costs 65535 iterations
// and megabytes of allocation, and a moov can hold thousands of them. The
// boxes are found by their type wherever they are, as mp4ff decodes them
// in any container: a box of one of these types whose arrays overrun it is
// malformed (mp4ff would refuse it too, after the work).
func checkNALArrays(moov []byte) error {
	vvc := 0
	for _, b := range []struct {
		typ   string
		fixed int // bytes before numArrays
	}{{"hvcC", 22}, {"lhvC", 5}, {"vvcC", -1}} {
		for i := 4; i < len(moov); {
			j := bytes.Index(moov[i:], []byte(b.typ))
			if j < 0 {
				break
			}
			at := i + j - 4 // the box's start
			i += j + 1
			size := int64(binary.BigEndian.Uint32(moov[at:]))
			if size < 8 || size > int64(len(moov)-at) {
				continue // not a box header
			}
			body := moov[at+8 : at+int(size)]
			if b.fixed < 0 {
				if vvc++; vvc > maxVVCConfigs {
					return fmt.Errorf("%w: more than %d vvcC boxes in moov", ErrMalformed, maxVVCConfigs)
				}
				continue
			}
			if len(body) <= b.fixed || body[0] != 1 {
				continue // mp4ff refuses it at once
			}
			if !nalArraysFit(body[b.fixed:]) {
				return fmt.Errorf("%w: the NAL unit arrays of the %s box at moov offset %d overrun it", ErrMalformed, b.typ, at)
			}
		}
	}
	return nil
}

// nalArraysFit reports whether numArrays arrays of (type, numNalus,
// numNalus × (length, bytes)) fit in p, which starts at numArrays.
func nalArraysFit(p []byte) bool {
	n := int(p[0])
	p = p[1:]
	for range n {
		if len(p) < 3 {
			return false
		}
		nalus := int(binary.BigEndian.Uint16(p[1:3]))
		p = p[3:]
		for range nalus {
			if len(p) < 2 {
				return false
			}
			l := int(binary.BigEndian.Uint16(p))
			if len(p)-2 < l {
				return false
			}
			p = p[2+l:]
		}
	}
	return true
}

// nthChild returns the n-th child box named typ (header included) in a
// sequence of boxes.
func nthChild(buf []byte, typ string, n int) ([]byte, error) {
	for len(buf) >= 8 {
		sz := int(binary.BigEndian.Uint32(buf[:4]))
		if sz < 8 || sz > len(buf) {
			return nil, fmt.Errorf("%w: a box inside moov overruns its parent", ErrMalformed)
		}
		if string(buf[4:8]) == typ {
			if n == 0 {
				return buf[:sz], nil
			}
			n--
		}
		buf = buf[sz:]
	}
	return nil, fmt.Errorf("%w: box %q not found", ErrMalformed, typ)
}

// rawConfigBox finds the decoder configuration box of the first sample
// entry: trak/mdia/minf/stbl/stsd/<entry>/<name>.
func rawConfigBox(trak []byte, name string) ([]byte, error) {
	b := trak
	for _, p := range []string{"mdia", "minf", "stbl", "stsd"} {
		c, err := nthChild(b[8:], p, 0)
		if err != nil {
			return nil, err
		}
		b = c
	}
	if len(b) < 16+8 {
		return nil, fmt.Errorf("%w: short stsd", ErrMalformed)
	}
	entry := b[16:] // header, version/flags, entry count
	sz := int(binary.BigEndian.Uint32(entry[:4]))
	const visualEntryHeader = 8 + 78
	if sz < visualEntryHeader || sz > len(entry) {
		return nil, fmt.Errorf("%w: short visual sample entry", ErrMalformed)
	}
	c, err := nthChild(entry[visualEntryHeader:sz], name, 0)
	if err != nil {
		return nil, err
	}
	return bytes.Clone(c), nil
}

func buildIndex(trak *mp4.TrakBox, moov *mp4.MoovBox, rawTrak []byte, moovSize, fileSize int64) (*Index, error) {
	if trak.Mdia.Mdhd == nil || trak.Mdia.Minf == nil || trak.Mdia.Minf.Stbl == nil {
		return nil, fmt.Errorf("%w: video track lacks mdhd or stbl", ErrMalformed)
	}
	x := &Index{Timescale: trak.Mdia.Mdhd.Timescale}
	if trak.Tkhd != nil {
		x.TrackID = trak.Tkhd.TrackID
	}
	if x.Timescale == 0 {
		return nil, fmt.Errorf("%w: timescale 0", ErrMalformed)
	}
	stbl := trak.Mdia.Minf.Stbl
	if stbl.Stsd == nil || stbl.Stts == nil || stbl.Stsc == nil || stbl.Stsz == nil || (stbl.Stco == nil && stbl.Co64 == nil) {
		return nil, fmt.Errorf("%w: sample table lacks stsd, stts, stsc, stsz or stco", ErrMalformed)
	}
	cfg, err := readConfig(stbl.Stsd, rawTrak)
	if err != nil {
		return nil, err
	}
	x.Config = cfg

	n := int(stbl.Stsz.SampleNumber)
	if n == 0 {
		return nil, fmt.Errorf("%w: the video track has no samples", ErrMalformed)
	}
	if stbl.Stsz.SampleUniformSize == 0 && len(stbl.Stsz.SampleSize) != n {
		return nil, fmt.Errorf("%w: stsz lists %d sizes for %d samples", ErrMalformed, len(stbl.Stsz.SampleSize), n)
	}
	if u := int64(stbl.Stsz.SampleUniformSize); u > 0 && int64(n) > fileSize/u {
		return nil, fmt.Errorf("%w: stsz claims %d samples of %d bytes in a %d-byte file: the file is truncated", ErrMalformed, n, u, fileSize)
	}
	// Every real video sample costs the moov at least a byte (its stsz
	// entry alone is four); a uniform stsz could otherwise claim billions
	// of samples in 20 bytes and make the index allocate gigabytes.
	if int64(n) > moovSize {
		return nil, fmt.Errorf("%w: stsz claims %d samples but the moov is %d bytes", ErrMalformed, n, moovSize)
	}
	x.Samples = make([]Sample, n)
	// DTS, the edit shift and PTS each stay within ±limit ticks (limit <
	// 2^61), so DTS+CTO+shift cannot overflow and Time cannot overflow a
	// time.Duration.
	limit := int64(x.Timescale) * maxSeconds

	// Decode times.
	i := 0
	var dts int64
	for e, cnt := range stbl.Stts.SampleCount {
		for k := uint32(0); k < cnt && i < n; k++ {
			if dts > limit {
				return nil, fmt.Errorf("%w: stts runs past %d seconds", ErrMalformed, maxSeconds)
			}
			x.Samples[i].DTS = dts
			dts += int64(stbl.Stts.SampleTimeDelta[e])
			i++
		}
		if i == n {
			break
		}
	}
	if i != n {
		return nil, fmt.Errorf("%w: stts covers %d of %d samples", ErrMalformed, i, n)
	}
	// Composition offsets.
	if c := stbl.Ctts; c != nil {
		if len(c.EndSampleNr) != len(c.SampleOffset)+1 {
			return nil, fmt.Errorf("%w: ctts has %d counts for %d offsets", ErrMalformed, len(c.EndSampleNr)-1, len(c.SampleOffset))
		}
		// EndSampleNr are running sums of 32-bit counts, as decoded; a sum
		// that wraps shows as a decrease.
		for e := 1; e < len(c.EndSampleNr); e++ {
			if c.EndSampleNr[e] < c.EndSampleNr[e-1] {
				return nil, fmt.Errorf("%w: ctts counts overflow", ErrMalformed)
			}
		}
		if int64(c.EndSampleNr[len(c.EndSampleNr)-1]) < int64(n) {
			return nil, fmt.Errorf("%w: ctts covers %d of %d samples", ErrMalformed, c.EndSampleNr[len(c.EndSampleNr)-1], n)
		}
		i = 0
		for e := range c.SampleOffset {
			for ; int64(i) < int64(c.EndSampleNr[e+1]) && i < n; i++ {
				x.Samples[i].CTO = int64(c.SampleOffset[e])
			}
		}
	}
	// Edit list: leading empty edits delay the presentation; the first
	// non-empty edit's media time is presentation time zero.
	var shift int64
	if trak.Edts != nil && len(trak.Edts.Elst) > 0 {
		mvhdScale := uint64(1)
		if moov.Mvhd != nil && moov.Mvhd.Timescale != 0 {
			mvhdScale = uint64(moov.Mvhd.Timescale)
		}
		for _, en := range trak.Edts.Elst[0].Entries {
			if en.MediaTime == -1 {
				if en.SegmentDuration > maxSeconds*mvhdScale {
					return nil, fmt.Errorf("%w: an empty edit of %d/%d s is over %d seconds", ErrMalformed, en.SegmentDuration, mvhdScale, maxSeconds)
				}
				// SegmentDuration·timescale needs 94 bits; the quotient
				// fits in 62, so Div64 cannot overflow.
				hi, lo := bits.Mul64(en.SegmentDuration, uint64(x.Timescale))
				q, _ := bits.Div64(hi, lo, mvhdScale)
				shift += int64(q)
				if shift > limit {
					return nil, fmt.Errorf("%w: empty edits run past %d seconds", ErrMalformed, maxSeconds)
				}
				continue
			}
			if en.MediaTime < 0 || en.MediaTime > limit {
				return nil, fmt.Errorf("%w: edit list media time %d is outside [0, %d seconds]", ErrMalformed, en.MediaTime, maxSeconds)
			}
			shift -= en.MediaTime
			break
		}
	}
	// Sync samples.
	if stbl.Stss == nil {
		for i := range x.Samples {
			x.Samples[i].Key = true
		}
	} else {
		for _, s := range stbl.Stss.SampleNumber {
			if s == 0 || int(s) > n {
				return nil, fmt.Errorf("%w: stss names sample %d of %d", ErrMalformed, s, n)
			}
			x.Samples[s-1].Key = true
		}
	}
	// Sizes and offsets.
	var chunkOffs []uint64
	if stbl.Co64 != nil {
		chunkOffs = stbl.Co64.ChunkOffset
	} else {
		chunkOffs = make([]uint64, len(stbl.Stco.ChunkOffset))
		for j, o := range stbl.Stco.ChunkOffset {
			chunkOffs[j] = uint64(o)
		}
	}
	ents := stbl.Stsc.Entries
	nChunks := int64(len(chunkOffs))
	// Entry e covers chunks [first, last], one-based. Entries must name
	// increasing chunks, or a table of a few entries could walk the chunk
	// list over and over.
	for e, en := range ents {
		first, last := int64(en.FirstChunk), nChunks
		if e+1 < len(ents) {
			last = int64(ents[e+1].FirstChunk) - 1
		}
		if first == 0 || first > last || last > nChunks {
			return nil, fmt.Errorf("%w: stsc entry %d names chunks [%d, %d] of %d", ErrMalformed, e, first, last, nChunks)
		}
	}
	i = 0
	for e, en := range ents {
		first, last := int64(en.FirstChunk), nChunks
		if e+1 < len(ents) {
			last = int64(ents[e+1].FirstChunk) - 1
		}
		for ch := first; ch <= last && i < n; ch++ {
			off := chunkOffs[ch-1]
			for k := uint32(0); k < en.SamplesPerChunk && i < n; k++ {
				sz := uint64(stbl.Stsz.SampleUniformSize)
				if sz == 0 {
					sz = uint64(stbl.Stsz.SampleSize[i])
				}
				// off and sz are unsigned; off+sz ≤ fileSize also keeps
				// every sum below in range.
				if off > uint64(fileSize) || sz > uint64(fileSize)-off {
					return nil, fmt.Errorf("%w: sample %d at bytes [%d, +%d) lies past the end of the file (%d bytes): the file is truncated", ErrMalformed, i, off, sz, fileSize)
				}
				x.Samples[i].Offset, x.Samples[i].Size = int64(off), int64(sz)
				off += sz
				i++
			}
		}
		if i == n {
			break
		}
	}
	if i != n {
		return nil, fmt.Errorf("%w: stsc/stco place %d of %d samples", ErrMalformed, i, n)
	}
	for i := range x.Samples {
		s := &x.Samples[i]
		s.PTS = s.DTS + s.CTO + shift
		if s.PTS < -limit || s.PTS > limit {
			return nil, fmt.Errorf("%w: sample %d presents at %d/%d s, over %d seconds from zero", ErrMalformed, i, s.PTS, x.Timescale, maxSeconds)
		}
	}
	if !x.Samples[0].Key {
		return nil, fmt.Errorf("%w: the first sample is not a sync sample", ErrUnsupportedCodec)
	}
	// Open-GOP leading frames.
	key := 0
	for i := range x.Samples {
		if x.Samples[i].Key {
			key = i
		} else if x.Samples[i].PTS < x.Samples[key].PTS {
			x.Samples[i].Leading = true
		}
	}
	// Display order.
	x.display = make([]int, n)
	for i := range x.display {
		x.display[i] = i
	}
	sort.SliceStable(x.display, func(a, b int) bool { return x.Samples[x.display[a]].PTS < x.Samples[x.display[b]].PTS })
	x.rank = make([]int, n)
	for p, d := range x.display {
		x.rank[d] = p
		if p > 0 && x.Samples[x.display[p-1]].PTS == x.Samples[d].PTS {
			return nil, fmt.Errorf("%w: samples %d and %d share presentation time %d", ErrMalformed, x.display[p-1], d, x.Samples[d].PTS)
		}
	}
	return x, nil
}

// guard calls into mp4ff's parsers of hostile bytes, turning their errors
// and panics (an index out of range on a short SPS, say) into ErrMalformed.
func guard[T any](what string, f func() (T, error)) (v T, err error) {
	defer func() {
		if p := recover(); p != nil {
			var zero T
			v, err = zero, fmt.Errorf("%w: %s does not parse: %v", ErrMalformed, what, p)
		}
	}()
	v, err = f()
	if err != nil {
		return v, fmt.Errorf("%w: %s: %w", ErrMalformed, what, err)
	}
	return v, nil
}

// readConfig reads the decoder configuration of the single sample entry:
// the codec, sample entry type and size from mp4ff's stsd, the rest from
// the configuration box's bytes with parseBox, the parser ConfigFromBox
// uses, so that a Config rebuilt from Box's body equals this one.
func readConfig(stsd *mp4.StsdBox, rawTrak []byte) (Config, error) {
	if stsd.SampleCount != 1 {
		return Config{}, fmt.Errorf("%w: %d sample descriptions (one is supported)", ErrUnsupportedCodec, stsd.SampleCount)
	}
	var (
		codec Codec
		entry string
		w, h  uint16
	)
	switch {
	case stsd.AvcX != nil && stsd.AvcX.AvcC != nil:
		codec, entry, w, h = H264, stsd.AvcX.Type(), stsd.AvcX.Width, stsd.AvcX.Height
	case stsd.HvcX != nil && stsd.HvcX.HvcC != nil:
		codec, entry, w, h = HEVC, stsd.HvcX.Type(), stsd.HvcX.Width, stsd.HvcX.Height
	case stsd.Av01 != nil && stsd.Av01.Av1C != nil:
		codec, entry, w, h = AV1, stsd.Av01.Type(), stsd.Av01.Width, stsd.Av01.Height
	default:
		name := "unknown"
		if len(stsd.Children) > 0 {
			name = stsd.Children[0].Type()
		}
		return Config{}, fmt.Errorf("%w: sample entry %q: only H.264 (avc1/avc3 with avcC), HEVC (hvc1/hev1 with hvcC) and AV1 (av01) are indexed; transcode, e.g. `ffmpeg -i in -c:v libx264 out.mp4`", ErrUnsupportedCodec, name)
	}
	box, err := rawConfigBox(rawTrak, boxType[codec])
	if err != nil {
		return Config{}, err
	}
	cfg, err := parseBox(codec, entry, box[8:])
	if err != nil {
		return Config{}, err
	}
	cfg.SampleEntry, cfg.Box, cfg.Width, cfg.Height = entry, box, int(w), int(h)
	return cfg, nil
}

// Len is the number of frames.
func (x *Index) Len() int { return len(x.Samples) }

// Frame returns the frame at display position i.
func (x *Index) Frame(i int) Sample { return x.Samples[x.display[i]] }

// DecodeIndex maps a display position to its decode-order sample index.
func (x *Index) DecodeIndex(i int) int { return x.display[i] }

// DisplayIndex maps a decode-order sample index to its display position.
func (x *Index) DisplayIndex(d int) int { return x.rank[d] }

// Time converts a PTS in the track timescale to a duration, rounded to the
// nearest nanosecond.
func (x *Index) Time(pts int64) time.Duration {
	ts := int64(x.Timescale)
	sec, rem := pts/ts, pts%ts
	return time.Duration(sec)*time.Second + time.Duration((rem*int64(time.Second)*2+ts)/(2*ts))
}

// absDiff is |a-b|, saturating at the largest Duration instead of
// overflowing for far-apart times.
func absDiff(a, b time.Duration) time.Duration {
	if a < b {
		a, b = b, a
	}
	if d := a - b; d >= 0 {
		return d
	}
	return math.MaxInt64
}

// Seconds is a PTS in the track timescale as an exact rational number of
// seconds.
func (x *Index) Seconds(pts int64) *big.Rat { return big.NewRat(pts, int64(x.Timescale)) }

// FrameTime is the presentation time of the frame at display position i.
func (x *Index) FrameTime(i int) time.Duration { return x.Time(x.Frame(i).PTS) }

// FrameAt returns the display position of the frame whose presentation time
// equals t within tol. It searches the sample table, so variable frame
// rates and edit lists are exact. With no frame in tolerance the error
// wraps ErrNoFrame and names the nearest frame and its time.
func (x *Index) FrameAt(t, tol time.Duration) (int, error) {
	best, bestD := x.Nearest(t, 0, x.Len()-1)
	if bestD > tol {
		return -1, fmt.Errorf("%w: %v: the nearest is frame %d at %v (%v away, tolerance %v)", ErrNoFrame, t, best, x.FrameTime(best), bestD, tol)
	}
	return best, nil
}

// Nearest returns the display position in [first, last] (0 ≤ first ≤
// last < Len) of the frame whose presentation time is nearest to t (the
// earlier of two at the same distance), and that distance. It searches
// the sample table, so variable frame rates and edit lists are exact.
func (x *Index) Nearest(t time.Duration, first, last int) (int, time.Duration) {
	p := first + sort.Search(last-first+1, func(i int) bool { return x.FrameTime(first+i) >= t })
	best := -1
	var bestD time.Duration
	for _, c := range []int{p - 1, p} {
		if c < first || c > last {
			continue
		}
		d := absDiff(x.FrameTime(c), t)
		if best < 0 || d < bestD {
			best, bestD = c, d
		}
	}
	return best, bestD
}
