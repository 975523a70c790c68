package mix

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/weftdata/weft/client"
	"github.com/weftdata/weft/sampler"
	"github.com/weftdata/weft/tables"
)

// KindParquet is the materializer kind of the recipe's "columns": the
// rows' own values, gathered from decoded Parquet blocks (rows.go). Every
// engine has it; Options.Kinds adds others.
const KindParquet = "parquet"

// Window is one entry of a component's windows: a materializer kind and
// its spec (client.Window; its JSON is {"kind": …, …spec}).
type Window = client.Window

// A Kind makes the materializers of one kind of output column: the
// "kind" a recipe's window names. An Engine has KindParquet and the kinds
// of Options.Kinds. A Kind is shared by every run of its engine and must
// be safe for concurrent use.
type Kind interface {
	// New returns the materializer of the output column key of a run:
	// in[i] is component i with its spec for key. New checks every spec
	// against its component's table, failing with an error that wraps
	// ErrBadWindow and names the component and the field at fault (a
	// recipe's error) or ErrCorrupt (a stored run's). It runs when a
	// recipe is resolved and when a run is loaded, so it should be cheap:
	// per-step work belongs to Prefetch.
	New(ctx context.Context, env Env, key string, in []Input) (Materializer, error)
}

// Canonicalizer is an optional interface of a Kind: Canonical rewrites a
// window spec (the window's fields without "kind", canonical JSON as
// client.Window leaves it) in the kind's canonical form: defaults left
// out, numbers in one spelling. The engine calls it when it resolves a
// recipe, before the run record and run id are made, so that equivalent
// specs (from Go, from Python) make one run. An error refuses the recipe;
// it should wrap ErrBadWindow and name the field at fault.
type Canonicalizer interface {
	Canonical(spec json.RawMessage) (json.RawMessage, error)
}

// canonicalWindows rewrites, in place, the specs of windows whose kind is
// a Canonicalizer. Kinds the engine lacks are left for materializers to
// report.
func (e *Engine) canonicalWindows(r *Recipe, windows []map[string]Window) error {
	for i, ws := range windows {
		for key, w := range ws {
			if _, ok := e.registry[w.Kind].(Canonicalizer); !ok {
				continue
			}
			cw, err := e.canonicalWindow(w)
			if err != nil {
				return fmt.Errorf("component %d (%s/%s): window %q (kind %q): %w", i, r.Components[i].Project, r.Components[i].Table, key, w.Kind, err)
			}
			ws[key] = cw
		}
	}
	return nil
}

// Env is what an engine lends its kinds.
type Env struct {
	Tables *tables.Store
	// Reader reads blocks and gathers rows with the engine's recycled
	// buffers.
	Reader    *tables.Reader
	Allocator memory.Allocator
	Logger    *slog.Logger
}

// Input is one component of a run, as a Kind sees it.
type Input struct {
	Component int
	// Record is the component's record: pinned commit, rows, blocks,
	// columns.
	Record *ComponentRecord
	// Version is the pinned table version.
	Version *tables.Version
	// Spec is the component's spec for the key: a canonical JSON object
	// (Window.Spec), "{}" when it has no parameters.
	Spec json.RawMessage
}

// A Materializer makes some output columns of a run's steps. The planner
// of a rank stream calls Prefetch for each step, ahead of the builder
// (up to Options.Prefetch steps), and the builder calls Build on what it
// returned; every step's Pending is released, built or not. A
// Materializer belongs to a run and is shared by all its streams: it must
// be safe for concurrent use.
type Materializer interface {
	// Fields are the columns the materializer makes, in order. They are
	// the same for every step, and every component.
	Fields() []arrow.Field
	// Prefetch starts the work of one step: samples are the rank's
	// samples of the step in position order (valid only during the
	// call). It runs in the planner and must not wait for I/O: it starts
	// reads with loads.Go and returns at once. Errors are Build's to
	// report.
	Prefetch(ctx context.Context, loads *Loads, samples []sampler.Sample) Pending
}

