package mix

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/weftdata/weft/internal/cache"
	"github.com/weftdata/weft/sampler"
	"github.com/weftdata/weft/tables"
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
// the end of the run), in order, for world size world. Blocks come from the
// engine's shared cache; the blocks of the next Options.Prefetch steps are
// read while a step is built. Stopping the loop, or cancelling ctx, stops
// all of the stream's work at once and releases everything it holds; a
// cancelled ctx ends the stream with ctx's error.
func (e *Engine) Steps(ctx context.Context, run *Run, rank, world int, start, end int64) iter.Seq2[Step, error] {
	return func(yield func(Step, error) bool) {
		if err := run.CheckStream(rank, world, start, end); err != nil {
			yield(Step{}, err)
			return
		}
		if end == 0 {
			end = run.Steps()
		}
		ctx, cancel := context.WithCancel(ctx)
		s := &stream{e: e, run: run, rank: rank, world: world, sem: make(chan struct{}, e.opts.ReadAhead)}
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
			s.loads.Wait()
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
				err = fmt.Errorf("rank stream of run %s stopped at step %d", run.ID().Short(), next)
			}
			yield(Step{}, err)
		}
	}
}

// stream is the state of one rank stream.
type stream struct {
	e     *Engine
	run   *Run
	rank  int
	world int
	sem   chan struct{} // bounds the stream's block reads in flight
	loads sync.WaitGroup
}

// future is a block being fetched for one step: once done, h pins the
// decoded block in the engine's cache (or err says why not).
type future struct {
	done chan struct{}
	h    *cache.Handle[blockKey, arrow.RecordBatch]
	err  error
	comp int32
	blk  int
}

// release waits for the fetch and unpins the block.
func (f *future) release() {
	<-f.done
	if f.h != nil {
		f.h.Release()
		f.h = nil
	}
}

// plannedStep is a step whose samples are known and whose blocks are being
// fetched.
type plannedStep struct {
	step  int64
	err   error
	comps []int32 // per output row: component
	rows  []int64 // per output row: row ordinal
	src   []int32 // per output row: index into futs
	off   []int64 // per output row: offset in the block
	futs  []*future
}

func (p *plannedStep) release() {
	for _, f := range p.futs {
		f.release()
	}
	p.futs = nil
}

type builtStep struct {
	step int64
	rec  arrow.RecordBatch
	err  error
}

// planner computes the samples of each step and starts fetching their
// blocks, up to Prefetch steps ahead of the builder.
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
	samples, err := s.run.plan.RankSlice(step, s.rank, s.world, samples)
	if err != nil {
		ps.err = err
		return ps, samples
	}
	n := len(samples)
	ps.comps, ps.rows = make([]int32, n), make([]int64, n)
	ps.src, ps.off = make([]int32, n), make([]int64, n)
	idx := make(map[uint64]int32, 16)
	for t, smp := range samples {
		c := s.run.comps[smp.Component]
		b, off := c.locate(smp.Row)
		k := uint64(smp.Component)<<32 | uint64(b)
		fi, ok := idx[k]
		if !ok {
			fi = int32(len(ps.futs))
			idx[k] = fi
			ps.futs = append(ps.futs, s.fetch(ctx, smp.Component, b))
		}
		ps.comps[t], ps.rows[t] = smp.Component, smp.Row
		ps.src[t], ps.off[t] = fi, off
	}
	return ps, samples
}

// fetch starts getting block b of component comp: at once from the cache,
// or by a read that waits for a slot of the stream's ReadAhead.
func (s *stream) fetch(ctx context.Context, comp int32, b int) *future {
	c := s.run.comps[comp]
	key := c.keys[b]
	f := &future{done: make(chan struct{}), comp: comp, blk: b}
	if h := s.e.cache.Peek(key); h != nil {
		f.h = h
		close(f.done)
		return f
	}
	ref, v, data := c.blocks[b], c.version, s.run.data
	s.loads.Add(1)
	go func() {
		defer s.loads.Done()
		defer close(f.done)
		select {
		case s.sem <- struct{}{}:
		case <-ctx.Done():
			f.err = ctx.Err()
			return
		}
		defer func() { <-s.sem }()
		f.h, f.err = s.e.cache.Get(ctx, key, func(lctx context.Context) (arrow.RecordBatch, int64, error) {
			return s.e.decode(lctx, v, ref, data)
		})
	}()
	return f
}

// builder gathers each planned step's rows into its batch. After an error
// it cancels the stream, so the planner stops planning and fetching at once
// instead of running ahead of the Prefetch bound while the error reaches the
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
		if err == nil {
			rec, err = s.build(ctx, ps)
		}
		ps.release()
		if err != nil {
			if ctx.Err() == nil {
				select {
				case out <- builtStep{step: ps.step, err: err}:
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

// build waits for a step's blocks and gathers its rows.
func (s *stream) build(ctx context.Context, ps *plannedStep) (arrow.RecordBatch, error) {
	for _, f := range ps.futs {
		select {
		case <-f.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if f.err != nil {
			c := s.run.comps[f.comp]
			b := c.blocks[f.blk]
			return nil, fmt.Errorf("step %d: component %d (%s/%s@%s), rows %d..%d of row group %d of file %d: %w",
				ps.step, f.comp, c.version.Project, c.version.Table, c.version.Commit.Short(), b.Offset, b.Offset+b.Rows-1, b.RowGroup, b.File, f.err)
		}
	}
	spans := make([]tables.Span, 0, len(ps.src))
	for t := range ps.src {
		spans = tables.AppendSpan(spans, ps.src[t], ps.off[t])
	}
	blocks := make([]arrow.RecordBatch, len(ps.futs))
	for i, f := range ps.futs {
		blocks[i] = f.h.Value()
	}
	return buildBatch(s.e.mem, s.e.reader, s.run, blocks, spans, ps.comps, ps.rows)
}

// buildBatch gathers the data columns from the blocks (tables.Reader.Gather:
// one copy per column, into recycled buffers) and appends _component and
// _row.
func buildBatch(mem memory.Allocator, rd *tables.Reader, run *Run, blocks []arrow.RecordBatch, spans []tables.Span, comps []int32, rows []int64) (arrow.RecordBatch, error) {
	n := len(comps)
	cols, err := rd.Gather(run.data, blocks, spans)
	if err != nil {
		if errors.Is(err, tables.ErrTooLarge) {
			err = fmt.Errorf("%w: %w", ErrBatchTooLarge, err)
		}
		return nil, err
	}
	defer func() {
		for _, c := range cols {
			c.Release()
		}
	}()
	cb := array.NewInt32Builder(mem)
	cb.AppendValues(comps, nil)
	cols = append(cols, cb.NewArray())
	cb.Release()
	rb := array.NewInt64Builder(mem)
	rb.AppendValues(rows, nil)
	cols = append(cols, rb.NewArray())
	rb.Release()
	return array.NewRecordBatch(run.schema, cols, int64(n)), nil
}

// decode reads block b of v with the columns of data, for the cache: it
// waits for one of the engine's decode slots (on the load's own context).
func (e *Engine) decode(ctx context.Context, v *tables.Version, b tables.Block, data *arrow.Schema) (arrow.RecordBatch, int64, error) {
	select {
	case e.decoders <- struct{}{}:
	case <-ctx.Done():
		return nil, 0, ctx.Err()
	}
	defer func() { <-e.decoders }()
	rec, err := e.reader.ReadBlock(ctx, v, b, data)
	if err != nil {
		return nil, 0, err
	}
	return rec, tables.RecordBytes(rec), nil
}
