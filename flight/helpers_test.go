package flight_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	arrowflight "github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/weftdata/weft/auth"
	"github.com/weftdata/weft/bucket"
	"github.com/weftdata/weft/client"
	"github.com/weftdata/weft/episodes"
	"github.com/weftdata/weft/flight"
	"github.com/weftdata/weft/internal/membudget"
	"github.com/weftdata/weft/mix"
	"github.com/weftdata/weft/tables"
	"github.com/weftdata/weft/versions"
)

// testSchema: an id that every other column is a function of.
var testSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "blob", Type: arrow.BinaryTypes.Binary, Nullable: true},
	{Name: "emb", Type: arrow.FixedSizeListOf(4, arrow.PrimitiveTypes.Float32), Nullable: true},
}, nil)

// makeBatch builds rows [start, start+n) with blobs of blobLen bytes.
func makeBatch(mem memory.Allocator, start, n int64, blobLen int) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, testSchema)
	defer b.Release()
	ids := b.Field(0).(*array.Int64Builder)
	names := b.Field(1).(*array.StringBuilder)
	blobs := b.Field(2).(*array.BinaryBuilder)
	emb := b.Field(3).(*array.FixedSizeListBuilder)
	embv := emb.ValueBuilder().(*array.Float32Builder)
	blob := make([]byte, blobLen)
	for id := start; id < start+n; id++ {
		ids.Append(id)
		names.Append(fmt.Sprintf("row-%d", id))
		for i := range blob {
			blob[i] = byte(id) ^ byte(i)
		}
		blobs.Append(blob)
		emb.Append(true)
		for k := range 4 {
			embv.Append(float32(id) + float32(k)/4)
		}
	}
	return b.NewRecordBatch()
}

// env is a running Service with a client, over one bucket. c is the Weft
// client; client is its raw Flight client, for inputs the Weft client would
// never send.
type env struct {
	t      *testing.T
	b      bucket.Bucket
	svc    *flight.Service
	c      *client.Client
	client arrowflight.Client
	mem    *memory.CheckedAllocator // the server's
	cmem   *memory.CheckedAllocator // the client's
	addr   string
	stop   func()
}

type envOpts struct {
	flight   func(*flight.Options)
	mix      func(*mix.Options)
	tables   func(*tables.Options)
	versions func(*versions.Options)
	dial     []grpc.DialOption
	// authn checks tokens (nil: open); token is the client's.
	authn auth.Authenticator
	token string
	// appendCheck is Parts.AppendCheck.
	appendCheck func(ctx context.Context, p versions.ProjectName, t versions.TableName, schema *arrow.Schema) (tables.BatchCheck, error)
	// budget is Parts.Budget (nil: unlimited).
	budget *membudget.Budget
}

// newEnv serves b on a free loopback port; cleanup stops the server and
// checks that neither side leaked Arrow memory.
func newEnv(t *testing.T, b bucket.Bucket, o envOpts) *env {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	cmem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	vo := versions.DefaultOptions()
	if o.versions != nil {
		o.versions(&vo)
	}
	v, err := versions.New(b, vo)
	require.NoError(t, err)
	to := tables.DefaultOptions()
	to.Allocator = mem
	if o.tables != nil {
		o.tables(&to)
	}
	ts, err := tables.New(v, to)
	require.NoError(t, err)
	fo := flight.DefaultOptions()
	fo.Allocator = mem
	fo.ShutdownGrace = 2 * time.Second
	if o.flight != nil {
		o.flight(&fo)
	}
	mo := mix.DefaultOptions()
	mo.Allocator = mem
	eo := episodes.DefaultOptions()
	eo.Media = ts
	kinds, err := episodes.New(eo)
	require.NoError(t, err)
	t.Cleanup(kinds.Close)
	mo.Kinds = kinds.Map()
	if o.appendCheck == nil {
		o.appendCheck = kinds.AppendCheck // as flightd
	}
	if o.mix != nil {
		o.mix(&mo)
	}
	eng, err := mix.New(ts, mo)
	require.NoError(t, err)
	svc, err := flight.New(flight.Parts{Tables: ts, Mix: eng, Authenticator: o.authn, AppendCheck: o.appendCheck, Budget: o.budget}, fo)
	require.NoError(t, err)

	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- svc.Serve(ctx, lis) }()

	c, err := client.Dial(lis.Addr().String(), client.Options{Allocator: cmem, DialOptions: o.dial, Token: o.token})
	require.NoError(t, err)
	e := &env{t: t, b: b, svc: svc, c: c, client: c.Flight(), mem: mem, cmem: cmem, addr: lis.Addr().String()}
	var stopped bool
	e.stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		require.NoError(t, <-served)
		eng.Close()
		require.NoError(t, c.Close())
	}
	t.Cleanup(func() {
		e.stop()
		mem.AssertSize(t, 0)
		cmem.AssertSize(t, 0)
	})
	return e
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// action runs a DoAction and returns its one result body.
func (e *env) action(name string, body any) ([]byte, error) {
	var raw []byte
	switch b := body.(type) {
	case []byte:
		raw = b
	case string:
		raw = []byte(b)
	default:
		var err error
		raw, err = json.Marshal(b)
		require.NoError(e.t, err)
	}
	stream, err := e.client.DoAction(ctxT(e.t), &arrowflight.Action{Type: name, Body: raw})
	if err != nil {
		return nil, err
	}
	var out [][]byte
	for {
		r, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		out = append(out, r.Body)
	}
	require.Len(e.t, out, 1, "an action answers one result")
	return out[0], nil
}

