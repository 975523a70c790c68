package mix

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/weftdata/weft/filter"
	"github.com/weftdata/weft/internal/cache"
	"github.com/weftdata/weft/internal/membudget"
	"github.com/weftdata/weft/sampler"
	"github.com/weftdata/weft/tables"
	"github.com/weftdata/weft/versions"
)

// Options configure an Engine.
type Options struct {
	// CacheBytes bounds the decoded blocks the engine keeps, shared by all
	// its streams. Blocks that streams hold for the steps they are
	// building come on top (a few steps' worth per stream).
	CacheBytes int64
	// Prefetch is how many steps a stream plans ahead of the one it is
	// building: their blocks are read meanwhile.
	Prefetch int
	// ReadAhead bounds the block reads one stream waits for at once.
	ReadAhead int
	// Decoders bounds the block decodes the engine runs at once.
	Decoders int
	// RunCacheEntries bounds the runs kept in memory (a run's record and
	// plan: O(blocks)).
	RunCacheEntries int
	// Allocator for Arrow memory (blocks and batches); nil means
	// memory.DefaultAllocator.
	Allocator memory.Allocator
	// Logger; nil discards.
	Logger *slog.Logger
	// Kinds are the materializer kinds that recipes may name in windows,
	// by name, besides KindParquet (which every engine has and which may
	// not be replaced). Nil: none.
	Kinds map[string]Kind
	// OnRunRecordStored, if not nil, is called each time the engine
	// writes a run record (Store), not when it finds one stored already.
	OnRunRecordStored func()
	// Budget, if set, is the process memory budget the block cache leases
	// its blocks from (and gives back under pressure); nil: CacheBytes only.
	Budget *membudget.Budget
}

// DefaultOptions: a 1 GiB cache, 4 steps prefetched, 8 reads per stream,
// 2 decodes per CPU (at least 4).
func DefaultOptions() Options {
	return Options{
		CacheBytes:      1 << 30,
		Prefetch:        4,
		ReadAhead:       8,
		Decoders:        max(4, 2*runtime.GOMAXPROCS(0)),
		RunCacheEntries: 256,
	}
}

// Validate reports an unusable option.
func (o Options) Validate() error {
	switch {
	case o.CacheBytes < 0:
		return fmt.Errorf("%w: mix options: CacheBytes is %d; it must be 0 or more", versions.ErrInvalid, o.CacheBytes)
	case o.Prefetch < 0:
		return fmt.Errorf("%w: mix options: Prefetch is %d; it must be 0 or more", versions.ErrInvalid, o.Prefetch)
	case o.ReadAhead < 1 || o.Decoders < 1:
		return fmt.Errorf("%w: mix options: ReadAhead and Decoders must be at least 1", versions.ErrInvalid)
	case o.RunCacheEntries < 1:
		return fmt.Errorf("%w: mix options: RunCacheEntries must be at least 1", versions.ErrInvalid)
	}
	for name, k := range o.Kinds {
		switch {
		case name == "" || name == KindParquet:
			return fmt.Errorf("%w: mix options: Kinds may not name %q", versions.ErrInvalid, name)
		case k == nil:
			return fmt.Errorf("%w: mix options: kind %q is nil", versions.ErrInvalid, name)
		}
	}
	return nil
}

// Engine resolves recipes into runs, stores and loads run records, and
// serves the runs' rank streams from a block cache shared by all streams.
// It keeps no state that matters beyond caches: any number of engines over
// one bucket serve the same runs. Safe for concurrent use.
type Engine struct {
	tables   *tables.Store
	v        *versions.Store
	opts     Options
	mem      memory.Allocator
	log      *slog.Logger
	cache    *cache.Cache[blockKey, arrow.RecordBatch] // decoded blocks, shared by all streams
	reader   *tables.Reader                            // block reads and gathers, with recycled buffers
	decoders chan struct{}                             // bounds block decodes, engine-wide
	registry map[string]Kind                           // materializer kinds, by name
	// layout and windowBytes are the layout constants; tests shrink them.
	layout      tables.Layout
	windowBytes int64

	runs struct {
		sync.Mutex
		m     map[RunID]*Run
		order []RunID // insertion order, for eviction
	}
}

