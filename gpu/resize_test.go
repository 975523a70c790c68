package gpu

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// resizePairs are (in, out) sizes: downscale by integer and fractional
// factors, upscale, identity, odd sizes, 1-pixel ends, and sizes past
// numpy's pairwise blocks (a row sum of more than 128 terms is split).
var resizePairs = [][2]int{
	{1, 1}, {1, 5}, {5, 1}, {2, 3}, {3, 2}, {7, 7}, {8, 3}, {9, 4}, {17, 5}, {33, 17}, {31, 9},
	{48, 24}, {48, 35}, {64, 224}, {64, 41}, {100, 7}, {129, 3}, {200, 1}, {300, 13}, {480, 224},
	{640, 224}, {720, 181}, {1080, 224}, {1920, 224}, {1920, 257}, {23, 100}, {224, 225},
}

const pyWeights = `
import sys, numpy as np
from weft._video import _weights
out = open(sys.argv[1], "wb")
for pair in sys.argv[2:]:
    i, o = map(int, pair.split("x"))
    out.write(np.ascontiguousarray(_weights(i, o), dtype="<f4").tobytes())
`

// TestResizeWeightsMatchPython: ResizeWeights is python's _weights bit for
// bit (float64 arithmetic, numpy's row sums, float32 rounding).
func TestResizeWeightsMatchPython(t *testing.T) {
	py := pythonWithNumpy(t)
	dir := t.TempDir()
	args := []string{"-c", pyWeights, filepath.Join(dir, "w.raw")}
	for _, p := range resizePairs {
		args = append(args, itoa(p[0])+"x"+itoa(p[1]))
	}
	runPython(t, py, args...)
	raw, err := os.ReadFile(filepath.Join(dir, "w.raw"))
	require.NoError(t, err)
	for _, p := range resizePairs {
		nIn, nOut := p[0], p[1]
		t.Run(itoa(nIn)+"to"+itoa(nOut), func(t *testing.T) {
			f, err := ResizeWeights(nIn, nOut)
			require.NoError(t, err)
			require.Len(t, f.Start, nOut)
			require.GreaterOrEqual(t, len(raw), 4*nIn*nOut)
			for o := range nOut {
				for i := range nIn {
					want := math.Float32frombits(binary.LittleEndian.Uint32(raw[4*(o*nIn+i):]))
					var got float32
					if k := i - int(f.Start[o]); k >= 0 && k < int(f.Count[o]) {
						got = f.W[o*f.Taps+k]
					}
					require.Equal(t, math.Float32bits(want), math.Float32bits(got), "weight [%d, %d]: python %g, Go %g", o, i, want, got)
				}
			}
		})
		raw = raw[4*nIn*nOut:]
	}
	require.Empty(t, raw)
}

func runPython(t *testing.T, py string, args ...string) {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	cmd := exec.Command(py, args...)
	cmd.Env = append(os.Environ(), "PYTHONPATH="+filepath.Join(filepath.Dir(filepath.Dir(file)), "python"))
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
}

const pyResize = `
import sys, numpy as np
from weft._video import resize
d, n, h, w, oh, ow = sys.argv[1], *map(int, sys.argv[2:7])
x = np.fromfile(d + "/in.raw", dtype=np.uint8).reshape(n, h, w, 3)
resize(x, (oh, ow)).tofile(d + "/out.raw")
`

// TestResizeRGBMatchesPython: ResizeRGB (the device's arithmetic) against
// python's resize (the CPU path: numpy float32 matmul, summed in BLAS's
// order) on the same frames: within 1 LSB (the RGB rule); how many
// values differ is logged.
func TestResizeRGBMatchesPython(t *testing.T) {
	py := pythonWithNumpy(t)
	r := rand.New(rand.NewPCG(15, 2))
	for _, tc := range []struct {
		name         string
		h, w, oh, ow int
	}{
		{"down_2x", 48, 64, 24, 32},
		{"down_odd", 47, 63, 17, 29},
		{"down_large", 270, 480, 56, 100},
		{"up_odd", 17, 23, 41, 50},
		{"up_2x", 24, 32, 48, 64},
		{"mixed", 30, 40, 45, 21},
		{"one_axis", 40, 30, 40, 17},
		{"to_one_pixel", 9, 7, 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const n = 3
			in := make([]byte, n*tc.h*tc.w*3)
			for f := range n {
				px := in[f*tc.h*tc.w*3 : (f+1)*tc.h*tc.w*3]
				switch f {
				case 0: // noise: every value, and sums that land near .5
					for i := range px {
						px[i] = byte(r.IntN(256))
					}
				case 1: // a smooth gradient, like a picture
					for i := range px {
						y, x, c := i/(tc.w*3), i/3%tc.w, i%3
						px[i] = byte((y*255/max(tc.h-1, 1) + x*255/max(tc.w-1, 1) + c*40) % 256)
					}
				default: // saturated blocks: clamping at 0 and 255
					for i := range px {
						if (i/3%tc.w/3+i/(tc.w*3)/3)%2 == 0 {
							px[i] = 255
						}
					}
				}
			}
			dir := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(dir, "in.raw"), in, 0o600))
			runPython(t, py, "-c", pyResize, dir, itoa(n), itoa(tc.h), itoa(tc.w), itoa(tc.oh), itoa(tc.ow))
			want, err := os.ReadFile(filepath.Join(dir, "out.raw"))
			require.NoError(t, err)
			fb := tc.oh * tc.ow * 3
			require.Len(t, want, n*fb)
			differ, maxDiff := 0, 0
			for f := range n {
				got, err := ResizeRGB(in[f*tc.h*tc.w*3:(f+1)*tc.h*tc.w*3], tc.h, tc.w, tc.oh, tc.ow)
				require.NoError(t, err)
				require.Len(t, got, fb)
				for i := range got {
					d := int(got[i]) - int(want[f*fb+i])
					if d != 0 {
						differ++
						maxDiff = max(maxDiff, d, -d)
					}
				}
			}
			t.Logf("%dx%d -> %dx%d: %d of %d values differ from python's resize by 1 LSB (max |diff| %d)",
				tc.w, tc.h, tc.ow, tc.oh, differ, n*fb, maxDiff)
			require.LessOrEqual(t, maxDiff, 1, "more than 1 LSB from python's resize")
		})
	}
}

func TestResizeWeightsInvalid(t *testing.T) {
	for _, p := range [][2]int{{0, 1}, {1, 0}, {-1, 3}} {
		_, err := ResizeWeights(p[0], p[1])
		require.ErrorIs(t, err, ErrInvalidSegment)
	}
	_, err := ResizeRGB(make([]byte, 5), 1, 2, 1, 1)
	require.ErrorIs(t, err, ErrInvalidSegment)
	require.True(t, strings.Contains(err.Error(), "5 bytes"), "%v", err)
}
