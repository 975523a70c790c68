package gpu

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftdata/weft/video/pixnorm"
)

// normSets are the normalisations the tests run: ImageNet's, values that
// land on float16 and bfloat16 ties, and outputs past float16's (and
// float32's) range.
var normSets = map[string][2][3]float64{
	"imagenet":  {{0.485, 0.456, 0.406}, {0.229, 0.224, 0.225}},
	"bf16 ties": {{-1.00390625, -1.01171875, 1.01171875}, {1, 1, 1}},
	"f16 ties":  {{-(1 + 0x1p-11), -(1 + 3*0x1p-11), 1 + 3*0x1p-11}, {1, 1, 1}},
	"huge":      {{0.5, -3, 0}, {1e-6, 3e-5, 1e-45}},
}

const pyNormalize = `
import sys, numpy as np
from weft._video import normalize
mean, std = [float(v) for v in sys.argv[3].split(",")], [float(v) for v in sys.argv[4].split(",")]
v = np.arange(256, dtype=np.uint8)
rgb = np.stack([v, np.roll(v, 85), np.roll(v, 170)], axis=-1).reshape(1, 16, 16, 3)
open(sys.argv[1], "wb").write(np.ascontiguousarray(normalize(rgb, mean, std, sys.argv[2])).tobytes())
`

// TestNormalizeRGBMatchesPython: pixnorm's Normalize.RGB, the reference
// of the kernels' normalised write, is python's normalize (the CPU path)
// byte for byte, for every uint8 value in every channel.
func TestNormalizeRGBMatchesPython(t *testing.T) {
	py := pythonWithNumpy(t)
	_, file, _, _ := runtime.Caller(0)
	rgb := make([]byte, 256*3)
	for i := range 256 {
		rgb[3*i], rgb[3*i+1], rgb[3*i+2] = byte(i), byte((i+256-85)%256), byte((i+256-170)%256)
	}
	dir := t.TempDir()
	for name, set := range normSets {
		for _, dt := range []pixnorm.DType{pixnorm.Float32, pixnorm.Float16, pixnorm.BFloat16} {
			t.Run(name+"/"+string(dt), func(t *testing.T) {
				n := pixnorm.Normalize{Mean: set[0], Std: set[1], DType: dt}
				require.NoError(t, n.Validate())
				join := func(v [3]float32) string {
					s := make([]string, 3)
					for i, f := range v {
						s[i] = strconv.FormatFloat(float64(f), 'g', -1, 32)
					}
					return strings.Join(s, ",")
				}
				out := filepath.Join(dir, "n.raw")
				cmd := exec.Command(py, "-c", pyNormalize, out, string(dt), join(n.Mean32()), join(n.Std32()))
				cmd.Env = append(os.Environ(), "PYTHONPATH="+filepath.Join(filepath.Dir(filepath.Dir(file)), "python"))
				b, err := cmd.CombinedOutput()
				require.NoError(t, err, string(b))
				want, err := os.ReadFile(out)
				require.NoError(t, err)
				require.Equal(t, want, n.RGB(rgb))
			})
		}
	}
}