func (e *env) mustAction(name string, body any, into any) {
	e.t.Helper()
	res, err := e.action(name, body)
	require.NoError(e.t, err)
	if into != nil {
		require.NoError(e.t, json.Unmarshal(res, into))
	}
}

func (e *env) createProject(p string) string {
	e.t.Helper()
	res, err := e.c.CreateProject(ctxT(e.t), p)
	require.NoError(e.t, err)
	return res.Commit
}

type putResult = client.PutResult

func pathDesc(parts ...string) *arrowflight.FlightDescriptor {
	return &arrowflight.FlightDescriptor{Type: arrowflight.DescriptorPATH, Path: parts}
}

func cmdDesc(cmd string) *arrowflight.FlightDescriptor {
	return &arrowflight.FlightDescriptor{Type: arrowflight.DescriptorCMD, Cmd: []byte(cmd)}
}

// put sends recs (released here) in one DoPut, with the raw Flight client:
// for descriptors and streams the Weft client would not send.
func (e *env) put(ctx context.Context, d *arrowflight.FlightDescriptor, schema *arrow.Schema, recs ...arrow.RecordBatch) (putResult, error) {
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	stream, err := e.client.DoPut(ctx)
	if err != nil {
		return putResult{}, err
	}
	w := arrowflight.NewRecordWriter(stream, ipc.WithSchema(schema), ipc.WithAllocator(e.cmem))
	w.SetFlightDescriptor(d)
	var werr error
	for _, r := range recs {
		if werr = w.Write(r); werr != nil {
			break
		}
	}
	if werr == nil {
		werr = w.Close()
	} else {
		_ = w.Close()
	}
	_ = stream.CloseSend()
	var results []putResult
	for {
		r, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return putResult{}, err // the server's status
		}
		var pr putResult
		require.NoError(e.t, json.Unmarshal(r.AppMetadata, &pr))
		results = append(results, pr)
	}
	if werr != nil {
		return putResult{}, werr
	}
	require.Len(e.t, results, 1, "a put answers one PutResult")
	return results[0], nil
}

// mustPut appends rows [start, start+n) in batches of per rows, with the
// Weft client.
func (e *env) mustPut(p, br, tbl string, start, n int64, per int64, blobLen int) putResult {
	e.t.Helper()
	var recs []arrow.RecordBatch
	for off := start; off < start+n; off += per {
		recs = append(recs, makeBatch(e.cmem, off, min(per, start+n-off), blobLen))
	}
	rr, err := array.NewRecordReader(testSchema, recs)
	require.NoError(e.t, err)
	for _, r := range recs {
		r.Release()
	}
	defer rr.Release()
	res, err := e.c.Put(ctxT(e.t), client.PutDescriptor{Project: p, Branch: br, Table: tbl}, rr)
	require.NoError(e.t, err)
	require.Equal(e.t, n, res.Rows)
	return res
}

// read streams one ticket and returns its ids, checking every batch's size.
func (e *env) read(ctx context.Context, tkt *arrowflight.Ticket, check func(arrow.RecordBatch)) ([]int64, *arrow.Schema, error) {
	stream, err := e.client.DoGet(ctx, tkt)
	if err != nil {
		return nil, nil, err
	}
	r, err := arrowflight.NewRecordReader(stream, ipc.WithAllocator(e.cmem))
	if err != nil {
		return nil, nil, err
	}
	defer r.Release()
	var ids []int64
	for r.Next() {
		rec := r.RecordBatch()
		if check != nil {
			check(rec)
		}
		if idx := rec.Schema().FieldIndices("id"); len(idx) == 1 {
			ids = append(ids, rec.Column(idx[0]).(*array.Int64).Int64Values()...)
		}
	}
	return ids, r.Schema(), r.Err()
}

// scan reads every endpoint of info in order.
func (e *env) scan(info *arrowflight.FlightInfo) []int64 {
	e.t.Helper()
	var ids []int64
	for _, ep := range info.Endpoint {
		got, _, err := e.read(ctxT(e.t), ep.Ticket, nil)
		require.NoError(e.t, err)
		ids = append(ids, got...)
	}
	return ids
}

func (e *env) info(d *arrowflight.FlightDescriptor) *arrowflight.FlightInfo {
	e.t.Helper()
	info, err := e.client.GetFlightInfo(ctxT(e.t), d)
	require.NoError(e.t, err)
	return info
}

func seq(start, n int64) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = start + int64(i)
	}
	return out
}

func infoCommit(t *testing.T, info *arrowflight.FlightInfo) string {
	var m struct{ Commit string }
	require.NoError(t, json.Unmarshal(info.AppMetadata, &m))
	return m.Commit
}

// snapshot lists every object of b with its ETag: the store's whole state.
func snapshot(t *testing.T, b bucket.Bucket) map[string]bucket.ETag {
	t.Helper()
	out := map[string]bucket.ETag{}
	for info, err := range b.List(context.Background(), "") {
		require.NoError(t, err)
		st, err := b.Stat(context.Background(), info.Key)
		require.NoError(t, err)
		out[info.Key] = st.ETag
	}
	return out
}

func requireCode(t *testing.T, err error, want codes.Code, contains ...string) {
	t.Helper()
	require.Error(t, err)
	st, ok := status.FromError(err)
	require.True(t, ok, "not a gRPC status: %v", err)
	require.Equal(t, want.String(), st.Code().String(), "message: %s", st.Message())
	for _, c := range contains {
		require.Contains(t, st.Message(), c)
	}
}

func sortedKeys[M ~map[K]V, K ~string, V any](m M) []K {
	ks := make([]K, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
