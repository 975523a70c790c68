package versions

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftdata/weft/errdefs"
)

// fuzzSeeds are the stored objects of testdata/ (what the writers wrote)
// plus hostile variants of them.
func fuzzSeeds(f *testing.F, kind string) {
	files, err := filepath.Glob("testdata/" + kind + "-*.json")
	require.NoError(f, err)
	require.NotEmpty(f, files)
	for _, file := range files {
		data, err := os.ReadFile(file)
		require.NoError(f, err)
		f.Add(data)
		f.Add(data[:len(data)/2])
	}
	f.Add([]byte(`{"format":1,"table":"t","schema":"","files":[{"path":"data/t/a.parquet","rows":0,"size":1,"row_groups":[9223372036854775807,9223372036854775807,2]}]}`))
	f.Add([]byte(`{"format":1,"table":"t","schema":"","files":[{"path":"data/t/a.parquet","rows":4611686018427387904,"size":1,"row_groups":[4611686018427387904]},{"path":"data/t/b.parquet","rows":4611686018427387904,"size":1,"row_groups":[4611686018427387904]}]}`))
	f.Add([]byte(`{"format":1,"table":"t","schema":"","files":[{"path":"../../../etc/passwd","rows":1,"size":1,"row_groups":[1]}]}`))
	f.Add([]byte(`{"format":1,"project":"p","parent":"","time":"2026-01-01T00:00:00Z","message":"m","tables":{"../x":"00"}}`))
}

// FuzzDecodeManifest feeds hostile bytes to the decoder of stored
// manifests, as the id they hash to (so the checks past the hash run):
// it fails only with Corrupt, and a manifest it accepts has sane sizes
// (no row count that overflows, data file paths inside the project's
// data directory).
func FuzzDecodeManifest(f *testing.F) {
	fuzzSeeds(f, "manifest")
	f.Fuzz(func(t *testing.T, data []byte) {
		id := ManifestID("0")
		var pre Manifest
		if json.Unmarshal(data, &pre) == nil {
			pre.seal()
			id = pre.ID
		}
		m, err := decodeManifest(data, id)
		if err != nil {
			require.True(t, errors.Is(err, errdefs.ErrCorrupt), "%v", err)
			return
		}
		var total int64
		for _, fl := range m.Files {
			require.NoError(t, validDataPath(fl.Path))
			var sum int64
			for _, n := range fl.RowGroups {
				require.GreaterOrEqual(t, n, int64(0))
				require.LessOrEqual(t, n, math.MaxInt64-sum)
				sum += n
			}
			require.Equal(t, sum, fl.Rows)
			require.LessOrEqual(t, total, math.MaxInt64-fl.Rows)
			total += fl.Rows
		}
		require.Equal(t, total, m.Rows())
	})
}

// FuzzDecodeCommit is FuzzDecodeManifest for commits.
func FuzzDecodeCommit(f *testing.F) {
	fuzzSeeds(f, "commit")
	f.Fuzz(func(t *testing.T, data []byte) {
		id := CommitID("0")
		var pre Commit
		if json.Unmarshal(data, &pre) == nil {
			pre.seal()
			id = pre.ID
		}
		c, err := decodeCommit(data, id)
		if err != nil {
			require.True(t, errors.Is(err, errdefs.ErrCorrupt), "%v", err)
			return
		}
		for name, mid := range c.Tables {
			_, err := ParseTableName(string(name))
			require.NoError(t, err)
			_, err = ParseManifestID(string(mid))
			require.NoError(t, err)
		}
	})
}
