// Command weftbench measures the physical limits the Python benchmark
// harness (bench/harness) compares loaders with, and reads Weft runs with a
// Go Flight client. Each subcommand prints one JSON object per result on
// stdout:
//
//	weftbench read-run --addr HOST:PORT --cmd JSON   GetFlightInfo + DoGet of every endpoint
//	weftbench flight-ceiling --rows N --row-bytes B   arrow-go Flight resending one prebuilt batch
//	weftbench decode FILE...                          arrow-go pqarrow sequential read of Parquet files
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

const usage = `usage: weftbench COMMAND [flags]

commands:
  read-run        GetFlightInfo with a command descriptor, then DoGet every endpoint
  flight-ceiling  arrow-go Flight on loopback resending one prebuilt record batch
  decode          arrow-go pqarrow sequential decode of Parquet files

weftbench COMMAND -h lists a command's flags. Results are JSON objects, one a line.
`

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	var err error
	switch args[0] {
	case "read-run":
		err = readRun(ctx, args[1:], stdout, stderr)
	case "flight-ceiling":
		err = flightCeiling(ctx, args[1:], stdout, stderr)
	case "decode":
		err = decode(ctx, args[1:], stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "weftbench: unknown command %q\n%s", args[0], usage)
		return 2
	}
	if err == errUsage {
		return 2
	}
	if err != nil {
		fmt.Fprintf(stderr, "weftbench %s: %v\n", args[0], err)
		return 1
	}
	return 0
}

// printJSON writes one result object on its own line.
func printJSON(w io.Writer, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", raw)
	return err
}
