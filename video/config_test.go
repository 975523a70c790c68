package video

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"testing"

	"github.com/Eyevinn/mp4ff/av1"
	"github.com/Eyevinn/mp4ff/avc"
	"github.com/Eyevinn/mp4ff/hevc"
	"github.com/stretchr/testify/require"

	"github.com/weftdata/weft/errdefs"
)

// Configuration box bodies of 32x32 testsrc2 clips made with ffmpeg: x264
// High 8-bit, x265 Main 10 (VPS, SPS and PPS arrays; x265's SEI array
// left out) and libaom 10-bit (a sequence header OBU).
var (
	avcCBody = unhex("0164000affe100176764000aacd9496c0440000003004000000503c489658001000668ebe3cb22c0fdf8f800")
	hvcCBody = unhex("0102200000009000000000001ef000fcfdfafa00000f03200001001840010c01ffff02200000030090000003000003001e959809" +
		"210001002942010102200000030090000003000003001ea042084d96566b932bc05a02000003000200000300141022000100064401c173d089")
	av1CBody = unhex("81004c000a0a0000000227fe6d7ca020")
)

func unhex(s string) []byte {
	b, err := hex.DecodeString(s)
	if err != nil {
		panic(err)
	}
	return b
}

// obu is one low-overhead OBU of type typ with its size field.
func obu(typ byte, payload ...byte) []byte {
	return append(appendLEB128([]byte{typ<<3 | 0x02}, uint64(len(payload))), payload...)
}

func join(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// TestConfigFromBoxMatchesIndex: for every clip, the Config rebuilt from
// the body of the index's Box (what a step's video window carries) equals
// the index's Config in every field but SampleEntry and CodecString,
// which the body does not hold: Box itself, codec, size, bit depth,
// chroma, NAL length size and parameter sets, all that the GPU path uses.
func TestConfigFromBoxMatchesIndex(t *testing.T) {
	paths := clipPaths(t)
	for _, c := range clips() {
		t.Run(c.name, func(t *testing.T) {
			x, _, _ := open(t, paths[c.name])
			want := x.Config
			got, err := ConfigFromBox(want.Codec, bytes.Clone(want.Box[8:]), want.Width, want.Height)
			require.NoError(t, err)
			require.Empty(t, got.SampleEntry)
			require.Empty(t, got.CodecString)
			got.SampleEntry, got.CodecString = want.SampleEntry, want.CodecString
			require.Equal(t, want, got)
			require.Equal(t, c.bitDepth, got.BitDepth)
			require.Equal(t, Chroma420, got.Chroma)
			require.NotEmpty(t, got.ParameterSets)

			_, err = ConfigFromBox(want.Codec, want.Box[8:11], want.Width, want.Height)
			require.ErrorIs(t, err, ErrMalformed)
		})
	}
}

// TestConfigFromBox: the fields of each codec's body, the Box rebuilt
// around it, and a Config that keeps nothing of the caller's buffer.
func TestConfigFromBox(t *testing.T) {
	for _, tc := range []struct {
		name  string
		codec Codec
		body  []byte
		bits  int
		nls   int
		sets  []int // the parameter sets' NAL unit types (H.264/HEVC) or lengths (AV1)
	}{
		{"h264_high", H264, avcCBody, 8, 4, []int{7, 8}},
		{"hevc_main10", HEVC, hvcCBody, 10, 4, []int{32, 33, 34}},
		{"av1_10bit", AV1, av1CBody, 10, 0, []int{12}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := bytes.Clone(tc.body)
			c, err := ConfigFromBox(tc.codec, body, 32, 32)
			require.NoError(t, err)
			require.Equal(t, tc.codec, c.Codec)
			require.Equal(t, 32, c.Width)
			require.Equal(t, 32, c.Height)
			require.Equal(t, tc.bits, c.BitDepth)
			require.Equal(t, Chroma420, c.Chroma)
			require.Equal(t, tc.nls, c.NALLengthSize)
			require.Equal(t, uint32(8+len(body)), binary.BigEndian.Uint32(c.Box))
			require.Equal(t, boxType[tc.codec], string(c.Box[4:8]))
			require.Equal(t, body, c.Box[8:])
			var sets []int
			for _, ps := range c.ParameterSets {
				switch tc.codec {
				case H264:
					sets = append(sets, int(ps[0]&0x1f))
				case HEVC:
					sets = append(sets, int(ps[0]>>1&0x3f))
				default:
					sets = append(sets, len(ps))
				}
			}
			require.Equal(t, tc.sets, sets)
			for i := range body {
				body[i] = 0xee
			}
			require.Equal(t, tc.body, c.Box[8:], "the Config aliases the caller's body")
		})
	}
}

