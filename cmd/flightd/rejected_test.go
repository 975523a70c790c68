package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	arrowflight "github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/weftdata/weft/client"
)

// storeHashes maps every file under dir to the hash of its content.
func storeHashes(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	require.NoError(t, filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		out[path] = hex.EncodeToString(sum[:])
		return nil
	}))
	return out
}

// TestRejectedPlansStoreNothing: run commands refused for their world size,
// step range or size answer InvalidArgument with a message, and leave the
// store byte-for-byte as it was (no run record).
func TestRejectedPlansStoreNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end: skipped with -short")
	}
	dir := t.TempDir()
	srv := startFlightd(t, nil, "--store", dir)
	c := dial(t, srv.addr)
	ctx := context.Background()
	_, err := c.CreateProject(ctx, "robotics")
	require.NoError(t, err)
	putRows(t, c, "nominal", 0, 1000) // 1000 rows: 16 steps of 64
	recipe := func() *client.Recipe {
		return &client.Recipe{Seed: 3, BatchSize: 64, Components: []client.Component{{Project: "robotics", Table: "nominal"}}}
	}
	before := storeHashes(t, dir)
	for _, tc := range []struct {
		name string
		cmd  []byte
	}{
		{"world_size does not divide", mustJSON(client.RunCommand{Recipe: recipe(), WorldSize: world(3)})},
		{"start_step past the end", mustJSON(client.RunCommand{Recipe: recipe(), StartStep: 16})},
		{"end_step past the end", mustJSON(client.RunCommand{Recipe: recipe(), EndStep: 17})},
		{"end_step -1", []byte(`{"recipe": {"seed": 3, "batch_size": 64, "components": [{"project": "robotics", "table": "nominal"}]}, "end_step": -1}`)},
		{"start_step -1", []byte(`{"recipe": {"seed": 3, "batch_size": 64, "components": [{"project": "robotics", "table": "nominal"}]}, "start_step": -1}`)},
		{"world_size over the limit", mustJSON(client.RunCommand{Recipe: recipe(), WorldSize: world(1 << 20)})},
		{"step over the limit", mustJSON(client.RunCommand{Recipe: &client.Recipe{Seed: 3, BatchSize: 1 << 30, Components: recipe().Components}})},
		{"command over the limit", bigJSON(5 << 20)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.Flight().GetFlightInfo(ctx, &arrowflight.FlightDescriptor{Type: arrowflight.DescriptorCMD, Cmd: tc.cmd})
			require.Equal(t, codes.InvalidArgument, status.Code(err), "%v", err)
			require.GreaterOrEqual(t, len(status.Convert(err).Message()), 20)
			require.Equal(t, before, storeHashes(t, dir), "the rejected call changed the store")
		})
	}
	// GetSchema answers a recipe's schema without planning a run: nothing
	// is stored, though the call succeeds.
	t.Run("GetSchema of a recipe", func(t *testing.T) {
		_, err := c.Flight().GetSchema(ctx, &arrowflight.FlightDescriptor{Type: arrowflight.DescriptorCMD, Cmd: mustJSON(client.RunCommand{Recipe: recipe()})})
		require.NoError(t, err)
		require.Equal(t, before, storeHashes(t, dir), "GetSchema stored something")
	})
	// Planning the run stores its record: the one change.
	t.Run("GetFlightInfo stores the record", func(t *testing.T) {
		_, err := c.Flight().GetFlightInfo(ctx, &arrowflight.FlightDescriptor{Type: arrowflight.DescriptorCMD, Cmd: mustJSON(client.RunCommand{Recipe: recipe()})})
		require.NoError(t, err)
		after := storeHashes(t, dir)
		require.Len(t, after, len(before)+1, "one run record more")
	})
}