// windowBytes bounds the default shuffle window: buffer_rows is
// sampler.DefaultBufferRows rows, or fewer so that a window of the
// component with the widest rows holds about this many bytes (and at least
// minWindowRows rows).
const (
	windowBytes   = 64 << 20
	minWindowRows = 64
)

// New returns an Engine over the tables of ts.
func New(ts *tables.Store, opts Options) (*Engine, error) {
	if ts == nil {
		return nil, errors.New("mix: New needs a tables.Store")
	}
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	e := &Engine{tables: ts, v: ts.Versions(), opts: opts, mem: opts.Allocator, log: opts.Logger}
	if e.mem == nil {
		e.mem = memory.DefaultAllocator
	}
	if e.log == nil {
		e.log = slog.New(slog.DiscardHandler)
	}
	// The cache holds one reference to each block; readers pin blocks
	// with handles, so an evicted block lives until its last user is done.
	e.cache = cache.New[blockKey, arrow.RecordBatch](opts.CacheBytes, func(_ blockKey, rec arrow.RecordBatch) { rec.Release() })
	e.cache.UseBudget(opts.Budget)
	e.reader = ts.NewReader(e.mem)
	e.decoders = make(chan struct{}, opts.Decoders)
	e.layout, e.windowBytes = tables.DefaultLayout(), windowBytes
	e.registry = e.kinds(opts)
	e.runs.m = make(map[RunID]*Run)
	return e, nil
}

// Stats are the engine's block cache counters since New.
type Stats struct {
	Decodes      int64 // blocks read and decoded
	DecodedBytes int64 // their Arrow bytes
	Hits         int64 // block requests served from the cache
	Joins        int64 // block requests that waited for a decode in progress
	Evictions    int64
	CachedBlocks int
	CachedBytes  int64
}

// Stats returns the cache counters.
func (e *Engine) Stats() Stats {
	st := e.cache.Stats()
	return Stats{
		Decodes:      st.Loads,
		DecodedBytes: st.LoadedBytes,
		Hits:         st.Hits,
		Joins:        st.Joins,
		Evictions:    st.Evictions,
		CachedBlocks: st.Entries,
		CachedBytes:  st.Bytes,
	}
}

// Close cancels the block loads in flight, waits for them and drops the
// cached blocks. Streams still running fail or fill the cache again; call
// it once they are done.
func (e *Engine) Close() {
	e.cache.Purge()
	e.reader.Close()
}

// Resolve is Prepare then Store: it resolves r into a run and stores the
// run's record. Callers that still check the run against a request (world
// size, steps) call Prepare, check, then Store.
func (e *Engine) Resolve(ctx context.Context, r *Recipe) (*Run, error) {
	run, err := e.Prepare(ctx, r)
	if err != nil {
		return nil, err
	}
	return e.Store(ctx, run)
}

