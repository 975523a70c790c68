package mix

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/weftdata/weft/client"
	"github.com/weftdata/weft/sampler"
	"github.com/weftdata/weft/tables"
	"github.com/weftdata/weft/versions"
)

// RecordFormat is the version of the run record format (docs/format.md).
// Readers reject versions they do not know.
const RecordFormat = 1

// identityTag opens every component identity, so that a change to what the
// serving layer does with a run (block layout, columns) can get a new tag
// and thereby new run ids.
const identityTag = "weft/mix/1"

// RunID names a run: the hex SHA-256 that sampler.Plan.RunID computes over
// the run's semantic fields (seed, batch size, steps, shuffle, and per
// component its reduced weight, rows, blocks and identity: project, table,
// pinned commit and columns). It never depends on the world size, the
// server or the time.
type RunID string

// ParseRunID validates a run id: 64 lowercase hex digits.
func ParseRunID(s string) (RunID, error) {
	if len(s) != 64 {
		return "", fmt.Errorf("%w: %q must be 64 lowercase hex digits (the \"run\" of a resolved recipe)", ErrBadRunID, s)
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return "", fmt.Errorf("%w: %q must be 64 lowercase hex digits (the \"run\" of a resolved recipe)", ErrBadRunID, s)
		}
	}
	return RunID(s), nil
}

// Short returns the first 12 hex digits, for display.
func (id RunID) Short() string {
	if len(id) > 12 {
		return string(id[:12])
	}
	return string(id)
}

// Record is a run record: a recipe with every component pinned to a commit,
// its row count and its block layout. It is stored once, at
// projects/P/runs/RUN (P: the first component's project), and is all a
// server needs to serve the run's batches.
type Record struct {
	Format     int               `json:"format"`
	Run        RunID             `json:"run"`
	Seed       uint64            `json:"seed"`
	BatchSize  int               `json:"batch_size"`
	Steps      int64             `json:"steps"`
	Shuffle    Shuffle           `json:"shuffle"`
	Components []ComponentRecord `json:"components"`
}

// ComponentRecord is one resolved component.
type ComponentRecord struct {
	Project versions.ProjectName `json:"project"`
	Ref     string               `json:"ref"` // as the recipe gave it
	Table   versions.TableName   `json:"table"`
	Commit  versions.CommitID    `json:"commit"`
	Weight  float64              `json:"weight"`
	Columns []string             `json:"columns"`
	Rows    int64                `json:"rows"`
	// Blocks are the row counts of the component's blocks, in row order:
	// consecutive row ranges that never cross a Parquet row group (see
	// doc.go, "Blocks"). They sum to Rows.
	Blocks []int64 `json:"blocks"`
	// Windows are the component's windows (doc.go, "Windows"), nil when
	// the recipe has none: then neither the record nor the run id has
	// them, as before windows existed.
	Windows map[string]Window `json:"windows,omitempty"`
	// Filter is a filtered component's filter (canonical text: package
	// filter), "" for none. Its sampler draws from its Matches matching
	// rows in blocks of MatchBlocks rows (the matches of each block of
	// Blocks, blocks without one left out): the k-th matching row, in
	// ordinal order, is the component's row k. Batches carry the row's
	// ordinal in the table version as _row.
	Filter      string  `json:"filter,omitempty"`
	Matches     int64   `json:"matches,omitempty"`
	MatchBlocks []int64 `json:"match_blocks,omitempty"`
}

// identity is the component's part of the run id beyond rows and blocks:
// the JSON array [tag, project, table, commit, columns], with the
// canonical windows object as a sixth element when there are windows,
// and {"filter": text} last when the component is filtered.
func (c *ComponentRecord) identity() (string, error) {
	id := []any{identityTag, c.Project, c.Table, c.Commit, c.Columns}
	if len(c.Windows) > 0 {
		id = append(id, c.Windows)
	}
	if c.Filter != "" {
		id = append(id, map[string]string{"filter": c.Filter})
	}
	b, err := json.Marshal(id)
	if err != nil {
		return "", fmt.Errorf("%w: windows: %w", ErrBadWindow, err)
	}
	return string(b), nil
}

// spec is the sampler's view of the record.
func (r *Record) spec() (sampler.Spec, error) {
	s := sampler.Spec{
		Seed:       r.Seed,
		BatchSize:  r.BatchSize,
		Shuffle:    sampler.Shuffle{BufferRows: r.Shuffle.BufferRows},
		Steps:      r.Steps,
		Components: make([]sampler.Component, len(r.Components)),
	}
	for i := range r.Components {
		c := &r.Components[i]
		id, err := c.identity()
		if err != nil {
			return sampler.Spec{}, fmt.Errorf("component %d: %w", i, err)
		}
		s.Components[i] = sampler.Component{Weight: c.Weight, Rows: c.Rows, Blocks: c.Blocks, Identity: id}
		if c.Filter != "" {
			s.Components[i].Rows, s.Components[i].Blocks = c.Matches, c.MatchBlocks
		}
	}
	return s, nil
}

// plan is the record's sampler plan.
func (r *Record) plan() (*sampler.Plan, error) {
	spec, err := r.spec()
	if err != nil {
		return nil, err
	}
	return sampler.NewPlan(spec)
}

