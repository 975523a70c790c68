package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/weftdata/weft/internal/s3test"
)

func TestMain(m *testing.M) {
	// The end-to-end tests run this binary as flightd (see startFlightd).
	if os.Getenv(asFlightd) == "1" {
		main()
	}
	code := s3test.Main(m)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goroutine leak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// syncBuffer is a bytes.Buffer safe for the server's logger and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestHelp(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"-h"}, {"help"}} {
		var out, errOut bytes.Buffer
		require.Equal(t, exitOK, run(context.Background(), args, &out, &errOut))
		require.Contains(t, out.String(), "flightd serve")
	}
	for _, args := range [][]string{{"admin", "--help"}, {"admin", "token", "--help"}, {"admin", "ticket-key", "-h"}} {
		var out, errOut bytes.Buffer
		require.Equal(t, exitOK, run(context.Background(), args, &out, &errOut), errOut.String())
		require.Contains(t, out.String(), "token create")
		require.Contains(t, out.String(), "ticket-key rotate")
	}
	var out, errOut bytes.Buffer
	require.Equal(t, exitOK, run(context.Background(), []string{"serve", "--help"}, &out, &errOut))
	for _, flag := range []string{"store", "addr", "log-level", "log-format", "s3-endpoint", "s3-access-key", "s3-secret-key", "s3-region", "max-message-size", "scan-batch-size", "scan-endpoint-size", "scan-prefetch", "shutdown-grace", "row-group-rows", "row-group-size", "commit-attempts", "cache-size", "mix-prefetch", "memory-limit"} {
		require.Contains(t, out.String(), "-"+flag+" ")
	}
}

func TestBadInvocations(t *testing.T) {
	for _, args := range [][]string{
		{}, {"nope"}, {"serve", "--nope"}, {"serve", "x"}, {"serve", "--log-level", "loud"}, {"serve", "--log-format", "xml"},
		{"serve", "--max-message-size", "1KiB"}, {"serve", "--scan-batch-size", "-1"}, {"serve", "--row-group-rows", "0"}, {"serve", "--commit-attempts", "0"}, {"serve", "--cache-size", "lots"}, {"serve", "--mix-prefetch", "-1"}, {"demo", "--nope"}, {"demo", "x"},
		{"serve", "--store", "gopher://x"}, {"serve", "--store", ""},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			var out, errOut bytes.Buffer
			require.Equal(t, exitUsage, run(context.Background(), args, &out, &errOut))
			require.Len(t, strings.Split(strings.TrimSpace(errOut.String()), "\n"), 1, errOut.String())
		})
	}
}

func TestByteSize(t *testing.T) {
	for in, want := range map[string]int64{"0": 0, "1048576": 1 << 20, "64KiB": 64 << 10, "3MiB": 3 << 20, "2GiB": 2 << 30, "7B": 7} {
		var b byteSize
		require.NoError(t, b.Set(in), in)
		require.Equal(t, want, int64(b), in)
	}
	for _, in := range []string{"", "MiB", "1.5MiB", "-1", "12XB", "1 MiB", "99999999999GiB"} {
		var b byteSize
		require.Error(t, b.Set(in), in)
	}
}

// TestServeUntilCancelled: serve starts, logs its address, and returns 0
// when its context ends (as on SIGTERM).
func TestServeUntilCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var out, errOut syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--store", t.TempDir(), "--addr", "127.0.0.1:0", "--log-format", "json"}, &out, &errOut)
	}()
	require.Eventually(t, func() bool { return strings.Contains(errOut.String(), `"msg":"serving"`) }, 20*time.Second, 10*time.Millisecond)
	cancel()
	select {
	case code := <-done:
		require.Equal(t, exitOK, code, errOut.String())
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not return after its context ended")
	}
	require.Contains(t, errOut.String(), `"msg":"stopped"`)
}

// TestDemo: the demo tells its story and every resumed step is identical.
func TestDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("the demo writes 90k rows: skipped with -short")
	}
	var out, errOut bytes.Buffer
	dir := t.TempDir()
	require.Equal(t, exitOK, run(context.Background(), []string{"demo", "--store", dir}, &out, &errOut), errOut.String())
	s := out.String()
	require.Equal(t, 6, strings.Count(s, "identical"), s)
	require.NotContains(t, s, "DIFFERENT")
	require.Contains(t, s, "failed 19 (29.7%)  nominal 45 (70.3%)")
	require.Contains(t, s, "Throughput: 90432 samples")
	require.Contains(t, errOut.String(), dir)

	// A non-empty store is refused.
	errOut.Reset()
	require.Equal(t, exitUsage, run(context.Background(), []string{"demo", "--store", dir}, &out, &errOut))
	require.Contains(t, errOut.String(), "not empty")
}
