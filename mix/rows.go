package mix

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/weftdata/weft/internal/cache"
	"github.com/weftdata/weft/sampler"
	"github.com/weftdata/weft/tables"
)

// parquetKind makes the Parquet-rows materializer: the first kind, and the
// one that serves a recipe's "columns". It reads blocks into the engine's
// shared block cache.
type parquetKind struct{ e *Engine }

// New serves the recipe's columns (key "") or, for a window {"kind":
// "parquet"}, the table column key, for every component.
func (k *parquetKind) New(_ context.Context, _ Env, key string, in []Input) (Materializer, error) {
	columns := in[0].Record.Columns
	if key != "" {
		columns = []string{key}
	}
	vs := make([]*tables.Version, len(in))
	for i, c := range in {
		if key != "" && string(c.Spec) != "{}" {
			return nil, fmt.Errorf("%w: component %d (%s/%s): a %q window has no parameters, it has %s", ErrBadWindow, i, c.Record.Project, c.Record.Table, KindParquet, c.Spec)
		}
		vs[i] = c.Version
	}
	data, err := dataSchema(vs, columns)
	if err != nil {
		return nil, err
	}
	colKey := strings.Join(columns, "\x00")
	m := &parquetRows{e: k.e, data: data, comps: make([]*blockMap, len(in))}
	for i, c := range in {
		bm, err := mapBlocks(c.Version, c.Record.Blocks, colKey)
		if err != nil {
			return nil, fmt.Errorf("component %d: %w", i, err)
		}
		m.comps[i] = bm
	}
	return m, nil
}

// dataSchema checks that every component has the columns with one type,
// and returns their schema, nullable where any component's column is.
func dataSchema(vs []*tables.Version, columns []string) (*arrow.Schema, error) {
	var fields []arrow.Field
	for i, v := range vs {
		proj, err := v.Projection(columns)
		if err != nil {
			return nil, fmt.Errorf("component %d (%s/%s@%s): %w", i, v.Project, v.Table, v.Commit.Short(), err)
		}
		if i == 0 {
			fields = slices.Clone(proj.Fields())
			for k := range fields {
				fields[k].Metadata = arrow.Metadata{}
			}
			continue
		}
		for k, f := range proj.Fields() {
			if !arrow.TypeEqual(f.Type, fields[k].Type) {
				return nil, fmt.Errorf("%w: component %d (%s/%s): column %q is %s there but %s in component 0 (%s/%s); every component must give a column the same Arrow type", ErrBadRecipe, i, v.Project, v.Table, f.Name, f.Type, fields[k].Type, vs[0].Project, vs[0].Table)
			}
			fields[k].Nullable = fields[k].Nullable || f.Nullable
		}
	}
	return arrow.NewSchema(fields, nil), nil
}

// parquetRows gathers the step's rows of every component from decoded
// blocks, in position order, in one copy per column (tables.Reader.Gather).
type parquetRows struct {
	e     *Engine
	data  *arrow.Schema // the columns
	comps []*blockMap
}

// blockMap maps a component's blocks to where they are stored.
type blockMap struct {
	version *tables.Version
	first   []int64 // first row ordinal of each block, plus the total
	blocks  []tables.Block
	keys    []blockKey // cache key of each block
}

// blockKey names a decoded block: a block's rows with a column set. Data
// files are immutable, so a key's content never changes.
type blockKey struct {
	block   tables.BlockID
	columns string // the projected column names, joined
}

// mapBlocks places a component's recorded blocks in its row groups.
func mapBlocks(v *tables.Version, sizes []int64, colKey string) (*blockMap, error) {
	blocks, err := v.Split(sizes)
	if err != nil {
		return nil, err
	}
	c := &blockMap{version: v, first: make([]int64, 0, len(blocks)+1), blocks: blocks, keys: make([]blockKey, len(blocks))}
	for i, b := range blocks {
		c.keys[i] = blockKey{block: v.ID(b), columns: colKey}
		c.first = append(c.first, b.FirstRow)
	}
	c.first = append(c.first, v.Rows())
	return c, nil
}