// TestConfigFromBoxAV1: the av1C body's depth, chroma and configOBUs.
func TestConfigFromBoxAV1(t *testing.T) {
	seq := obu(1, 0, 0, 0, 10)
	for _, tc := range []struct {
		name   string
		b2     byte
		bits   int
		chroma string
	}{
		{"8bit_420", 0x0c, 8, Chroma420},
		{"10bit_420", 0x4c, 10, Chroma420},
		{"12bit_420", 0x6c, 12, Chroma420},
		{"mono", 0x1c, 8, ChromaMono},
		{"444", 0x00, 8, Chroma444},
		{"422", 0x08, 8, Chroma422},
		{"forbidden_sampling", 0x04, 8, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ConfigFromBox(AV1, join([]byte{0x81, 0x08, tc.b2, 0}, seq), 64, 48)
			require.NoError(t, err)
			require.Equal(t, tc.bits, c.BitDepth)
			require.Equal(t, tc.chroma, c.Chroma)
			require.Equal(t, [][]byte{seq}, c.ParameterSets)
			require.Zero(t, c.NALLengthSize)
		})
	}
	t.Run("no_config_obus", func(t *testing.T) {
		c, err := ConfigFromBox(AV1, []byte{0x81, 0x08, 0x0c, 0}, 64, 48)
		require.NoError(t, err)
		require.Nil(t, c.ParameterSets)
	})
}

// TestConfigFromBoxErrors: hostile bodies are ErrMalformed, other codecs
// ErrUnsupportedCodec, both InvalidArgument.
func TestConfigFromBoxErrors(t *testing.T) {
	avcBody := func(sps, pps []byte) []byte {
		b := []byte{1, 0x64, 0, 0x0a, 0xff, 0xe1}
		b = binary.BigEndian.AppendUint16(b, uint16(len(sps)))
		b = append(append(b, sps...), 1)
		b = binary.BigEndian.AppendUint16(b, uint16(len(pps)))
		return append(b, pps...)
	}
	sps, pps := avcCBody[8:31], avcCBody[34:40]
	require.Equal(t, avcCBody, append(avcBody(sps, pps), 0xfd, 0xf8, 0xf8, 0), "avcBody rebuilds the seed")
	for _, tc := range []struct {
		name  string
		codec Codec
		body  []byte
		want  error
		msg   string
	}{
		{"vp9", "vp9", avcCBody, ErrUnsupportedCodec, "vp9"},
		{"empty_codec", "", avcCBody, ErrUnsupportedCodec, ""},
		{"h264_empty", H264, nil, ErrMalformed, "version 1"},
		{"h264_version_0", H264, append([]byte{0}, avcCBody[1:]...), ErrMalformed, "version 1"},
		{"h264_no_sps", H264, []byte{1, 0x64, 0, 0x0a, 0xff, 0xe0, 0}, ErrMalformed, "no SPS"},
		{"h264_truncated_sps", H264, avcCBody[:20], ErrMalformed, "truncated SPS"},
		{"h264_no_pps_count", H264, avcCBody[:8+0x17], ErrMalformed, "truncated SPS"},
		{"h264_truncated_pps", H264, avcCBody[:8+0x17+4], ErrMalformed, "truncated PPS"},
		{"h264_sps_does_not_parse", H264, avcBody([]byte{0x67}, pps), ErrMalformed, "avcC SPS"},
		{"hevc_short", HEVC, hvcCBody[:22], ErrMalformed, "version 1"},
		{"hevc_version_2", HEVC, append([]byte{2}, hvcCBody[1:]...), ErrMalformed, "version 1"},
		{"hevc_truncated_array", HEVC, hvcCBody[:25], ErrMalformed, "truncated array"},
		{"hevc_truncated_nal", HEVC, hvcCBody[:40], ErrMalformed, "truncated NAL"},
		{"hevc_no_sps", HEVC, append(bytes.Clone(hvcCBody[:22]), 0), ErrMalformed, "no SPS"},
		{"hevc_sps_does_not_parse", HEVC, append(bytes.Clone(hvcCBody[:22]), 1, 0x21, 0, 1, 0, 2, 0x42, 0x01), ErrMalformed, "hvcC SPS"},
		{"av1_short", AV1, []byte{0x81, 0, 0}, ErrMalformed, "version 1"},
		{"av1_no_marker", AV1, []byte{0x01, 0, 0x0c, 0}, ErrMalformed, "version 1"},
		{"av1_version_2", AV1, []byte{0x82, 0, 0x0c, 0}, ErrMalformed, "version 1"},
		{"av1_obu_overruns", AV1, join([]byte{0x81, 0, 0x0c, 0}, []byte{1<<3 | 2, 30, 0}), ErrMalformed, "configOBUs: OBU at byte 2: obu_size 30"},
		{"av1_forbidden_bit", AV1, join([]byte{0x81, 0, 0x0c, 0}, []byte{0x80}), ErrMalformed, "forbidden bit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ConfigFromBox(tc.codec, tc.body, 64, 48)
			require.ErrorIs(t, err, tc.want)
			require.ErrorIs(t, err, errdefs.ErrInvalidArgument)
			require.ErrorContains(t, err, tc.msg)
		})
	}
}

