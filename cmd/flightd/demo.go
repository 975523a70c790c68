package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/weftdata/weft/internal/demo"
)

func demoFlags(cfg *demo.Config, keep *bool) *flag.FlagSet {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.StringVar(&cfg.Dir, "store", "", "local `DIR` for the demo's store; it must not exist or be empty (default: a fresh temporary directory, removed at the end unless --keep)")
	fs.BoolVar(keep, "keep", false, "keep the temporary store directory")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `Usage: flightd demo [flags]

Tell Weft's story in under a minute, against an in-process Flight server on
a local-directory store: store two tables of synthetic grasp episodes, train
a 0.3/0.7 mix on 4 ranks, commit rows mid-run, resume on 8 ranks from a
saved step with identical batches, and measure throughput.

Flags:
`)
		fs.PrintDefaults()
	}
	return fs
}

func demoCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var cfg demo.Config
	var keep bool
	fs := demoFlags(&cfg, &keep)
	if done, code := parseFlags(fs, args, stdout, stderr); done {
		return code
	}
	dirGiven := cfg.Dir != ""
	if !dirGiven {
		dir, err := os.MkdirTemp("", "weft-demo-")
		if err != nil {
			fmt.Fprintf(stderr, "flightd demo: %v\n", err)
			return exitFail
		}
		cfg.Dir = dir
		if !keep {
			defer os.RemoveAll(dir)
		}
	} else if entries, err := os.ReadDir(cfg.Dir); err == nil && len(entries) > 0 {
		fmt.Fprintf(stderr, "flightd demo: --store %s is not empty; give a new or empty directory\n", cfg.Dir)
		return exitUsage
	}
	if err := demo.Run(ctx, cfg, stdout); err != nil {
		fmt.Fprintf(stderr, "flightd demo: %v\n", err)
		return exitFail
	}
	if keep || dirGiven {
		fmt.Fprintf(stderr, "the demo's store is in %s\n", cfg.Dir)
	}
	return exitOK
}
