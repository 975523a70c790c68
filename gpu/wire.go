package gpu

import (
	"encoding/binary"
	"fmt"

	"github.com/weftdata/weft/video"
)

// ConfigFromBox rebuilds a video.Config from what a step's video window
// carries for a segment (contract section 5): the codec, the decoder
// configuration box's body (avcC, hvcC or av1C, without its 8-byte
// header) and the picture size. For H.264/HEVC it reads the NAL length
// size, the parameter sets (VPS, SPS, PPS in that order), the luma bit
// depth and the chroma format; for AV1 the bit depth (high_bitdepth,
// twelve_bit), the chroma sampling (mono_chrome, chroma_subsampling_x/y)
// and the configOBUs (ParameterSets[0], checked OBU by OBU). Other codecs
// are ErrUnsupported.
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
		cfg.Chroma = video.Chroma420
		switch body[1] { // high profiles: chroma format and bit depths follow
		case 100, 110, 122, 144:
			if p+3 <= len(body) {
				cfg.Chroma = video.ChromaFromIDC(int(body[p] & 3))
				cfg.BitDepth = int(body[p+1]&7) + 8
			}
		}
	case video.HEVC:
		if len(body) < 23 || body[0] != 1 {
			return bad("not an hvcC version 1 body")
		}
		cfg.BitDepth = int(body[17]&7) + 8
		cfg.Chroma = video.ChromaFromIDC(int(body[16] & 3))
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
	case video.AV1:
		// AV1CodecConfigurationRecord: marker(1)=1 version(7)=1; seq_profile(3) seq_level_idx_0(5);
		// seq_tier_0(1) high_bitdepth(1) twelve_bit(1) mono_chrome(1) chroma_subsampling_x(1)
		// chroma_subsampling_y(1) chroma_sample_position(2); reserved(3) + presentation delay(5);
		// configOBUs.
		if len(body) < 4 || body[0] != 0x81 {
			return bad("not an av1C version 1 body")
		}
		if body[2]&0x40 != 0 {
			cfg.BitDepth = 10
			if body[2]&0x20 != 0 {
				cfg.BitDepth = 12
			}
		}
		cfg.Chroma = video.ChromaAV1(int(body[2]>>4&1), int(body[2]>>3&1), int(body[2]>>2&1))
		if len(body) > 4 {
			if _, _, err := walkOBUs(body[4:], "configOBUs"); err != nil {
				return video.Config{}, err
			}
			cfg.ParameterSets = [][]byte{body[4:]}
		}
	default:
		return video.Config{}, fmt.Errorf("%w: codec %q through NVDEC (H.264, HEVC and AV1 only)", ErrUnsupported, codec)
	}
	return cfg, nil
}
