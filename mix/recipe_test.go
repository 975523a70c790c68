package mix

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftdata/weft/versions"
)

func TestParseRecipe(t *testing.T) {
	t.Parallel()
	r, err := ParseRecipe([]byte(`{"seed": 2048, "batch_size": 64, "components": [
		{"project": "robotics", "table": "failed_grasps", "weight": 0.3, "columns": ["a", "b"]},
		{"project": "robotics", "ref": "exp", "table": "nominal_grasps"}],
		"shuffle": {"buffer_rows": 0}, "steps": 10}`))
	require.NoError(t, err)
	require.Equal(t, &Recipe{Seed: 2048, BatchSize: 64, Shuffle: &Shuffle{BufferRows: 0}, Steps: 10, Components: []Component{
		{Project: "robotics", Table: "failed_grasps", Weight: 0.3, Columns: []string{"a", "b"}},
		{Project: "robotics", Ref: "exp", Table: "nominal_grasps", Weight: 1},
	}}, r)

	// Windows: each entry {"kind", …spec}, the spec kept canonical.
	r, err = ParseRecipe([]byte(`{"seed": 1, "batch_size": 2, "components": [{"project": "p", "table": "t",
		"windows": {"wrist_camera": {"offsets": [-1, 0, 1.50], "kind": "video", "size": [224, 224]}, "action": {"kind": "rows", "offsets": [0, 1]}}}]}`))
	require.NoError(t, err)
	require.Equal(t, map[string]Window{
		"wrist_camera": {Kind: "video", Spec: []byte(`{"offsets":[-1,0,1.50],"size":[224,224]}`)},
		"action":       {Kind: "rows", Spec: []byte(`{"offsets":[0,1]}`)},
	}, r.Components[0].Windows)

	r, err = ParseRecipe([]byte(`{"seed": 18446744073709551615, "batch_size": 1, "components": [{"project": "p", "table": "t"}]}`))
	require.NoError(t, err)
	require.Equal(t, uint64(1<<64-1), r.Seed)
	require.Nil(t, r.Shuffle)

	for _, tc := range []struct {
		name, body, msg string
		kind            error
	}{
		{"not JSON", `{"seed":`, "invalid JSON", ErrBadRecipe},
		{"empty", ``, "empty body", ErrBadRecipe},
		{"not an object", `[1]`, "a JSON object is needed", ErrBadRecipe},
		{"unknown field", `{"seed": 1, "batch_size": 2, "components": [], "shufle": {}}`, `unknown field "shufle"`, ErrBadRecipe},
		{"unknown component field", `{"seed": 1, "batch_size": 2, "components": [{"project": "p", "table": "t", "wieght": 2}]}`, `unknown field "wieght"`, ErrBadRecipe},
		{"trailing", `{"seed": 1, "batch_size": 2, "components": [{"project": "p", "table": "t"}]} {}`, "trailing data", ErrBadRecipe},
		{"no seed", `{"batch_size": 2, "components": [{"project": "p", "table": "t"}]}`, `"seed" is missing`, ErrBadRecipe},
		{"negative seed", `{"seed": -1, "batch_size": 2, "components": []}`, `field "seed" must be a non-negative integer`, ErrBadRecipe},
		{"no batch size", `{"seed": 1, "components": [{"project": "p", "table": "t"}]}`, `"batch_size" is missing`, ErrBadRecipe},
		{"string batch size", `{"seed": 1, "batch_size": "64", "components": []}`, `field "batch_size" must be an integer, not string`, ErrBadRecipe},
		{"no components", `{"seed": 1, "batch_size": 2}`, `"components" is missing`, ErrBadRecipe},
		{"empty components", `{"seed": 1, "batch_size": 2, "components": []}`, `"components" is empty`, ErrBadRecipe},
		{"zero batch", `{"seed": 1, "batch_size": 0, "components": [{"project": "p", "table": "t"}]}`, "batch_size 0 must be 1..", ErrBadRecipe},
		{"huge batch", `{"seed": 1, "batch_size": 2000000, "components": [{"project": "p", "table": "t"}]}`, "batch_size 2000000", ErrBadRecipe},
		{"negative weight", `{"seed": 1, "batch_size": 2, "components": [{"project": "p", "table": "t", "weight": -1}]}`, "component 0 (p/t): weight -1 must be a positive finite number", ErrBadRecipe},
		{"zero weight", `{"seed": 1, "batch_size": 2, "components": [{"project": "p", "table": "t"}, {"project": "p", "table": "u", "weight": 0}]}`, "component 1 (p/u): weight 0", ErrBadRecipe},
		{"string weight", `{"seed": 1, "batch_size": 2, "components": [{"project": "p", "table": "t", "weight": "1"}]}`, `field "components.weight" must be a number`, ErrBadRecipe},
		{"missing project", `{"seed": 1, "batch_size": 2, "components": [{"table": "t"}]}`, "component 0: invalid argument: name: project name \"\"", versions.ErrInvalidName},
		{"bad table", `{"seed": 1, "batch_size": 2, "components": [{"project": "p", "table": "a b"}]}`, "component 0 (p): ", versions.ErrInvalidName},
		{"zero steps", `{"seed": 1, "batch_size": 2, "steps": 0, "components": [{"project": "p", "table": "t"}]}`, `"steps" is 0`, ErrBadRecipe},
		{"negative steps", `{"seed": 1, "batch_size": 2, "steps": -3, "components": [{"project": "p", "table": "t"}]}`, "steps -3 is negative", ErrBadRecipe},
		{"shuffle without rows", `{"seed": 1, "batch_size": 2, "shuffle": {}, "components": [{"project": "p", "table": "t"}]}`, `"shuffle" needs "buffer_rows"`, ErrBadRecipe},
		{"negative window", `{"seed": 1, "batch_size": 2, "shuffle": {"buffer_rows": -5}, "components": [{"project": "p", "table": "t"}]}`, "buffer_rows -5 is negative", ErrBadRecipe},
		{"repeated column", `{"seed": 1, "batch_size": 2, "components": [{"project": "p", "table": "t", "columns": ["a", "a"]}]}`, `column "a" is listed twice`, ErrBadRecipe},
		{"reserved column", `{"seed": 1, "batch_size": 2, "components": [{"project": "p", "table": "t", "columns": ["_component"]}]}`, `column "_component" is reserved`, ErrBadRecipe},
		{"window without kind", `{"seed": 1, "batch_size": 2, "components": [{"project": "p", "table": "t", "windows": {"cam": {"offsets": [0]}}}]}`, `window: "kind" is missing`, ErrBadRecipe},
		{"window kind not a string", `{"seed": 1, "batch_size": 2, "components": [{"project": "p", "table": "t", "windows": {"cam": {"kind": 3}}}]}`, `window: "kind" is missing or not a non-empty string`, ErrBadRecipe},
		{"window not an object", `{"seed": 1, "batch_size": 2, "components": [{"project": "p", "table": "t", "windows": {"cam": [0, 1]}}]}`, `window: a JSON object {"kind", …} is needed`, ErrBadRecipe},
		{"windows not an object", `{"seed": 1, "batch_size": 2, "components": [{"project": "p", "table": "t", "windows": ["cam"]}]}`, `field "components.windows" must be an object`, ErrBadRecipe},
		{"null in a window", `{"seed": 1, "batch_size": 2, "components": [{"project": "p", "table": "t", "windows": {"cam": {"kind": "video", "size": null}}}]}`, `field "components[0].windows.cam.size" is null`, ErrBadRecipe},
		{"window and column", `{"seed": 1, "batch_size": 2, "components": [{"project": "p", "table": "t", "columns": ["cam"], "windows": {"cam": {"kind": "video"}}}]}`, `"cam" is both a column and a window`, ErrBadWindow},
		{"reserved window", `{"seed": 1, "batch_size": 2, "components": [{"project": "p", "table": "t", "windows": {"_row": {"kind": "video"}}}]}`, `window "_row" is reserved`, ErrBadWindow},
		{"other windows", `{"seed": 1, "batch_size": 2, "components": [{"project": "p", "table": "t", "windows": {"cam": {"kind": "video"}}}, {"project": "p", "table": "u", "windows": {"cam": {"kind": "rows"}}}]}`, `component 1 (p/u): window "cam" is of kind "rows", but of kind "video" in component 0`, ErrBadWindow},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseRecipe([]byte(tc.body))
			require.ErrorIs(t, err, tc.kind)
			require.ErrorIs(t, err, versions.ErrInvalid)
			require.ErrorContains(t, err, tc.msg)
		})
	}
}

func TestParseRunID(t *testing.T) {
	t.Parallel()
	id := "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	got, err := ParseRunID(id)
	require.NoError(t, err)
	require.Equal(t, RunID(id), got)
	require.Equal(t, "0123456789ab", got.Short())
	for _, bad := range []string{"", "abc", id[:63], id + "0", "0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef"} {
		_, err := ParseRunID(bad)
		require.ErrorIs(t, err, ErrBadRunID, bad)
	}
}
