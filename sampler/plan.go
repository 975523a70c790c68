package sampler

import (
	"fmt"
	"math/bits"
	"slices"
	"sync"
)

// Plan is a validated run with its precomputed state. Every method is a pure
// function of the Spec and its arguments, and safe for concurrent use.
type Plan struct {
	batch   int
	steps   int64
	weights []uint64
	shares  shares
	streams []*stream
	posKey  uint64
	runID   string
	pool    sync.Pool // *scratch
}

// scratch is per-call working memory, pooled. Cursors keep their epoch and
// window between calls, which makes consecutive steps cheap; they never
// change results.
type scratch struct {
	cursors []*cursor
	xsA     []uint64
	xsB     []uint64
	first   []int64  // first draw index of each component at the step
	count   []int64  // slots of each component at the step
	marks   []uint64 // RankSlice: bitmap of batch indices
	slots   []int32  // RankSlice: output slot of each batch index
	// first, count and pos hold step `step` when stepOK: ranks served by one
	// process ask for the same step in turn.
	stepOK bool
	step   int64
	pos    perm
}

// NewPlan validates spec and precomputes the run: O(#blocks) time and memory.
// It keeps no reference to spec.
func NewPlan(spec Spec) (*Plan, error) {
	steps, err := spec.validate()
	if err != nil {
		return nil, err
	}
	ws := make([]float64, len(spec.Components))
	for i, c := range spec.Components {
		ws[i] = c.Weight
	}
	weights, err := reduceWeights(ws)
	if err != nil {
		return nil, err
	}
	p := &Plan{
		batch:   spec.BatchSize,
		steps:   steps,
		weights: weights,
		shares:  newShares(uint64(spec.BatchSize), weights),
		streams: make([]*stream, len(spec.Components)),
		posKey:  derive(spec.Seed, tagPositions),
		runID:   runID(&spec, weights, steps),
	}
	for i, c := range spec.Components {
		p.streams[i] = newStream(spec.Seed, i, c.Rows, c.Blocks, spec.Shuffle.BufferRows)
	}
	n := len(p.streams)
	p.pool.New = func() any {
		sc := &scratch{
			cursors: make([]*cursor, n),
			xsA:     make([]uint64, len(p.shares.nodes)),
			xsB:     make([]uint64, len(p.shares.nodes)),
			first:   make([]int64, n),
			count:   make([]int64, n),
		}
		for i, st := range p.streams {
			sc.cursors[i] = newCursor(st)
		}
		return sc
	}
	return p, nil
}

// Steps is the run length: Spec.Steps if set, else ⌈Σ N_i / B⌉.
func (p *Plan) Steps() int64 { return p.steps }

// BatchSize is B.
func (p *Plan) BatchSize() int { return p.batch }

// RunID is the hex SHA-256 of the canonical, versioned encoding of the run's
// semantic fields (doc.go, "Run id"). It does not depend on the world size.
func (p *Plan) RunID() string { return p.runID }

// Weights returns the reduced integer weights u_i: component i's quota is
// q_i = B·u_i/Σu.
func (p *Plan) Weights() []uint64 { return slices.Clone(p.weights) }

func (p *Plan) checkStep(step int64) error {
	if step < 0 {
		return fmt.Errorf("step %d is negative: %w", step, ErrStep)
	}
	if step >= p.steps {
		return fmt.Errorf("step %d is beyond the run's %d steps: %w", step, p.steps, ErrStep)
	}
	return nil
}

// fill computes, for step s, each component's slot count and first draw
// (C_i(s-1) = F_i·s + X_i(s) draws come before step s) and the positions.
func (p *Plan) fill(sc *scratch, step int64) {
	if sc.stepOK && sc.step == step {
		return
	}
	sc.stepOK, sc.step = true, step
	sc.pos = p.positions(step)
	k := uint64(step)
	p.shares.extras(k, sc.xsA)
	p.shares.extras(k+1, sc.xsB)
	for i, v := range p.shares.leaf {
		n := &p.shares.nodes[v]
		sc.first[i] = int64(n.whole)*step + int64(sc.xsA[v])
		sc.count[i] = int64(n.whole + sc.xsB[v] - sc.xsA[v])
	}
}

func (p *Plan) get() *scratch  { return p.pool.Get().(*scratch) }
func (p *Plan) put(s *scratch) { p.pool.Put(s) }

// Counts returns each component's number of slots in the batch at step:
// ⌊q_i⌋ or ⌈q_i⌉, summing to B. Shares are defined at every step, even past
// Steps; Counts returns nil for a negative step.
func (p *Plan) Counts(step int64) []int {
	if step < 0 {
		return nil
	}
	sc := p.get()
	defer p.put(sc)
	k := uint64(step)
	p.shares.extras(k, sc.xsA)
	p.shares.extras(k+1, sc.xsB)
	out := make([]int, len(p.streams))
	for i, v := range p.shares.leaf {
		out[i] = int(p.shares.nodes[v].whole + sc.xsB[v] - sc.xsA[v])
	}
	return out
}

