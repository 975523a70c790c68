package flight_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"

	"github.com/weftdata/weft/bucket"
	"github.com/weftdata/weft/client"
)

// TestPutCheckUsesTableSchema: an append's rows are checked as the
// table's columns, not as the put's schema says. Schemas are compared
// without field metadata (pyarrow and pandas drop it), so a put to a video
// table whose schema lacks weft.kind was written as video rows without the
// episodes check: times with no frame, or not increasing in an episode,
// poisoned the table's windows.
func TestPutCheckUsesTableSchema(t *testing.T) {
	ctx := context.Background()
	clip := makeMP4(t, 30) // 30 frames at 25 fps
	sha := digest(clip)
	e := newEnv(t, bucket.NewMem(), envOpts{}) // the episodes check, as flightd
	e.createProject("p")
	_, err := e.c.PutMedia(ctx, "p", "ep.mp4", bytes.NewReader(clip), int64(len(clip)), sha)
	require.NoError(t, err)
	desc := client.PutDescriptor{Project: "p", Branch: "main", Table: "episodes"}
	r := videoBatch(e, sha, 10)
	_, err = e.c.Put(ctx, desc, r)
	r.Release()
	require.NoError(t, err)

	plain := arrow.NewSchema([]arrow.Field{videoTableSchema.Field(0), {Name: videoField.Name, Type: videoField.Type, Nullable: videoField.Nullable}}, nil)
	for _, tc := range []struct {
		name  string
		times []float64
		msg   string
	}{
		{"no frame", []float64{0, 100}, "has no frame in media"},
		{"not increasing", []float64{0.4, 0.2}, "is not after the previous row's"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := array.NewRecordBuilder(e.cmem, plain)
			defer b.Release()
			v := b.Field(1).(*array.StructBuilder)
			for _, x := range tc.times {
				b.Field(0).(*array.Int64Builder).Append(1)
				v.Append(true)
				v.FieldBuilder(0).(*array.StringBuilder).Append(sha)
				v.FieldBuilder(1).(*array.Float64Builder).Append(x)
			}
			rec := b.NewRecordBatch()
			defer rec.Release()
			r, err := array.NewRecordReader(plain, []arrow.RecordBatch{rec})
			require.NoError(t, err)
			defer r.Release()
			_, err = e.c.Put(ctx, desc, r)
			requireCode(t, err, codes.InvalidArgument, tc.msg)
		})
	}
}
