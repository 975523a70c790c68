package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/weftdata/weft/client"
	"github.com/weftdata/weft/errdefs"
)

// trainerArgs are one trainer's parameters: the same JSON for the python
// child (gpu/check/trainer_child.py, argv[1]) and `weftgpu trainer --args`.
type trainerArgs struct {
	Location  string    `json:"location"` // grpc://HOST:PORT
	Project   string    `json:"project"`
	Table     string    `json:"table"`
	Seed      uint64    `json:"seed"`
	Batch     int       `json:"batch"`
	Frames    []int     `json:"frames"` // the video window's frame offsets
	Steps     int64     `json:"steps"`
	Secs      float64   `json:"secs"`
	Prefetch  int       `json:"prefetch"`
	Device    string    `json:"device"`              // python: "cuda", or "cpu" with the fake's device slots
	Normalize *normSpec `json:"normalize,omitempty"` // python: Video(normalize=, dtype=)
}

type normSpec struct {
	Mean  [3]float64 `json:"mean"`
	Std   [3]float64 `json:"std"`
	DType string     `json:"dtype"`
}

// trainerReport is what a trainer prints: READY after its first step,
// DONE after the measured seconds, ERROR when it cannot go on.
type trainerReport struct {
	Delivery string  `json:"delivery"`
	Fallback string  `json:"fallback,omitempty"`
	Steps    int64   `json:"steps"`
	Windows  int64   `json:"windows"`
	Frames   int64   `json:"frames"`
	Secs     float64 `json:"secs"`
	Shape    []int   `json:"shape,omitempty"`
	DType    string  `json:"dtype,omitempty"`
	Device   string  `json:"device,omitempty"`
	// Copies counts steps whose video tensor was not on the slot's memory
	// (python: the tensor's pointer is not the descriptor's); HostSteps
	// steps that came without device slots.
	Copies    int64 `json:"copies"`
	HostSteps int64 `json:"host_steps"`
	// FallbackStep is the step flightd refused mid-run on the GPU path,
	// from which the trainer read on with host slots (Fallback says why);
	// 0 with an empty Fallback: none.
	FallbackStep int64   `json:"fallback_step,omitempty"`
	ReadyS       float64 `json:"ready_s,omitempty"`
	Versions     string  `json:"versions,omitempty"`
	Error        string  `json:"error,omitempty"`
}

func emit(kind string, r trainerReport) {
	b, _ := json.Marshal(r)
	fmt.Printf("%s %s\n", kind, b)
}

