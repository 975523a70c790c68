package episodes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/weftdata/weft/errdefs"
	"github.com/weftdata/weft/mix"
	"github.com/weftdata/weft/sampler"
	"github.com/weftdata/weft/tables"
)

// rowsKind makes "rows" windows.
type rowsKind struct{ k *Kinds }

// Canonical implements mix.Canonicalizer.
func (rk *rowsKind) Canonical(spec json.RawMessage) (json.RawMessage, error) {
	s, err := ParseRows(spec)
	if err != nil {
		return nil, err
	}
	return s.Canonical(), nil
}

func (rk *rowsKind) New(ctx context.Context, env mix.Env, key string, in []mix.Input) (mix.Materializer, error) {
	m := &rowsWindow{env: env, comps: make([]rowsComp, len(in))}
	var elem arrow.Field
	for i, c := range in {
		name := fmt.Sprintf("component %d (%s/%s)", i, c.Record.Project, c.Record.Table)
		spec, err := ParseRows(c.Spec)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if i > 0 && len(spec.Offsets) != len(m.comps[0].spec.Offsets) {
			return nil, fmt.Errorf("%w: %s has %d offsets, component 0 has %d; every component's window has one length", ErrBadSpec, name, len(spec.Offsets), len(m.comps[0].spec.Offsets))
		}
		proj, err := c.Version.Projection([]string{key})
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrBadSpec, name, err)
		}
		f := proj.Field(0)
		if i == 0 {
			elem = arrow.Field{Name: "item", Type: f.Type, Nullable: f.Nullable}
		} else if !arrow.TypeEqual(f.Type, elem.Type) {
			return nil, fmt.Errorf("%w: %s: column %s is %s there but %s in component 0", ErrBadSpec, name, errdefs.Quote(key), f.Type, elem.Type)
		}
		elem.Nullable = elem.Nullable || f.Nullable
		x, err := rk.k.episodeIndex(ctx, env.Reader, c.Version)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if !spec.Pad {
			if err := checkNoPad(x, spec.Offsets); err != nil {
				return nil, fmt.Errorf("%s: window %q: %w", name, key, err)
			}
		}
		m.comps[i] = rowsComp{spec: spec, version: c.Version, episodes: x, proj: arrow.NewSchema([]arrow.Field{{Name: key, Type: f.Type, Nullable: f.Nullable}}, nil)}
	}
	n := int32(len(m.comps[0].spec.Offsets))
	m.fields = []arrow.Field{
		{Name: key, Type: arrow.FixedSizeListOfField(n, elem)},
		{Name: key + "_is_pad", Type: arrow.FixedSizeListOf(n, arrow.FixedWidthTypes.Boolean)},
	}
	return m, nil
}

// checkNoPad refuses a window without padding that some episode of x is
// too short to hold: its offsets span more rows than the episode has. It
// names the first such episode.
func checkNoPad(x *EpisodeIndex, offsets []int64) error {
	lo, hi := slices.Min(offsets), slices.Max(offsets)
	span := hi - lo + 1
	for e := range x.Len() {
		first, last := x.Span(e)
		if last-first+1 < span {
			return fmt.Errorf("%w: episode %s (rows %d..%d) has %d rows, fewer than the %d the window's offsets [%d, %d] span; with \"pad\": false a window must fit inside its episode: leave padding on (the edge row repeats, flagged in _is_pad) or shorten the window",
				ErrPadding, x.Value(e), first, last, last-first+1, span, lo, hi)
		}
	}
	return nil
}

// shift is how far a window without padding moves so that rows
// [lo+row, hi+row] fit in [first, last] (which checkNoPad made wide
// enough): 0 when they already do.
func shift(row, lo, hi, first, last int64) int64 {
	switch {
	case row+lo < first:
		return first - (row + lo)
	case row+hi > last:
		return last - (row + hi)
	}
	return 0
}

// rowsComp is one component of a rows window.
type rowsComp struct {
	spec     RowsSpec
	version  *tables.Version
	episodes *EpisodeIndex
	proj     *arrow.Schema // the key column
}

// window returns the row of offset j of the window at row and whether it
// is padding. With padding (the default) a row outside the episode is
// replaced by the episode's edge row; without, the whole window slides to
// lie inside the episode, so no row repeats.
func (c *rowsComp) window(row int64, j int) (int64, bool) {
	_, first, last := c.episodes.Episode(row)
	if !c.spec.Pad {
		lo, hi := slices.Min(c.spec.Offsets), slices.Max(c.spec.Offsets)
		return row + c.spec.Offsets[j] + shift(row, lo, hi, first, last), false
	}
	r := row + c.spec.Offsets[j]
	switch {
	case r < first:
		return first, true
	case r > last:
		return last, true
	}
	return r, false
}

