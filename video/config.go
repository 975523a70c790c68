package video

import (
	"encoding/binary"
	"fmt"

	"github.com/Eyevinn/mp4ff/av1"
	"github.com/Eyevinn/mp4ff/avc"
	"github.com/Eyevinn/mp4ff/hevc"
)

// boxType is the decoder configuration box of each codec.
var boxType = map[Codec]string{H264: "avcC", HEVC: "hvcC", AV1: "av1C"}

// ConfigFromBox rebuilds the Config that Read gives a video from what a
// step's video window carries for a segment (VIDEO-CONTRACT section 5):
// the codec, the decoder configuration box's body (avcC, hvcC or av1C,
// without its 8-byte header) and the picture size. The body is parsed as
// Read parses the box, so the result equals the Index's Config in every
// field but SampleEntry and CodecString, which the body does not carry
// (left empty); Box is the box again, its 8-byte header rebuilt.
//
// For H.264/HEVC that is the NAL length size, the parameter sets (VPS,
// SPS, PPS in that order), and the luma bit depth and chroma format (from
// the first SPS, or for HEVC's bit depth from the hvcC); for AV1 the bit
// depth (high_bitdepth, twelve_bit), the chroma sampling (mono_chrome,
// chroma_subsampling_x/y) and the configOBUs (ParameterSets[0]), checked
// OBU by OBU with WalkOBUs.
//
// The body is hostile (it comes from the network): one that does not
// parse gives an error wrapping ErrMalformed, a codec other than H264,
// HEVC and AV1 one wrapping ErrUnsupportedCodec.
func ConfigFromBox(codec Codec, body []byte, width, height int) (Config, error) {
	typ, ok := boxType[codec]
	if !ok {
		return Config{}, fmt.Errorf("%w: codec %q (H.264, HEVC and AV1 only)", ErrUnsupportedCodec, codec)
	}
	if len(body) > maxMoovBytes {
		return Config{}, fmt.Errorf("%w: %s of %d bytes is over the %d-byte moov limit", ErrMalformed, typ, len(body), maxMoovBytes)
	}
	// Parse a copy with its header, so that the Config's slices alias Box
	// and not the caller's buffer.
	box := make([]byte, 8, 8+len(body))
	binary.BigEndian.PutUint32(box, uint32(8+len(body)))
	copy(box[4:], typ)
	box = append(box, body...)
	cfg, err := parseBox(codec, "", box[8:])
	if err != nil {
		return Config{}, err
	}
	if codec == AV1 && len(cfg.ParameterSets) > 0 {
		if _, _, err := WalkOBUs(cfg.ParameterSets[0], "configOBUs"); err != nil {
			return Config{}, err
		}
	}
	cfg.Box = box
	cfg.Width, cfg.Height = width, height
	return cfg, nil
}

// parseBox is what Read and ConfigFromBox both take from a decoder
// configuration box's body: Codec, BitDepth, Chroma, NALLengthSize and
// ParameterSets (slices of body), and CodecString when sampleEntry is
// set. Errors wrap ErrMalformed.
func parseBox(codec Codec, sampleEntry string, body []byte) (Config, error) {
	cfg := Config{Codec: codec, BitDepth: 8}
	bad := func(what string) (Config, error) {
		return Config{}, fmt.Errorf("%w: %s: %s", ErrMalformed, boxType[codec], what)
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
			out = append(out, body[p:p+l:p+l])
			p += l
		}
		return out, p, true
	}
	switch codec {
	case H264:
		// AVCDecoderConfigurationRecord (ISO/IEC 14496-15 5.3.3.1):
		// version, profile, compatibility, level, lengthSizeMinusOne,
		// numOfSequenceParameterSets and the SPSs, numOfPictureParameterSets
		// and the PPSs, then (high profiles) an extension this ignores: the
		// SPS says the same.
		if len(body) < 7 || body[0] != 1 {
			return bad("not a version 1 body")
		}
		cfg.NALLengthSize = int(body[4]&3) + 1
		sps, p, ok := nals(6, int(body[5]&0x1f))
		if !ok || p >= len(body) {
			return bad("truncated SPS")
		}
		pps, _, ok := nals(p+1, int(body[p]))
		if !ok {
			return bad("truncated PPS")
		}
		if len(sps) == 0 {
			return bad("no SPS")
		}
		s, err := guard("avcC SPS", func() (*avc.SPS, error) { return avc.ParseSPSNALUnit(sps[0], false) })
		if err != nil {
			return Config{}, err
		}
		cfg.BitDepth = int(s.BitDepthLumaMinus8) + 8
		cfg.Chroma = ChromaFromIDC(int(s.ChromaFormatIDC))
		cfg.ParameterSets = append(sps, pps...)
		if sampleEntry != "" {
			cfg.CodecString = avc.CodecString(sampleEntry, s)
		}
	case HEVC:
		// HEVCDecoderConfigurationRecord (ISO/IEC 14496-15 8.3.3.1): 22
		// bytes of profile, chroma_format_idc (byte 16), bit depths (17,
		// 18), lengthSizeMinusOne (21), then numOfArrays of NAL units by
		// type. Every array of a type is kept, in the order of the box.
		if len(body) < 23 || body[0] != 1 {
			return bad("not a version 1 body")
		}
		cfg.BitDepth = int(body[17]&7) + 8
		cfg.NALLengthSize = int(body[21]&3) + 1
		byType := map[hevc.NaluType][][]byte{}
		p := 23
		for range int(body[22]) {
			if p+3 > len(body) {
				return bad("truncated array")
			}
			t := hevc.NaluType(body[p] & 0x3f)
			n := int(binary.BigEndian.Uint16(body[p+1:]))
			us, q, ok := nals(p+3, n)
			if !ok {
				return bad("truncated NAL unit")
			}
			byType[t] = append(byType[t], us...)
			p = q
		}
		if len(byType[hevc.NALU_SPS]) == 0 {
			return bad("no SPS")
		}
		s, err := guard("hvcC SPS", func() (*hevc.SPS, error) { return hevc.ParseSPSNALUnit(byType[hevc.NALU_SPS][0]) })
		if err != nil {
			return Config{}, err
		}
		cfg.Chroma = ChromaFromIDC(int(s.ChromaFormatIDC))
		for _, t := range []hevc.NaluType{hevc.NALU_VPS, hevc.NALU_SPS, hevc.NALU_PPS} {
			cfg.ParameterSets = append(cfg.ParameterSets, byType[t]...)
		}
		if sampleEntry != "" {
			cfg.CodecString = hevc.CodecString(sampleEntry, s)
		}
	case AV1:
		// AV1CodecConfigurationRecord: marker(1)=1 version(7)=1;
		// seq_profile(3) seq_level_idx_0(5); seq_tier_0(1) high_bitdepth(1)
		// twelve_bit(1) mono_chrome(1) chroma_subsampling_x(1)
		// chroma_subsampling_y(1) chroma_sample_position(2); reserved(3)
		// and the presentation delay(5); configOBUs.
		if len(body) < 4 || body[0] != 0x81 {
			return bad("not a version 1 body")
		}
		if body[2]&0x40 != 0 {
			cfg.BitDepth = 10
			if body[2]&0x20 != 0 {
				cfg.BitDepth = 12
			}
		}
		cfg.Chroma = ChromaAV1(int(body[2]>>4&1), int(body[2]>>3&1), int(body[2]>>2&1))
		if len(body) > 4 {
			cfg.ParameterSets = [][]byte{body[4:]}
		}
		if sampleEntry != "" {
			c := av1.CodecConfRec{SeqProfile: body[1] >> 5, SeqLevelIdx0: body[1] & 0x1f, SeqTier0: body[2] >> 7,
				HighBitdepth: body[2] >> 6 & 1, TwelveBit: body[2] >> 5 & 1}
			cfg.CodecString = c.CodecString(sampleEntry)
		}
	default:
		return Config{}, fmt.Errorf("%w: codec %q", ErrUnsupportedCodec, codec)
	}
	return cfg, nil
}

