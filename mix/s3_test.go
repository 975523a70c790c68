package mix

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftdata/weft/internal/s3test"
)

// TestMinIO: resolve, serve on two world sizes, resume on a fresh engine,
// and isolation from a mid-run commit, with the store on MinIO.
func TestMinIO(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("MinIO end to end: skipped with -short")
	}
	b := s3test.SharedMinIO(t).NewBucket(t, t.Name())
	en := newEnv(t, b, envOpts{rowGroupRows: 200})
	twoTables(en, "p", 900, 1300)
	ctx := context.Background()
	r := recipe("p", 11, 32, 0.25, 0.75)
	run, err := en.e.Resolve(ctx, r)
	require.NoError(t, err)
	_, w1 := collect(t, en.e.Steps(ctx, run, 0, 1, 0, 0))
	require.Len(t, w1, int(run.Steps()))

	en.appendRows("p", "main", "a", 900, 100, 100, 16)

	fresh := en.engine(nil)
	loaded, err := fresh.Load(ctx, run.ID(), "")
	require.NoError(t, err)
	for rank := range 4 {
		steps, got := collect(t, fresh.Steps(ctx, loaded, rank, 4, 5, 0))
		require.Equal(t, int64(5), steps[0])
		for i := range got {
			for k, smp := range got[i] {
				require.Equal(t, w1[5+i][rank+4*k], smp)
			}
		}
	}
	again, err := fresh.Resolve(ctx, r)
	require.NoError(t, err)
	require.NotEqual(t, run.ID(), again.ID())
}
