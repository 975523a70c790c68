package client_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/stretchr/testify/require"

	"github.com/weftdata/weft/client"
	"github.com/weftdata/weft/errdefs"
	"github.com/weftdata/weft/tables"
)

// TestPutFileReadMedia: a non-video file uploaded with PutFile (kind
// "file": the server does not index it) is named by a file column in an
// append, and ReadMedia streams any range of it back, across several
// read_media calls, exactly.
func TestPutFileReadMedia(t *testing.T) {
	ctx := context.Background()
	e := newVideoEnv(t)
	rng := rand.New(rand.NewPCG(17, 1))
	data := make([]byte, 9<<20+12345) // three 4 MiB results and a bit
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	h := sha256.Sum256(data)
	sha := hex.EncodeToString(h[:])

	res, err := e.c.PutFile(ctx, "p", "weights.pt", bytes.NewReader(data), int64(len(data)), sha)
	require.NoError(t, err)
	require.True(t, res.Stored)
	require.Equal(t, int64(len(data)), res.Size)
	require.Zero(t, res.Frames, "a file is not indexed")
	res, err = e.c.PutFile(ctx, "p", "weights.pt", bytes.NewReader(data), int64(len(data)), sha)
	require.NoError(t, err)
	require.False(t, res.Stored, "an identical upload stores nothing")

	_, err = e.c.PutMedia(ctx, "p", "not-a-video.bin", bytes.NewReader(data[:1000]), 1000, hexSum(data[:1000]))
	require.ErrorIs(t, err, errdefs.ErrInvalidArgument, "kind video still refuses a file that is no MP4")

	// A row naming it in a file column commits.
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "step", Type: arrow.PrimitiveTypes.Int64},
		{Name: "weights", Type: arrow.BinaryTypes.String, Nullable: true,
			Metadata: arrow.NewMetadata([]string{tables.KindKey}, []string{tables.KindFile})},
	}, nil)
	b := array.NewRecordBuilder(e.mem, schema)
	b.Field(0).(*array.Int64Builder).Append(100)
	b.Field(1).(*array.StringBuilder).Append(sha)
	rec := b.NewRecordBatch()
	b.Release()
	rr, err := array.NewRecordReader(schema, []arrow.RecordBatch{rec})
	rec.Release()
	require.NoError(t, err)
	_, err = e.c.Put(ctx, client.PutDescriptor{Project: "p", Branch: "main", Table: "checkpoints"}, rr)
	rr.Release()
	require.NoError(t, err)
	_, got := e.readTable(t, "checkpoints")
	require.Len(t, got, 1)
	require.Equal(t, sha, got[0].Column(1).(*array.String).Value(0))

	n := int64(len(data))
	cases := []struct {
		name         string
		off, length  int64
		step         int64
		wantFrom, to int64
	}{
		{"whole, one call", 0, -1, client.MaxReadMediaBytes, 0, n},
		{"whole, calls of 1 MiB + 3", 0, -1, 1<<20 + 3, 0, n},
		{"a middle range across calls", 5<<20 - 7, 3 << 20, 1 << 20, 5<<20 - 7, 8<<20 - 7},
		{"past the end", n - 100, 1 << 20, 64, n - 100, n},
		{"at the end", n, 10, client.MaxReadMediaBytes, n, n},
		{"one byte", 12345, 1, client.MaxReadMediaBytes, 12345, 12346},
		{"length zero", 10, 0, client.MaxReadMediaBytes, 10, 10},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, err := e.c.ReadMedia(ctx, "p", sha, tc.off, tc.length)
			require.NoError(t, err)
			client.SetReadMediaStep(r, tc.step)
			out, err := io.ReadAll(r)
			require.NoError(t, err)
			require.NoError(t, r.Close())
			require.True(t, bytes.Equal(data[tc.wantFrom:tc.to], out), "got %d bytes, want %d", len(out), tc.to-tc.wantFrom)
		})
	}

	t.Run("close stops early", func(t *testing.T) {
		r, err := e.c.ReadMedia(ctx, "p", sha, 0, -1)
		require.NoError(t, err)
		buf := make([]byte, 10)
		_, err = io.ReadFull(r, buf)
		require.NoError(t, err)
		require.Equal(t, data[:10], buf)
		require.NoError(t, r.Close())
		_, err = r.Read(buf)
		require.ErrorIs(t, err, client.ErrReaderClosed)
	})
	t.Run("missing object", func(t *testing.T) {
		r, err := e.c.ReadMedia(ctx, "p", hexSum([]byte("nothing")), 0, -1)
		require.NoError(t, err)
		defer r.Close()
		_, err = io.ReadAll(r)
		require.ErrorIs(t, err, errdefs.ErrNotFound)
	})
	t.Run("bad offset", func(t *testing.T) {
		_, err := e.c.ReadMedia(ctx, "p", sha, -1, 10)
		require.ErrorIs(t, err, errdefs.ErrInvalidArgument)
	})
}

func hexSum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}
