package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// Exit codes.
const (
	exitOK    = 0
	exitFail  = 1 // the server failed while running
	exitUsage = 2 // a bad flag or argument, or an unusable store or address
)

const usage = `flightd: Weft's training-data server.

Usage:
  flightd serve [flags]    serve the Arrow Flight protocol over a store
  flightd admin COMMAND    tokens, ticket keys and garbage collection of a store (see 'flightd admin --help')
  flightd import FORMAT SRC --project P --table T   import a dataset (wds, mds, …) as one commit
  flightd demo [flags]     tell Weft's story in under a minute (a local store, a mix on 4 then 8 ranks)
  flightd help [command]   show help (also: flightd --help, flightd serve --help)

Run 'flightd serve --help' or 'flightd demo --help' for their flags.
`

// run is the whole program, minus the process: it returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "flightd: no command given; use 'flightd serve' (see 'flightd --help')")
		return exitUsage
	}
	switch cmd := args[0]; cmd {
	case "serve":
		return serveCommand(ctx, args[1:], stdout, stderr)
	case "demo":
		return demoCommand(ctx, args[1:], stdout, stderr)
	case "admin":
		return adminCommand(ctx, args[1:], stdout, stderr)
	case "import":
		return importCommand(ctx, args[1:], stdout, stderr)
	case "help", "-h", "-help", "--help":
		if len(args) > 1 && args[1] == "serve" {
			return serveCommand(ctx, []string{"--help"}, stdout, stderr)
		}
		if len(args) > 1 && args[1] == "import" {
			return importCommand(ctx, []string{"--help"}, stdout, stderr)
		}
		if len(args) > 1 && args[1] == "demo" {
			return demoCommand(ctx, []string{"--help"}, stdout, stderr)
		}
		fmt.Fprint(stdout, usage)
		return exitOK
	default:
		fmt.Fprintf(stderr, "flightd: unknown command %q; commands: serve, import, demo, admin, help (see 'flightd --help')\n", cmd)
		return exitUsage
	}
}

// parseFlags parses args into fs; it returns (done, code): done when the
// program should exit with code (help was shown, or a flag was bad).
func parseFlags(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) (bool, int) {
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fs.SetOutput(stdout)
		fs.Usage()
		return true, exitOK
	case err != nil:
		fmt.Fprintf(stderr, "flightd %s: %v (see 'flightd %s --help')\n", fs.Name(), err, fs.Name())
		return true, exitUsage
	case fs.NArg() > 0:
		fmt.Fprintf(stderr, "flightd %s: unexpected argument %q (see 'flightd %s --help')\n", fs.Name(), fs.Arg(0), fs.Name())
		return true, exitUsage
	}
	return false, exitOK
}

// byteSize is a flag.Value for sizes like 256MiB, 3MiB, 64KiB or 1048576.
type byteSize int64

func (b *byteSize) String() string { return formatBytes(int64(*b)) }

func (b *byteSize) Set(s string) error {
	units := []struct {
		suffix string
		mult   int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"B", 1}}
	mult := int64(1)
	num := s
	for _, u := range units {
		if strings.HasSuffix(s, u.suffix) {
			num, mult = strings.TrimSuffix(s, u.suffix), u.mult
			break
		}
	}
	var n int64
	if _, err := fmt.Sscanf(num, "%d", &n); err != nil || fmt.Sprint(n) != num || n < 0 {
		return fmt.Errorf("%q is not a size; write e.g. 256MiB, 64KiB or 1048576", s)
	}
	if n > (1<<62)/mult {
		return fmt.Errorf("%q is too large", s)
	}
	*b = byteSize(n * mult)
	return nil
}

func formatBytes(n int64) string {
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.mult && n%u.mult == 0 {
			return fmt.Sprintf("%d%s", n/u.mult, u.suffix)
		}
	}
	return fmt.Sprint(n)
}
