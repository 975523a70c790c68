package s3test

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestServers(t *testing.T) {
	for _, start := range []func(testing.TB) *Server{StartMinIO, StartVersityGW} {
		s := start(t)
		t.Run(s.Name, func(t *testing.T) {
			ctx := t.Context()
			b := s.NewBucket(t, "Test Servers/"+s.Name)
			_, err := b.Put(ctx, "k", strings.NewReader("v"), 1)
			require.NoError(t, err)
			data, _, err := b.Get(ctx, "k")
			require.NoError(t, err)
			require.Equal(t, "v", string(data))

			// A second bucket with the same name is a new, empty one.
			b2 := s.NewBucket(t, "Test Servers/"+s.Name)
			for _, err := range b2.List(ctx, "") {
				require.NoError(t, err)
				t.Fatal("a new bucket is not empty")
			}
			require.Equal(t, s.Endpoint, s.Config("x").Endpoint)

			pid := s.cmd.Process.Pid
			require.NoError(t, s.Stop())
			require.NoError(t, s.Stop(), "Stop twice")
			require.ErrorIs(t, syscall.Kill(pid, 0), syscall.ESRCH, "the server process is gone")
		})
	}
}

// recordTB records Skipf and Fatalf instead of acting on them.
type recordTB struct {
	testing.TB
	skipped, fatal string
}

func (r *recordTB) Helper() {}
func (r *recordTB) Skipf(format string, args ...any) {
	r.skipped = fmt.Sprintf(format, args...)
	runtime.Goexit()
}
func (r *recordTB) Fatalf(format string, args ...any) {
	r.fatal = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func TestMissingBinary(t *testing.T) {
	empty := t.TempDir()
	t.Setenv("WEFT_TOOLS_BIN", empty)
	t.Setenv("HOME", empty)
	t.Setenv("PATH", empty)
	run := func() *recordTB {
		r := &recordTB{TB: t}
		done := make(chan struct{})
		go func() {
			defer close(done)
			requireBinary(r, minioKind)
		}()
		<-done
		return r
	}
	t.Setenv("CI", "")
	r := run()
	require.Contains(t, r.skipped, "SKIPPING S3 TESTS")
	require.Contains(t, r.skipped, "make tools")
	require.Empty(t, r.fatal)
	t.Setenv("CI", "true")
	r = run()
	require.Contains(t, r.fatal, "S3 TESTS CANNOT RUN ON CI")
	require.Contains(t, r.fatal, minioKind.module)
	require.Empty(t, r.skipped)
}

func TestFindBinaryOrder(t *testing.T) {
	tools, home, path := t.TempDir(), t.TempDir(), t.TempDir()
	for _, d := range []string{tools, filepath.Join(home, ".cache", "weft", "bin"), path} {
		require.NoError(t, os.MkdirAll(d, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(d, "fake-server"), []byte("#!/bin/sh\n"), 0o755))
	}
	t.Setenv("WEFT_TOOLS_BIN", tools)
	t.Setenv("HOME", home)
	t.Setenv("PATH", path)
	got, _ := findBinary("fake-server")
	require.Equal(t, filepath.Join(tools, "fake-server"), got)
	require.NoError(t, os.Remove(got))
	got, _ = findBinary("fake-server")
	require.Equal(t, filepath.Join(home, ".cache", "weft", "bin", "fake-server"), got)
	require.NoError(t, os.Remove(got))
	got, _ = findBinary("fake-server")
	require.Equal(t, filepath.Join(path, "fake-server"), got)
	require.NoError(t, os.Remove(got))
	got, where := findBinary("fake-server")
	require.Empty(t, got)
	require.Contains(t, where, tools)
}
