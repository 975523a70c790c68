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

// annexB turns the segment's length-prefixed NAL units into one Annex-B
// byte stream for the NVDEC parser: the configuration's parameter sets
// before the first unit, a start code before every NAL. off has
// len(Units)+1 entries: unit i is out[off[i]:off[i+1]]. AV1 is not
// converted (its parser takes OBUs; not wired yet).
func annexB(s Segment) (out []byte, off []int, err error) {
	if len(s.Units) != len(s.PTS) {
		return nil, nil, fmt.Errorf("%w: %d units, %d pts", ErrInvalidSegment, len(s.Units), len(s.PTS))
	}
	if len(s.Units) == 0 {
		return nil, nil, fmt.Errorf("%w: no units", ErrInvalidSegment)
	}
	ls := s.Config.NALLengthSize
	if s.Config.Codec == video.AV1 || ls < 1 || ls > 4 {
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
