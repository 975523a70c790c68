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
	"github.com/weftdata/weft/tables"
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
	oneCol := func(name string, dt arrow.DataType, build func() arrow.Array) (*arrow.Schema, func() arrow.RecordBatch) {
		schema := arrow.NewSchema([]arrow.Field{{Name: name, Type: dt, Nullable: true}}, nil)
		return schema, func() arrow.RecordBatch {
			col := build()
			defer col.Release()
			return array.NewRecordBatch(schema, []arrow.Array{col}, int64(col.Len()))
		}
	}
	fromJSON := func(dt arrow.DataType, js string) func() arrow.Array {
		return func() arrow.Array {
			a, _, err := array.FromJSON(e.cmem, dt, strings.NewReader(js))
			require.NoError(t, err)
			return a
		}
	}
	date64Schema, date64Batch := oneCol("d", arrow.FixedWidthTypes.Date64, fromJSON(arrow.FixedWidthTypes.Date64, `[0, null]`))
	polarsType := arrow.LargeListOf(arrow.BinaryTypes.LargeString)
	polarsSchema, polarsBatch := oneCol("tags", polarsType, fromJSON(polarsType, `[["a"], null]`))
	dictType := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}
	dictSchema, dictBatch := oneCol("cat", dictType, func() arrow.Array {
		idx, _, err := array.FromJSON(e.cmem, arrow.PrimitiveTypes.Int32, strings.NewReader(`[0, 7, 1]`))
		require.NoError(t, err)
		defer idx.Release()
		dict, _, err := array.FromJSON(e.cmem, arrow.BinaryTypes.String, strings.NewReader(`["a", "b"]`))
		require.NoError(t, err)
		defer dict.Release()
		return array.NewDictionaryArray(dictType, idx, dict)
	})
	// A 1,000-column table, and an append whose columns differ from column 5 on.
	wide := func(rename int) (*arrow.Schema, func() arrow.RecordBatch) {
		fs := make([]arrow.Field, 1000)
		for i := range fs {
			fs[i] = arrow.Field{Name: fmt.Sprintf("feature_column_number_%04d", i), Type: arrow.PrimitiveTypes.Int32, Nullable: true}
			if i >= rename {
				fs[i].Name = fmt.Sprintf("renamed_feature_%04d", i)
			}
		}
		schema := arrow.NewSchema(fs, nil)
		return schema, func() arrow.RecordBatch {
			cols := make([]arrow.Array, len(fs))
			for i := range cols {
				cols[i] = array.MakeArrayOfNull(e.cmem, arrow.PrimitiveTypes.Int32, 2)
			}
			defer func() {
				for _, c := range cols {
					c.Release()
				}
			}()
			return array.NewRecordBatch(schema, cols, 2)
		}
	}
	wideSchema, wideBatch := wide(1000)
	_, err = e.put(ctx, pathDesc("p", "main", "wide"), wideSchema, wideBatch())
	require.NoError(t, err)
	wrongSchema, wrongBatch := wide(5)
	hexBranch := strings.Repeat("ab", 32)
	longName := strings.Repeat("n", 1<<20)
	flipped := append([]byte(nil), ticket...)
	flipped[len(flipped)/2] ^= 1
	forgedRows := strings.Replace(string(ticket[6:len(ticket)-8]), `"n":50`, `"n":51`, 1)

	cases := []struct {
		name     string
		call     func() error
		code     codes.Code
		contains []string
	}{
		{"action bad json", action("create_project", `{"project":`), codes.InvalidArgument, []string{"JSON"}},
		{"action not an object", action("create_project", `["p"]`), codes.InvalidArgument, []string{"JSON"}},
		{"action empty body", action("list_branches", ``), codes.InvalidArgument, []string{"empty body"}},
		{"action unknown field", action("create_project", `{"project":"q","projet":"x"}`), codes.InvalidArgument, []string{"projet"}},
		{"action trailing data", action("create_project", `{"project":"q"} {}`), codes.InvalidArgument, []string{"trailing"}},
		{"action missing field", action("create_branch", `{"project":"p"}`), codes.InvalidArgument, []string{`"branch"`}},
		{"action bad project name", action("create_project", `{"project":"a/b"}`), codes.InvalidArgument, []string{"a/b"}},
		{"action bad branch name", action("create_branch", `{"project":"p","branch":"x y"}`), codes.InvalidArgument, []string{"x y"}},
		{"action bad limit", action("log", `{"project":"p","limit":0}`), codes.InvalidArgument, []string{"limit"}},
		{"action unknown", action("drop_table", `{}`), codes.InvalidArgument, []string{"drop_table"}},
		{"project exists", action("create_project", `{"project":"p"}`), codes.AlreadyExists, []string{`"p"`}},
		{"branch exists", action("create_branch", `{"project":"p","branch":"dev"}`), codes.AlreadyExists, []string{`"dev"`}},
		{"branch from missing ref", action("create_branch", `{"project":"p","branch":"x","from":"nope"}`), codes.NotFound, []string{"nope"}},
		{"list missing project", action("list_branches", `{"project":"nope"}`), codes.NotFound, []string{"nope"}},
		{"log missing ref", action("log", `{"project":"p","ref":"nope"}`), codes.NotFound, []string{"nope"}},

		{"info short path", infoOf(pathDesc("p", "main")), codes.InvalidArgument, []string{"[project, ref, table]"}},
		{"info long path", infoOf(pathDesc("p", "main", "t", "x")), codes.InvalidArgument, []string{"[project, ref, table]"}},
		{"info bad table name", infoOf(pathDesc("p", "main", "t!")), codes.InvalidArgument, []string{"t!"}},
		{"info missing project", infoOf(pathDesc("nope", "main", "t")), codes.NotFound, []string{"nope"}},
		{"info missing ref", infoOf(pathDesc("p", "nope", "t")), codes.NotFound, []string{"nope"}},
		{"info missing table", infoOf(pathDesc("p", "main", "nope")), codes.NotFound, []string{"nope"}},
		{"info bad json cmd", infoOf(cmdDesc(`{"scan":`)), codes.InvalidArgument, []string{"JSON"}},
		{"info unknown cmd", infoOf(cmdDesc(`{"sample":{}}`)), codes.InvalidArgument, []string{"sample"}},
		{"info scan unknown field", infoOf(cmdDesc(`{"scan":{"project":"p","ref":"main","table":"t","cols":["id"]}}`)), codes.InvalidArgument, []string{"cols"}},
		{"info scan extra key", infoOf(cmdDesc(`{"scan":{"project":"p","ref":"main","table":"t"},"world_size":2}`)), codes.InvalidArgument, []string{"world_size"}},
		{"info scan missing ref", infoOf(cmdDesc(`{"scan":{"project":"p","table":"t"}}`)), codes.InvalidArgument, []string{`"ref"`}},
		{"info scan unknown column", infoOf(cmdDesc(`{"scan":{"project":"p","ref":"main","table":"t","columns":["nope"]}}`)), codes.InvalidArgument, []string{"nope"}},
		{"info scan repeated column", infoOf(cmdDesc(`{"scan":{"project":"p","ref":"main","table":"t","columns":["id","id"]}}`)), codes.InvalidArgument, []string{"twice"}},
		{"info recipe without batch size", infoOf(cmdDesc(`{"recipe":{"seed":1},"world_size":2}`)), codes.InvalidArgument, []string{`"batch_size" is missing`}},
		{"info bad run id", infoOf(cmdDesc(`{"run":"abc","world_size":2,"start_step":0}`)), codes.InvalidArgument, []string{`"abc" must be 64 lowercase hex digits`}},
		{"schema short path", schemaOf(pathDesc("p")), codes.InvalidArgument, []string{"[project, ref, table]"}},
		{"schema missing table", schemaOf(pathDesc("p", "main", "nope")), codes.NotFound, []string{"nope"}},

		{"ticket garbage", get([]byte("hello")), codes.InvalidArgument, []string{"ticket"}},
		{"ticket empty", get(nil), codes.InvalidArgument, []string{"ticket"}},
		{"ticket truncated", get(ticket[:len(ticket)-1]), codes.InvalidArgument, []string{"ticket"}},
		{"ticket truncated to header", get(ticket[:10]), codes.InvalidArgument, []string{"ticket"}},
		{"ticket flipped bit", get(flipped), codes.InvalidArgument, []string{"ticket"}},
		{"ticket forged rows", get(forge(forgedRows)), codes.InvalidArgument, []string{"ticket"}},
		{"ticket forged blocks", get(forge(strings.Replace(forgedRows, `"b1":1`, `"b1":7`, 1))), codes.InvalidArgument, []string{"ticket"}},
		{"ticket forged json", get(forge(`{"p":"p"`)), codes.InvalidArgument, []string{"ticket"}},
		{"ticket unknown kind", get(forgeKind(9, `{}`)), codes.InvalidArgument, []string{"GetFlightInfo"}}, // unsigned: refused before its kind is read

		{"put short path", put(pathDesc("p", "main"), testSchema, goodBatch), codes.InvalidArgument, []string{"[project, branch, table]"}},
		{"put cmd descriptor", put(cmdDesc(`{}`), testSchema, goodBatch), codes.InvalidArgument, []string{"path descriptor"}},
		{"put bad table name", put(pathDesc("p", "main", ".weft"), testSchema, goodBatch), codes.InvalidArgument, []string{".weft"}},
		{"put missing project", put(pathDesc("nope", "main", "t"), testSchema, goodBatch), codes.NotFound, []string{"nope"}},
		{"put missing branch", put(pathDesc("p", "nope", "t"), testSchema, goodBatch), codes.NotFound, []string{"nope"}},
		{"put schema mismatch", put(pathDesc("p", "main", "t"), otherSchema, otherBatch), codes.InvalidArgument, []string{"schema mismatch"}},
		{"put no rows", put(pathDesc("p", "main", "t2"), testSchema), codes.InvalidArgument, []string{"no rows"}},
		{"put nulls midway", put(pathDesc("p", "main", "t"), testSchema, goodBatch, goodBatch, nullIDs), codes.InvalidArgument, []string{"not nullable"}},
		{"put nulls in new table", put(pathDesc("p", "dev", "fresh"), testSchema, goodBatch, nullIDs), codes.InvalidArgument, []string{"not nullable"}},

		{"put date64", put(pathDesc("p", "main", "dates"), date64Schema, date64Batch), codes.InvalidArgument, []string{`column "d" has type date64`, "date32"}},
		{"put large_list<large_string>", put(pathDesc("p", "main", "tags"), polarsSchema, polarsBatch), codes.InvalidArgument, []string{`column "tags" has type large_list`, "send it as list<large_utf8>"}},
		{"put dictionary index out of range", put(pathDesc("p", "main", "cats"), dictSchema, dictBatch), codes.InvalidArgument, []string{`column "cat"`, "dictionary index 7 at row 1"}},
		{"put 1000-column mismatch", put(pathDesc("p", "main", "wide"), wrongSchema, wrongBatch), codes.InvalidArgument, []string{`column 5 is "feature_column_number_0005" int32 in the table but "renamed_feature_0005"`, "and 992 more differences"}},
		{"scan misspelt column of wide table", infoOf(cmdDesc(`{"scan":{"project":"p","ref":"main","table":"wide","columns":["feature_column_numbr_0001"]}}`)), codes.InvalidArgument, []string{`"feature_column_numbr_0001" is not a column`, "and 992 more"}},
		{"create hex branch", action("create_branch", `{"project":"p","branch":"`+hexBranch+`"}`), codes.InvalidArgument, []string{"commit id"}},
		{"create hex branch upper case", action("create_branch", `{"project":"p","branch":"DEADBEEF"}`), codes.InvalidArgument, []string{"commit id"}},
		{"create 1 MiB branch name", action("create_branch", `{"project":"p","branch":"`+longName+`"}`), codes.InvalidArgument, []string{"1048576 bytes"}},
		{"log 1 MiB ref", action("log", `{"project":"p","ref":"`+longName+`"}`), codes.NotFound, []string{"1048576 bytes"}},
	}
	before := snapshot(t, b)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			requireCode(t, err, tc.code, tc.contains...)
			require.Less(t, len(status.Convert(err).Message()), 1024, "messages are capped")
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

