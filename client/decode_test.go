package client_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftdata/weft/client"
	"github.com/weftdata/weft/errdefs"
	"github.com/weftdata/weft/mix"
)

func TestDecode(t *testing.T) {
	for _, tc := range []struct {
		name, body, err string
	}{
		{"ok", `{"run":"0123456789abcdef","world_size":2}`, ""},
		{"empty", ``, "empty body"},
		{"null", `null`, "the body is null"},
		{"list", `[]`, "a JSON object is needed"},
		{"trailing", `{"run":"x"} {}`, "trailing data"},
		{"unknown", `{"runn":"x"}`, `unknown field "runn"`},
		{"null field", `{"run":null}`, `field "run" is null`},
		{"wrong type", `{"run":"x","world_size":"2"}`, `field "world_size" must be an integer, not string`},
		{"both", `{"run":"x","scan":{"project":"p","ref":"r","table":"t"}}`, `one key "scan"`},
		{"scan missing ref", `{"scan":{"project":"p","table":"t"}}`, `field "ref" is missing`},
		{"world 0", `{"run":"x","world_size":0}`, "world_size 0"},
		{"recipe missing seed", `{"recipe":{"batch_size":1,"components":[]}}`, `"seed" is missing`},
		{"recipe unknown", `{"recipe":{"sed":1}}`, `unknown field "sed"`},
		{"deep null", `{"recipe":{"seed":1,"batch_size":1,"components":[{"project":"p","table":"t","columns":[null]}]}}`, `"recipe.components[0].columns[0]" is null`},
		// encoding/json matches names case-insensitively; the protocol does not.
		{"key case", `{"Run":"x","world_size":2}`, `unknown field "Run": field names are case-sensitive; did you mean "run"?`},
		{"nested key case", `{"scan":{"Project":"p","ref":"r","table":"t"}}`, `unknown field "scan.Project"`},
		{"recipe key case", `{"recipe":{"seed":1,"Batch_Size":1,"components":[]}}`, `"Batch_Size": field names are case-sensitive`},
		{"component key case", `{"recipe":{"seed":1,"batch_size":1,"components":[{"project":"p","TABLE":"t"}]}}`, `"components[0].TABLE"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var cmd client.Command
			err := client.Decode("command", []byte(tc.body), &cmd)
			if tc.err == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, errdefs.ErrInvalidArgument)
			require.ErrorContains(t, err, tc.err)
		})
	}
}

// TestRecipeRoundTrip: what the client encodes decodes to the same recipe,
// with the weight default applied.
func TestRecipeRoundTrip(t *testing.T) {
	r := client.Recipe{Seed: 9, BatchSize: 16, Steps: 3, Shuffle: &client.Shuffle{BufferRows: 0},
		Components: []client.Component{{Project: "p", Table: "a", Weight: 0.5, Columns: []string{"x"}}, {Project: "p", Ref: "dev", Table: "b"}}}
	raw, err := json.Marshal(client.RunCommand{Recipe: &r})
	require.NoError(t, err)
	var back client.Command
	require.NoError(t, client.Decode("command", raw, &back))
	r.Components[1].Weight = 1
	require.Equal(t, r, *back.Recipe)
}

// TestRunRecordMatchesMix: the server's run record decodes strictly into
// client.RunRecord, field for field.
func TestRunRecordMatchesMix(t *testing.T) {
	rec := mix.Record{Format: 1, Run: "ab", Seed: 3, BatchSize: 4, Steps: 5, Shuffle: mix.Shuffle{BufferRows: 6},
		Components: []mix.ComponentRecord{{Project: "p", Ref: "main", Table: "t", Commit: "c", Weight: 1, Columns: []string{"x"}, Rows: 7, Blocks: []int64{7}}}}
	raw, err := json.Marshal(rec)
	require.NoError(t, err)
	var got client.RunRecord
	require.NoError(t, client.Decode("run record", raw, &got))
	back, err := json.Marshal(got)
	require.NoError(t, err)
	require.JSONEq(t, string(raw), string(back))
}

func TestStepMetadata(t *testing.T) {
	one, err := json.Marshal(client.StepMetadata{Run: "r", Step: 3})
	require.NoError(t, err)
	require.Equal(t, `{"run":"r","step":3}`, string(one))
	part, err := json.Marshal(client.StepMetadata{Run: "r", Step: 3, Part: 0, Parts: 2})
	require.NoError(t, err)
	require.Equal(t, `{"run":"r","step":3,"part":0,"parts":2}`, string(part))
}
