package versions

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite golden files")

// TestGoldenObjects pins the format-1 encodings: the stored objects in
// testdata/ must keep decoding to the ids in their file names. A change to
// what ids hash shows up here and must bump CommitFormat/ManifestFormat.
func TestGoldenObjects(t *testing.T) {
	c := &Commit{Project: "robotics", Parent: CommitID(strings.Repeat("ab", 32)), Time: time.Date(2026, 11, 29, 20, 5, 33, 123456789, time.UTC),
		Message: "append 9412 rows to failed_grasps", Tables: map[TableName]ManifestID{"failed_grasps": ManifestID(strings.Repeat("01", 32)), "nominal_grasps": ManifestID(strings.Repeat("02", 32))}}
	c.seal()
	m := &Manifest{Table: "failed_grasps", Schema: []byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0},
		Files: []DataFile{{Path: "data/failed_grasps/a.parquet", Rows: 9412, Size: 123456, RowGroups: []int64{4096, 4096, 1220}}, {Path: "data/failed_grasps/b.parquet", Rows: 1, Size: 99, RowGroups: []int64{1}}}}
	m.seal()
	if *update {
		for name, v := range map[string]any{"commit-" + string(c.ID) + ".json": c, "manifest-" + string(m.ID) + ".json": m} {
			data, err := json.Marshal(v)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join("testdata", name), data, 0o644))
		}
	}
	files, err := filepath.Glob("testdata/*.json")
	require.NoError(t, err)
	require.Len(t, files, 2)
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		base := strings.TrimSuffix(filepath.Base(f), ".json")
		kind, id, _ := strings.Cut(base, "-")
		switch kind {
		case "commit":
			got, err := decodeCommit(data, CommitID(id))
			require.NoError(t, err, f)
			require.Equal(t, c.ID, got.ID, "the commit encoding changed: bump CommitFormat")
		case "manifest":
			got, err := decodeManifest(data, ManifestID(id))
			require.NoError(t, err, f)
			require.Equal(t, m.ID, got.ID, "the manifest encoding changed: bump ManifestFormat")
		default:
			t.Fatalf("unexpected golden file %s", f)
		}
	}
}
