package gpu

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// loudSkip skips with a SKIP (loud) line, or fails under CI=true.
func loudSkip(t *testing.T, msg string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip("SKIP (loud): " + msg)
}

// pythonWithNumpy finds a python that imports numpy and pyarrow:
// $WEFT_PYTHON, the repository's .venv, /work/main/.venv, python3.
func pythonWithNumpy(t *testing.T) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Dir(filepath.Dir(file))
	var cands []string
	if p := os.Getenv("WEFT_PYTHON"); p != "" {
		cands = append(cands, p)
	}
	cands = append(cands, filepath.Join(root, ".venv/bin/python"), "/work/main/.venv/bin/python", "python3")
	for _, p := range cands {
		if exec.Command(p, "-c", "import numpy, pyarrow").Run() == nil {
			return p
		}
	}
	loudSkip(t, "no python with numpy and pyarrow (set WEFT_PYTHON, or make venv): the Go/Python colour comparison did not run")
	return ""
}

// randomFrame is a packed NV12/P016 frame of random samples in the full
// code range (so clamping is exercised) with odd sizes allowed.
func randomFrame(r *rand.Rand, w, h, bits int) Frame {
	f := Frame{Width: w, Height: h, Bits: bits, Data: make([]byte, FrameBytes(w, h, bits))}
	if bits == 8 {
		for i := range f.Data {
			f.Data[i] = byte(r.IntN(256))
		}
		return f
	}
	for i := 0; i < len(f.Data); i += 2 {
		binary.LittleEndian.PutUint16(f.Data[i:], uint16(r.IntN(1<<bits))<<(16-bits))
	}
	return f
}

const pyToRGB = `
import sys, numpy as np
from weft._video import Picture, to_rgb
d, w, h, bits, cs, cr = sys.argv[1], *map(int, sys.argv[2:7])
dt = np.uint8 if bits == 8 else np.uint16
raw = np.fromfile(d + "/frame.raw", dtype=dt)
y = raw[: w * h].reshape(h, w)
uv = raw[w * h :].reshape((h + 1) // 2, (w + 1) // 2, 2)
if bits > 8:
    y, uv = y >> (16 - bits), uv >> (16 - bits)
fmt = "yuv420p" if bits == 8 else "yuv420p%dle" % bits
pic = Picture((y, np.ascontiguousarray(uv[..., 0]), np.ascontiguousarray(uv[..., 1])), fmt, cs, cr, w, h)
to_rgb([pic])[0].tofile(d + "/rgb.raw")
`

// TestRGBMatchesPython: the Go reference (and so the kernel's formula) gives
// the same bytes as python/weft/_video.py's to_rgb, the CPU client's decode.
func TestRGBMatchesPython(t *testing.T) {
	py := pythonWithNumpy(t)
	_, file, _, _ := runtime.Caller(0)
	pypath := filepath.Join(filepath.Dir(filepath.Dir(file)), "python")
	r := rand.New(rand.NewPCG(15, 1))
	for _, tc := range []struct {
		name       string
		matrix     Matrix
		colorspace int // AVColorSpace
		full       bool
		bits       int
		w, h       int
	}{
		{"bt601_limited_8", BT601, 5, false, 8, 64, 48},
		{"bt601_full_8", BT601, 5, true, 8, 33, 17},
		{"bt709_limited_8", BT709, 1, false, 8, 40, 30},
		{"bt709_full_8", BT709, 1, true, 8, 64, 64},
		{"bt709_limited_10", BT709, 1, false, 10, 38, 22},
		{"bt601_full_10", BT601, 5, true, 10, 31, 9},
		{"bt2020_limited_10", BT2020, 9, false, 10, 16, 16},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := randomFrame(r, tc.w, tc.h, tc.bits)
			tab, err := Tables(ColorSpec{Matrix: tc.matrix, Full: tc.full, Bits: tc.bits})
			require.NoError(t, err)
			got, err := YUV420ToRGB(f, tab)
			require.NoError(t, err)
			dir := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(dir, "frame.raw"), f.Data, 0o600))
			cr := 1
			if tc.full {
				cr = 2
			}
			cmd := exec.Command(py, "-c", pyToRGB, dir, itoa(tc.w), itoa(tc.h), itoa(tc.bits), itoa(tc.colorspace), itoa(cr))
			cmd.Env = append(os.Environ(), "PYTHONPATH="+pypath)
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "%s", out)
			want, err := os.ReadFile(filepath.Join(dir, "rgb.raw"))
			require.NoError(t, err)
			require.Len(t, got, len(want))
			if !bytes.Equal(got, want) {
				for i := range got {
					if got[i] != want[i] {
						t.Fatalf("byte %d (pixel %d, channel %d): Go %d, Python %d", i, i/3, i%3, got[i], want[i])
					}
				}
			}
		})
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

func TestTablesInvalid(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec ColorSpec
	}{
		{"unknown_matrix", ColorSpec{Matrix: "nope", Bits: 8}},
		{"bits_7", ColorSpec{Matrix: BT601, Bits: 7}},
		{"bits_17", ColorSpec{Matrix: BT601, Bits: 17}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Tables(tc.spec)
			require.ErrorIs(t, err, ErrInvalidSegment)
		})
	}
}

func TestColorRule(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mc, h  int
		matrix Matrix
	}{
		{"bt709", 1, 480, BT709},
		{"bt601_470bg", 5, 1080, BT601},
		{"bt601_smpte170m", 6, 1080, BT601},
		{"unspecified_sd", 2, 480, BT601},
		{"unspecified_hd", 2, 720, BT709},
		{"zero_hd", 0, 1080, BT709},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.matrix, ColorRule(tc.mc, false, tc.h, 8).Matrix)
		})
	}
}
