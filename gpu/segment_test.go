package gpu

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftdata/weft/video"
)

// AV1 OBU types (AV1 spec 6.2.2).
const (
	obuSequenceHeader = 1
	obuFrameHeader    = 3
	obuFrame          = 6
)

// obu is one low-overhead OBU of type typ with its size field (one leb128
// byte: payloads under 128 bytes).
func obu(typ byte, payload ...byte) []byte {
	if len(payload) >= 0x80 {
		panic(fmt.Sprintf("obu: a %d-byte payload needs a longer leb128", len(payload)))
	}
	return append([]byte{typ<<3 | 0x02, byte(len(payload))}, payload...)
}

func cat(parts ...[]byte) (o []byte) {
	for _, p := range parts {
		o = append(o, p...)
	}
	return o
}

// TestParserInputAV1: AV1 temporal units go to the parser as they are,
// after the configOBUs; every OBU header is checked as hostile input (by
// video.WalkOBUs, whose ErrMalformed comes wrapped in ErrInvalidSegment).
func TestParserInputAV1(t *testing.T) {
	seq := obu(obuSequenceHeader, 0, 0, 0, 10, 11, 12)
	frame := obu(obuFrame, 1, 2, 3, 4)
	shown := obu(obuFrameHeader, 0x80) // a show_existing_frame header
	cfg := video.Config{Codec: video.AV1, Width: 64, Height: 48, BitDepth: 8, Chroma: video.Chroma420, ParameterSets: [][]byte{seq}}
	t.Run("as_is", func(t *testing.T) {
		units := [][]byte{cat(seq, frame), cat(obu(obuFrame, 9), shown), shown}
		b, err := parserInput(Segment{Config: cfg, Units: units, PTS: []int64{0, 1, 2}})
		require.NoError(t, err)
		require.Equal(t, seq, b.seqhdr)
		require.Equal(t, []int{0, len(units[0]), len(units[0]) + len(units[1]), len(b.data)}, b.off)
		for i, u := range units {
			require.Equal(t, u, b.data[b.off[i]:b.off[i+1]], "unit %d", i)
		}
	})
	t.Run("last_obu_unsized", func(t *testing.T) {
		// AV1-ISOBMFF lets a sample's last OBU omit its size: the parser gets it sized
		unsized := cat([]byte{obuFrame<<3 | 0x04, 0x08}, []byte{5, 6, 7}) // extension header, no size field
		b, err := parserInput(Segment{Config: cfg, Units: [][]byte{cat(seq, unsized)}, PTS: []int64{0}})
		require.NoError(t, err)
		require.Equal(t, cat(seq, []byte{obuFrame<<3 | 0x06, 0x08, 3, 5, 6, 7}), b.data)
	})
	t.Run("no_config_obus", func(t *testing.T) {
		c := cfg
		c.ParameterSets = nil
		b, err := parserInput(Segment{Config: c, Units: [][]byte{cat(seq, frame)}, PTS: []int64{0}})
		require.NoError(t, err)
		require.Nil(t, b.seqhdr)
	})
	for _, tc := range []struct {
		name  string
		cfg   [][]byte
		units [][]byte
		pts   []int64
		obu   bool // refused by video.WalkOBUs
	}{
		{"no_units", nil, nil, nil, false},
		{"pts_count", nil, [][]byte{frame}, []int64{0, 1}, false},
		{"forbidden_bit", nil, [][]byte{cat(seq, []byte{0x80 | obuFrame<<3 | 2, 0})}, []int64{0}, true},
		{"size_overruns_unit", nil, [][]byte{cat(seq, []byte{obuFrame<<3 | 2, 9, 1, 2})}, []int64{0}, true},
		{"huge_size", nil, [][]byte{{obuFrame<<3 | 2, 0xff, 0xff, 0xff, 0xff, 0x7f}}, []int64{0}, true},
		{"leb128_too_long", nil, [][]byte{{obuFrame<<3 | 2, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0}}, []int64{0}, true},
		{"leb128_truncated", nil, [][]byte{{obuFrame<<3 | 2, 0x80}}, []int64{0}, true},
		{"truncated_extension", nil, [][]byte{cat(frame, []byte{obuFrame<<3 | 0x06})}, []int64{0}, true},
		{"no_frame", nil, [][]byte{seq}, []int64{0}, false},
		{"empty_unit", nil, [][]byte{frame, {}}, []int64{0, 1}, false},
		{"bad_config_obus", [][]byte{{obuSequenceHeader<<3 | 2, 40, 1}}, [][]byte{frame}, []int64{0}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := cfg
			if tc.cfg != nil {
				c.ParameterSets = tc.cfg
			}
			_, err := parserInput(Segment{Config: c, Units: tc.units, PTS: tc.pts})
			require.ErrorIs(t, err, ErrInvalidSegment)
			if tc.obu {
				require.ErrorIs(t, err, video.ErrMalformed)
			}
			t.Log(err)
		})
	}
}

// TestParserInputAnnexB: H.264/HEVC are Annex-B with the parameter sets
// leading the first unit, and no separate sequence header.
func TestParserInputAnnexB(t *testing.T) {
	cfg := video.Config{Codec: video.H264, NALLengthSize: 4, ParameterSets: [][]byte{{0x67, 1}, {0x68, 2}}}
	b, err := parserInput(Segment{Config: cfg, Units: [][]byte{{0, 0, 0, 2, 0x65, 7}, {0, 0, 0, 1, 0x41}}, PTS: []int64{0, 1}})
	require.NoError(t, err)
	require.Nil(t, b.seqhdr)
	want := cat(startCode, []byte{0x67, 1}, startCode, []byte{0x68, 2}, startCode, []byte{0x65, 7}, startCode, []byte{0x41})
	require.True(t, bytes.Equal(want, b.data), "%x", b.data)
	require.Equal(t, []int{0, len(want) - 5, len(want)}, b.off)
	_, err = parserInput(Segment{Config: cfg, Units: [][]byte{{0, 0, 0, 9, 1}}, PTS: []int64{0}})
	require.ErrorIs(t, err, ErrInvalidSegment)
	cfg.NALLengthSize = 0
	_, err = parserInput(Segment{Config: cfg, Units: [][]byte{{1}}, PTS: []int64{0}})
	require.ErrorIs(t, err, ErrUnsupported)
	_, err = parserInput(Segment{Config: video.Config{Codec: "vp9"}, Units: [][]byte{{1}}, PTS: []int64{0}})
	require.ErrorIs(t, err, ErrUnsupported)
}