// TestPoisonedTableOverTheWire: a table whose stored schema holds a type
// this server refuses (committed by an older server; here through versions
// directly) is answered FailedPrecondition with a message that names the
// column and the commit to branch from; other tables still read.
func TestPoisonedTableOverTheWire(t *testing.T) {
	b := bucket.NewMem()
	e := newEnv(t, b, envOpts{})
	ctx := ctxT(t)
	e.createProject("p")
	good := e.mustPut("p", "main", "t", 0, 10, 10, 8)

	v, err := versions.New(b, versions.DefaultOptions())
	require.NoError(t, err)
	enc, err := tables.EncodeSchema(arrow.NewSchema([]arrow.Field{{Name: "when", Type: arrow.FixedWidthTypes.Date64, Nullable: true}}, nil))
	require.NoError(t, err)
	_, err = v.Commit(ctx, "p", "main", "older server", func(ctx context.Context, _ *versions.Commit) (map[versions.TableName]versions.ManifestID, error) {
		id, err := v.PutManifest(ctx, "p", &versions.Manifest{Table: "old", Schema: enc, Files: []versions.DataFile{{Path: "data/x.parquet", Rows: 1, Size: 1, RowGroups: []int64{1}}}})
		return map[versions.TableName]versions.ManifestID{"old": id}, err
	})
	require.NoError(t, err)

	_, err = e.client.GetFlightInfo(ctx, pathDesc("p", "main", "old"))
	requireCode(t, err, codes.FailedPrecondition, `column "when" has type date64`, "branch from "+good.Commit)
	_, err = e.client.GetSchema(ctx, pathDesc("p", "main", "old"))
	requireCode(t, err, codes.FailedPrecondition, "branch from "+good.Commit)
	require.Equal(t, seq(0, 10), e.scan(e.info(pathDesc("p", "main", "t"))))
}
