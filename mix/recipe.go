package mix

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/weftdata/weft/sampler"
	"github.com/weftdata/weft/versions"
)

// Reserved output columns: every batch of a run carries them after the
// recipe's columns, so a table column may not use these names.
const (
	ComponentColumn = "_component" // int32: index of the row's component in the recipe
	RowColumn       = "_row"       // int64: row ordinal in that component's pinned version
)

// Recipe is what a trainer asks for: components with weights, a seed and a
// batch size. Resolving it (Engine.Resolve) pins every component to a
// commit and gives a Run. The JSON form is the `recipe` of the Flight
// protocol (docs/flight.md).
type Recipe struct {
	Seed       uint64      `json:"seed"`
	BatchSize  int         `json:"batch_size"`
	Components []Component `json:"components"`
	// Shuffle nil picks the window from the data (see doc.go, "Shuffle window").
	Shuffle *Shuffle `json:"shuffle,omitempty"`
	// Steps is the run length; 0 means ⌈Σ rows / batch_size⌉.
	Steps int64 `json:"steps,omitempty"`
}

// Component is one table of a recipe.
type Component struct {
	Project string `json:"project"`
	// Ref is a branch, a commit id or an 8+ digit prefix; "" means "main".
	Ref   string `json:"ref,omitempty"`
	Table string `json:"table"`
	// Weight is the component's relative share of every batch: positive
	// and finite. In JSON it defaults to 1.
	Weight float64 `json:"weight"`
	// Columns nil or empty means every column of the first component's
	// table; every component then serves the same columns.
	Columns []string `json:"columns,omitempty"`
}

// Shuffle is the shuffle window of a recipe.
type Shuffle struct {
	// BufferRows is the window in rows (0: block order only).
	BufferRows int64 `json:"buffer_rows"`
}

// wire forms, with pointers to tell a missing field from a zero one.
type wireRecipe struct {
	Seed       *uint64         `json:"seed"`
	BatchSize  *int            `json:"batch_size"`
	Components []wireComponent `json:"components"`
	Shuffle    *wireShuffle    `json:"shuffle"`
	Steps      *int64          `json:"steps"`
}

type wireComponent struct {
	Project string   `json:"project"`
	Ref     string   `json:"ref"`
	Table   string   `json:"table"`
	Weight  *float64 `json:"weight"`
	Columns []string `json:"columns"`
}

type wireShuffle struct {
	BufferRows *int64 `json:"buffer_rows"`
}

// recipeFields is the recipe's JSON shape, for error messages.
const recipeFields = `{"seed", "batch_size", "components": [{"project", "ref"?, "table", "weight"?, "columns"?}], "shuffle"?: {"buffer_rows"}, "steps"?}`

// ParseRecipe decodes and validates a recipe's JSON. Unknown fields are
// rejected by name; seed, batch_size and components are required; a
// component's ref defaults to "main" and its weight to 1.
func ParseRecipe(data []byte) (*Recipe, error) {
	var w wireRecipe
	if err := decodeStrict(data, &w); err != nil {
		return nil, fmt.Errorf("%w: %w; a recipe is %s", ErrBadRecipe, err, recipeFields)
	}
	switch {
	case w.Seed == nil:
		return nil, fmt.Errorf("%w: \"seed\" is missing; give an integer 0..2^64-1", ErrBadRecipe)
	case w.BatchSize == nil:
		return nil, fmt.Errorf("%w: \"batch_size\" is missing; give the global batch size (all ranks together)", ErrBadRecipe)
	case w.Components == nil:
		return nil, fmt.Errorf("%w: \"components\" is missing; give a list of {\"project\", \"table\", \"weight\"}", ErrBadRecipe)
	}
	r := &Recipe{Seed: *w.Seed, BatchSize: *w.BatchSize, Components: make([]Component, len(w.Components))}
	if w.Steps != nil {
		r.Steps = *w.Steps
		if r.Steps == 0 {
			return nil, fmt.Errorf("%w: \"steps\" is 0; give a positive run length or leave it out", ErrBadRecipe)
		}
	}
	if w.Shuffle != nil {
		if w.Shuffle.BufferRows == nil {
			return nil, fmt.Errorf("%w: \"shuffle\" needs \"buffer_rows\" (0 for block order only); or leave \"shuffle\" out", ErrBadRecipe)
		}
		r.Shuffle = &Shuffle{BufferRows: *w.Shuffle.BufferRows}
	}
	for i, c := range w.Components {
		r.Components[i] = Component{Project: c.Project, Ref: c.Ref, Table: c.Table, Weight: 1, Columns: c.Columns}
		if c.Weight != nil {
			r.Components[i].Weight = *c.Weight
		}
	}
	if err := r.Validate(); err != nil {
		return nil, err
	}
	return r, nil
}

