package client

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/weftdata/weft/errdefs"
)

// DoAction types.
const (
	ActionCreateProject = "create_project"
	ActionCreateBranch  = "create_branch"
	ActionListBranches  = "list_branches"
	ActionLog           = "log"
)

// CreateProjectRequest is the body of create_project.
type CreateProjectRequest struct {
	Project string `json:"project"`
}

// Validate checks the required fields.
func (r *CreateProjectRequest) Validate() error { return required("project", r.Project) }

// CreateProjectResult is the result of create_project: the project's
// branch "main" at its empty root commit.
type CreateProjectResult struct {
	Project string `json:"project"`
	Branch  string `json:"branch"`
	Commit  string `json:"commit"`
}

// CreateBranchRequest is the body of create_branch.
type CreateBranchRequest struct {
	Project string `json:"project"`
	Branch  string `json:"branch"`
	// From is a ref (branch, commit id or a unique prefix of 8+ hex
	// digits); "" means "main".
	From string `json:"from,omitempty"`
}

// Validate checks the required fields.
func (r *CreateBranchRequest) Validate() error {
	if err := required("project", r.Project); err != nil {
		return err
	}
	return required("branch", r.Branch)
}

// Branch is the result of create_branch and one item of list_branches.
type Branch struct {
	Branch string `json:"branch"`
	Commit string `json:"commit"`
}

// ListBranchesRequest is the body of list_branches.
type ListBranchesRequest struct {
	Project string `json:"project"`
}

// Validate checks the required fields.
func (r *ListBranchesRequest) Validate() error { return required("project", r.Project) }

// LogRequest is the body of log.
type LogRequest struct {
	Project string `json:"project"`
	// Ref is where the history starts; "" means "main".
	Ref string `json:"ref,omitempty"`
	// Limit is the most commits to list; nil lists all.
	Limit *int `json:"limit,omitempty"`
}

// Validate checks the required fields and the limit.
func (r *LogRequest) Validate() error {
	if err := required("project", r.Project); err != nil {
		return err
	}
	if r.Limit != nil && *r.Limit < 1 {
		return fmt.Errorf("%w: limit is %d; give a positive number, or leave it out for the whole history", errdefs.ErrInvalidArgument, *r.Limit)
	}
	return nil
}

// LogEntry is one commit of a log result, newest first.
type LogEntry struct {
	Commit string `json:"commit"`
	// Parent is nil for a project's root commit.
	Parent  *string   `json:"parent"`
	Time    time.Time `json:"time"`
	Message string    `json:"message"`
	// Tables maps each table to its manifest id at this commit.
	Tables map[string]string `json:"tables"`
}

// PutDescriptor names the table a DoPut appends to: the path descriptor
// [project, branch, table].
type PutDescriptor struct {
	Project, Branch, Table string
	// IdempotencyKey, when set, makes the put safe to retry: a
	// client-chosen string (a fresh UUID per logical put; 1 to 256
	// printable ASCII characters) that Put sends in the app_metadata of the
	// stream's first batch as PutMetadata. The server commits a key at most
	// once per table and branch: a retry of a put that already committed
	// commits nothing and answers that commit (PutResult.Replayed).
	IdempotencyKey string
}

// Path is the descriptor path [project, branch, table].
func (d PutDescriptor) Path() []string { return []string{d.Project, d.Branch, d.Table} }

// PutMetadata is the app_metadata of a DoPut stream's first batch message
// (optional; the server reads it from the first batch only).
type PutMetadata struct {
	IdempotencyKey string `json:"idempotency_key,omitempty"`
}

// PutResult is the app_metadata of the one PutResult of a DoPut.
type PutResult struct {
	Commit string `json:"commit"`
	Rows   int64  `json:"rows"`
	// Replayed (sent only when true): the put's idempotency key had
	// committed before; Commit and Rows are that commit's, and this put
	// stored nothing.
	Replayed bool `json:"replayed,omitempty"`
}