// DrawRange returns the draws of component i that the batch at step uses:
// draw indices [lo, hi) of its stream. It panics if i or step is out of range.
func (p *Plan) DrawRange(i int, step int64) (lo, hi int64) {
	p.checkComponent(i)
	if err := p.checkStep(step); err != nil {
		panic("sampler: " + err.Error())
	}
	sc := p.get()
	defer p.put(sc)
	p.fill(sc, step)
	return sc.first[i], sc.first[i] + sc.count[i]
}

// Draw returns the row of component i's k-th draw: epoch k div N_i, offset
// k mod N_i through that epoch's permutation. It panics if i is out of range
// or k is negative.
func (p *Plan) Draw(i int, k int64) int64 {
	p.checkComponent(i)
	p.checkDraw(k)
	sc := p.get()
	defer p.put(sc)
	return sc.cursors[i].row(k)
}

// DrawRows fills dst with the rows of component i's draws first,
// first+1, …, first+len(dst)-1: the stream read in order, much faster than
// calling Draw for each. It panics if i is out of range or first is negative.
func (p *Plan) DrawRows(i int, first int64, dst []int64) {
	p.checkComponent(i)
	p.checkDraw(first)
	sc := p.get()
	defer p.put(sc)
	c := sc.cursors[i]
	for t := range dst {
		dst[t] = c.row(first + int64(t))
	}
}

func (p *Plan) checkComponent(i int) {
	if i < 0 || i >= len(p.streams) {
		panic(fmt.Sprintf("sampler: component %d out of range [0, %d)", i, len(p.streams)))
	}
}

func (p *Plan) checkDraw(k int64) {
	if k < 0 {
		panic(fmt.Sprintf("sampler: negative draw index %d", k))
	}
}

// positions is the seeded order of the batch at step: the x-th sample of the
// batch in component order (all of component 0's draws in draw order, then
// component 1's, …) sits at position positions(step).apply(x).
func (p *Plan) positions(step int64) perm {
	return newPerm(derive(p.posKey, uint64(step)), uint64(p.batch))
}

// Batch returns the global batch at step, appended to dst[:0]: B samples,
// component i's C_i(s-1)…C_i(s)-1 draws placed in the batch in a seeded
// order.
func (p *Plan) Batch(step int64, dst []Sample) ([]Sample, error) {
	if err := p.checkStep(step); err != nil {
		return dst[:0], err
	}
	sc := p.get()
	defer p.put(sc)
	p.fill(sc, step)
	dst = slices.Grow(dst[:0], p.batch)[:p.batch]
	pos := &sc.pos
	var x uint64
	for i, c := range sc.cursors {
		first, count := sc.first[i], sc.count[i]
		for k := first; k < first+count; k++ {
			dst[pos.apply(x)] = Sample{Component: int32(i), Row: c.row(k)}
			x++
		}
	}
	return dst, nil
}

// RankSlice returns rank's part of the global batch at step, appended to
// dst[:0]: the samples at positions rank, rank+world, rank+2·world, … — B/world
// of them. world must divide B. The union over ranks is the global batch, for
// every world size.
func (p *Plan) RankSlice(step int64, rank, world int, dst []Sample) ([]Sample, error) {
	switch {
	case world < 1:
		return dst[:0], fmt.Errorf("world size %d is less than 1: %w", world, ErrWorldSize)
	case p.batch%world != 0:
		return dst[:0], fmt.Errorf("world size %d does not divide the batch size %d: %w", world, p.batch, ErrWorldSize)
	case rank < 0 || rank >= world:
		return dst[:0], fmt.Errorf("rank %d is not in 0..%d: %w", rank, world-1, ErrRank)
	}
	if err := p.checkStep(step); err != nil {
		return dst[:0], err
	}
	sc := p.get()
	defer p.put(sc)
	p.fill(sc, step)
	n := p.batch / world
	dst = slices.Grow(dst[:0], n)[:n]
	pos := &sc.pos
	// Find which sample x of the component-ordered batch lands at each of
	// our positions, then evaluate them in increasing x, so that each stream
	// is read forwards: a bitmap of the x's, and the slot of each.
	words := (p.batch + 63) / 64
	if cap(sc.marks) < words {
		sc.marks = make([]uint64, words)
		sc.slots = make([]int32, p.batch)
	}
	marks := sc.marks[:words]
	clear(marks)
	for t := 0; t < n; t++ {
		x := pos.invert(uint64(rank + t*world))
		marks[x/64] |= 1 << (x % 64)
		sc.slots[x] = int32(t)
	}
	comp, compStart := 0, int64(0)
	for w, m := range marks {
		for m != 0 {
			x := int64(w*64 + bits.TrailingZeros64(m))
			m &= m - 1
			for x >= compStart+sc.count[comp] {
				compStart += sc.count[comp]
				comp++
			}
			row := sc.cursors[comp].row(sc.first[comp] + x - compStart)
			dst[sc.slots[x]] = Sample{Component: int32(comp), Row: row}
		}
	}
	return dst, nil
}

// footprint is the bytes held by the plan's arrays, for tests and benchmarks.
func (p *Plan) footprint() int64 {
	var n int64
	for _, st := range p.streams {
		n += int64(cap(st.prefix)+cap(st.start)) * 8
	}
	return n + int64(len(p.shares.nodes))*48 + int64(len(p.weights))*8
}