// Pending is a step being materialized.
type Pending interface {
	// Build waits for the step's reads and returns one array per field,
	// each with one row per sample, in position order. The caller
	// releases the arrays. Build is called at most once, before Release.
	Build(ctx context.Context) ([]arrow.Array, error)
	// Release drops what the step holds (cache pins, buffers), after the
	// reads started for it have ended. It is called exactly once.
	Release()
}

// Loads runs a rank stream's background reads: at most Options.ReadAhead
// at once, and the stream waits for all of them before it ends, so a load
// must end soon after its context does.
type Loads struct {
	sem chan struct{}
	wg  sync.WaitGroup
}

func newLoads(slots int) *Loads { return &Loads{sem: make(chan struct{}, slots)} }

// Go runs load in a new goroutine once one of the stream's read slots is
// free, holding the slot until load returns. load gets nil, or ctx's error
// if ctx ended first; then it holds no slot and must only record the
// error.
func (l *Loads) Go(ctx context.Context, load func(err error)) {
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		select {
		case l.sem <- struct{}{}:
		case <-ctx.Done():
			load(ctx.Err())
			return
		}
		defer func() { <-l.sem }()
		load(nil)
	}()
}

func (l *Loads) wait() { l.wg.Wait() }

// kinds returns the engine's registry: KindParquet and opts' kinds.
func (e *Engine) kinds(opts Options) map[string]Kind {
	m := make(map[string]Kind, len(opts.Kinds)+1)
	maps.Copy(m, opts.Kinds)
	m[KindParquet] = &parquetKind{e: e}
	return m
}

// kindNames lists the kinds of the engine, for messages.
func (e *Engine) kindNames() string {
	return strings.Join(slices.Sorted(maps.Keys(e.registry)), ", ")
}

// materializers makes a run's materializers: the Parquet rows of its
// columns (when there are any), then one per window key in key order.
func (e *Engine) materializers(ctx context.Context, rec *Record, vs []*tables.Version) ([]Materializer, error) {
	env := Env{Tables: e.tables, Reader: e.reader, Allocator: e.mem, Logger: e.log}
	in := make([]Input, len(vs))
	for i := range vs {
		in[i] = Input{Component: i, Record: &rec.Components[i], Version: vs[i], Spec: json.RawMessage("{}")}
	}
	var mats []Materializer
	if len(rec.Components[0].Columns) > 0 {
		m, err := e.registry[KindParquet].New(ctx, env, "", in)
		if err != nil {
			return nil, err
		}
		mats = append(mats, m)
	}
	w0 := rec.Components[0].Windows
	for _, key := range slices.Sorted(maps.Keys(w0)) {
		kind := w0[key].Kind
		k, ok := e.registry[kind]
		if !ok {
			return nil, fmt.Errorf("%w: window %q: this server has no materializer of kind %q (it has: %s)", ErrUnknownKind, key, kind, e.kindNames())
		}
		kin := slices.Clone(in)
		for i := range kin {
			w := rec.Components[i].Windows[key]
			if len(w.Spec) > 0 {
				kin[i].Spec = w.Spec
			}
		}
		m, err := k.New(ctx, env, key, kin)
		if err != nil {
			return nil, fmt.Errorf("window %q (kind %q): %w", key, kind, err)
		}
		mats = append(mats, m)
	}
	return mats, nil
}

// outputSchema is the run's batch schema: the materializers' fields, then
// _component and _row. Names must be unique.
func outputSchema(mats []Materializer) (*arrow.Schema, error) {
	var fields []arrow.Field
	seen := map[string]bool{ComponentColumn: true, RowColumn: true}
	for _, m := range mats {
		for _, f := range m.Fields() {
			if seen[f.Name] {
				return nil, fmt.Errorf("%w: output column %q is made twice (by the columns or a window, or it is reserved); rename the window or drop the column", ErrBadWindow, f.Name)
			}
			seen[f.Name] = true
			fields = append(fields, f)
		}
	}
	fields = append(fields,
		arrow.Field{Name: ComponentColumn, Type: arrow.PrimitiveTypes.Int32},
		arrow.Field{Name: RowColumn, Type: arrow.PrimitiveTypes.Int64})
	return arrow.NewSchema(fields, nil), nil
}