// ScanRequest is a table at a ref with a projection: what a path
// descriptor [project, ref, table] or a {"scan": …} command asks for.
type ScanRequest struct {
	Project string `json:"project"`
	// Ref is a branch, a commit id or a unique prefix of 8+ hex digits.
	Ref   string `json:"ref"`
	Table string `json:"table"`
	// Columns nil means every column, in table order (with Windows:
	// every column that Windows does not name).
	Columns []string `json:"columns,omitempty"`
	// Windows, when not empty, makes a windowed scan (docs/flight.md,
	// "Windowed scans"): the same map of output key to Window as a recipe
	// component's; each batch then carries the columns of consecutive
	// rows, each window's output columns for those rows (as a run sends
	// them) and _row. Nil: a plain scan.
	Windows map[string]Window `json:"windows,omitempty"`
	// Filter keeps only the rows that match it (package filter's
	// language, docs/flight.md "Filters"); empty keeps every row. Row
	// groups whose statistics rule out a match are not read.
	Filter string `json:"filter,omitempty"`
	// Shards > 0 asks for exactly that many endpoints whose row counts
	// (matching rows, with a filter) differ by at most one, in row order,
	// every (matching) row in exactly one; Balanced with Shards 0 lets the
	// server choose the count (about one per EndpointBytes of matching
	// rows). Then the FlightInfo's total_records is the exact count and
	// ScanMetadata.ShardRows the rows of each endpoint. Neither: endpoints
	// by Parquet size, and total_records -1 when there is a filter.
	Shards   int  `json:"shards,omitempty"`
	Balanced bool `json:"balanced,omitempty"`
}

// MaxShards bounds ScanRequest.Shards.
const MaxShards = 1 << 16

// Validate checks the required fields.
func (r *ScanRequest) Validate() error {
	for _, f := range [][2]string{{"project", r.Project}, {"table", r.Table}, {"ref", r.Ref}} {
		if err := required(f[0], f[1]); err != nil {
			return err
		}
	}
	if r.Shards < 0 || r.Shards > MaxShards {
		return fmt.Errorf("%w: shards %d must be between 1 and %d (or left out)", errdefs.ErrInvalidArgument, r.Shards, MaxShards)
	}
	if len(r.Windows) > 0 && (r.Filter != "" || r.Shards > 0 || r.Balanced) {
		return fmt.Errorf("%w: a windowed scan takes no filter or shards (yet); filter in a recipe component instead", errdefs.ErrUnimplemented)
	}
	return nil
}

// ScanMetadata is the app_metadata of a scan's FlightInfo.
type ScanMetadata struct {
	Commit string `json:"commit"`
	// Windows (windowed scans only) are the scan's windows in their
	// canonical form, and StepRows the most rows of one step: each
	// endpoint streams its rows as steps of StepRows rows (its last one
	// fewer), each step one message or several (StepMetadata).
	Windows  map[string]Window `json:"windows,omitempty"`
	StepRows int               `json:"step_rows,omitempty"`
	// Filter is the scan's filter in its canonical text (filtered scans
	// only); ShardRows the rows of each endpoint (balanced shards only).
	Filter    string  `json:"filter,omitempty"`
	ShardRows []int64 `json:"shard_rows,omitempty"`
}

// Recipe is what a trainer asks for: components with weights, a seed and a
// batch size (docs/flight.md, "Training runs").
type Recipe struct {
	Seed       uint64      `json:"seed"`
	BatchSize  int         `json:"batch_size"`
	Components []Component `json:"components"`
	// Shuffle nil lets the server pick the window.
	Shuffle *Shuffle `json:"shuffle,omitempty"`
	// Steps is the run length; 0 means one pass over the rows.
	Steps int64 `json:"steps,omitempty"`
}

// Component is one table of a recipe.
type Component struct {
	Project string `json:"project"`
	// Ref is a branch, a commit id or an 8+ digit prefix; "" means "main".
	Ref   string `json:"ref,omitempty"`
	Table string `json:"table"`
	// Weight is the relative share of every batch; 0 here means the
	// default, 1 (a weight of 0 sent explicitly is refused).
	Weight float64 `json:"weight,omitempty"`
	// Columns nil means every column of the first component's table
	// that Windows does not name.
	Columns []string `json:"columns,omitempty"`
	// Windows maps output columns to the materializer that makes them
	// beyond the rows' own values (docs/flight.md, "Windows"): e.g.
	// {"wrist_camera": {"kind": "video", "offsets": [0, 1, 2]}}. Nil
	// means none, or, after the first component, the first component's.
	Windows map[string]Window `json:"windows,omitempty"`
	// Filter, when set, makes the component the table's rows that match
	// it (package filter's language): its row ordinals are ordinals among
	// the matching rows at the pinned commit, so shares, rank invariance
	// and resume hold as for a table of just those rows.
	Filter string `json:"filter,omitempty"`
}