type rowsWindow struct {
	env    mix.Env
	comps  []rowsComp
	fields []arrow.Field
}

func (m *rowsWindow) Fields() []arrow.Field { return m.fields }

// Prefetch starts one read per component of the step: the rows its
// windows touch.
func (m *rowsWindow) Prefetch(ctx context.Context, loads *mix.Loads, samples []sampler.Sample) mix.Pending {
	p := &rowsStep{m: m, samples: slices.Clone(samples), reads: make([]rowRead, len(m.comps))}
	need := make([]map[int64]bool, len(m.comps))
	for _, s := range samples {
		c := &m.comps[s.Component]
		if need[s.Component] == nil {
			need[s.Component] = map[int64]bool{}
		}
		for j := range c.spec.Offsets {
			r, _ := c.window(s.Row, j)
			need[s.Component][r] = true
		}
	}
	for ci := range need {
		r := &p.reads[ci]
		r.done = make(chan struct{})
		if need[ci] == nil {
			close(r.done)
			continue
		}
		r.rows = slices.Sorted(maps.Keys(need[ci]))
		c := &m.comps[ci]
		loads.Go(ctx, func(err error) {
			defer close(r.done)
			if r.err = err; err == nil {
				r.rec, r.err = m.env.Reader.GatherRows(ctx, c.version, r.rows, c.proj)
			}
		})
	}
	return p
}

type rowRead struct {
	done chan struct{}
	rows []int64 // sorted
	rec  arrow.RecordBatch
	err  error
}

type rowsStep struct {
	m       *rowsWindow
	samples []sampler.Sample
	reads   []rowRead
}

func (p *rowsStep) Build(ctx context.Context) ([]arrow.Array, error) {
	src := make([]int32, len(p.reads)) // component -> index in recs
	var recs []arrow.RecordBatch
	for ci := range p.reads {
		r := &p.reads[ci]
		select {
		case <-r.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if r.err != nil {
			c := &p.m.comps[ci]
			return nil, fmt.Errorf("component %d (%s/%s@%s): %w", ci, c.version.Project, c.version.Table, c.version.Commit.Short(), r.err)
		}
		if r.rec != nil {
			src[ci] = int32(len(recs))
			recs = append(recs, r.rec)
		}
	}
	t := len(p.m.comps[0].spec.Offsets)
	spans := make([]tables.Span, 0, len(p.samples))
	pads := array.NewFixedSizeListBuilder(p.m.env.Allocator, int32(t), arrow.FixedWidthTypes.Boolean)
	defer pads.Release()
	pb := pads.ValueBuilder().(*array.BooleanBuilder)
	for _, s := range p.samples {
		c, r := &p.m.comps[s.Component], &p.reads[s.Component]
		pads.Append(true)
		for j := range t {
			row, pad := c.window(s.Row, j)
			i, _ := slices.BinarySearch(r.rows, row)
			spans = tables.AppendSpan(spans, src[s.Component], int64(i))
			pb.Append(pad)
		}
	}
	if len(recs) == 0 {
		return nil, errors.New("internal: a rows window step without samples")
	}
	cols, err := p.m.env.Reader.Gather(recs[0].Schema(), recs, spans)
	if err != nil {
		if errors.Is(err, tables.ErrTooLarge) {
			err = fmt.Errorf("%w: %w", mix.ErrBatchTooLarge, err)
		}
		return nil, err
	}
	child := cols[0]
	defer child.Release()
	vals := fixedSizeList(p.m.fields[0].Type, len(p.samples), child)
	padArr := pads.NewArray()
	return []arrow.Array{vals, padArr}, nil
}

// fixedSizeList wraps child (n*T values) as n lists of type dt.
func fixedSizeList(dt arrow.DataType, n int, child arrow.Array) arrow.Array {
	d := array.NewData(dt, n, []*memory.Buffer{nil}, []arrow.ArrayData{child.Data()}, 0, 0)
	defer d.Release()
	return array.MakeFromData(d)
}

func (p *rowsStep) Release() {
	for ci := range p.reads {
		<-p.reads[ci].done
		if p.reads[ci].rec != nil {
			p.reads[ci].rec.Release()
			p.reads[ci].rec = nil
		}
	}
}
