package client_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftdata/weft/client"
)

// TestWindowJSON: a window is one object {"kind", …spec}, written
// canonically (keys sorted at every level, no spaces, numbers as given),
// and a recipe's windows survive the round trip.
func TestWindowJSON(t *testing.T) {
	var w client.Window
	require.NoError(t, json.Unmarshal([]byte(` {"size": [224, 224], "kind": "video", "offsets": [-1, 0, 2.50], "opts": {"b": 1, "a": "<&>"}}`), &w))
	require.Equal(t, "video", w.Kind)
	require.Equal(t, `{"offsets":[-1,0,2.50],"opts":{"a":"\u003c\u0026\u003e","b":1},"size":[224,224]}`, string(w.Spec))
	out, err := json.Marshal(w)
	require.NoError(t, err)
	require.Equal(t, `{"kind":"video","offsets":[-1,0,2.50],"opts":{"a":"\u003c\u0026\u003e","b":1},"size":[224,224]}`, string(out))

	out, err = json.Marshal(client.Window{Kind: "rows"})
	require.NoError(t, err)
	require.Equal(t, `{"kind":"rows"}`, string(out))
	_, err = json.Marshal(client.Window{Kind: "rows", Spec: json.RawMessage(`{"kind":"video"}`)})
	require.ErrorContains(t, err, `field "kind"; set Window.Kind instead`)
	_, err = json.Marshal(client.Window{Kind: "rows", Spec: json.RawMessage(`[1]`)})
	require.ErrorContains(t, err, "spec must be a JSON object")

	r := client.Recipe{Seed: 1, BatchSize: 4, Components: []client.Component{{Project: "p", Table: "t", Weight: 1,
		Windows: map[string]client.Window{"cam": {Kind: "video", Spec: json.RawMessage(`{"offsets":[0,1]}`)}}}}}
	raw, err := json.Marshal(client.RunCommand{Recipe: &r})
	require.NoError(t, err)
	require.Contains(t, string(raw), `"windows":{"cam":{"kind":"video","offsets":[0,1]}}`)
	var back client.Command
	require.NoError(t, client.Decode("command", raw, &back))
	require.Equal(t, r, *back.Recipe)
}