// trainer is `weftgpu trainer --args JSON`: one rank of a run read with
// client.ReadRankExchange(DeliveryCudaIPC), for when the GPU machine has
// no python with torch. It does not open the IPC handles (Go has no CUDA
// here): it counts the steps whose video came in device slots and gives
// them back, so the rate is flightd's delivery alone.
func trainer(args []string) error {
	fs := flag.NewFlagSet("trainer", flag.ContinueOnError)
	js := fs.String("args", "", "the trainer's parameters (JSON, trainerArgs)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var a trainerArgs
	if err := json.Unmarshal([]byte(*js), &a); err != nil {
		return fmt.Errorf("trainer --args: %w", err)
	}
	if err := runTrainer(context.Background(), a); err != nil {
		emit("ERROR", trainerReport{Error: err.Error()})
		return err
	}
	return nil
}

func runTrainer(ctx context.Context, a trainerArgs) error {
	t0 := time.Now()
	c, err := client.Dial(strings.TrimPrefix(a.Location, "grpc://"), client.Options{})
	if err != nil {
		return err
	}
	defer c.Close()
	w := map[string]any{"frames": a.Frames}
	if n := a.Normalize; n != nil { // the python client's Video(normalize=, dtype=) on the wire
		w["normalize"] = map[string]any{"mean": n.Mean, "std": n.Std}
		w["dtype"] = n.DType
	}
	spec, err := json.Marshal(w)
	if err != nil {
		return err
	}
	recipe := client.Recipe{Seed: a.Seed, BatchSize: a.Batch, Steps: a.Steps, Components: []client.Component{{
		Project: a.Project, Table: a.Table, Weight: 1, Columns: []string{"episode_index"},
		Windows: map[string]client.Window{"cam": {Kind: "video", Spec: spec}}}}}
	run, err := c.Resolve(ctx, recipe, 1)
	if err != nil {
		return fmt.Errorf("resolve: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var r trainerReport
	r.Delivery = client.DeliveryCudaIPC
	ready := false
	var start, end time.Time
	go1 := make(chan struct{})
	// step takes one step; true: the measured seconds are over.
	step := func(st *client.Step) bool {
		rows := st.Batch.NumRows()
		if len(st.Device) == 0 {
			r.HostSteps++
		}
		if !ready {
			ready = true
			if len(st.Device) == 0 {
				r.Delivery = client.DeliveryShm
				if r.Fallback == "" { // (else: refused at its first step, and why)
					r.Fallback = "the first step came without device slots"
				}
			} else {
				var d struct {
					Shape []int  `json:"shape"`
					DType string `json:"dtype"`
				}
				_ = json.Unmarshal(st.Device[0], &d)
				r.Shape, r.DType = d.Shape, d.DType
			}
			r.ReadyS = time.Since(t0).Seconds()
			emit("READY", r)
			go func() { // the orchestrator's GO (or its end) starts the clock
				_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
				close(go1)
			}()
			<-go1
			r.HostSteps = 0
			start = time.Now()
			end = start.Add(time.Duration(a.Secs * float64(time.Second)))
			return false
		}
		r.Steps++
		r.Windows += rows
		r.Frames += rows * int64(len(a.Frames))
		return !time.Now().Before(end)
	}
	// A step flightd refuses mid-run on the GPU path (FAILED_PRECONDITION
	// "cuda-ipc delivery cannot serve this step", docs/gpu.md "Fallbacks":
	// say a stream this NVDEC will not decode) is read again from that
	// step with host slots (CPU decode), as the Python loader does, and the
	// report says so (Fallback, FallbackStep): the point is measured all
	// the same, its host steps counted apart.
	ep, delivery, next := run.Ranks[0], client.DeliveryCudaIPC, int64(0)
	for {
		var refused error
		over := false
		for st, err := range c.ReadRankExchange(ctx, ep, delivery) {
			if err != nil {
				if delivery == client.DeliveryCudaIPC && isRefusal(err) {
					refused = err
					break
				}
				return fmt.Errorf("step %d: %w", next, err)
			}
			next = st.Step + 1
			if over = step(st); over {
				break
			}
		}
		if refused == nil {
			break // the measured seconds are over, or the run ended
		}
		r.Delivery, r.FallbackStep = client.DeliveryShm, next
		r.Fallback = fmt.Sprintf("cuda-ipc: flightd refused step %d (%v); steps %d on came by shm (CPU decode)", next, refused, next)
		again, err := c.Resume(ctx, run.Record.Run, 1, next)
		if err != nil {
			return fmt.Errorf("resume at step %d after the refusal: %w", next, err)
		}
		ep, delivery = again.Ranks[0], client.DeliveryShm
	}
	if !ready {
		return errors.New("the run ended before its first step")
	}
	r.Secs = time.Since(start).Seconds()
	emit("DONE", r)
	return nil
}

// refusedStep is the text of flight.ErrUnavailableDelivery, which the wire
// keeps with its kind (FAILED_PRECONDITION): flightd cannot serve a step in
// device slots, and a client reads on from it with host slots.
const refusedStep = "cuda-ipc delivery cannot serve this step"

// isRefusal says whether err is flightd's mid-run refusal of a step on the
// GPU path.
func isRefusal(err error) bool {
	return errors.Is(err, errdefs.ErrFailedPrecondition) && strings.Contains(err.Error(), refusedStep)
}
