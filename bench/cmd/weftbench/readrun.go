package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"sync"
	"time"

	arrowflight "github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/weftdata/weft/tables"
)

var errUsage = errors.New("usage")

// endpointResult is what one DoGet stream delivered.
type endpointResult struct {
	Endpoint   int     `json:"endpoint"`
	Rows       int64   `json:"rows"`
	Steps      int64   `json:"steps"` // record batches received
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
	if !json.Valid([]byte(*cmd)) {
		return fmt.Errorf("--cmd is not valid JSON: %s", *cmd)
	}
	c, err := arrowflight.NewClientWithMiddleware(*addr, nil, nil,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(*maxMsg)))
	if err != nil {
		return fmt.Errorf("dial %s: %w", *addr, err)
	}
	defer c.Close()

	start := time.Now()
	info, err := c.GetFlightInfo(ctx, &arrowflight.FlightDescriptor{Type: arrowflight.DescriptorCMD, Cmd: []byte(*cmd)})
	if err != nil {
		return fmt.Errorf("GetFlightInfo: %w", err)
	}
	res := readRunResult{Kind: "read-run", Addr: *addr, Endpoints: len(info.Endpoint), InfoSecs: time.Since(start).Seconds()}
	var meta struct {
		Run string `json:"run"`
	}
	if len(info.AppMetadata) > 0 && json.Unmarshal(info.AppMetadata, &meta) == nil {
		res.Run = meta.Run
	}

	res.PerStream = make([]endpointResult, len(info.Endpoint))
	errs := make([]error, len(info.Endpoint))
	var wg sync.WaitGroup
	for i, ep := range info.Endpoint {
		read := func() {
			res.PerStream[i], errs[i] = drainEndpoint(ctx, c, ep.Ticket, *maxSteps)
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

// drainEndpoint reads one ticket's stream to its end (or maxSteps batches),
// counting rows, batches and Arrow buffer bytes.
func drainEndpoint(ctx context.Context, c arrowflight.Client, t *arrowflight.Ticket, maxSteps int64) (endpointResult, error) {
	var out endpointResult
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	start := time.Now()
	stream, err := c.DoGet(ctx, t)
	if err != nil {
		return out, fmt.Errorf("DoGet: %w", err)
	}
	r, err := arrowflight.NewRecordReader(stream)
	if err != nil {
		return out, fmt.Errorf("DoGet: %w", err)
	}
	defer r.Release()
	for r.Next() {
		rec := r.RecordBatch()
		if out.Steps == 0 {
			out.FirstBatch = time.Since(start).Seconds()
		}
		out.Steps++
		out.Rows += rec.NumRows()
		out.Bytes += tables.RecordBytes(rec)
		if step, ok := stepOf(r.LatestAppMetadata()); ok {
			if out.FirstStep == nil {
				out.FirstStep = &step
			}
			out.LastStep = &step
		}
		if maxSteps > 0 && out.Steps >= maxSteps {
			out.Secs = time.Since(start).Seconds()
			return out, nil
		}
	}
	out.Secs = time.Since(start).Seconds()
	if err := r.Err(); err != nil {
		return out, fmt.Errorf("DoGet stream: %w", err)
	}
	return out, nil
}

// stepOf reads the "step" of a rank batch's app_metadata.
func stepOf(meta []byte) (int64, bool) {
	if len(meta) == 0 {
		return 0, false
	}
	var m struct {
		Step *int64 `json:"step"`
	}
	if json.Unmarshal(meta, &m) != nil || m.Step == nil {
		return 0, false
	}
	return *m.Step, true
}