// decodeRecord parses a stored record and checks that it is run want.
func decodeRecord(data []byte, want RunID) (*Record, *sampler.Plan, error) {
	var r Record
	if err := client.Decode("run record", data, &r); err != nil {
		return nil, nil, fmt.Errorf("%w: run record %s: %w", versions.ErrCorrupt, want.Short(), err)
	}
	if r.Format != RecordFormat {
		return nil, nil, fmt.Errorf("%w: run record %s has format %d; this server reads format %d", versions.ErrCorrupt, want.Short(), r.Format, RecordFormat)
	}
	if r.Run != want {
		return nil, nil, fmt.Errorf("%w: run record stored as %s names run %s", versions.ErrCorrupt, want.Short(), r.Run.Short())
	}
	for i, c := range r.Components {
		if _, err := versions.ParseCommitID(string(c.Commit)); err != nil {
			return nil, nil, fmt.Errorf("%w: run record %s, component %d: %w", versions.ErrCorrupt, want.Short(), i, err)
		}
		if _, err := versions.ParseProjectName(string(c.Project)); err != nil {
			return nil, nil, fmt.Errorf("%w: run record %s, component %d: %w", versions.ErrCorrupt, want.Short(), i, err)
		}
		if _, err := versions.ParseTableName(string(c.Table)); err != nil {
			return nil, nil, fmt.Errorf("%w: run record %s, component %d: %w", versions.ErrCorrupt, want.Short(), i, err)
		}
	}
	plan, err := r.plan()
	if err != nil {
		return nil, nil, fmt.Errorf("%w: run record %s: %w", versions.ErrCorrupt, want.Short(), err)
	}
	if RunID(plan.RunID()) != want {
		return nil, nil, fmt.Errorf("%w: run record %s hashes to %s", versions.ErrCorrupt, want.Short(), RunID(plan.RunID()).Short())
	}
	return &r, plan, nil
}

// Run is a resolved run, ready to serve: its record, its sampler plan, the
// pinned table versions and the materializers of its columns. It is
// immutable and safe for concurrent use.
type Run struct {
	e        *Engine // whose materializers these are
	rec      *Record
	json     []byte
	plan     *sampler.Plan
	versions []*tables.Version // per component
	matches  []*tables.Matches // per component: its matching rows, nil when not filtered
	mats     []Materializer    // the columns' makers, in schema order
	schema   *arrow.Schema     // the materializers' fields + _component + _row
}

// ID is the run id.
func (r *Run) ID() RunID { return r.rec.Run }

// Versions are the table versions the run's components are pinned to, in
// component order (shared and immutable: do not modify).
func (r *Run) Versions() []*tables.Version { return slices.Clone(r.versions) }

// Record returns a copy of the run record.
func (r *Run) Record() Record {
	c := *r.rec
	c.Components = slices.Clone(r.rec.Components)
	for i := range c.Components {
		c.Components[i].Columns = slices.Clone(c.Components[i].Columns)
		c.Components[i].Blocks = slices.Clone(c.Components[i].Blocks)
		c.Components[i].Windows = maps.Clone(c.Components[i].Windows)
		c.Components[i].MatchBlocks = slices.Clone(c.Components[i].MatchBlocks)
	}
	return c
}

// JSON is the run record as stored: the app_metadata of the run's FlightInfo.
func (r *Run) JSON() []byte { return slices.Clone(r.json) }

// Steps is the run length.
func (r *Run) Steps() int64 { return r.rec.Steps }

// BatchSize is the global batch size B.
func (r *Run) BatchSize() int { return r.rec.BatchSize }

// Plan is the run's sampler plan: Plan.Batch(s) is the global batch of step s.
func (r *Run) Plan() *sampler.Plan { return r.plan }

// tableRows maps samples' rows from the sampler's ordinals (among a
// filtered component's matching rows) to row ordinals in the components'
// table versions, in place.
func (r *Run) tableRows(samples []sampler.Sample) {
	for i := range samples {
		if m := r.matches[samples[i].Component]; m != nil {
			samples[i].Row = m.Ordinal(samples[i].Row)
		}
	}
}

// Schema is the schema of every batch of the run: the recipe's columns,
// then the windows' columns (by window key), then _component (int32) and
// _row (int64).
func (r *Run) Schema() *arrow.Schema { return r.schema }

// CheckStream validates a rank stream of the run: 1 ≤ world, world divides
// the batch size, 0 ≤ rank < world, 0 ≤ start < end ≤ Steps. end 0 means
// Steps.
func (r *Run) CheckStream(rank, world int, start, end int64) error {
	if err := r.CheckWorld(world); err != nil {
		return err
	}
	if rank < 0 || rank >= world {
		return fmt.Errorf("%w: rank %d is not in 0..%d", ErrRank, rank, world-1)
	}
	return r.CheckSteps(start, end)
}

// CheckWorld validates a world size for the run.
func (r *Run) CheckWorld(world int) error {
	b := r.rec.BatchSize
	switch {
	case world < 1:
		return fmt.Errorf("%w: world_size %d must be at least 1", ErrWorldSize, world)
	case b%world != 0:
		return fmt.Errorf("%w: world_size %d does not divide batch_size %d; use a divisor of %d (each rank gets batch_size/world_size rows per step)", ErrWorldSize, world, b, b)
	}
	return nil
}

// CheckSteps validates a step range [start, end) of the run; end 0 means
// the end of the run.
func (r *Run) CheckSteps(start, end int64) error {
	n := r.rec.Steps
	if end == 0 {
		end = n
	}
	switch {
	case start < 0 || start >= n:
		return fmt.Errorf("%w: start_step %d is not in 0..%d (run %s has %d steps)", ErrStepRange, start, n-1, r.rec.Run.Short(), n)
	case end <= start || end > n:
		return fmt.Errorf("%w: end_step %d is not in %d..%d (run %s has %d steps)", ErrStepRange, end, start+1, n, r.rec.Run.Short(), n)
	}
	return nil
}
