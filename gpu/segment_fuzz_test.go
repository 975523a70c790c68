package gpu

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftdata/weft/video"
)

// FuzzParserInput: a segment's hostile bytes (a configuration box body
// and units, as a step's video window carries them) never panic
// parserInput; what it accepts for AV1 is units of sized OBUs only, each
// unit at its offsets. The Config is video.ConfigFromBox's of the body,
// or, where that refuses the body, one built by hand with the body as its
// only parameter set, so that parserInput sees every input. Run it with:
//
//	go test -run '^$' -fuzz '^FuzzParserInput$' -fuzztime 60s ./gpu/
//
// (video's FuzzConfigFromBox fuzzes ConfigFromBox itself.)
func FuzzParserInput(f *testing.F) {
	seq := []byte{0x0a, 0x03, 0x00, 0x00, 0x00} // a sized sequence header OBU
	frame := []byte{0x32, 0x02, 0xaa, 0xbb}     // a sized frame OBU
	f.Add(uint8(2), append([]byte{0x81, 0x00, 0x0c, 0x00}, seq...), frame, []byte{0x30, 0x01})
	f.Add(uint8(2), []byte{0x81, 0x08, 0x4c, 0x00}, []byte{0x12, 0x00, 0x32, 0x01, 0x00}, []byte{0x36, 0x80, 0x80})
	f.Add(uint8(0), []byte{1, 0x64, 0, 0x1f, 0xff, 0xe1, 0, 2, 0x67, 0x64, 1, 0, 1, 0x68}, []byte{0, 0, 0, 1, 0x65}, []byte{0, 0, 0, 9})
	f.Add(uint8(1), make([]byte, 23), []byte{0, 0, 0, 2, 0x26, 1}, []byte{0xff})
	f.Add(uint8(4), []byte{0x67, 0x64}, []byte{1, 0x65, 2, 0x41, 7}, []byte{0x02, 0x00, 0x01})
	codecs := []video.Codec{video.H264, video.HEVC, video.AV1}
	f.Fuzz(func(t *testing.T, c uint8, box, u0, u1 []byte) {
		codec := codecs[int(c)%len(codecs)]
		cfg, err := video.ConfigFromBox(codec, box, 64, 48)
		if err != nil {
			require.ErrorIs(t, err, video.ErrMalformed)
			cfg = video.Config{Codec: codec, Width: 64, Height: 48, NALLengthSize: 1 + int(c>>2)%4, ParameterSets: [][]byte{box}}
		}
		units := [][]byte{u0, u1}
		b, err := parserInput(Segment{Config: cfg, Units: units, PTS: []int64{0, 1}})
		if err != nil {
			require.ErrorIs(t, err, ErrInvalidSegment)
			return
		}
		require.Len(t, b.off, len(units)+1)
		for i := range units {
			require.LessOrEqual(t, b.off[i], b.off[i+1])
		}
		require.Equal(t, len(b.data), b.off[len(units)])
		if codec != video.AV1 {
			return
		}
		for i := range units {
			checkSized(t, b.data[b.off[i]:b.off[i+1]])
		}
		if len(b.seqhdr) > 0 {
			checkSized(t, b.seqhdr)
		}
	})
}

// checkSized: u is OBUs that each have a size field inside u (read here,
// not by video's code under test), and walking it again changes nothing.
func checkSized(t *testing.T, u []byte) {
	t.Helper()
	for p := 0; p < len(u); {
		h := u[p]
		require.NotZero(t, h&0x02, "an OBU without a size at byte %d", p)
		hl := 1 + int(h>>2&1)
		require.LessOrEqual(t, p+hl, len(u))
		var size uint64
		n := 0
		for {
			require.Less(t, p+hl+n, len(u), "obu_size runs off the unit at byte %d", p)
			b := u[p+hl+n]
			size |= uint64(b&0x7f) << (7 * n)
			n++
			if b&0x80 == 0 {
				break
			}
			require.Less(t, n, 8, "obu_size over 8 bytes at byte %d", p)
		}
		p += hl + n
		require.LessOrEqual(t, size, uint64(len(u)-p))
		p += int(size)
	}
	again, _, err := video.WalkOBUs(u, "again")
	require.NoError(t, err)
	require.True(t, bytes.Equal(u, again))
}
