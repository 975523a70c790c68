package mix

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftdata/weft/versions"
)

var update = flag.Bool("update", false, "rewrite golden files")

// goldenRecord is the run record pinned in testdata/: two components of
// two projects' tables, a recipe shuffle window, several blocks, weights
// that reduce to 3:7.
func goldenRecord(t *testing.T) *Record {
	t.Helper()
	r := &Record{
		Format: RecordFormat, Seed: 2048, BatchSize: 64, Steps: 1413,
		Shuffle: Shuffle{BufferRows: 8192},
		Components: []ComponentRecord{
			{Project: "robotics", Ref: "main", Table: "failed_grasps", Commit: versions.CommitID(strings.Repeat("ab", 32)), Weight: 0.3,
				Columns: []string{"episode_id", "frame", "action"}, Rows: 9412, Blocks: []int64{4706, 4706}},
			{Project: "robotics", Ref: "v2", Table: "nominal_grasps", Commit: versions.CommitID(strings.Repeat("cd", 32)), Weight: 0.7,
				Columns: []string{"episode_id", "frame", "action"}, Rows: 81006, Blocks: []int64{65536, 15470}},
		},
	}
	plan, err := r.plan()
	require.NoError(t, err)
	r.Run = RunID(plan.RunID())
	return r
}

// goldenWindowRecord is the golden record with windows: component 0 a
// video window and a row window, component 1 the same kinds with other
// offsets. Its identities have the canonical windows as a sixth element.
// Specs are canonical (as decoding leaves them): keys sorted, numbers as
// written, <, & and > escaped, other characters in UTF-8.
func goldenWindowRecord(t *testing.T) *Record {
	t.Helper()
	r := goldenRecord(t)
	r.Components[0].Columns = []string{"episode_id", "frame"}
	r.Components[1].Columns = []string{"episode_id", "frame"}
	r.Components[0].Windows = map[string]Window{
		"wrist_camera": {Kind: "video", Spec: json.RawMessage(`{"offsets":[-2,-1,0],"size":[224,224]}`)},
		"action":       {Kind: "rows", Spec: json.RawMessage(`{"offsets":[0,1,2,3]}`)},
	}
	r.Components[1].Windows = map[string]Window{
		"wrist_camera": {Kind: "video", Spec: json.RawMessage(`{"note":"\u003cé\u0026\u003e","seconds":[-0.1,0.0]}`)},
		"action":       {Kind: "rows", Spec: json.RawMessage(`{"offsets":[0,1,2,3]}`)},
	}
	plan, err := r.plan()
	require.NoError(t, err)
	r.Run = RunID(plan.RunID())
	return r
}

// TestGoldenRunRecord pins the run record format and the run id: every
// testdata/run-ID.json must decode as run ID (its fields hash to its name,
// docs/format.md "Run record"; docs/verify_ids.py checks the same from the
// doc alone), and the record built here must still hash to the pinned id.
// A change to what a run id hashes shows up here and must bump
// RecordFormat or sampler.EncodingVersion.
func TestGoldenRunRecord(t *testing.T) {
	wants := []*Record{goldenRecord(t), goldenWindowRecord(t)}
	if *update {
		for _, want := range wants {
			data, err := json.MarshalIndent(want, "", " ")
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join("testdata", "run-"+string(want.Run)+".json"), append(data, '\n'), 0o644))
		}
	}
	files, err := filepath.Glob("testdata/run-*.json")
	require.NoError(t, err)
	require.NotEmpty(t, files, "no golden run records: run go test -run TestGoldenRunRecord -update ./mix/")
	found := make([]bool, len(wants))
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		id := RunID(strings.TrimSuffix(strings.TrimPrefix(filepath.Base(f), "run-"), ".json"))
		got, _, err := decodeRecord(data, id)
		require.NoError(t, err, "%s no longer decodes as its run id", f)
		for i, want := range wants {
			if id == want.Run {
				found[i] = true
				require.Equal(t, *want, *got, "%s differs from the golden record", f)
			}
		}
	}
	for i, want := range wants {
		require.True(t, found[i], "golden record %d now hashes to %s, which has no file in testdata/: the run id encoding changed", i, want.Run)
	}
}