// Window is one entry of a component's windows: the materializer kind
// that makes the column and its parameters. Its JSON form is one object,
// {"kind": Kind, …Spec's fields}, written canonically: keys sorted at
// every level, no spaces, numbers as given.
type Window struct {
	// Kind names a materializer the server has registered ("video",
	// "rows", …).
	Kind string
	// Spec is the kind's parameters: a JSON object without "kind"; nil
	// means {}. Decoding leaves it canonical.
	Spec json.RawMessage
}

// MarshalJSON writes {"kind": Kind, …Spec} canonically.
func (w Window) MarshalJSON() ([]byte, error) {
	fields := map[string]any{}
	if len(w.Spec) > 0 {
		if err := decodeNumbers(w.Spec, &fields); err != nil {
			return nil, fmt.Errorf("window of kind %q: spec must be a JSON object: %w", w.Kind, err)
		}
	}
	if _, ok := fields["kind"]; ok {
		return nil, fmt.Errorf("window of kind %q: its spec has a field \"kind\"; set Window.Kind instead", w.Kind)
	}
	fields["kind"] = w.Kind
	return json.Marshal(fields)
}

// UnmarshalJSON reads an object with a non-empty string "kind"; its other
// fields, canonical, are the Spec.
func (w *Window) UnmarshalJSON(data []byte) error {
	var fields map[string]any
	if err := decodeNumbers(data, &fields); err != nil || fields == nil {
		return &fieldError{`window: a JSON object {"kind", …} is needed`}
	}
	kind, ok := fields["kind"].(string)
	if !ok || kind == "" {
		return &fieldError{`window: "kind" is missing or not a non-empty string; give the materializer kind, e.g. {"kind": "video", …}`}
	}
	delete(fields, "kind")
	spec, err := json.Marshal(fields)
	if err != nil {
		return &fieldError{fmt.Sprintf("window: %v", err)}
	}
	*w = Window{Kind: kind, Spec: spec}
	return nil
}

// decodeNumbers decodes JSON into v keeping numbers as written
// (json.Number), so that re-encoding changes no number.
func decodeNumbers(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("trailing data after the JSON object")
	}
	return nil
}

// Shuffle is the shuffle window of a recipe.
type Shuffle struct {
	// BufferRows is the window in rows (0: block order only).
	BufferRows int64 `json:"buffer_rows"`
}

// RecipeFields is the recipe's JSON shape, for error messages.
const RecipeFields = `{"seed", "batch_size", "components": [{"project", "ref"?, "table", "weight"?, "columns"?, "windows"?: {COLUMN: {"kind", …}}, "filter"?}], "shuffle"?: {"buffer_rows"}, "steps"?}`

// UnmarshalJSON decodes a recipe strictly: seed, batch_size and components
// are required, a component's weight defaults to 1, and shuffle needs
// buffer_rows. Range checks are the server's (package mix).
func (r *Recipe) UnmarshalJSON(data []byte) error {
	var w struct {
		Seed       *uint64 `json:"seed"`
		BatchSize  *int    `json:"batch_size"`
		Components []struct {
			Project string            `json:"project"`
			Ref     string            `json:"ref"`
			Table   string            `json:"table"`
			Weight  *float64          `json:"weight"`
			Columns []string          `json:"columns"`
			Windows map[string]Window `json:"windows"`
			Filter  string            `json:"filter"`
		} `json:"components"`
		Shuffle *struct {
			BufferRows *int64 `json:"buffer_rows"`
		} `json:"shuffle"`
		Steps *int64 `json:"steps"`
	}
	if err := decodeStrict(data, &w); err != nil {
		return &fieldError{fmt.Sprintf("recipe: %v; a recipe is %s", err, RecipeFields)}
	}
	switch {
	case w.Seed == nil:
		return &fieldError{`recipe: "seed" is missing; give an integer 0..2^64-1`}
	case w.BatchSize == nil:
		return &fieldError{`recipe: "batch_size" is missing; give the global batch size (all ranks together)`}
	case w.Components == nil:
		return &fieldError{`recipe: "components" is missing; give a list of {"project", "table", "weight"}`}
	}
	out := Recipe{Seed: *w.Seed, BatchSize: *w.BatchSize, Components: make([]Component, len(w.Components))}
	if w.Steps != nil {
		if *w.Steps == 0 {
			return &fieldError{`recipe: "steps" is 0; give a positive run length or leave it out`}
		}
		out.Steps = *w.Steps
	}
	if w.Shuffle != nil {
		if w.Shuffle.BufferRows == nil {
			return &fieldError{`recipe: "shuffle" needs "buffer_rows" (0 for block order only); or leave "shuffle" out`}
		}
		out.Shuffle = &Shuffle{BufferRows: *w.Shuffle.BufferRows}
	}
	for i, c := range w.Components {
		out.Components[i] = Component{Project: c.Project, Ref: c.Ref, Table: c.Table, Weight: 1, Columns: c.Columns, Windows: c.Windows, Filter: c.Filter}
		if c.Weight != nil {
			out.Components[i].Weight = *c.Weight
		}
	}
	*r = out
	return nil
}

