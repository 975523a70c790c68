//go:build cgo && linux

package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
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

// TestCheckDryRun runs `weftgpu prep --small` and `weftgpu check` against
// the fake driver (gpu/testdata/fakedriver): the gpu-check program's logic,
// not a GPU. Every clip must be exact, every RGB line ok, and the windows
// must cost no frame copy.
func TestCheckDryRun(t *testing.T) {
	if testing.Short() {
		t.Skip("makes clips with ffmpeg; not in -short")
	}
	for _, p := range []string{"ffmpeg", "ffprobe", "gcc"} {
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
	data := filepath.Join(dir, "data")
	require.NoError(t, prep(data, true))
	bin := filepath.Join(dir, "weftgpu")
	out, err = exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, "%s", out)
	out, err = exec.Command(bin, "check", "--cuda-lib", lib, "--cuvid-lib", lib, "--secs", "0.3", "--sessions", "1,2", "--python", "", data).CombinedOutput()
	require.NoError(t, err, "%s", out)
	text := string(out)
	t.Log(text)
	exact := regexp.MustCompile(`RESULT exact_(\S+)=(\d+)/(\d+) `).FindAllStringSubmatch(text, -1)
	require.Len(t, exact, len(clipList(true)))
	for _, m := range exact {
		require.Equal(t, m[3], m[2], "clip %s not exact", m[1])
	}
	rgb := regexp.MustCompile(`RESULT (rgb_\S+)=(\S+) `).FindAllStringSubmatch(text, -1)
	require.NotEmpty(t, rgb)
	for _, m := range rgb {
		require.Equal(t, "ok", m[2], m[1])
	}
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, "RESULT weft_h264_s") {
			require.Contains(t, l, "frame_copy_bytes=0 ")
		}
	}
	require.Contains(t, text, "RESULT weft_h264_s2=")
}
