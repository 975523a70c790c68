package main

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftdata/weft/errdefs"
)

func TestReadRaw(t *testing.T) {
	path := filepath.Join(t.TempDir(), "results.txt")
	require.NoError(t, os.WriteFile(path, []byte(`RESULT raw_mem_h264_s4 used_mib=900 delta_mib=80 per_session_mib=20
RESULT raw_h264_s4 fps=2150.5 frames=8602 secs=4.00 per_session_fps_min=530.0 max=545.1 cpu_s=3.2
RESULT raw_h264_s16 fps=3900 frames=1 secs=4.00
RESULT weft_h264_s4=windows_per_s=30.0 frames_per_s=240.0 decoded_per_s=1990.5 secs=4.0 size=1920x1080 frame_copy_bytes=0
RESULT weft_h264_f16_s8=windows_per_s=30.0 frames_per_s=240.0 decoded_per_s=1.0 secs=4.0
RESULT probe_bench_h264_s4 fps=1.0
`), 0o644))
	got := readRaw(path)
	for _, tc := range []struct {
		key  string
		want float64
		ok   bool
	}{
		{"raw_h264_s4", 2150.5, true},
		{"raw_h264_s16", 3900, true},
		{"weft_h264_s4", 1990.5, true},
		{"weft_h264_f16_s8", 0, false}, // normalised: not a decode-only rate of the same kind
		{"raw_mem_h264_s4", 0, false},  // memory, not a rate
		{"probe_bench_h264_s4", 0, false},
	} {
		t.Run(tc.key, func(t *testing.T) {
			v, ok := got[tc.key]
			require.Equal(t, tc.ok, ok)
			require.Equal(t, tc.want, v)
		})
	}
	require.Empty(t, readRaw(""))
	require.Empty(t, readRaw(filepath.Join(t.TempDir(), "missing")))
}

func TestULPDistance(t *testing.T) {
	for _, tc := range []struct {
		name string
		a, b uint32
		size int
		want int64
	}{
		{"same", 0x3c00, 0x3c00, 2, 0},
		{"next float16", 0x3c00, 0x3c01, 2, 1},
		{"across zero float16", 0x0001, 0x8001, 2, 2},
		{"bfloat16 negative", 0xbf80, 0xbf82, 2, 2},
		{"float32", 0x3f800000, 0x3f7fffff, 4, 1},
		{"float32 +0 -0", 0x00000000, 0x80000000, 4, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, ulpDistance(tc.a, tc.b, tc.size))
			require.Equal(t, tc.want, ulpDistance(tc.b, tc.a, tc.size))
		})
	}
}

// TestIsRefusal: the trainer reads on with host slots only at flightd's
// mid-run refusal of a step on the GPU path (flight.ErrUnavailableDelivery:
// FAILED_PRECONDITION and its text), not at any other error.
func TestIsRefusal(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"the refusal", fmt.Errorf("%w: cuda-ipc delivery cannot serve this step: step 7 column cam: the stream is 32x32", errdefs.ErrFailedPrecondition), true},
		{"another failed precondition", fmt.Errorf("%w: stale generation", errdefs.ErrFailedPrecondition), false},
		{"the text with another kind", fmt.Errorf("%w: cuda-ipc delivery cannot serve this step", errdefs.ErrUnavailable), false},
	} {
		t.Run(tc.name, func(t *testing.T) { require.Equal(t, tc.want, isRefusal(tc.err)) })
	}
}