// RunCommand is the GetFlightInfo (or GetSchema) command of a training
// run: {"recipe": …} resolves a recipe (pinning every ref), {"run": ID}
// loads a run; either with a world size and a step range.
type RunCommand struct {
	Recipe *Recipe `json:"recipe,omitempty"`
	// Run is a run id, or a unique prefix of at least 8 of its hex digits.
	Run string `json:"run,omitempty"`
	// WorldSize is the number of ranks (endpoints); nil means 1.
	WorldSize *int `json:"world_size,omitempty"`
	// StartStep is the first step served.
	StartStep int64 `json:"start_step,omitempty"`
	// EndStep is one past the last step served; 0 means the run's end.
	EndStep int64 `json:"end_step,omitempty"`
}

// RunCommands describes the run commands, for error messages.
const RunCommands = `{"recipe": {…}, "world_size"?, "start_step"?, "end_step"?} or {"run": ID, "world_size"?, "start_step"?, "end_step"?}`

// World is the world size, 1 when not given.
func (c *RunCommand) World() int {
	if c.WorldSize == nil {
		return 1
	}
	return *c.WorldSize
}

// Validate checks that exactly one of recipe and run is given and that the
// world size and steps are not negative. Whether they fit the run is the
// server's check.
func (c *RunCommand) Validate() error {
	switch {
	case c.Recipe != nil && c.Run != "":
		return fmt.Errorf(`%w: a command has "recipe" or "run", not both`, errdefs.ErrInvalidArgument)
	case c.Recipe == nil && c.Run == "":
		return fmt.Errorf(`%w: give "recipe" (an object) or "run" (a run id): %s`, errdefs.ErrInvalidArgument, RunCommands)
	case c.WorldSize != nil && *c.WorldSize < 1:
		return fmt.Errorf("%w: world_size %d must be at least 1", errdefs.ErrInvalidArgument, *c.WorldSize)
	case c.StartStep < 0:
		return fmt.Errorf("%w: start_step %d is negative; give the first step to serve (0 or more)", errdefs.ErrInvalidArgument, c.StartStep)
	case c.EndStep < 0:
		return fmt.Errorf("%w: end_step %d is negative; give one past the last step to serve, or leave it out for the run's end", errdefs.ErrInvalidArgument, c.EndStep)
	}
	return nil
}

// Command is a GetFlightInfo or GetSchema command descriptor: a scan
// ({"scan": …}) or a run command (RunCommand's fields at the top level).
type Command struct {
	Scan *ScanRequest `json:"scan,omitempty"`
	RunCommand
}

// Commands describes every command, for error messages.
const Commands = `{"scan": {"project","ref","table","columns"?,"windows"?,"filter"?,"shards"?,"balanced"?}}, ` + RunCommands

// Validate checks that the command is a scan or a run command, not both.
func (c *Command) Validate() error {
	if c.Scan != nil {
		if c.Recipe != nil || c.Run != "" || c.WorldSize != nil || c.StartStep != 0 || c.EndStep != 0 {
			return fmt.Errorf(`%w: a scan command has the one key "scan"; it also has run fields (recipe, run, world_size, start_step or end_step)`, errdefs.ErrInvalidArgument)
		}
		return c.Scan.Validate()
	}
	if c.Recipe == nil && c.Run == "" {
		return fmt.Errorf("%w: an empty command; commands are: %s", errdefs.ErrInvalidArgument, Commands)
	}
	return c.RunCommand.Validate()
}

// RunRecord is a run record as stored and as sent in the app_metadata of a
// run's FlightInfo (docs/format.md, "Run record JSON"). Package mix's
// Record is the server's form; a test checks that they agree.
type RunRecord struct {
	Format     int               `json:"format"`
	Run        string            `json:"run"`
	Seed       uint64            `json:"seed"`
	BatchSize  int               `json:"batch_size"`
	Steps      int64             `json:"steps"`
	Shuffle    Shuffle           `json:"shuffle"`
	Components []ComponentRecord `json:"components"`
}

