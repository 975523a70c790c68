package mix

import (
	"context"
	"fmt"
	"iter"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/weftdata/weft/sampler"
)

// Step is one step of a rank stream: the rank's rows of the global batch.
type Step struct {
	Step int64
	// Batch has the run's schema (Run.Schema) and B/W rows: the rows at
	// positions rank, rank+W, … of the step's global batch, in that order.
	// The receiver releases it.
	Batch arrow.RecordBatch
}

// Steps streams rank's slice of every step in [start, end) of run (end 0:
// the end of the run), in order, for world size world. The run's
// materializers start each step's reads up to Options.Prefetch steps
// ahead of the step being built. Stopping the loop, or cancelling ctx,
// stops all of the stream's work at once and releases everything it
// holds; a cancelled ctx ends the stream with ctx's error. A run that
// another engine made is served with this engine's materializers.
func (e *Engine) Steps(ctx context.Context, run *Run, rank, world int, start, end int64) iter.Seq2[Step, error] {
	return e.StepsInto(ctx, run, rank, world, start, end, nil)
}

// StepMemory gives a rank stream the memory each step is built in: a
// consumer that delivers a step from memory of its own (a host slot)
// has the step's columns gathered straight into it.
type StepMemory interface {
	// StepAllocator is called by the stream's builder, in step order,
	// before it builds step: the allocator of the step's column buffers
	// (materializers that implement PendingInto, _component and _row), or
	// nil for the engine's own. It may wait (for a free slot) and then
	// returns ctx's error when ctx ends; an error ends the stream. The
	// allocator's memory need not be zeroed. A step whose memory was
	// given but which the stream does not yield (it stopped or failed) is
	// not handed back: the StepMemory reclaims it when the stream ends.
	StepAllocator(ctx context.Context, step int64) (memory.Allocator, error)
}

// PendingInto is a Pending that can build its step's arrays with buffers
// from a given allocator (StepMemory's): Parquet rows do. Other
// materializers build with their own and their arrays are copied by the
// consumer.
type PendingInto interface {
	Pending
	// BuildInto is Build with the arrays' buffers from mem, which need
	// not be zeroed: write every byte a reader reads.
	BuildInto(ctx context.Context, mem memory.Allocator) ([]arrow.Array, error)
}

// StepsInto is Steps with each step built in the memory sm gives it
// (nil: the engine's).
func (e *Engine) StepsInto(ctx context.Context, run *Run, rank, world int, start, end int64, sm StepMemory) iter.Seq2[Step, error] {
	return func(yield func(Step, error) bool) {
		if err := run.CheckStream(rank, world, start, end); err != nil {
			yield(Step{}, err)
			return
		}
		if end == 0 {
			end = run.Steps()
		}
		run, err := e.own(ctx, run)
		if err != nil {
			yield(Step{}, err)
			return
		}
		s := &stream{
			e: e, mats: run.mats, schema: run.schema, component: true, memory: sm,
			name: "rank stream of run " + run.ID().Short(),
			samples: func(step int64, buf []sampler.Sample) ([]sampler.Sample, error) {
				out, err := run.plan.RankSlice(step, rank, world, buf)
				if err == nil {
					run.tableRows(out)
				}
				return out, err
			},
		}
		s.serve(ctx, start, end, yield)
	}
}

// serve runs s's steps [start, end) through yield: the planner starts
// each step's materializers up to Options.Prefetch steps ahead of the
// builder. It returns when yield stops, the steps end or one fails, having
// released everything the stream held.
func (s *stream) serve(ctx context.Context, start, end int64, yield func(Step, error) bool) {
	e := s.e
	s.loads = newLoads(e.opts.ReadAhead)
	ctx, cancel := context.WithCancel(ctx)
	planned := make(chan *plannedStep, e.opts.Prefetch)
	built := make(chan builtStep, 1)
	var wg sync.WaitGroup
	wg.Go(func() { s.planner(ctx, start, end, planned) })
	wg.Go(func() { s.builder(ctx, cancel, planned, built) })
	defer func() {
		cancel()
		for b := range built {
			if b.rec != nil {
				b.rec.Release()
			}
		}
		wg.Wait()
		s.loads.wait()
	}()
	next := start
	for b := range built {
		if b.err != nil {
			yield(Step{}, b.err)
			return
		}
		next++
		if !yield(Step{Step: b.step, Batch: b.rec}, nil) {
			return
		}
	}
	if next < end {
		err := ctx.Err()
		if err == nil {
			err = fmt.Errorf("%s stopped at step %d", s.name, next)
		}
		yield(Step{}, err)
	}
}

// stream is the state of one stream of steps: a rank stream of a run, or
// a windowed scan's row range.
type stream struct {
	e      *Engine
	name   string // for messages
	mats   []Materializer
	schema *arrow.Schema // the materializers' fields, then [_component,] _row
	// samples returns the samples of a step in position order (appended to
	// buf[:0]).
	samples func(step int64, buf []sampler.Sample) ([]sampler.Sample, error)
	// component: the batches carry _component (runs) before _row.
	component bool
	loads     *Loads     // the stream's background reads
	memory    StepMemory // nil: steps are built in the engine's memory
}