// decodeStrict decodes one JSON object into v, rejecting unknown fields and
// trailing data, with messages that name JSON fields rather than Go types.
func decodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case err == nil:
		if _, terr := dec.Token(); terr != io.EOF {
			return errors.New("trailing data after the JSON object")
		}
		return nil
	case errors.As(err, &te):
		if te.Field == "" {
			return fmt.Errorf("a JSON object is needed, not %s", te.Value)
		}
		return fmt.Errorf("field %q must be %s, not %s", te.Field, jsonKind(te.Type.Kind().String()), te.Value)
	case errors.As(err, &se):
		return fmt.Errorf("invalid JSON at byte %d: %w", se.Offset, err)
	case errors.Is(err, io.EOF):
		return errors.New("empty body; a JSON object is needed")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return errors.New("invalid JSON: the body ends early")
	}
	return errors.New(strings.TrimPrefix(err.Error(), "json: "))
}

func jsonKind(goKind string) string {
	switch goKind {
	case "int", "int64":
		return "an integer"
	case "uint64":
		return "a non-negative integer below 2^64"
	case "float64":
		return "a number"
	case "string":
		return "a string"
	case "slice":
		return "a list"
	case "struct", "ptr", "map":
		return "an object"
	}
	return "of another type"
}

// Validate checks everything that does not need the store. Messages name
// the component (by index, project and table) and the field at fault.
func (r *Recipe) Validate() error {
	switch {
	case len(r.Components) == 0:
		return fmt.Errorf("%w: \"components\" is empty; give at least one {\"project\", \"table\", \"weight\"}", ErrBadRecipe)
	case len(r.Components) > sampler.MaxComponents:
		return fmt.Errorf("%w: %d components, more than %d", ErrBadRecipe, len(r.Components), sampler.MaxComponents)
	case r.BatchSize < 1 || r.BatchSize > sampler.MaxBatchSize:
		return fmt.Errorf("%w: batch_size %d must be 1..%d", ErrBadRecipe, r.BatchSize, sampler.MaxBatchSize)
	case r.Steps < 0:
		return fmt.Errorf("%w: steps %d is negative; give a positive run length or leave it out", ErrBadRecipe, r.Steps)
	case r.Shuffle != nil && r.Shuffle.BufferRows < 0:
		return fmt.Errorf("%w: shuffle.buffer_rows %d is negative; give 0 (block order only) or a window in rows", ErrBadRecipe, r.Shuffle.BufferRows)
	}
	for i, c := range r.Components {
		if _, err := versions.ParseProjectName(c.Project); err != nil {
			return fmt.Errorf("component %d: %w", i, err)
		}
		if _, err := versions.ParseTableName(c.Table); err != nil {
			return fmt.Errorf("component %d (%s): %w", i, c.Project, err)
		}
		name := c.Project + "/" + c.Table
		if c.Weight <= 0 || math.IsNaN(c.Weight) || math.IsInf(c.Weight, 0) {
			return fmt.Errorf("%w: component %d (%s): weight %v must be a positive finite number", ErrBadRecipe, i, name, c.Weight)
		}
		seen := make(map[string]bool, len(c.Columns))
		for _, col := range c.Columns {
			switch {
			case col == ComponentColumn || col == RowColumn:
				return fmt.Errorf("%w: component %d (%s): column %q is reserved: every batch carries %s and %s already", ErrBadRecipe, i, name, col, ComponentColumn, RowColumn)
			case seen[col]:
				return fmt.Errorf("%w: component %d (%s): column %q is listed twice", ErrBadRecipe, i, name, col)
			}
			seen[col] = true
		}
	}
	return nil
}

// ref is c's ref with the default applied.
func (c *Component) ref() string {
	if c.Ref == "" {
		return string(versions.MainBranch)
	}
	return c.Ref
}