// ComponentRecord is one resolved component of a run record.
type ComponentRecord struct {
	Project string   `json:"project"`
	Ref     string   `json:"ref"`
	Table   string   `json:"table"`
	Commit  string   `json:"commit"`
	Weight  float64  `json:"weight"`
	Columns []string `json:"columns"`
	Rows    int64    `json:"rows"`
	Blocks  []int64  `json:"blocks"`
	// Windows is the component's windows, present only when the recipe
	// has some (then part of the run id).
	Windows map[string]Window `json:"windows,omitempty"`
	// Filter (canonical text), Matches and MatchBlocks: a filtered
	// component's filter, its matching rows, and their counts per block
	// (blocks without a match left out) — what the sampler draws from.
	Filter      string  `json:"filter,omitempty"`
	Matches     int64   `json:"matches,omitempty"`
	MatchBlocks []int64 `json:"match_blocks,omitempty"`
}

// RankMetadata is the app_metadata of a run's endpoint: endpoint r is
// rank r.
type RankMetadata struct {
	Run       string `json:"run"`
	Rank      int    `json:"rank"`
	WorldSize int    `json:"world_size"`
	StartStep int64  `json:"start_step"`
	EndStep   int64  `json:"end_step"`
}

// StepMetadata is the app_metadata of each message of a rank stream, and
// of a windowed scan's stream (without Run; Step counts the endpoint's
// steps from 0).
//
// A step is one message ({"run","step"}) or several: then every message
// of the step carries "part" (0, 1, … in order) and "parts" (their
// number), and the step's rows are the messages' rows concatenated.
// Parts == 0 means a one-message step.
type StepMetadata struct {
	Run   string `json:"run"`
	Step  int64  `json:"step"`
	Part  int    `json:"part"`
	Parts int    `json:"parts"`
}

// MarshalJSON writes {"run","step"} for a one-message step and
// {"run","step","part","parts"} for a part of a longer one.
func (m StepMetadata) MarshalJSON() ([]byte, error) {
	if m.Run == "" { // a windowed scan's step
		if m.Parts == 0 {
			return json.Marshal(struct {
				Step int64 `json:"step"`
			}{m.Step})
		}
		return json.Marshal(struct {
			Step  int64 `json:"step"`
			Part  int   `json:"part"`
			Parts int   `json:"parts"`
		}{m.Step, m.Part, m.Parts})
	}
	if m.Parts == 0 {
		return json.Marshal(struct {
			Run  string `json:"run"`
			Step int64  `json:"step"`
		}{m.Run, m.Step})
	}
	type plain StepMetadata
	return json.Marshal(plain(m))
}

// ActionImport is the DoAction type that imports a dataset server-side
// (bucket → flightd → bucket). Its results stream: one ImportEvent with
// Progress per progress tick, then one with Commit and Record.
const ActionImport = "import"

// ImportRequest is the body of import: format (wds, mds, hf, lerobot), an
// s3:// source or a local one under the server's --import-root, the target
// project, branch ("" main) and table, and the format's options.
type ImportRequest struct {
	Format  string            `json:"format"`
	Source  string            `json:"source"`
	Project string            `json:"project"`
	Branch  string            `json:"branch,omitempty"`
	Table   string            `json:"table"`
	Options map[string]string `json:"options,omitempty"`
}

// Validate checks the required fields.
func (r *ImportRequest) Validate() error {
	for _, f := range []struct{ name, v string }{{"format", r.Format}, {"source", r.Source}, {"project", r.Project}, {"table", r.Table}} {
		if err := required(f.name, f.v); err != nil {
			return err
		}
	}
	return nil
}

// ImportProgress is a running import's progress (importers.Progress).
type ImportProgress struct {
	Files       int64   `json:"files"`
	FilesTotal  int64   `json:"files_total"`
	Rows        int64   `json:"rows"`
	Bytes       int64   `json:"bytes"`
	BytesTotal  int64   `json:"bytes_total"`
	ElapsedSec  float64 `json:"elapsed_sec"`
	BytesPerSec float64 `json:"bytes_per_sec"`
	RowsPerSec  float64 `json:"rows_per_sec"`
	ETASec      float64 `json:"eta_sec"`
	Done        bool    `json:"done,omitempty"` // the source is read; the commit comes next
}

// ImportEvent is one result of import: Progress, or (last) the Commit
// with the import's record (source, format, format version, options,
// counts: what the commit message holds after "weft-import: ").
type ImportEvent struct {
	Progress *ImportProgress `json:"progress,omitempty"`
	Commit   string          `json:"commit,omitempty"`
	Record   json.RawMessage `json:"record,omitempty"`
}
