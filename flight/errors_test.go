package flight_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	arrowflight "github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/weftdata/weft/bucket"
	"github.com/weftdata/weft/flight"
	"github.com/weftdata/weft/versions"
)

// TestBadInput: every rejected call gets its documented code and a message
// naming the problem, and leaves the store exactly as it was.
func TestBadInput(t *testing.T) {
	b, err := bucket.NewFS(t.TempDir())
	require.NoError(t, err)
	e := newEnv(t, b, envOpts{})
	ctx := ctxT(t)
	e.createProject("p")
	good := e.mustPut("p", "main", "t", 0, 50, 50, 8)
	e.mustAction("create_branch", `{"project":"p","branch":"dev"}`, nil)
	info := e.info(pathDesc("p", "main", "t"))
	ticket := info.Endpoint[0].Ticket.Ticket

	otherSchema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int32}}, nil)
	otherBatch := func() arrow.RecordBatch {
		bld := array.NewRecordBuilder(e.cmem, otherSchema)
		defer bld.Release()
		bld.Field(0).(*array.Int32Builder).AppendValues([]int32{1, 2, 3}, nil)
		return bld.NewRecordBatch()
	}
	nullIDs := func() arrow.RecordBatch { // nulls in the non-nullable id column
		bld := array.NewRecordBuilder(e.cmem, testSchema)
		defer bld.Release()
		rec := makeBatch(e.cmem, 0, 3, 4)
		defer rec.Release()
		bld.Field(0).(*array.Int64Builder).AppendNulls(3)
		cols := []arrow.Array{bld.Field(0).NewArray(), rec.Column(1), rec.Column(2), rec.Column(3)}
		defer cols[0].Release()
		return array.NewRecordBatch(testSchema, cols, 3)
	}
	action := func(name, body string) func() error {
		return func() error { _, err := e.action(name, body); return err }
	}
	infoOf := func(d *arrowflight.FlightDescriptor) func() error {
		return func() error { _, err := e.client.GetFlightInfo(ctx, d); return err }
	}
	schemaOf := func(d *arrowflight.FlightDescriptor) func() error {
		return func() error { _, err := e.client.GetSchema(ctx, d); return err }
	}
	get := func(tkt []byte) func() error {
		return func() error { _, _, err := e.read(ctx, &arrowflight.Ticket{Ticket: tkt}, nil); return err }
	}
	put := func(d *arrowflight.FlightDescriptor, schema *arrow.Schema, recs ...func() arrow.RecordBatch) func() error {
		return func() error {
			var rs []arrow.RecordBatch
			for _, r := range recs {
				rs = append(rs, r())
			}
			_, err := e.put(ctx, d, schema, rs...)
			return err
		}
	}
	goodBatch := func() arrow.RecordBatch { return makeBatch(e.cmem, 0, 10, 8) }
	flipped := append([]byte(nil), ticket...)
	flipped[len(flipped)/2] ^= 1
	forgedRows := strings.Replace(string(ticket[6:len(ticket)-8]), `"n":50`, `"n":51`, 1)

	cases := []struct {
		name     string
		call     func() error
		code     codes.Code
		contains string
	}{
		{"action bad json", action("create_project", `{"project":`), codes.InvalidArgument, "JSON"},
		{"action not an object", action("create_project", `["p"]`), codes.InvalidArgument, "JSON"},
		{"action empty body", action("list_branches", ``), codes.InvalidArgument, "empty body"},
		{"action unknown field", action("create_project", `{"project":"q","projet":"x"}`), codes.InvalidArgument, "projet"},
		{"action trailing data", action("create_project", `{"project":"q"} {}`), codes.InvalidArgument, "trailing"},
		{"action missing field", action("create_branch", `{"project":"p"}`), codes.InvalidArgument, `"branch"`},
		{"action bad project name", action("create_project", `{"project":"a/b"}`), codes.InvalidArgument, "a/b"},
		{"action bad branch name", action("create_branch", `{"project":"p","branch":"x y"}`), codes.InvalidArgument, "x y"},
		{"action bad limit", action("log", `{"project":"p","limit":0}`), codes.InvalidArgument, "limit"},
		{"action unknown", action("drop_table", `{}`), codes.InvalidArgument, "drop_table"},
		{"project exists", action("create_project", `{"project":"p"}`), codes.AlreadyExists, `"p"`},
		{"branch exists", action("create_branch", `{"project":"p","branch":"dev"}`), codes.AlreadyExists, `"dev"`},
		{"branch from missing ref", action("create_branch", `{"project":"p","branch":"x","from":"nope"}`), codes.NotFound, "nope"},
		{"list missing project", action("list_branches", `{"project":"nope"}`), codes.NotFound, "nope"},
		{"log missing ref", action("log", `{"project":"p","ref":"nope"}`), codes.NotFound, "nope"},

		{"info short path", infoOf(pathDesc("p", "main")), codes.InvalidArgument, "[project, ref, table]"},
		{"info long path", infoOf(pathDesc("p", "main", "t", "x")), codes.InvalidArgument, "[project, ref, table]"},
		{"info bad table name", infoOf(pathDesc("p", "main", "t!")), codes.InvalidArgument, "t!"},
		{"info missing project", infoOf(pathDesc("nope", "main", "t")), codes.NotFound, "nope"},
		{"info missing ref", infoOf(pathDesc("p", "nope", "t")), codes.NotFound, "nope"},
		{"info missing table", infoOf(pathDesc("p", "main", "nope")), codes.NotFound, "nope"},
		{"info bad json cmd", infoOf(cmdDesc(`{"scan":`)), codes.InvalidArgument, "JSON"},
		{"info unknown cmd", infoOf(cmdDesc(`{"sample":{}}`)), codes.InvalidArgument, "sample"},
		{"info scan unknown field", infoOf(cmdDesc(`{"scan":{"project":"p","ref":"main","table":"t","cols":["id"]}}`)), codes.InvalidArgument, "cols"},
		{"info scan extra key", infoOf(cmdDesc(`{"scan":{"project":"p","ref":"main","table":"t"},"world_size":2}`)), codes.InvalidArgument, "world_size"},
		{"info scan missing ref", infoOf(cmdDesc(`{"scan":{"project":"p","table":"t"}}`)), codes.InvalidArgument, `"ref"`},
		{"info scan unknown column", infoOf(cmdDesc(`{"scan":{"project":"p","ref":"main","table":"t","columns":["nope"]}}`)), codes.InvalidArgument, "nope"},
		{"info scan repeated column", infoOf(cmdDesc(`{"scan":{"project":"p","ref":"main","table":"t","columns":["id","id"]}}`)), codes.InvalidArgument, "twice"},
		{"info recipe without batch size", infoOf(cmdDesc(`{"recipe":{"seed":1},"world_size":2}`)), codes.InvalidArgument, `"batch_size" is missing`},
		{"info bad run id", infoOf(cmdDesc(`{"run":"abc","world_size":2,"start_step":0}`)), codes.InvalidArgument, `"abc" must be 64 lowercase hex digits`},
		{"schema short path", schemaOf(pathDesc("p")), codes.InvalidArgument, "[project, ref, table]"},
		{"schema missing table", schemaOf(pathDesc("p", "main", "nope")), codes.NotFound, "nope"},

		{"ticket garbage", get([]byte("hello")), codes.InvalidArgument, "ticket"},
		{"ticket empty", get(nil), codes.InvalidArgument, "ticket"},
		{"ticket truncated", get(ticket[:len(ticket)-1]), codes.InvalidArgument, "ticket"},
		{"ticket truncated to header", get(ticket[:10]), codes.InvalidArgument, "ticket"},
		{"ticket flipped bit", get(flipped), codes.InvalidArgument, "ticket"},
		{"ticket forged rows", get(forge(forgedRows)), codes.InvalidArgument, "ticket"},
		{"ticket forged blocks", get(forge(strings.Replace(forgedRows, `"b1":1`, `"b1":7`, 1))), codes.InvalidArgument, "ticket"},
		{"ticket forged json", get(forge(`{"p":"p"`)), codes.InvalidArgument, "ticket"},
		{"ticket unknown kind", get(forgeKind(9, `{}`)), codes.InvalidArgument, "GetFlightInfo"}, // unsigned: refused before its kind is read

		{"put short path", put(pathDesc("p", "main"), testSchema, goodBatch), codes.InvalidArgument, "[project, branch, table]"},
		{"put cmd descriptor", put(cmdDesc(`{}`), testSchema, goodBatch), codes.InvalidArgument, "path descriptor"},
		{"put bad table name", put(pathDesc("p", "main", ".weft"), testSchema, goodBatch), codes.InvalidArgument, ".weft"},
		{"put missing project", put(pathDesc("nope", "main", "t"), testSchema, goodBatch), codes.NotFound, "nope"},
		{"put missing branch", put(pathDesc("p", "nope", "t"), testSchema, goodBatch), codes.NotFound, "nope"},
		{"put schema mismatch", put(pathDesc("p", "main", "t"), otherSchema, otherBatch), codes.InvalidArgument, "schema mismatch"},
		{"put no rows", put(pathDesc("p", "main", "t2"), testSchema), codes.InvalidArgument, "no rows"},
		{"put nulls midway", put(pathDesc("p", "main", "t"), testSchema, goodBatch, goodBatch, nullIDs), codes.InvalidArgument, "not nullable"},
		{"put nulls in new table", put(pathDesc("p", "dev", "fresh"), testSchema, goodBatch, nullIDs), codes.InvalidArgument, "not nullable"},
	}
	before := snapshot(t, b)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			requireCode(t, tc.call(), tc.code, tc.contains)
			require.Eventually(t, func() bool { return len(snapshot(t, b)) == len(before) }, 5*time.Second, 10*time.Millisecond)
			require.Equal(t, before, snapshot(t, b), "a rejected call changed the store")
		})
	}
	require.Equal(t, seq(0, 50), e.scan(e.info(pathDesc("p", good.Commit, "t"))))
}