// Prepare resolves r into a run without storing anything: it pins every
// component to a commit, counts its rows, lays out its blocks, makes the
// materializers of its columns and windows, builds the run record and
// computes the run id. The run can answer schema and record questions
// (and be checked against a request); Store makes it servable by id.
// Errors name the component at fault.
func (e *Engine) Prepare(ctx context.Context, r *Recipe) (*Run, error) {
	if err := ValidateRecipe(r); err != nil {
		return nil, err
	}
	vs := make([]*tables.Version, len(r.Components))
	for i := range r.Components {
		c := &r.Components[i]
		v, err := e.tables.Table(ctx, versions.ProjectName(c.Project), componentRef(c), versions.TableName(c.Table))
		if err != nil {
			return nil, fmt.Errorf("component %d (%s/%s at %q): %w", i, c.Project, c.Table, componentRef(c), err)
		}
		if v.Rows() == 0 {
			return nil, fmt.Errorf("%w: component %d (%s/%s at %q): the table has no rows at commit %s; append rows or drop the component", ErrEmptyComponent, i, c.Project, c.Table, componentRef(c), v.Commit.Short())
		}
		vs[i] = v
	}
	windows, err := recipeWindows(r)
	if err != nil {
		return nil, err
	}
	if err := e.canonicalWindows(r, windows); err != nil {
		return nil, err
	}
	columns, err := recipeColumns(r, vs[0], windows[0])
	if err != nil {
		return nil, err
	}
	data, err := dataSchema(vs, columns)
	if err != nil {
		return nil, err
	}

	rec := &Record{Format: RecordFormat, Seed: r.Seed, BatchSize: r.BatchSize, Steps: r.Steps, Components: make([]ComponentRecord, len(vs))}
	var widest float64 // bytes per row of the widest component
	for i, v := range vs {
		blocks, bytes, err := e.tables.Layout(ctx, v, data, e.layout)
		if err != nil {
			return nil, fmt.Errorf("component %d (%s/%s@%s): %w", i, v.Project, v.Table, v.Commit.Short(), err)
		}
		widest = max(widest, float64(bytes)/float64(v.Rows()))
		c := &r.Components[i]
		rec.Components[i] = ComponentRecord{
			Project: v.Project, Ref: componentRef(c), Table: v.Table, Commit: v.Commit,
			Weight: c.Weight, Columns: columns, Rows: v.Rows(), Blocks: blocks, Windows: windows[i],
		}
		if c.Filter != "" {
			if err := e.filterComponent(ctx, &rec.Components[i], v, c.Filter); err != nil {
				return nil, fmt.Errorf("component %d (%s/%s@%s): %w", i, v.Project, v.Table, v.Commit.Short(), err)
			}
		}
	}
	if r.Shuffle != nil {
		rec.Shuffle = *r.Shuffle
	} else {
		rec.Shuffle.BufferRows = defaultWindow(widest, e.windowBytes)
	}
	plan, err := rec.plan()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadRecipe, err)
	}
	rec.Steps = plan.Steps()
	rec.Run = RunID(plan.RunID())
	body, err := jsonRecord(rec)
	if err != nil {
		return nil, err
	}
	if int64(len(body)) > versions.MaxRecordSize {
		return nil, fmt.Errorf("%w: the run record would be %d bytes, above the store's limit of %d for one record; the tables have too many blocks for one run (mix fewer or smaller tables)", ErrBadRecipe, len(body), versions.MaxRecordSize)
	}
	return e.prepare(ctx, rec, body, plan, vs)
}

// Store stores the record of run, a run from Prepare, once, and makes the
// run servable by its id. It returns the run to serve: run itself, or,
// when the record was stored before (here or by another server), the run
// of the stored record, the same run but for the refs as given. Only a
// write calls Options.OnRunRecordStored.
func (e *Engine) Store(ctx context.Context, run *Run) (*Run, error) {
	rec := run.rec
	stored, existing, err := e.v.PutRunRecord(ctx, rec.Components[0].Project, string(rec.Run), run.json)
	if err != nil {
		return nil, err
	}
	if !existing {
		if e.opts.OnRunRecordStored != nil {
			e.opts.OnRunRecordStored()
		}
	} else if !bytes.Equal(stored, run.json) {
		// Resolved before, here or elsewhere: serve what is stored (the same
		// run: the id covers everything the materializers use).
		srec, splan, err := decodeRecord(stored, rec.Run)
		if err != nil {
			return nil, err
		}
		run = &Run{e: e, rec: srec, json: stored, plan: splan, versions: run.versions, matches: run.matches, mats: run.mats, schema: run.schema}
	}
	e.log.Debug("stored run", "run", run.ID(), "steps", run.Steps(), "components", len(run.versions), "new", !existing)
	return e.remember(run), nil
}

func jsonRecord(rec *Record) ([]byte, error) {
	body, err := json.Marshal(rec)
	if err != nil {
		return nil, fmt.Errorf("encode run record: %w", err)
	}
	return body, nil
}

// defaultWindow is the shuffle window of a recipe that names none.
func defaultWindow(bytesPerRow float64, windowBytes int64) int64 {
	w := int64(sampler.DefaultBufferRows)
	if bytesPerRow > 0 {
		w = min(w, int64(float64(windowBytes)/bytesPerRow))
	}
	return max(w, minWindowRows)
}

