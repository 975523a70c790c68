package gpu

import (
	"fmt"

	"github.com/weftdata/weft/video"
)

// Segment is one decode range of one video (a video.Plan's samples): the
// stream's configuration and its access units in decode order, each with
// its presentation time (track timescale), as issue 13's wire form carries
// them (contract section 5: config, units, unit_pts).
type Segment struct {
	Config video.Config
	Units  [][]byte
	PTS    []int64
}

// cudaVideoCodec values (ffnvcodec dynlink_cuviddec.h).
const (
	cudaVideoCodecH264 = 4
	cudaVideoCodecHEVC = 8
	cudaVideoCodecAV1  = 11
)

func codecID(c video.Codec) (int, error) {
	switch c {
	case video.H264:
		return cudaVideoCodecH264, nil
	case video.HEVC:
		return cudaVideoCodecHEVC, nil
	case video.AV1:
		return cudaVideoCodecAV1, nil
	}
	return 0, fmt.Errorf("%w: codec %q", ErrUnsupported, c)
}

var startCode = []byte{0, 0, 0, 1}

// bitstream is a segment as the NVDEC parser takes it: the access units
// back to back in data (unit i is data[off[i]:off[i+1]], fed as one packet
// with its PTS), and seqhdr, the sequence header the parser gets before
// the first unit, both as a packet of its own and as CUVIDEOFORMATEX's
// raw_seqhdr_data (AV1's configOBUs, as ffmpeg's cuviddec does; nil for
// H.264/HEVC, whose parameter sets lead the first unit).
type bitstream struct {
	data   []byte
	off    []int
	seqhdr []byte
}

// parserInput is the per-codec "bitstream for the parser" step: Annex-B
// for H.264/HEVC (annexB), the temporal units as they are for AV1
// (av1Units). Both check the segment as hostile input: every length
// within its unit.
func parserInput(s Segment) (bitstream, error) {
	if len(s.Units) != len(s.PTS) {
		return bitstream{}, fmt.Errorf("%w: %d units, %d pts", ErrInvalidSegment, len(s.Units), len(s.PTS))
	}
	if len(s.Units) == 0 {
		return bitstream{}, fmt.Errorf("%w: no units", ErrInvalidSegment)
	}
	switch s.Config.Codec {
	case video.H264, video.HEVC:
		data, off, err := annexB(s)
		return bitstream{data: data, off: off}, err
	case video.AV1:
		return av1Units(s)
	}
	return bitstream{}, fmt.Errorf("%w: codec %q", ErrUnsupported, s.Config.Codec)
}

// annexB turns the segment's length-prefixed NAL units into one Annex-B
// byte stream for the NVDEC parser: the configuration's parameter sets
// before the first unit, a start code before every NAL. off has
// len(Units)+1 entries: unit i is out[off[i]:off[i+1]].
func annexB(s Segment) (out []byte, off []int, err error) {
	ls := s.Config.NALLengthSize
	if ls < 1 || ls > 4 {
		return nil, nil, fmt.Errorf("%w: %s with NAL length size %d", ErrUnsupported, s.Config.Codec, ls)
	}
	n := 0
	for _, ps := range s.Config.ParameterSets {
		n += len(ps) + 4
	}
	for _, u := range s.Units {
		n += len(u) + 16
	}
	out = make([]byte, 0, n)
	off = make([]int, 0, len(s.Units)+1)
	for i, u := range s.Units {
		off = append(off, len(out))
		if i == 0 {
			for _, ps := range s.Config.ParameterSets {
				out = append(out, startCode...)
				out = append(out, ps...)
			}
		}
		for p := 0; p < len(u); {
			if p+ls > len(u) {
				return nil, nil, fmt.Errorf("%w: unit %d: truncated NAL length at byte %d", ErrInvalidSegment, i, p)
			}
			var l int
			for _, b := range u[p : p+ls] {
				l = l<<8 | int(b)
			}
			p += ls
			if l > len(u)-p {
				return nil, nil, fmt.Errorf("%w: unit %d: NAL of %d bytes at byte %d overruns the unit", ErrInvalidSegment, i, l, p)
			}
			out = append(out, startCode...)
			out = append(out, u[p:p+l]...)
			p += l
		}
	}
	off = append(off, len(out))
	return out, off, nil
}

// av1Units: an MP4 AV1 sample is a temporal unit of low-overhead OBUs
// (AV1-ISOBMFF 2.4: obu_has_size_field set, except that the last OBU of a
// sample may omit it; no temporal delimiter needed). The parser
// (cudaVideoCodec_AV1, bAnnexb 0) takes each one as a packet as it is,
// after the configOBUs (the sequence header). Every OBU header is checked
// with video.WalkOBUs: forbidden bit clear, a size that stays inside its
// unit; a last OBU without a size field is given one, so that every OBU
// the parser sees is sized. Its errors are wrapped with ErrInvalidSegment.
func av1Units(s Segment) (bitstream, error) {
	var seqhdr []byte
	for _, ps := range s.Config.ParameterSets {
		seqhdr = append(seqhdr, ps...)
	}
	if len(seqhdr) > 0 {
		fixed, _, err := video.WalkOBUs(seqhdr, "configOBUs")
		if err != nil {
			return bitstream{}, fmt.Errorf("%w: %w", ErrInvalidSegment, err)
		}
		seqhdr = fixed
	}
	n := 0
	for _, u := range s.Units {
		n += len(u) + 8
	}
	b := bitstream{data: make([]byte, 0, n), off: make([]int, 0, len(s.Units)+1), seqhdr: seqhdr}
	for i, u := range s.Units {
		b.off = append(b.off, len(b.data))
		fixed, frames, err := video.WalkOBUs(u, fmt.Sprintf("unit %d", i))
		if err != nil {
			return bitstream{}, fmt.Errorf("%w: %w", ErrInvalidSegment, err)
		}
		if frames == 0 {
			return bitstream{}, fmt.Errorf("%w: AV1 unit %d has no frame or frame header OBU", ErrInvalidSegment, i)
		}
		b.data = append(b.data, fixed...)
	}
	b.off = append(b.off, len(b.data))
	return b, nil
}