// forge builds a well-framed ticket around any payload, as someone who
// read the source could.
func forge(payload string) []byte { return forgeKind(1, payload) }

func forgeKind(kind byte, payload string) []byte {
	t := append([]byte("weft"), 1, kind)
	t = append(t, payload...)
	sum := sha256.Sum256(t)
	return append(t, sum[:8]...)
}

// TestPutCancelledCommitsNothing: a client that cancels a DoPut midway
// leaves the branch at its previous commit and no data file behind.
func TestPutCancelledCommitsNothing(t *testing.T) {
	b, err := bucket.NewFS(t.TempDir())
	require.NoError(t, err)
	e := newEnv(t, b, envOpts{})
	e.createProject("p")
	prev := e.mustPut("p", "main", "t", 0, 10, 10, 8)
	before := snapshot(t, b)

	ctx, cancel := context.WithCancel(ctxT(t))
	stream, err := e.client.DoPut(ctx)
	require.NoError(t, err)
	w := arrowflight.NewRecordWriter(stream, ipc.WithSchema(testSchema), ipc.WithAllocator(e.cmem))
	w.SetFlightDescriptor(pathDesc("p", "main", "t"))
	for i := range 20 {
		rec := makeBatch(e.cmem, int64(i)*100, 100, 1024)
		require.NoError(t, w.Write(rec))
		rec.Release()
	}
	// Wait until the server is encoding the data file.
	require.Eventually(t, func() bool { return e.mem.CurrentAlloc() > 0 }, 10*time.Second, time.Millisecond)
	cancel()
	_ = w.Close()
	_, err = stream.Recv()
	requireCode(t, err, codes.Canceled)

	require.Eventually(t, func() bool { return len(snapshot(t, b)) == len(before) }, 10*time.Second, 10*time.Millisecond)
	require.Equal(t, before, snapshot(t, b))
	var lb []map[string]string
	e.mustAction("list_branches", `{"project":"p"}`, &lb)
	require.Equal(t, prev.Commit, lb[0]["commit"])
}