// recipeColumns resolves the run's columns: the first component's, or
// every column of its table that is not a window key; other components
// may repeat the same set.
func recipeColumns(r *Recipe, first *tables.Version, windows map[string]Window) ([]string, error) {
	cols := r.Components[0].Columns
	if len(cols) == 0 {
		for _, f := range first.Schema.Fields() {
			if _, ok := windows[f.Name]; ok {
				continue
			}
			if f.Name == ComponentColumn || f.Name == RowColumn {
				return nil, fmt.Errorf("%w: component 0 (%s/%s): the table has a column named %q, which every batch carries already; list the columns to serve", ErrBadRecipe, first.Project, first.Table, f.Name)
			}
			cols = append(cols, f.Name)
		}
	}
	want := slices.Sorted(slices.Values(cols))
	for i, c := range r.Components[1:] {
		if len(c.Columns) == 0 {
			continue
		}
		if got := slices.Sorted(slices.Values(c.Columns)); !slices.Equal(got, want) {
			return nil, fmt.Errorf("%w: component %d (%s/%s) asks for columns [%s] but component 0 for [%s]; every component serves the same columns (leave \"columns\" out after the first component)", ErrBadRecipe, i+1, c.Project, c.Table, strings.Join(c.Columns, ", "), strings.Join(cols, ", "))
		}
	}
	return slices.Clone(cols), nil
}

// Load returns run id, from memory or from its record in the store. hint,
// if not empty, is the project to look in first (a ticket carries it);
// otherwise every project is searched.
func (e *Engine) Load(ctx context.Context, id RunID, hint versions.ProjectName) (*Run, error) {
	if _, err := ParseRunID(string(id)); err != nil {
		return nil, err
	}
	if run := e.lookup(id); run != nil {
		return run, nil
	}
	body, err := e.findRecord(ctx, id, hint)
	if err != nil {
		return nil, err
	}
	rec, plan, err := decodeRecord(body, id)
	if err != nil {
		return nil, err
	}
	vs := make([]*tables.Version, len(rec.Components))
	for i, c := range rec.Components {
		if vs[i], err = e.tables.TableAt(ctx, c.Project, c.Commit, c.Table); err != nil {
			return nil, fmt.Errorf("run %s, component %d (%s/%s@%s): %w", id.Short(), i, c.Project, c.Table, c.Commit.Short(), err)
		}
	}
	run, err := e.prepare(ctx, rec, body, plan, vs)
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", id.Short(), err)
	}
	return e.remember(run), nil
}

func (e *Engine) findRecord(ctx context.Context, id RunID, hint versions.ProjectName) ([]byte, error) {
	var projects []versions.ProjectName
	if hint != "" {
		if _, err := versions.ParseProjectName(string(hint)); err == nil {
			projects = append(projects, hint)
		}
	}
	if len(projects) == 0 {
		var err error
		if projects, err = e.v.ListProjects(ctx); err != nil {
			return nil, err
		}
	}
	for _, p := range projects {
		body, err := e.v.GetRunRecord(ctx, p, string(id))
		switch {
		case err == nil:
			return body, nil
		case !errors.Is(err, versions.ErrNotFound):
			return nil, err
		}
	}
	if hint != "" {
		// A ticket's project may be stale only if the store was edited by
		// hand; look everywhere before giving up.
		return e.findRecord(ctx, id, "")
	}
	return nil, fmt.Errorf("%w: no run %s in this store; resolve its recipe with {\"recipe\": …} first", ErrRunNotFound, id)
}

