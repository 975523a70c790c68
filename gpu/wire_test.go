//go:build cgo && linux

package gpu

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestConfigFromBox: the Config rebuilt from a step's config box body
// (what the wire carries) equals the index's, for H.264 and 8/10-bit HEVC
// and AV1.
func TestConfigFromBox(t *testing.T) {
	needFFmpeg(t)
	for _, c := range fakeClips() {
		t.Run(c.name, func(t *testing.T) {
			cd := makeFakeClip(t, c)
			x := cd.x.Config
			got, err := ConfigFromBox(x.Codec, x.Box[8:], x.Width, x.Height)
			require.NoError(t, err)
			require.Equal(t, x.NALLengthSize, got.NALLengthSize)
			require.Equal(t, x.ParameterSets, got.ParameterSets)
			require.Equal(t, c.bits, got.BitDepth)
			require.Equal(t, x.Chroma, got.Chroma)
			_, err = ConfigFromBox(x.Codec, x.Box[8:20], x.Width, x.Height)
			require.ErrorIs(t, err, ErrInvalidSegment)
		})
	}
}