// raceBucket makes every branch move lose its race.
type raceBucket struct{ bucket.Bucket }

func (raceBucket) CompareAndSwap(context.Context, string, bucket.ETag, []byte) (bucket.ETag, error) {
	return "", fmt.Errorf("test: %w", bucket.ErrConflict)
}

// brokenBucket fails every read of a manifest with an I/O fault.
type brokenBucket struct{ bucket.Bucket }

func (b brokenBucket) Get(ctx context.Context, key string) ([]byte, bucket.ObjectInfo, error) {
	if strings.Contains(key, "/manifests/") {
		return nil, bucket.ObjectInfo{}, errors.New("disk on fire at /secret/path")
	}
	return b.Bucket.Get(ctx, key)
}

func TestAbortedAndInternal(t *testing.T) {
	mem := bucket.NewMem()
	e := newEnv(t, mem, envOpts{})
	e.createProject("p")
	e.mustPut("p", "main", "t", 0, 10, 10, 8)

	racy := newEnv(t, raceBucket{mem}, envOpts{versions: func(o *versions.Options) { o.MaxAttempts = 2 }})
	rec := makeBatch(racy.cmem, 0, 5, 8)
	_, err := racy.put(ctxT(t), pathDesc("p", "main", "t"), testSchema, rec)
	requireCode(t, err, codes.Aborted, "contended")

	broken := newEnv(t, brokenBucket{mem}, envOpts{})
	_, err = broken.client.GetFlightInfo(ctxT(t), pathDesc("p", "main", "t"))
	requireCode(t, err, codes.Internal, "error id")
	require.NotContains(t, status.Convert(err).Message(), "secret", "the cause must not leak")
}