// TestWalkOBUs: OBUs pass as they are when each is sized; a last OBU
// without a size gets one; every header is checked as hostile input.
func TestWalkOBUs(t *testing.T) {
	seq := obu(1, 0, 0, 0, 10, 11, 12)
	frame := obu(obuFrame, 1, 2, 3, 4)
	shown := obu(obuFrameHeader, 0x80) // a show_existing_frame header
	ext := []byte{obuFrame<<3 | 0x06, 0x08, 1, 9}
	big := obu(obuFrame, make([]byte, 300)...) // a two-byte obu_size
	for _, tc := range []struct {
		name   string
		in     []byte
		want   []byte // nil: the input itself
		frames int
	}{
		{"empty", nil, nil, 0},
		{"sized", join(seq, frame, shown), nil, 2},
		{"extension_header", join(seq, ext), nil, 1},
		{"two_byte_size", join(big, shown), nil, 2},
		{"padding_only", obu(15, 0, 0), nil, 0},
		// AV1-ISOBMFF lets a sample's last OBU omit its size: it gets one
		{"last_unsized", join(seq, []byte{obuFrame << 3, 5, 6, 7}), join(seq, []byte{obuFrame<<3 | 0x02, 3, 5, 6, 7}), 1},
		{"last_unsized_extension", join(seq, []byte{obuFrame<<3 | 0x04, 0x08, 5, 6, 7}), join(seq, []byte{obuFrame<<3 | 0x06, 0x08, 3, 5, 6, 7}), 1},
		{"unsized_empty", []byte{obuFrameHeader << 3}, []byte{obuFrameHeader<<3 | 0x02, 0}, 1},
		{"unsized_long", join([]byte{obuFrame << 3}, make([]byte, 200)), join([]byte{obuFrame<<3 | 0x02, 0xc8, 0x01}, make([]byte, 200)), 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := bytes.Clone(tc.in)
			got, frames, err := WalkOBUs(in, "unit 0")
			require.NoError(t, err)
			require.Equal(t, tc.frames, frames)
			if tc.want == nil {
				require.Equal(t, len(in), len(got))
				if len(in) > 0 {
					require.Same(t, &in[0], &got[0], "a sized unit is returned as it is")
				}
				return
			}
			require.Equal(t, tc.want, got)
			require.Equal(t, tc.in, in, "the input is not written to")
		})
	}
	for _, tc := range []struct {
		name string
		in   []byte
		msg  string
	}{
		{"forbidden_bit", join(seq, []byte{0x80 | obuFrame<<3 | 2, 0}), "unit 0: OBU at byte 8: forbidden bit set"},
		{"size_overruns_unit", join(seq, []byte{obuFrame<<3 | 2, 9, 1, 2}), "obu_size 9 overruns the 2 bytes left"},
		{"huge_size", []byte{obuFrame<<3 | 2, 0xff, 0xff, 0xff, 0xff, 0x7f}, "bad obu_size"},
		{"leb128_too_long", []byte{obuFrame<<3 | 2, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0}, "bad obu_size"},
		{"leb128_truncated", []byte{obuFrame<<3 | 2, 0x80}, "bad obu_size"},
		{"size_missing", []byte{obuFrame<<3 | 2}, "bad obu_size"},
		{"truncated_extension", join(frame, []byte{obuFrame<<3 | 0x06}), "truncated header"},
		{"unsized_truncated_extension", []byte{obuFrame<<3 | 0x04}, "truncated header"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := WalkOBUs(tc.in, "unit 0")
			require.ErrorIs(t, err, ErrMalformed)
			require.ErrorContains(t, err, tc.msg)
		})
	}
}

// TestLEB128: AV1's leb128() round trips below 2^32; longer than 8 bytes,
// truncated or 2^32 and over is refused.
func TestLEB128(t *testing.T) {
	for _, v := range []uint64{0, 1, 0x7f, 0x80, 0x3fff, 0x4000, 300, 1 << 28, 0xffffffff} {
		b := appendLEB128([]byte{0xaa}, v)
		got, n, ok := readLEB128(append(b[1:], 0x55))
		require.True(t, ok, "%d", v)
		require.Equal(t, v, got)
		require.Equal(t, len(b)-1, n)
	}
	require.Equal(t, []byte{0xac, 0x02}, appendLEB128(nil, 300))
	_, _, ok := readLEB128([]byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01})
	require.False(t, ok, "9 bytes")
	v, n, ok := readLEB128([]byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00})
	require.True(t, ok, "8 bytes with padding zeros")
	require.Zero(t, v)
	require.Equal(t, 8, n)
	_, _, ok = readLEB128(appendLEB128(nil, 1<<32))
	require.False(t, ok, "2^32")
	_, _, ok = readLEB128([]byte{0x80})
	require.False(t, ok, "truncated")
	_, _, ok = readLEB128(nil)
	require.False(t, ok, "empty")
}

