package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"iter"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/weftdata/weft/client"
	"github.com/weftdata/weft/tables"
)

var errUsage = errors.New("usage")

// endpointResult is what one DoGet stream delivered.
type endpointResult struct {
	Endpoint   int     `json:"endpoint"`
	Rows       int64   `json:"rows"`
	Steps      int64   `json:"steps"` // record batches received (whole steps, for runs)
	Bytes      int64   `json:"bytes"` // Arrow buffer bytes of the batches
	Secs       float64 `json:"secs"`  // DoGet to end of stream
	FirstBatch float64 `json:"first_batch_s"`
	FirstStep  *int64  `json:"first_step,omitempty"` // app_metadata "step" of the first batch, when present
	LastStep   *int64  `json:"last_step,omitempty"`
}

// readRunResult is the one object read-run prints.
type readRunResult struct {
	Kind       string           `json:"kind"`
	Addr       string           `json:"addr"`
	Run        string           `json:"run,omitempty"` // from the FlightInfo's app_metadata, when it has one
	Endpoints  int              `json:"endpoints"`
	Rows       int64            `json:"rows"`
	Steps      int64            `json:"steps"`
	Bytes      int64            `json:"bytes"`
	Secs       float64          `json:"secs"` // GetFlightInfo to the end of the last stream
	InfoSecs   float64          `json:"info_s"`
	FirstBatch float64          `json:"first_batch_s"` // GetFlightInfo to the first batch of any stream
	RowsPerSec float64          `json:"rows_per_s"`
	MBPerSec   float64          `json:"mb_per_s"`
	PerStream  []endpointResult `json:"per_endpoint"`
}

func readRun(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("read-run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:8815", "flightd address HOST:PORT")
	cmd := fs.String("cmd", "", `command descriptor JSON, e.g. {"run":"ID","world_size":2} or {"recipe":{...}}`)
	maxMsg := fs.Int("max-message-size", 1<<30, "largest gRPC message the client accepts (bytes)")
	sequential := fs.Bool("sequential", false, "read the endpoints one after another instead of concurrently")
	maxSteps := fs.Int64("max-steps", 0, "stop each stream after this many batches (0: read to the end)")
	if err := fs.Parse(args); err != nil {
		return errUsage
	}
	if *cmd == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "read-run: --cmd is required and takes no arguments")
		return errUsage
	}
	var command client.Command
	if err := client.Decode("--cmd", []byte(*cmd), &command); err != nil {
		return err
	}
	c, err := client.Dial(*addr, client.Options{MaxRecvMessageBytes: *maxMsg})
	if err != nil {
		return err
	}
	defer c.Close()

	start := time.Now()
	var streams []func(context.Context) iter.Seq2[arrow.RecordBatch, int64]
	res := readRunResult{Kind: "read-run", Addr: *addr}
	errs := []error{}
	var errMu sync.Mutex
	fail := func(err error) {
		errMu.Lock()
		errs = append(errs, err)
		errMu.Unlock()
	}
	if command.Scan != nil {
		plan, err := c.Scan(ctx, *command.Scan)
		if err != nil {
			return fmt.Errorf("GetFlightInfo: %w", err)
		}
		for _, ep := range plan.Endpoints {
			streams = append(streams, func(ctx context.Context) iter.Seq2[arrow.RecordBatch, int64] {
				return func(yield func(arrow.RecordBatch, int64) bool) {
					for rec, err := range c.Read(ctx, ep) {
						if err != nil {
							fail(err)
							return
						}
						if !yield(rec, -1) {
							return
						}
					}
				}
			})
		}
	} else {
		plan, err := c.PlanRun(ctx, command.RunCommand)
		if err != nil {
			return fmt.Errorf("GetFlightInfo: %w", err)
		}
		res.Run = plan.Record.Run
		for _, ep := range plan.Ranks {
			streams = append(streams, func(ctx context.Context) iter.Seq2[arrow.RecordBatch, int64] {
				return func(yield func(arrow.RecordBatch, int64) bool) {
					for st, err := range c.ReadRank(ctx, ep) {
						if err != nil {
							fail(err)
							return
						}
						if !yield(st.Batch, st.Step) {
							return
						}
					}
				}
			})
		}
	}
	res.Endpoints, res.InfoSecs = len(streams), time.Since(start).Seconds()

	res.PerStream = make([]endpointResult, len(streams))
	var wg sync.WaitGroup
	for i, stream := range streams {
		read := func() {
			res.PerStream[i] = drainEndpoint(ctx, stream, *maxSteps)
			res.PerStream[i].Endpoint = i
		}
		if *sequential {
			read()
		} else {
			wg.Go(read)
		}
	}
	wg.Wait()
	res.Secs = time.Since(start).Seconds()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	res.FirstBatch = -1
	for _, e := range res.PerStream {
		res.Rows += e.Rows
		res.Steps += e.Steps
		res.Bytes += e.Bytes
	}
	// Time to the first batch of any stream, from GetFlightInfo: the info
	// time plus the stream's own wait (streams start together unless sequential).
	for i, e := range res.PerStream {
		if e.Steps == 0 {
			continue
		}
		t := res.InfoSecs + e.FirstBatch
		if *sequential {
			for _, prev := range res.PerStream[:i] {
				t += prev.Secs
			}
		}
		if res.FirstBatch < 0 || t < res.FirstBatch {
			res.FirstBatch = t
		}
	}
	if res.Secs > 0 {
		res.RowsPerSec = float64(res.Rows) / res.Secs
		res.MBPerSec = float64(res.Bytes) / 1e6 / res.Secs
	}
	return printJSON(stdout, res)
}

// drainEndpoint reads one stream to its end (or maxSteps batches, each a
// whole step for runs), counting rows, batches and Arrow buffer bytes; a
// stream's error is reported by the stream itself.
func drainEndpoint(ctx context.Context, stream func(context.Context) iter.Seq2[arrow.RecordBatch, int64], maxSteps int64) endpointResult {
	var out endpointResult
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	start := time.Now()
	for rec, step := range stream(ctx) {
		if out.Steps == 0 {
			out.FirstBatch = time.Since(start).Seconds()
		}
		out.Steps++
		out.Rows += rec.NumRows()
		out.Bytes += tables.RecordBytes(rec)
		if step >= 0 {
			if out.FirstStep == nil {
				out.FirstStep = &step
			}
			out.LastStep = &step
		}
		if maxSteps > 0 && out.Steps >= maxSteps {
			break
		}
	}
	out.Secs = time.Since(start).Seconds()
	return out
}
