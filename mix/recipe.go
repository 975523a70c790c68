package mix

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/weftdata/weft/client"
	"github.com/weftdata/weft/errdefs"
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
// batch size. It is the protocol's own type (client.Recipe: the request
// the Go client sends is the struct the engine resolves); the engine reads
// it as documented there, with these rules of its own (ValidateRecipe):
// every weight positive and finite (the JSON default of 1 is applied by
// client.Decode; a Go caller gives it), columns nil or empty meaning every
// column of the first component's table that Windows does not name, and a
// later component's nil Windows meaning the first component's.
// Resolving it (Engine.Prepare) pins every component to a commit and gives
// a Run.
type Recipe = client.Recipe

// Component is one table of a recipe (client.Component).
type Component = client.Component

// Shuffle is the shuffle window of a recipe (client.Shuffle): BufferRows
// 0 is block order only; a nil *Shuffle lets the engine choose (doc.go,
// "Shuffle window").
type Shuffle = client.Shuffle

// NewRecipe is a deep copy of a recipe decoded from the wire (by
// client.Decode, the protocol's one recipe decoder), so that the engine
// never shares slices or maps with its caller. ValidateRecipe is still to
// be called (Prepare does).
func NewRecipe(r *client.Recipe) *Recipe {
	out := &Recipe{Seed: r.Seed, BatchSize: r.BatchSize, Steps: r.Steps, Components: make([]Component, len(r.Components))}
	if r.Shuffle != nil {
		out.Shuffle = &Shuffle{BufferRows: r.Shuffle.BufferRows}
	}
	for i, c := range r.Components {
		out.Components[i] = Component{Project: c.Project, Ref: c.Ref, Table: c.Table, Weight: c.Weight,
			Columns: slices.Clone(c.Columns), Windows: maps.Clone(c.Windows), Filter: c.Filter}
	}
	return out
}

// ParseRecipe decodes a recipe's JSON with client.Decode (unknown fields
// are rejected by name; seed, batch_size and components are required; a
// component's ref defaults to "main" and its weight to 1) and validates
// it.
func ParseRecipe(data []byte) (*Recipe, error) {
	var cr client.Recipe
	if err := client.Decode("recipe", data, &cr); err != nil {
		msg := err.Error()
		for _, p := range []string{errdefs.ErrInvalidArgument.Error() + ": ", "recipe: ", "recipe: "} {
			msg = strings.TrimPrefix(msg, p)
		}
		return nil, fmt.Errorf("%w: %s", ErrBadRecipe, msg)
	}
	r := NewRecipe(&cr)
	if err := ValidateRecipe(r); err != nil {
		return nil, err
	}
	return r, nil
}

// ValidateRecipe checks everything of r that does not need the store.
// Messages name the component (by index, project and table) and the field
// at fault.
func ValidateRecipe(r *Recipe) error {
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
		for key, w := range c.Windows {
			switch {
			case key == "":
				return fmt.Errorf("%w: component %d (%s): a window has an empty name; name it after the output column", ErrBadWindow, i, name)
			case key == ComponentColumn || key == RowColumn:
				return fmt.Errorf("%w: component %d (%s): window %q is reserved: every batch carries %s and %s already", ErrBadWindow, i, name, key, ComponentColumn, RowColumn)
			case seen[key]:
				return fmt.Errorf("%w: component %d (%s): %q is both a column and a window; leave it out of \"columns\"", ErrBadWindow, i, name, key)
			case w.Kind == "":
				return fmt.Errorf("%w: component %d (%s): window %q has no \"kind\"", ErrBadWindow, i, name, key)
			}
		}
		if i > 0 && c.Windows != nil {
			if err := sameWindows(r.Components[0].Windows, c.Windows); err != nil {
				return fmt.Errorf("%w: component %d (%s): %w; leave \"windows\" out after the first component to use the first one's", ErrBadWindow, i, name, err)
			}
		}
	}
	return nil
}

// sameWindows checks that b has the keys of a, each with the same kind
// (the specs may differ: the kind decides).
func sameWindows(a, b map[string]Window) error {
	ka, kb := slices.Sorted(maps.Keys(a)), slices.Sorted(maps.Keys(b))
	if !slices.Equal(ka, kb) {
		return fmt.Errorf("windows [%s] differ from component 0's [%s]; every component serves the same columns", strings.Join(kb, ", "), strings.Join(ka, ", "))
	}
	for _, k := range ka {
		if a[k].Kind != b[k].Kind {
			return fmt.Errorf("window %q is of kind %q, but of kind %q in component 0", k, b[k].Kind, a[k].Kind)
		}
	}
	return nil
}

// recipeWindows returns each component's windows, canonical: the first
// component's where a later one gives none; nil for all when the first
// has none.
func recipeWindows(r *Recipe) ([]map[string]Window, error) {
	out := make([]map[string]Window, len(r.Components))
	if len(r.Components[0].Windows) == 0 {
		return out, nil
	}
	for i, c := range r.Components {
		ws := c.Windows
		if ws == nil {
			ws = r.Components[0].Windows
		}
		out[i] = make(map[string]Window, len(ws))
		for k, w := range ws {
			cw, err := canonicalWindow(w)
			if err != nil {
				return nil, fmt.Errorf("%w: component %d (%s/%s): window %q: %w", ErrBadWindow, i, c.Project, c.Table, k, err)
			}
			out[i][k] = cw
		}
	}
	return out, nil
}

// canonicalWindow rewrites w's spec canonically (client.Window's JSON).
func canonicalWindow(w Window) (Window, error) {
	data, err := json.Marshal(w)
	if err != nil {
		return Window{}, err
	}
	var out Window
	if err := json.Unmarshal(data, &out); err != nil {
		return Window{}, err
	}
	return out, nil
}

// componentRef is c's ref with the default applied.
func componentRef(c *Component) string {
	if c.Ref == "" {
		return string(versions.MainBranch)
	}
	return c.Ref
}