// FuzzConfigFromBox feeds hostile configuration box bodies to
// ConfigFromBox. It must never panic and fail only with ErrMalformed; what
// it accepts is its Box again (header rebuilt), with parameter sets inside
// Box, and the same Config when rebuilt from that Box. Where mp4ff's
// record decoders also accept the body, the parameter sets are theirs (an
// independent parser; HEVC with one array per type, as mp4ff keeps only
// the first), and an AV1 body's configOBUs walk cleanly. Run it with:
//
//	go test -run '^$' -fuzz '^FuzzConfigFromBox$' -fuzztime 60s ./video/
func FuzzConfigFromBox(f *testing.F) {
	f.Add(uint8(0), avcCBody)
	f.Add(uint8(1), hvcCBody)
	f.Add(uint8(2), av1CBody)
	f.Add(uint8(0), []byte{1, 0x64, 0, 0x1f, 0xff, 0xe1, 0, 2, 0x67, 0x64, 1, 0, 1, 0x68})
	f.Add(uint8(1), make([]byte, 23))
	f.Add(uint8(2), join([]byte{0x81, 0x08, 0x4c, 0x00}, []byte{0x12, 0x00, 0x0a, 0x01, 0x00}, []byte{obuFrame << 3, 1}))
	f.Add(uint8(3), avcCBody)
	codecs := []Codec{H264, HEVC, AV1, "vp9"}
	f.Fuzz(func(t *testing.T, c uint8, body []byte) {
		codec := codecs[int(c)%len(codecs)]
		cfg, err := ConfigFromBox(codec, body, 64, 48)
		if codec == "vp9" {
			require.ErrorIs(t, err, ErrUnsupportedCodec)
			return
		}
		if err != nil {
			require.ErrorIs(t, err, ErrMalformed)
			return
		}
		require.Equal(t, codec, cfg.Codec)
		require.Equal(t, uint32(8+len(body)), binary.BigEndian.Uint32(cfg.Box))
		require.Equal(t, boxType[codec], string(cfg.Box[4:8]))
		require.True(t, bytes.Equal(body, cfg.Box[8:]))
		for _, ps := range cfg.ParameterSets {
			if len(ps) > 0 {
				require.True(t, inside(ps, cfg.Box), "a parameter set outside Box")
			}
		}
		again, err := ConfigFromBox(codec, cfg.Box[8:], 64, 48)
		require.NoError(t, err)
		require.Equal(t, cfg, again)
		switch codec {
		case H264:
			require.Contains(t, []int{1, 2, 3, 4}, cfg.NALLengthSize)
			if r, err := avc.DecodeAVCDecConfRec(body); err == nil {
				require.Equal(t, append(r.SPSnalus, r.PPSnalus...), cfg.ParameterSets)
			}
		case HEVC:
			require.Contains(t, []int{1, 2, 3, 4}, cfg.NALLengthSize)
			if r, err := hevc.DecodeHEVCDecConfRec(body); err == nil && distinctTypes(r) {
				var want [][]byte
				for _, typ := range []hevc.NaluType{hevc.NALU_VPS, hevc.NALU_SPS, hevc.NALU_PPS} {
					want = append(want, r.GetNalusForType(typ)...)
				}
				require.Equal(t, want, cfg.ParameterSets)
			}
		case AV1:
			require.Zero(t, cfg.NALLengthSize)
			if _, err := av1.DecodeAV1CodecConfRec(body); err == nil && len(cfg.ParameterSets) > 0 {
				sized, _, err := WalkOBUs(cfg.ParameterSets[0], "configOBUs")
				require.NoError(t, err)
				_, _, err = WalkOBUs(sized, "sized")
				require.NoError(t, err)
			}
		}
	})
}

// inside: p's bytes lie in b's backing array.
func inside(p, b []byte) bool {
	for i := range b {
		if &b[i] == &p[0] {
			return i+len(p) <= len(b)
		}
	}
	return false
}

func distinctTypes(r hevc.DecConfRec) bool {
	seen := map[hevc.NaluType]bool{}
	for _, a := range r.NaluArrays {
		if seen[a.NaluType()] {
			return false
		}
		seen[a.NaluType()] = true
	}
	return true
}
