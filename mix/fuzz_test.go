package mix

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftdata/weft/errdefs"
)

// FuzzDecodeRecord feeds hostile bytes to the decoder of stored run
// records (what a resume or a ticket loads from the bucket), as the id
// they hash to when they decode far enough to have one, so that the checks
// past the hash run too: it fails only with Corrupt, and a record it
// accepts plans its first and last steps. The seeds are the golden
// records of testdata/ (what the writer writes).
func FuzzDecodeRecord(f *testing.F) {
	files, err := filepath.Glob("testdata/run-*.json")
	require.NoError(f, err)
	require.NotEmpty(f, files)
	for _, file := range files {
		data, err := os.ReadFile(file)
		require.NoError(f, err)
		f.Add(data)
		f.Add(data[:len(data)/2])
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		id := RunID("0")
		var pre Record
		if json.Unmarshal(data, &pre) == nil {
			if p, err := pre.plan(); err == nil {
				id = RunID(p.RunID())
			}
		}
		rec, plan, err := decodeRecord(data, id)
		if err != nil {
			require.True(t, errors.Is(err, errdefs.ErrCorrupt), "%v", err)
			return
		}
		require.NotEmpty(t, rec.Components)
		for _, step := range []int64{0, plan.Steps() - 1} {
			if step < 0 {
				continue
			}
			_, err := plan.RankSlice(step, 0, 1, nil)
			require.NoError(t, err)
		}
	})
}
