package mix

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"maps"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/weftdata/weft/sampler"
	"github.com/weftdata/weft/tables"
)

// Scan is a windowed scan of one pinned table version (doc.go, "Windowed
// scans"): the rows' columns and the windows' columns, made by the same
// materializers, specs and wire form as a run with one component, for
// consecutive rows in row order, and _row. It is immutable and safe for
// concurrent use; its streams use the engine that prepared it.
type Scan struct {
	e       *Engine
	version *tables.Version
	columns []string          // resolved: never nil
	windows map[string]Window // canonical
	mats    []Materializer
	schema  *arrow.Schema
}

// MaxScanStepRows bounds the rows of one step of a windowed scan.
const MaxScanStepRows = 1 << 16

// PrepareScan checks columns and windows against v and makes the scan's
// materializers, as Prepare does for a run's component: the windows are
// rewritten canonically by their kinds, each kind checks its spec against
// v, and columns nil means every column of v that windows does not name.
// windows must not be empty (a scan without windows is tables.Store.Scan's).
// Errors wrap ErrBadWindow, ErrUnknownKind or ErrBadRecipe (all
// InvalidArgument) and name the field at fault.
func (e *Engine) PrepareScan(ctx context.Context, v *tables.Version, columns []string, windows map[string]Window) (*Scan, error) {
	where := fmt.Sprintf("scan of %s/%s@%s", v.Project, v.Table, v.Commit.Short())
	if len(windows) == 0 {
		return nil, fmt.Errorf("%w: %s: no windows", ErrBadWindow, where)
	}
	seen := make(map[string]bool, len(columns))
	for _, col := range columns {
		switch {
		case col == RowColumn:
			return nil, fmt.Errorf("%w: %s: column %q is reserved: every batch of a windowed scan carries it already", ErrBadRecipe, where, col)
		case seen[col]:
			return nil, fmt.Errorf("%w: %s: column %q is listed twice", ErrBadRecipe, where, col)
		}
		seen[col] = true
	}
	canon := make(map[string]Window, len(windows))
	for _, key := range slices.Sorted(maps.Keys(windows)) {
		w := windows[key]
		switch {
		case key == "":
			return nil, fmt.Errorf("%w: %s: a window has an empty name; name it after the output column", ErrBadWindow, where)
		case key == RowColumn:
			return nil, fmt.Errorf("%w: %s: window %q is reserved: every batch of a windowed scan carries %s already", ErrBadWindow, where, key, RowColumn)
		case seen[key]:
			return nil, fmt.Errorf("%w: %s: %q is both a column and a window; leave it out of \"columns\"", ErrBadWindow, where, key)
		case w.Kind == "":
			return nil, fmt.Errorf("%w: %s: window %q has no \"kind\"", ErrBadWindow, where, key)
		}
		cw, err := e.canonicalWindow(w)
		if err != nil {
			return nil, fmt.Errorf("%s: window %q (kind %q): %w", where, key, w.Kind, err)
		}
		canon[key] = cw
	}
	if columns == nil {
		for _, f := range v.Schema.Fields() {
			if _, ok := canon[f.Name]; ok {
				continue
			}
			if f.Name == RowColumn {
				return nil, fmt.Errorf("%w: %s: the table has a column named %q, which every batch of a windowed scan carries already; list the columns to scan", ErrBadRecipe, where, f.Name)
			}
			columns = append(columns, f.Name)
		}
	}
	columns = slices.Clip(append([]string{}, columns...))
	data, err := dataSchema([]*tables.Version{v}, columns)
	if err != nil {
		return nil, err
	}
	var blocks []int64
	if len(columns) > 0 {
		if blocks, _, err = e.tables.Layout(ctx, v, data, e.layout); err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
	}
	rec := &Record{Components: []ComponentRecord{{
		Project: v.Project, Ref: string(v.Commit), Table: v.Table, Commit: v.Commit, Weight: 1,
		Columns: columns, Rows: v.Rows(), Blocks: blocks, Windows: canon,
	}}}
	mats, err := e.materializers(ctx, rec, []*tables.Version{v})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	schema, err := scanSchema(mats)
	if err != nil {
		return nil, err
	}
	return &Scan{e: e, version: v, columns: columns, windows: canon, mats: mats, schema: schema}, nil
}

