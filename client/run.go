package client

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// RankEndpoint is one rank's stream of a planned run: read it with
// ReadRank.
type RankEndpoint struct {
	RankMetadata
	Ticket []byte
	// Locations: as Endpoint.Locations (rank r of a server started with
	// --advertise lists server r mod N first).
	Locations []string
}

// RunPlan is a run planned for a world size and a step range: the run
// record (every ref pinned to a commit), the schema of its batches (the
// recipe's columns, then _component int32 and _row int64) and one
// endpoint per rank.
type RunPlan struct {
	Record RunRecord
	Schema *arrow.Schema
	// Rows is the rows of all ranks over the step range.
	Rows  int64
	Ranks []RankEndpoint
}

// Resolve resolves a recipe into a run (the server stores its record) and
// plans it for world ranks from step 0.
func (c *Client) Resolve(ctx context.Context, recipe Recipe, world int) (*RunPlan, error) {
	return c.PlanRun(ctx, RunCommand{Recipe: &recipe, WorldSize: &world})
}

// Resume plans run (an id, or a unique prefix of 8+ of its hex digits)
// for world ranks from step start: how a trainer restarts, on any world
// size, on any server.
func (c *Client) Resume(ctx context.Context, run string, world int, start int64) (*RunPlan, error) {
	return c.PlanRun(ctx, RunCommand{Run: run, WorldSize: &world, StartStep: start})
}

// PlanRun sends any run command (e.g. with an end step).
func (c *Client) PlanRun(ctx context.Context, cmd RunCommand) (*RunPlan, error) {
	info, err := c.info(ctx, cmd)
	if err != nil {
		return nil, err
	}
	plan := &RunPlan{Rows: info.TotalRecords}
	if err := json.Unmarshal(info.AppMetadata, &plan.Record); err != nil {
		return nil, fmt.Errorf("%w: run record: %w", ErrBadResponse, err)
	}
	if plan.Schema, err = deserializeSchema(info.Schema, c); err != nil {
		return nil, err
	}
	for i, ep := range info.Endpoint {
		re := RankEndpoint{Ticket: ep.GetTicket().GetTicket(), Locations: locations(ep)}
		if err := json.Unmarshal(ep.AppMetadata, &re.RankMetadata); err != nil {
			return nil, fmt.Errorf("%w: endpoint %d app_metadata: %w", ErrBadResponse, i, err)
		}
		plan.Ranks = append(plan.Ranks, re)
	}
	return plan, nil
}

// Step is one step of a rank stream: the rank's slice of the step's global
// batch.
type Step struct {
	Run  string
	Step int64
	// Batch is the whole step, however many messages it came in (ReadRank;
	// nil from ReadRankParts). It is valid until the loop continues (Retain
	// it to keep it).
	Batch arrow.RecordBatch
	// Parts are the step's record batches as they arrived, in row order:
	// one per message, zero-copy (ReadRankParts; nil from ReadRank). Valid
	// until the loop continues.
	Parts []arrow.RecordBatch
	// Messages is how many Flight messages carried the step.
	Messages int
	// Slot is where the step lay in host shared memory (ReadRankShm);
	// nil for a step that came as Flight messages.
	Slot *SlotDescriptor
	// Device (delivery "cuda-ipc") is the step's video window columns in
	// device slots: one JSON descriptor per column (gpu.DeviceSlot,
	// docs/gpu.md), valid until the loop continues; the columns are not
	// in Batch. nil otherwise.
	Device []json.RawMessage
}

// Rows is the number of rows of the step.
func (s *Step) Rows() int64 {
	if s.Batch != nil {
		return s.Batch.NumRows()
	}
	var n int64
	for _, p := range s.Parts {
		n += p.NumRows()
	}
	return n
}

// ReadRank streams a rank's steps in order, one Step per step: a step the
// server sent as several messages (StepMetadata parts) is reassembled into
// one batch (Step.Batch; a copy of the step when it came in parts).
// Stopping the loop cancels the stream.
func (c *Client) ReadRank(ctx context.Context, ep RankEndpoint) iter.Seq2[*Step, error] {
	return c.readRank(ctx, ep, true)
}

// ReadRankParts is ReadRank without the reassembly: each Step holds the
// batches its messages carried (Step.Parts), so nothing is copied. A
// consumer that copies rows into its own buffers anyway (a tensor per
// column) should read this way.
func (c *Client) ReadRankParts(ctx context.Context, ep RankEndpoint) iter.Seq2[*Step, error] {
	return c.readSteps(ctx, ep.Ticket, false)
}

// ReadScanSteps streams the steps of an endpoint of a windowed scan
// (ScanRequest.Windows) in row order, one Step per step (Run empty, Step
// counting the endpoint's steps from 0), joined as ReadRank joins them:
// a step's video window columns refer to segments by step-wide index, so
// decode them per step, not per message. Stopping the loop cancels the
// stream.
func (c *Client) ReadScanSteps(ctx context.Context, ep Endpoint) iter.Seq2[*Step, error] {
	return c.readSteps(ctx, ep.Ticket, true)
}

