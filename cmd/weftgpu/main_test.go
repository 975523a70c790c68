//go:build cgo && linux

package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func loudSkip(t *testing.T, msg string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip("SKIP (loud): " + msg)
}

// checkPython is a python that can run the loader's trainers (torch,
// pyarrow.flight): $WEFT_CHECK_PYTHON, the checkout's .venv, or python3;
// "" when none can.
func checkPython(t *testing.T) string {
	cands := []string{os.Getenv("WEFT_CHECK_PYTHON"), "../../.venv/bin/python", "python3"}
	for _, py := range cands {
		if py == "" {
			continue
		}
		if err := exec.Command(py, "-c", "import torch, numpy, pyarrow.flight").Run(); err == nil {
			abs, err := exec.LookPath(py)
			if err == nil {
				abs, _ = filepath.Abs(abs)
				return abs
			}
		}
	}
	return ""
}

// TestCheckDryRun runs `make gpu-check`'s script, gpu/check/gpu-check.sh,
// whole, against the fake driver (gpu/testdata/fakedriver) on data made
// here as `make gpu-check-prep` makes it (small clips): the program's and
// the script's logic, not a GPU. Every stage must end well; every clip must
// be exact, every RGB/resize/normalisation line ok; the raw NVDEC stage
// (nvdec_probe on the fake) must give rates; the delivery stage must run a
// real flightd with python trainers (when a python with torch and pyarrow
// is here) and Go trainers, with no frame copy and every step's tensor on
// its device slot.
func TestCheckDryRun(t *testing.T) {
	if testing.Short() {
		t.Skip("makes clips with ffmpeg and runs flightd and trainers; not in -short")
	}
	for _, p := range []string{"ffmpeg", "ffprobe", "gcc", "bash", "gzip"} {
		if _, err := exec.LookPath(p); err != nil {
			loudSkip(t, p+" not found: the gpu-check dry run did not run")
		}
	}
	dir := t.TempDir()
	lib := filepath.Join(dir, "libfake.so")
	out, err := exec.Command("gcc", "-O2", "-fPIC", "-shared", "-I../../gpu/include", "-o", lib,
		"../../gpu/testdata/fakedriver/fake_driver.c", "-lavcodec", "-lavutil").CombinedOutput()
	if err != nil && bytes.Contains(out, []byte("libavcodec/avcodec.h")) {
		loudSkip(t, "libavcodec-dev not installed: the gpu-check dry run did not run")
	}
	require.NoError(t, err, "%s", out)
	// gpu/check/data as make gpu-check-prep makes it
	data := filepath.Join(dir, "data")
	bin := filepath.Join(data, "bin")
	require.NoError(t, os.MkdirAll(bin, 0o755))
	for _, b := range []struct{ out, pkg string }{{"weftgpu", "."}, {"flightd", "../flightd"}} {
		out, err := exec.Command("go", "build", "-o", filepath.Join(bin, b.out), b.pkg).CombinedOutput()
		require.NoError(t, err, "%s", out)
	}
	out, err = exec.Command("gcc", "-O2", "-Wall", "-o", filepath.Join(bin, "nvdec_probe"), "../../gpu/check/nvdec_probe.c",
		"-I../../gpu/include", "-ldl", "-lpthread").CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.NoError(t, prep(data, prepOptions{small: true, flightd: filepath.Join(bin, "flightd")}))
	out, err = exec.Command("gzip", "-f", filepath.Join(bin, "flightd"), filepath.Join(bin, "weftgpu")).CombinedOutput()
	require.NoError(t, err, "%s", out)

	py := checkPython(t)
	if py == "" {
		t.Log("SKIP (loud): no python with torch and pyarrow (set $WEFT_CHECK_PYTHON): the python trainers of the deliver stage did not run, the Go trainers did")
	}
	res := filepath.Join(dir, "out")
	cmd := exec.Command("bash", "../../gpu/check/gpu-check.sh")
	cmd.Env = append(os.Environ(), "OUT="+res, "WEFT_CHECK_FAKE="+lib, "WEFT_CHECK_DATA="+data, "WEFT_CHECK_SECS=1",
		"WEFT_CHECK_SESSIONS=1,2", "WEFT_CHECK_GO_SESSIONS=1", "WEFT_CHECK_AV1_SESSIONS=1", "WEFT_CHECK_AV1_SESSIONS_DELIVER=1",
		"WEFT_CHECK_NORM_SESSIONS=1", "WEFT_CHECK_PYTHON="+py, "WEFT_CHECK_IPC_PYTHON=")
	out, err = cmd.CombinedOutput()
	t.Log(string(out))
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(res, "results.txt"))
	require.NoError(t, err)
	text := string(b)
	lines := map[string]string{}
	for _, l := range strings.Split(text, "\n") {
		if k, v, ok := strings.Cut(strings.TrimPrefix(l, "RESULT "), "="); ok {
			lines[k] = v
		}
	}
	for _, st := range []string{"info", "check", "raw", "deliver"} {
		require.True(t, strings.HasPrefix(lines["stage_"+st], "ok "), "stage %s: %s", st, lines["stage_"+st])
	}
	exact := regexp.MustCompile(`RESULT exact_(\S+)=(\d+)/(\d+) `).FindAllStringSubmatch(text, -1)
	require.Len(t, exact, len(clipList(true)))
	for _, m := range exact {
		require.Equal(t, m[3], m[2], "clip %s not exact", m[1])
	}
	rgb := regexp.MustCompile(`RESULT (rgb_\S+)=(\S+) `).FindAllStringSubmatch(text, -1)
	norms := 0
	for _, m := range rgb {
		require.Equal(t, "ok", m[2], m[1])
		if strings.HasPrefix(m[1], "rgb_norm_") {
			norms++
		}
	}
	require.NotZero(t, norms, "no normalisation line")
	// decode-only throughput: H.264 (uint8 and float16), AV1
	for _, k := range []string{"weft_h264_s1", "weft_h264_s2", "weft_h264_f16_s1", "weft_av1_s1"} {
		require.Contains(t, lines[k], "frame_copy_bytes=0 ", k)
	}
	// the raw NVDEC rate of the same clip, no Weft code (nvdec_probe on the fake)
	for _, k := range []string{"raw_h264_s1", "raw_h264_s2"} {
		v, ok := lines[k]
		if !ok { // nvdec_probe's lines are "RESULT raw_h264_sN fps=…"
			for _, l := range strings.Split(text, "\n") {
				if strings.HasPrefix(l, "RESULT "+k+" fps=") {
					v, ok = strings.TrimPrefix(l, "RESULT "+k+" "), true
				}
			}
		}
		require.True(t, ok, "no %s line", k)
		fps, err := strconv.ParseFloat(regexp.MustCompile(`fps=([0-9.]+)`).FindStringSubmatch(v)[1], 64)
		require.NoError(t, err)
		require.Positive(t, fps, k)
	}
	// delivery end to end through a real flightd
	want := []string{"deliver_go_h264_s1"}
	if py != "" {
		want = append(want, "deliver_py_h264_s1", "deliver_py_h264_s2", "deliver_py_h264_f16_s1", "deliver_py_av1_s1")
	} else {
		want = append(want, "deliver_go_h264_s2", "deliver_go_av1_s1")
	}
	for _, k := range want {
		v := lines[k]
		require.Contains(t, v, "delivery=cuda-ipc ", k)
		require.Contains(t, v, " frame_copy_bytes=0 ", k)
		require.Contains(t, v, " copies=0 ", k)
		require.NotContains(t, v, "windows_per_s=0.0 ", k)
		require.NotContains(t, v, "decoded_per_s=0.0 ", k) // flightd's weft_gpu_ metrics were read
		require.Contains(t, lines[k+"_mem"], "per_session_mib=", k)
		if strings.Contains(k, "_h264_s") {
			require.Regexp(t, `raw_fps=[0-9.]+ decoded_vs_raw=[0-9.]+ frames_vs_raw=[0-9.]+ goal80=(pass|fail)`, v, k)
		}
	}
	if py != "" {
		require.Contains(t, lines["deliver_py_h264_f16_s1"], "dtype=float16 ")
	}
	for _, k := range []string{"acc_exact", "acc_rgb", "acc_frame_copy_bytes", "acc_goal80", "gpu_check_secs"} {
		require.Contains(t, lines, k)
	}
	require.Contains(t, lines["acc_frame_copy_bytes"], " nonzero:0 ")
}
