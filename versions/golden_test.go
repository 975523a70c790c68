package versions

import (
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite golden files")

// TestGoldenObjects pins the encodings (commit format 1, manifest formats 1
// and 2): the stored objects in
// testdata/ must keep decoding to the ids in their file names. A change to
// what ids hash shows up here and must bump CommitFormat/ManifestFormat.
func TestGoldenObjects(t *testing.T) {
	c := &Commit{Project: "robotics", Parent: CommitID(strings.Repeat("ab", 32)), Time: time.Date(2026, 11, 29, 20, 5, 33, 123456789, time.UTC),
		Message: "append 9412 rows to failed_grasps", Tables: map[TableName]ManifestID{"failed_grasps": ManifestID(strings.Repeat("01", 32)), "nominal_grasps": ManifestID(strings.Repeat("02", 32))}}
	c.seal()
	m := &Manifest{Table: "failed_grasps", Schema: []byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0},
		Files: []DataFile{{Path: "data/failed_grasps/a.parquet", Rows: 9412, Size: 123456, RowGroups: []int64{4096, 4096, 1220}}, {Path: "data/failed_grasps/b.parquet", Rows: 1, Size: 99, RowGroups: []int64{1}}}}
	m.seal()
	// Format 2: a manifest naming media objects.
	m2 := &Manifest{Table: "grasp_episodes", Schema: []byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0},
		Files: []DataFile{{Path: "data/grasp_episodes/c.parquet", Rows: 300, Size: 4567, RowGroups: []int64{300}}},
		Media: []MediaObject{NewMediaObject(strings.Repeat("0a", 32), 1048576), NewMediaObject(strings.Repeat("b1", 32), 77)}}
	require.NoError(t, m2.validate())
	m2.seal()
	require.Equal(t, ManifestMediaFormat, m2.Format)
	if *update {
		for name, v := range map[string]any{"commit-" + string(c.ID) + ".json": c, "manifest-" + string(m.ID) + ".json": m, "manifest-" + string(m2.ID) + ".json": m2} {
			data, err := json.Marshal(v)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join("testdata", name), data, 0o644))
		}
	}
	files, err := filepath.Glob("testdata/*.json")
	require.NoError(t, err)
	require.Len(t, files, 3)
	seen := map[string]bool{}
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
			want := m
			if got.Format == ManifestMediaFormat {
				want = m2
			}
			require.Equal(t, want.ID, got.ID, "the manifest encoding changed: bump ManifestFormat")
			require.Equal(t, want.Media, got.Media)
			seen[string(got.ID)] = true
		default:
			t.Fatalf("unexpected golden file %s", f)
		}
	}
	require.Len(t, seen, 2, "one golden manifest of each format")
}

// TestVerifyIDsScript runs docs/verify_ids.py, the format document's
// independent implementation of the ids, over the golden objects (both
// manifest formats).
func TestVerifyIDsScript(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("SKIP (loud): python3 not found; docs/verify_ids.py is not checked here (python/tests/test_format.py runs it too)")
	}
	out, err := exec.Command(py, "../docs/verify_ids.py", "testdata").CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Equal(t, 3, strings.Count(string(out), " ok"), "%s", out)
}