// plannedStep is a step whose samples are known and whose materializers
// have started their work.
type plannedStep struct {
	step    int64
	err     error
	comps   []int32   // per output row: component
	rows    []int64   // per output row: row ordinal
	pending []Pending // per materializer
}

func (p *plannedStep) release() {
	for _, pd := range p.pending {
		pd.Release()
	}
	p.pending = nil
}

type builtStep struct {
	step int64
	rec  arrow.RecordBatch
	err  error
}

// planner computes the samples of each step and has the materializers
// start on them, up to Prefetch steps ahead of the builder.
func (s *stream) planner(ctx context.Context, start, end int64, out chan<- *plannedStep) {
	defer close(out)
	var samples []sampler.Sample
	for step := start; step < end; step++ {
		if ctx.Err() != nil {
			return
		}
		var ps *plannedStep
		ps, samples = s.plan(ctx, step, samples)
		select {
		case out <- ps:
		case <-ctx.Done():
			ps.release()
			return
		}
		if ps.err != nil {
			return
		}
	}
}

func (s *stream) plan(ctx context.Context, step int64, samples []sampler.Sample) (*plannedStep, []sampler.Sample) {
	ps := &plannedStep{step: step}
	samples, err := s.samples(step, samples)
	if err != nil {
		ps.err = err
		return ps, samples
	}
	ps.comps, ps.rows = make([]int32, len(samples)), make([]int64, len(samples))
	for t, smp := range samples {
		ps.comps[t], ps.rows[t] = smp.Component, smp.Row
	}
	ps.pending = make([]Pending, len(s.mats))
	for i, m := range s.mats {
		ps.pending[i] = m.Prefetch(ctx, s.loads, samples)
	}
	return ps, samples
}

// builder builds each planned step's batch. After an error it cancels the
// stream, so the planner stops planning and fetching at once instead of
// running ahead of the Prefetch bound while the error reaches the
// consumer.
func (s *stream) builder(ctx context.Context, cancel context.CancelFunc, in <-chan *plannedStep, out chan<- builtStep) {
	defer close(out)
	defer func() {
		for ps := range in {
			ps.release()
		}
	}()
	for ps := range in {
		var rec arrow.RecordBatch
		err := ps.err
		var mem memory.Allocator
		if err == nil && s.memory != nil {
			mem, err = s.memory.StepAllocator(ctx, ps.step)
		}
		if err == nil {
			rec, err = s.build(ctx, ps, mem)
		}
		ps.release()
		if err != nil {
			if ctx.Err() == nil {
				select {
				case out <- builtStep{step: ps.step, err: fmt.Errorf("step %d: %w", ps.step, err)}:
				case <-ctx.Done():
				}
			}
			cancel()
			return
		}
		select {
		case out <- builtStep{step: ps.step, rec: rec}:
		case <-ctx.Done():
			rec.Release()
			return
		}
	}
}

// build has each materializer build its columns of the step, in schema
// order, and appends _component (runs only) and _row; with mem (the
// step's memory, StepMemory), those that can build in it.
func (s *stream) build(ctx context.Context, ps *plannedStep, mem memory.Allocator) (arrow.RecordBatch, error) {
	n := len(ps.comps)
	cols := make([]arrow.Array, 0, s.schema.NumFields())
	defer func() {
		for _, c := range cols {
			c.Release()
		}
	}()
	for i, pd := range ps.pending {
		var (
			arrs []arrow.Array
			err  error
		)
		if pi, ok := pd.(PendingInto); ok && mem != nil {
			arrs, err = pi.BuildInto(ctx, mem)
		} else {
			arrs, err = pd.Build(ctx)
		}
		cols = append(cols, arrs...)
		if err != nil {
			return nil, err
		}
		if want := len(s.mats[i].Fields()); len(arrs) != want {
			return nil, fmt.Errorf("materializer %d made %d columns, not %d", i, len(arrs), want)
		}
		for k, a := range arrs {
			f := s.mats[i].Fields()[k]
			if a.Len() != n || !arrow.TypeEqual(a.DataType(), f.Type) {
				return nil, fmt.Errorf("materializer %d made %d rows of %s for column %q (%s), for %d samples", i, a.Len(), a.DataType(), f.Name, f.Type, n)
			}
		}
	}
	if mem == nil {
		mem = s.e.mem
	}
	if s.component {
		cols = append(cols, fixedColumn(mem, arrow.PrimitiveTypes.Int32, arrow.Int32Traits.CastToBytes(ps.comps), n))
	}
	cols = append(cols, fixedColumn(mem, arrow.PrimitiveTypes.Int64, arrow.Int64Traits.CastToBytes(ps.rows), n))
	return array.NewRecordBatch(s.schema, cols, int64(n)), nil
}

// fixedColumn is an array of n values of the fixed-width type dt, without
// nulls, whose bytes are a copy of values, in a buffer from mem.
func fixedColumn(mem memory.Allocator, dt arrow.DataType, values []byte, n int) arrow.Array {
	buf := memory.NewResizableBuffer(mem)
	buf.Resize(len(values))
	copy(buf.Bytes(), values)
	d := array.NewData(dt, n, []*memory.Buffer{nil, buf}, nil, 0, 0)
	buf.Release()
	a := array.MakeFromData(d)
	d.Release()
	return a
}
