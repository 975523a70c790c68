package gpu

import (
	"encoding/binary"
	"fmt"

	"github.com/weftdata/weft/video"
)

// ConfigFromBox rebuilds a video.Config from what a step's video window
// carries for a segment (contract section 5): the codec, the decoder
// configuration box's body (avcC or hvcC, without its 8-byte header) and
// the picture size. It reads the NAL length size, the parameter sets
// (VPS, SPS, PPS in that order) and the luma bit depth. AV1 is refused
// with ErrUnsupported (the NVDEC path takes H.264 and HEVC only).
func ConfigFromBox(codec video.Codec, body []byte, width, height int) (video.Config, error) {
	cfg := video.Config{Codec: codec, Box: body, Width: width, Height: height, BitDepth: 8}
	bad := func(what string) (video.Config, error) {
		return video.Config{}, fmt.Errorf("%w: %s configuration box: %s", ErrInvalidSegment, codec, what)
	}
	// nals reads n length-prefixed (16-bit) NAL units at p.
	nals := func(p, n int) ([][]byte, int, bool) {
		var out [][]byte
		for range n {
			if p+2 > len(body) {
				return nil, p, false
			}
			l := int(binary.BigEndian.Uint16(body[p:]))
			p += 2
			if p+l > len(body) {
				return nil, p, false
			}
			out = append(out, body[p:p+l])
			p += l
		}
		return out, p, true
	}
	switch codec {
	case video.H264:
		if len(body) < 7 || body[0] != 1 {
			return bad("not an avcC version 1 body")
		}
		cfg.NALLengthSize = int(body[4]&3) + 1
		sps, p, ok := nals(6, int(body[5]&0x1f))
		if !ok || p >= len(body) {
			return bad("truncated SPS")
		}
		pps, p, ok := nals(p+1, int(body[p]))
		if !ok {
			return bad("truncated PPS")
		}
		if len(sps) == 0 {
			return bad("no SPS")
		}
		cfg.ParameterSets = append(sps, pps...)
		switch body[1] { // high profiles: chroma format and bit depths follow
		case 100, 110, 122, 144:
			if p+3 <= len(body) {
				cfg.BitDepth = int(body[p+1]&7) + 8
			}
		}
	case video.HEVC:
		if len(body) < 23 || body[0] != 1 {
			return bad("not an hvcC version 1 body")
		}
		cfg.BitDepth = int(body[17]&7) + 8
		cfg.NALLengthSize = int(body[21]&3) + 1
		byType := map[byte][][]byte{}
		p := 23
		for range int(body[22]) {
			if p+3 > len(body) {
				return bad("truncated array")
			}
			t := body[p] & 0x3f
			n := int(binary.BigEndian.Uint16(body[p+1:]))
			var us [][]byte
			var ok bool
			us, p, ok = nals(p+3, n)
			if !ok {
				return bad("truncated NAL unit")
			}
			byType[t] = append(byType[t], us...)
		}
		if len(byType[33]) == 0 {
			return bad("no SPS")
		}
		for _, t := range []byte{32, 33, 34} {
			cfg.ParameterSets = append(cfg.ParameterSets, byType[t]...)
		}
	default:
		return video.Config{}, fmt.Errorf("%w: codec %q through NVDEC (H.264 and HEVC only)", ErrUnsupported, codec)
	}
	return cfg, nil
}