func (c *Client) readRank(ctx context.Context, ep RankEndpoint, join bool) iter.Seq2[*Step, error] {
	return c.readSteps(ctx, ep.Ticket, join)
}

func (c *Client) readSteps(ctx context.Context, ticket []byte, join bool) iter.Seq2[*Step, error] {
	return func(yield func(*Step, error) bool) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		r, err := c.doGet(ctx, ticket)
		if err != nil {
			yield(nil, err)
			return
		}
		defer r.Release()
		j := &stepJoiner{c: c, join: join}
		defer j.release()
		for r.Next() {
			var meta StepMetadata
			if err := json.Unmarshal(r.LatestAppMetadata(), &meta); err != nil {
				yield(nil, fmt.Errorf("%w: step app_metadata: %w", ErrBadResponse, err))
				return
			}
			st, done, err := j.add(meta, r.RecordBatch())
			if err != nil {
				yield(nil, err)
				return
			}
			if st == nil {
				continue // more parts are due
			}
			ok := yield(st, nil)
			done()
			if !ok {
				return
			}
		}
		if err := r.Err(); err != nil {
			yield(nil, fromWire(err))
			return
		}
		if err := j.end(); err != nil {
			yield(nil, err)
		}
	}
}

// stepJoiner reassembles a stream's steps from its messages: a message
// whose StepMetadata has no Parts is a whole step; parts 0..Parts-1 of
// one step, in order, are one. ReadRank, ReadRankParts, ReadScanSteps
// and the exchange reader share it.
type stepJoiner struct {
	c        *Client
	join     bool                // one Batch per step (else Step.Parts)
	parts    []arrow.RecordBatch // of the step being joined, retained
	partStep int64
}

// add takes one message's batch (still the reader's) and returns the step
// it completes, or nil while parts are due. The step is valid until done
// is called; the caller calls done once it is through with it.
func (j *stepJoiner) add(meta StepMetadata, rec arrow.RecordBatch) (*Step, func(), error) {
	if meta.Parts == 0 {
		if len(j.parts) > 0 {
			return nil, nil, fmt.Errorf("%w: step %d ended after %d parts, before its last", ErrBadResponse, meta.Step, len(j.parts))
		}
		st := &Step{Run: meta.Run, Step: meta.Step, Messages: 1}
		if j.join {
			st.Batch = rec
		} else {
			st.Parts = []arrow.RecordBatch{rec}
		}
		return st, func() {}, nil
	}
	if len(j.parts) == 0 {
		j.partStep = meta.Step
	}
	if meta.Part != len(j.parts) || meta.Part >= meta.Parts || meta.Step != j.partStep {
		return nil, nil, fmt.Errorf("%w: step %d: got part %d of %d where part %d was due", ErrBadResponse, meta.Step, meta.Part, meta.Parts, len(j.parts))
	}
	rec.Retain()
	j.parts = append(j.parts, rec)
	if len(j.parts) < meta.Parts {
		return nil, nil, nil
	}
	if !j.join {
		parts := j.parts
		j.parts = nil
		return &Step{Run: meta.Run, Step: meta.Step, Parts: parts, Messages: meta.Parts}, func() {
			for _, p := range parts {
				p.Release()
			}
		}, nil
	}
	batch, err := concatBatches(j.c, j.parts)
	j.release()
	if err != nil {
		return nil, nil, fmt.Errorf("step %d: reassemble %d parts: %w", meta.Step, meta.Parts, err)
	}
	return &Step{Run: meta.Run, Step: meta.Step, Batch: batch, Messages: meta.Parts}, batch.Release, nil
}

// inside says whether a step's parts are being joined.
func (j *stepJoiner) inside() bool { return len(j.parts) > 0 }

// end is the stream's end: an error if it ended inside a step.
func (j *stepJoiner) end() error {
	if len(j.parts) > 0 {
		return fmt.Errorf("%w: the stream ended inside a step (after %d parts)", ErrBadResponse, len(j.parts))
	}
	return nil
}

// release drops the parts held.
func (j *stepJoiner) release() {
	for _, p := range j.parts {
		p.Release()
	}
	j.parts = j.parts[:0]
}

// concatBatches joins the parts of a step into one batch.
func concatBatches(c *Client, parts []arrow.RecordBatch) (arrow.RecordBatch, error) {
	if len(parts) == 1 {
		parts[0].Retain()
		return parts[0], nil
	}
	schema := parts[0].Schema()
	cols := make([]arrow.Array, schema.NumFields())
	defer func() {
		for _, col := range cols {
			if col != nil {
				col.Release()
			}
		}
	}()
	var rows int64
	for _, p := range parts {
		rows += p.NumRows()
	}
	chunk := make([]arrow.Array, len(parts))
	for i := range cols {
		for k, p := range parts {
			chunk[k] = p.Column(i)
		}
		col, err := array.Concatenate(chunk, c.mem)
		if err != nil {
			return nil, fmt.Errorf("column %q: %w", schema.Field(i).Name, err)
		}
		cols[i] = col
	}
	return array.NewRecordBatch(schema, cols, rows), nil
}
