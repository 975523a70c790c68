package flight_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/stretchr/testify/require"

	"github.com/weftdata/weft/bucket"
	"github.com/weftdata/weft/client"
	"github.com/weftdata/weft/tables"
)

// TestPutFileColumnOffHeap: a put whose batches name uploaded files in a
// file column, in message bodies mapped off the heap (over 1 MiB each, no
// batch check: a file column has none), commits and lists every file in
// the manifest. The append's digests once aliased the unmapped bodies and
// the commit faulted (SIGSEGV: flightd died).
func TestPutFileColumnOffHeap(t *testing.T) {
	e := newEnv(t, bucket.NewMem(), envOpts{})
	e.createProject("p")
	ctx := ctxT(t)
	var shas []string
	for _, name := range []string{"a.bin", "b.bin", "c.bin"} {
		data := []byte("the file " + name)
		h := sha256.Sum256(data)
		sha := hex.EncodeToString(h[:])
		_, err := e.c.PutFile(ctx, "p", name, bytes.NewReader(data), int64(len(data)), sha)
		require.NoError(t, err)
		shas = append(shas, sha)
	}
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "image", Type: arrow.BinaryTypes.Binary},
		{Name: "weights", Type: arrow.BinaryTypes.String, Nullable: true,
			Metadata: arrow.NewMetadata([]string{tables.KindKey}, []string{tables.KindFile})},
	}, nil)
	const rows, blob = 8, 256 << 10 // 2 MiB bodies
	var recs []arrow.RecordBatch
	for k := range 6 {
		b := array.NewRecordBuilder(e.cmem, schema)
		for i := range rows {
			b.Field(0).(*array.Int64Builder).Append(int64(k*rows + i))
			b.Field(1).(*array.BinaryBuilder).Append(make([]byte, blob))
			b.Field(2).(*array.StringBuilder).Append(shas[(k+i)%len(shas)])
		}
		recs = append(recs, b.NewRecordBatch())
		b.Release()
	}
	rr, err := array.NewRecordReader(schema, recs)
	require.NoError(t, err)
	for _, r := range recs {
		r.Release()
	}
	defer rr.Release()
	res, err := e.c.Put(ctx, client.PutDescriptor{Project: "p", Branch: "main", Table: "t"}, rr)
	require.NoError(t, err)
	require.Equal(t, int64(6*rows), res.Rows)

	info := e.info(pathDesc("p", "main", "t"))
	var named []string
	for _, ep := range info.Endpoint {
		_, _, err := e.read(ctx, ep.Ticket, func(rec arrow.RecordBatch) {
			col := rec.Column(2).(*array.String)
			for i := range col.Len() {
				named = append(named, col.Value(i))
			}
		})
		require.NoError(t, err)
	}
	require.Len(t, named, 6*rows)
	for k := range 6 {
		for i := range rows {
			require.Equal(t, shas[(k+i)%len(shas)], named[k*rows+i])
		}
	}
}