// prepare builds a servable Run from a checked record and its versions.
func (e *Engine) prepare(ctx context.Context, rec *Record, body []byte, plan *sampler.Plan, vs []*tables.Version) (*Run, error) {
	columns := rec.Components[0].Columns
	for i, c := range rec.Components {
		if !slices.Equal(c.Columns, columns) {
			return nil, fmt.Errorf("%w: run record %s: component %d has other columns than component 0", versions.ErrCorrupt, rec.Run.Short(), i)
		}
		if err := sameWindows(rec.Components[0].Windows, c.Windows); err != nil {
			return nil, fmt.Errorf("%w: run record %s: component %d: %w", versions.ErrCorrupt, rec.Run.Short(), i, err)
		}
		if vs[i].Rows() != c.Rows {
			return nil, fmt.Errorf("%w: run record %s: component %d (%s/%s@%s) has %d rows, the record says %d", versions.ErrCorrupt, rec.Run.Short(), i, c.Project, c.Table, c.Commit.Short(), vs[i].Rows(), c.Rows)
		}
	}
	matches := make([]*tables.Matches, len(vs))
	for i, c := range rec.Components {
		if c.Filter == "" {
			continue
		}
		_, m, err := e.componentMatches(ctx, vs[i], c.Filter)
		if err != nil {
			return nil, fmt.Errorf("component %d (%s/%s@%s): %w", i, c.Project, c.Table, c.Commit.Short(), err)
		}
		if m.Len() != c.Matches {
			return nil, fmt.Errorf("%w: run record %s: component %d (%s/%s@%s) has %d rows matching %s, the record says %d", versions.ErrCorrupt, rec.Run.Short(), i, c.Project, c.Table, c.Commit.Short(), m.Len(), c.Filter, c.Matches)
		}
		matches[i] = m
	}
	mats, err := e.materializers(ctx, rec, vs)
	if err != nil {
		return nil, err
	}
	schema, err := outputSchema(mats)
	if err != nil {
		return nil, err
	}
	return &Run{e: e, rec: rec, json: body, plan: plan, versions: vs, matches: matches, mats: mats, schema: schema}, nil
}

// componentMatches binds the filter text to v and lists v's rows that
// match it (cached by the tables store per version and filter).
func (e *Engine) componentMatches(ctx context.Context, v *tables.Version, text string) (*filter.Filter, *tables.Matches, error) {
	f, err := v.Filter(text)
	if err != nil {
		return nil, nil, err
	}
	m, err := e.tables.Matches(ctx, v, f)
	if err != nil {
		return nil, nil, err
	}
	return f, m, nil
}

// filterComponent makes c, a component of v with blocks laid out, a
// filtered one: the canonical filter, its matching rows and their counts
// per block. A filter that matches nothing is ErrEmptyComponent.
func (e *Engine) filterComponent(ctx context.Context, c *ComponentRecord, v *tables.Version, text string) error {
	f, m, err := e.componentMatches(ctx, v, text)
	if err != nil {
		return err
	}
	if m.Len() == 0 {
		return fmt.Errorf("%w: no row matches filter %s at commit %s; change the filter or drop the component", ErrEmptyComponent, f, v.Commit.Short())
	}
	c.Filter, c.Matches, c.MatchBlocks = f.String(), m.Len(), nil
	var row int64
	for _, n := range c.Blocks {
		if k := m.Rank(row+n) - m.Rank(row); k > 0 {
			c.MatchBlocks = append(c.MatchBlocks, k)
		}
		row += n
	}
	return nil
}

// own returns run as this engine serves it: with its own materializers
// (and so its own block cache) when another engine made run.
func (e *Engine) own(ctx context.Context, run *Run) (*Run, error) {
	if run.e == e {
		return run, nil
	}
	if kept := e.lookup(run.ID()); kept != nil {
		return kept, nil
	}
	return e.prepare(ctx, run.rec, run.json, run.plan, run.versions)
}

func (e *Engine) lookup(id RunID) *Run {
	e.runs.Lock()
	defer e.runs.Unlock()
	return e.runs.m[id]
}

// remember keeps run in memory and returns the run to serve: run, or the
// one kept already under its id.
func (e *Engine) remember(run *Run) *Run {
	e.runs.Lock()
	defer e.runs.Unlock()
	if kept, ok := e.runs.m[run.ID()]; ok {
		return kept
	}
	for len(e.runs.order) >= e.opts.RunCacheEntries {
		delete(e.runs.m, e.runs.order[0])
		e.runs.order = e.runs.order[1:]
	}
	e.runs.m[run.ID()] = run
	e.runs.order = append(e.runs.order, run.ID())
	return run
}
