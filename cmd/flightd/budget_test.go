package main

import (
	"io"
	"testing"
)

// TestDefaultMemoryLimit: without --memory-limit, every --cache-size
// starts, and the budget is the cache plus memoryHeadroom whatever the
// received data's allowance (--max-calls and the others) is.
func TestDefaultMemoryLimit(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"defaults", nil},
		{"small cache", []string{"--cache-size", "16MiB"}},
		{"no cache", []string{"--cache-size", "0"}},
		{"more calls", []string{"--cache-size", "128MiB", "--max-calls", "4096", "--stream-window", "1MiB"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var cfg serveConfig
			fs := serveFlags(&cfg)
			fs.SetOutput(io.Discard)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			b, err := cfg.budget()
			if err != nil {
				t.Fatalf("the default limit for %v: %v", tc.args, err)
			}
			if got, want := b.Stats().Total, cfg.mix.CacheBytes+memoryHeadroom; got != want {
				t.Errorf("budget %d, want the cache %d + %d", got, cfg.mix.CacheBytes, int64(memoryHeadroom))
			}
		})
	}
	t.Run("explicit limit too small", func(t *testing.T) {
		var cfg serveConfig
		fs := serveFlags(&cfg)
		fs.SetOutput(io.Discard)
		if err := fs.Parse([]string{"--memory-limit", "600MiB"}); err != nil {
			t.Fatal(err)
		}
		if _, err := cfg.budget(); err == nil {
			t.Fatal("a 600MiB limit with the default allowance (336MiB) and overhead (192MiB) was accepted")
		}
	})
}