// canonicalWindow is w with its spec in its kind's canonical form (when
// the kind is a Canonicalizer) and written as client.Window writes it.
func (e *Engine) canonicalWindow(w Window) (Window, error) {
	if c, ok := e.registry[w.Kind].(Canonicalizer); ok {
		spec := w.Spec
		if len(spec) == 0 {
			spec = json.RawMessage("{}")
		}
		out, err := c.Canonical(spec)
		if err != nil {
			return Window{}, err
		}
		w = Window{Kind: w.Kind, Spec: out}
	}
	cw, err := canonicalWindow(w)
	if err != nil {
		return Window{}, fmt.Errorf("%w: %w", ErrBadWindow, err)
	}
	return cw, nil
}

// scanSchema is a windowed scan's batch schema: the materializers' fields,
// then _row. Names must be unique.
func scanSchema(mats []Materializer) (*arrow.Schema, error) {
	var fields []arrow.Field
	seen := map[string]bool{RowColumn: true}
	for _, m := range mats {
		for _, f := range m.Fields() {
			if seen[f.Name] {
				return nil, fmt.Errorf("%w: output column %q is made twice (by the columns or a window, or it is reserved); rename the window or drop the column", ErrBadWindow, f.Name)
			}
			seen[f.Name] = true
			fields = append(fields, f)
		}
	}
	fields = append(fields, arrow.Field{Name: RowColumn, Type: arrow.PrimitiveTypes.Int64})
	return arrow.NewSchema(fields, nil), nil
}

// Schema is the schema of the scan's batches: the columns, then the
// windows' columns by window key, then _row (int64, the row ordinal).
func (s *Scan) Schema() *arrow.Schema { return s.schema }

// Version is the pinned table version (shared: do not modify).
func (s *Scan) Version() *tables.Version { return s.version }

// Columns are the scan's Parquet columns, resolved (never nil).
func (s *Scan) Columns() []string { return slices.Clone(s.columns) }

// Windows are the scan's windows, canonical: what a ticket carries.
func (s *Scan) Windows() map[string]Window { return maps.Clone(s.windows) }

// Steps streams rows [lo, hi) of the scan in row order, as steps of at
// most rows rows each: step k holds rows [lo+k·rows, min(hi, lo+(k+1)·rows)),
// with the schema Schema. The materializers see each step as the samples
// {Component: 0, Row: r} and start its reads up to Options.Prefetch steps
// ahead, as in a run. Stopping the loop or cancelling ctx stops the work
// and releases what it holds; the receiver releases each batch.
func (s *Scan) Steps(ctx context.Context, lo, hi int64, rows int) iter.Seq2[Step, error] {
	return func(yield func(Step, error) bool) {
		if err := s.CheckRange(lo, hi, rows); err != nil {
			yield(Step{}, err)
			return
		}
		n := int64(rows)
		st := &stream{
			e: s.e, mats: s.mats, schema: s.schema,
			name: fmt.Sprintf("scan of %s/%s@%s, rows [%d, %d)", s.version.Project, s.version.Table, s.version.Commit.Short(), lo, hi),
			samples: func(step int64, buf []sampler.Sample) ([]sampler.Sample, error) {
				buf = buf[:0]
				for r := lo + step*n; r < min(hi, lo+(step+1)*n); r++ {
					buf = append(buf, sampler.Sample{Component: 0, Row: r})
				}
				return buf, nil
			},
		}
		st.serve(ctx, 0, (hi-lo+n-1)/n, yield)
	}
}

// CheckRange validates a row range [lo, hi) of the scan and its step
// size: 0 ≤ lo < hi ≤ rows of the version, 1 ≤ rows ≤ MaxScanStepRows.
func (s *Scan) CheckRange(lo, hi int64, rows int) error {
	switch {
	case lo < 0 || hi <= lo || hi > s.version.Rows():
		return fmt.Errorf("%w: rows [%d, %d) are not a range of %s@%s, which has %d rows", ErrStepRange, lo, hi, s.version.Table, s.version.Commit.Short(), s.version.Rows())
	case rows < 1 || rows > MaxScanStepRows:
		return fmt.Errorf("%w: %d rows per step must be 1..%d", ErrStepRange, rows, MaxScanStepRows)
	}
	return nil
}