// AV1 OBU types (AV1 spec 6.2.2).
const (
	obuFrameHeader = 3
	obuFrame       = 6
)

// WalkOBUs checks the low-overhead OBUs of u (a temporal unit, or an
// av1C's configOBUs) as hostile input and returns them with every OBU
// sized, and how many are frames or frame headers. Each header must have
// its forbidden bit clear, and each obu_size (AV1's leb128(): at most 8
// bytes, below 2^32) must stay inside u. An OBU without obu_has_size_field
// runs to the end of u (AV1-ISOBMFF 2.4 lets a sample's last OBU omit
// its size); it is given one, in a copy. sized is u itself when every OBU
// already has one. what names u in errors, which wrap ErrMalformed.
func WalkOBUs(u []byte, what string) (sized []byte, frames int, err error) {
	bad := func(p int, why string, a ...any) ([]byte, int, error) {
		return nil, 0, fmt.Errorf("%w: AV1 %s: OBU at byte %d: %s", ErrMalformed, what, p, fmt.Sprintf(why, a...))
	}
	for p := 0; p < len(u); {
		h := u[p]
		if h&0x80 != 0 {
			return bad(p, "forbidden bit set")
		}
		typ := int(h>>3) & 0xf
		hl := 1
		if h&0x04 != 0 { // obu_extension_flag
			hl = 2
		}
		if p+hl > len(u) {
			return bad(p, "truncated header")
		}
		if typ == obuFrame || typ == obuFrameHeader {
			frames++
		}
		if h&0x02 == 0 { // no obu_has_size_field: the rest of the unit, allowed last only
			body := u[p+hl:]
			out := make([]byte, 0, len(u)+8)
			out = append(out, u[:p]...)
			out = append(out, h|0x02)
			out = append(out, u[p+1:p+hl]...)
			out = appendLEB128(out, uint64(len(body)))
			out = append(out, body...)
			return out, frames, nil
		}
		size, n, ok := readLEB128(u[p+hl:])
		if !ok {
			return bad(p, "bad obu_size")
		}
		p += hl + n
		if size > uint64(len(u)-p) {
			return bad(p, "obu_size %d overruns the %d bytes left", size, len(u)-p)
		}
		p += int(size)
	}
	return u, frames, nil
}

// readLEB128 reads AV1's leb128() (at most 8 bytes, value < 2^32).
func readLEB128(b []byte) (v uint64, n int, ok bool) {
	for i := 0; i < 8; i++ {
		if i >= len(b) {
			return 0, 0, false
		}
		v |= uint64(b[i]&0x7f) << (7 * i)
		if b[i]&0x80 == 0 {
			return v, i + 1, v <= 0xffffffff
		}
	}
	return 0, 0, false
}

// appendLEB128 appends v as AV1's leb128(), in as few bytes as it takes.
func appendLEB128(b []byte, v uint64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v == 0 {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}