// locate returns the block of c holding row, and row's offset in it.
func (c *blockMap) locate(row int64) (int, int64) {
	// first is sorted; find the last block starting at or before row.
	lo, hi := 0, len(c.blocks)
	for hi-lo > 1 {
		m := int(uint(lo+hi) >> 1)
		if c.first[m] <= row {
			lo = m
		} else {
			hi = m
		}
	}
	return lo, row - c.first[lo]
}

func (m *parquetRows) Fields() []arrow.Field { return m.data.Fields() }

// Prefetch locates the samples in their blocks and starts fetching the
// blocks: at once from the cache, or by a read that waits for a slot.
func (m *parquetRows) Prefetch(ctx context.Context, loads *Loads, samples []sampler.Sample) Pending {
	p := &parquetStep{m: m, spans: make([]tables.Span, 0, len(samples))}
	idx := make(map[uint64]int32, 16)
	for _, smp := range samples {
		b, off := m.comps[smp.Component].locate(smp.Row)
		k := uint64(smp.Component)<<32 | uint64(b)
		fi, ok := idx[k]
		if !ok {
			fi = int32(len(p.futs))
			idx[k] = fi
			p.futs = append(p.futs, m.fetch(ctx, loads, smp.Component, b))
		}
		p.spans = tables.AppendSpan(p.spans, fi, off)
	}
	return p
}

// fetch starts getting block b of component comp.
func (m *parquetRows) fetch(ctx context.Context, loads *Loads, comp int32, b int) *future {
	c := m.comps[comp]
	key := c.keys[b]
	f := &future{done: make(chan struct{}), comp: comp, blk: b}
	if h := m.e.cache.Peek(key); h != nil {
		f.h = h
		close(f.done)
		return f
	}
	ref, v, data := c.blocks[b], c.version, m.data
	loads.Go(ctx, func(err error) {
		defer close(f.done)
		if err != nil {
			f.err = err
			return
		}
		f.h, f.err = m.e.cache.Get(ctx, key, func(lctx context.Context) (arrow.RecordBatch, int64, error) {
			return m.e.decode(lctx, v, ref, data)
		})
	})
	return f
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

// parquetStep is a step whose blocks are being fetched: spans name the
// samples' rows in futs, in position order.
type parquetStep struct {
	m     *parquetRows
	spans []tables.Span
	futs  []*future
}

// Build waits for the step's blocks and gathers its rows (one copy per
// column, into recycled buffers).
func (p *parquetStep) Build(ctx context.Context) ([]arrow.Array, error) {
	return p.BuildInto(ctx, p.m.e.reader.Allocator())
}

// BuildInto is Build gathering into buffers from mem (PendingInto).
func (p *parquetStep) BuildInto(ctx context.Context, mem memory.Allocator) ([]arrow.Array, error) {
	for _, f := range p.futs {
		select {
		case <-f.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if f.err != nil {
			c := p.m.comps[f.comp]
			b := c.blocks[f.blk]
			return nil, fmt.Errorf("component %d (%s/%s@%s), rows %d..%d of row group %d of file %d: %w",
				f.comp, c.version.Project, c.version.Table, c.version.Commit.Short(), b.Offset, b.Offset+b.Rows-1, b.RowGroup, b.File, f.err)
		}
	}
	blocks := make([]arrow.RecordBatch, len(p.futs))
	for i, f := range p.futs {
		blocks[i] = f.h.Value()
	}
	cols, err := p.m.e.reader.GatherInto(mem, p.m.data, blocks, p.spans)
	if errors.Is(err, tables.ErrTooLarge) {
		err = fmt.Errorf("%w: %w", ErrBatchTooLarge, err)
	}
	return cols, err
}

func (p *parquetStep) Release() {
	for _, f := range p.futs {
		f.release()
	}
	p.futs = nil
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