// TestDefaultClientReadsBigRows: with gRPC's default 4 MiB receive limit a
// client reads a table of 1 KiB rows in 64 MiB row groups, because DoGet
// slices batches to BatchBytes.
func TestDefaultClientReadsBigRows(t *testing.T) {
	e := newEnv(t, bucket.NewMem(), envOpts{})
	e.createProject("p")
	const n = 24 << 10 // 24 MiB of blobs
	e.mustPut("p", "main", "t", 0, n, 8<<10, 1024)
	info := e.info(cmdDesc(`{"scan":{"project":"p","ref":"main","table":"t","columns":["id","blob"]}}`))
	var batches int
	var ids []int64
	for _, ep := range info.Endpoint {
		got, _, err := e.read(ctxT(t), ep.Ticket, func(rec arrow.RecordBatch) {
			batches++
			require.LessOrEqual(t, rec.NumRows()*(1024+12), int64(3<<20)+1024)
		})
		require.NoError(t, err)
		ids = append(ids, got...)
	}
	require.Equal(t, seq(0, n), ids)
	require.GreaterOrEqual(t, batches, 8)
}

// TestPutMessageLimit: a put batch above MaxRecvMessageBytes is refused
// with ResourceExhausted and commits nothing; one below it is fine.
func TestPutMessageLimit(t *testing.T) {
	b := bucket.NewMem()
	e := newEnv(t, b, envOpts{flight: func(o *flight.Options) { o.MaxRecvMessageBytes = 1 << 20 }})
	e.createProject("p")
	before := snapshot(t, b)
	_, err := e.put(ctxT(t), pathDesc("p", "main", "t"), testSchema, makeBatch(e.cmem, 0, 2048, 1024)) // ~2 MiB
	requireCode(t, err, codes.ResourceExhausted)
	require.Equal(t, before, snapshot(t, b))
	res, err := e.put(ctxT(t), pathDesc("p", "main", "t"), testSchema, makeBatch(e.cmem, 0, 512, 1024))
	require.NoError(t, err)
	require.EqualValues(t, 512, res.Rows)
}
