package flight_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	arrowflight "github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/weftdata/weft/auth"
	"github.com/weftdata/weft/bucket"
	"github.com/weftdata/weft/client"
	"github.com/weftdata/weft/flight"
)

// authEnv is a token-protected server with projects a and b (table t of
// 300 rows each, a run over each) and tokens of every kind.
type authEnv struct {
	*env
	tokens map[string]string // name → secret
	runA   *client.RunPlan
	runB   *client.RunPlan
	scanB  *arrowflight.FlightInfo
}

func newAuthEnv(t *testing.T) *authEnv {
	ctx := context.Background()
	b := bucket.NewMem()
	tokens := map[string]string{}
	for name, spec := range map[string]auth.TokenSpec{
		"root":    {GlobalAdmin: true},
		"adminC":  {Projects: map[string]auth.Scope{"c": auth.Admin}},
		"writerA": {Projects: map[string]auth.Scope{"a": auth.Write}},
		"readerA": {Projects: map[string]auth.Scope{"a": auth.Read}},
		"readerB": {Projects: map[string]auth.Scope{"b": auth.Read}},
		"readAB":  {Projects: map[string]auth.Scope{"a": auth.Read, "b": auth.Read}},
	} {
		spec.Name = name
		secret, _, err := auth.CreateToken(ctx, b, spec, time.Now())
		require.NoError(t, err)
		tokens[name] = secret
	}
	ao := auth.DefaultOptions()
	ao.CacheTTL = 0 // revocation shows at once
	store, err := auth.NewStore(b, ao)
	require.NoError(t, err)
	e := &authEnv{env: newEnv(t, b, envOpts{authn: store, token: tokens["root"]}), tokens: tokens}
	for _, p := range []string{"a", "b"} {
		e.createProject(p)
		e.mustPut(p, "main", "t", 0, 300, 100, 8)
	}
	recipe := func(p string) client.Recipe {
		return client.Recipe{Seed: 1, BatchSize: 10, Components: []client.Component{{Project: p, Table: "t", Weight: 1}}}
	}
	e.runA, err = e.c.Resolve(ctxT(t), recipe("a"), 2)
	require.NoError(t, err)
	e.runB, err = e.c.Resolve(ctxT(t), recipe("b"), 2)
	require.NoError(t, err)
	e.scanB = e.info(pathDesc("b", "main", "t"))
	return e
}

// as is a client of the server with token name's secret ("" for none,
// anything else not in tokens is sent as given).
func (e *authEnv) as(name string) *client.Client {
	tok, ok := e.tokens[name]
	if !ok {
		tok = name
	}
	c, err := client.Dial(e.addr, client.Options{Token: tok, Allocator: e.cmem})
	require.NoError(e.t, err)
	e.t.Cleanup(func() { c.Close() })
	return c
}

// calls are one of each kind of call, against project p, each returning
// the server's error. Streams are read to their end.
func calls(e *authEnv, c *client.Client, p string) map[string]func(context.Context) error {
	fc := c.Flight()
	action := func(name, body string) func(context.Context) error {
		return func(ctx context.Context) error {
			s, err := fc.DoAction(ctx, &arrowflight.Action{Type: name, Body: []byte(body)})
			if err != nil {
				return err
			}
			for {
				if _, err := s.Recv(); err != nil {
					if errors.Is(err, io.EOF) {
						return nil
					}
					return err
				}
			}
		}
	}
	return map[string]func(context.Context) error{
		"create_branch": action("create_branch", `{"project":"`+p+`","branch":"x"}`),
		"list_branches": action("list_branches", `{"project":"`+p+`"}`),
		"log":           action("log", `{"project":"`+p+`"}`),
		"stat_media":    action("stat_media", `{"project":"`+p+`","sha256":"`+strings.Repeat("ab", 32)+`"}`),
		"DoPut media": func(ctx context.Context) error {
			data := []byte("not an mp4 at all")
			h := sha256.Sum256(data)
			_, err := c.PutMedia(ctx, p, "x.mp4", bytes.NewReader(data), int64(len(data)), hex.EncodeToString(h[:]))
			return err
		},
		"GetSchema": func(ctx context.Context) error {
			_, err := fc.GetSchema(ctx, pathDesc(p, "main", "t"))
			return err
		},
		"scan": func(ctx context.Context) error {
			_, err := c.Scan(ctx, client.ScanRequest{Project: p, Ref: "main", Table: "t"})
			return err
		},
		"recipe": func(ctx context.Context) error {
			_, err := c.Resolve(ctx, client.Recipe{Seed: 1, BatchSize: 10, Components: []client.Component{{Project: p, Table: "t", Weight: 1}}}, 1)
			return err
		},
		"ListFlights": func(ctx context.Context) error {
			s, err := fc.ListFlights(ctx, &arrowflight.Criteria{Expression: []byte(p)})
			if err != nil {
				return err
			}
			for {
				if _, err := s.Recv(); err != nil {
					if errors.Is(err, io.EOF) {
						return nil
					}
					return err
				}
			}
		},
		"DoPut": func(ctx context.Context) error {
			rec := makeBatch(e.cmem, 1000, 5, 8)
			defer rec.Release()
			r, err := array.NewRecordReader(testSchema, []arrow.RecordBatch{rec})
			require.NoError(e.t, err)
			defer r.Release()
			_, err = c.Put(ctx, client.PutDescriptor{Project: p, Branch: "main", Table: "t"}, r)
			return err
		},
	}
}

func requireStatus(t *testing.T, err error, want codes.Code) {
	t.Helper()
	require.Error(t, err)
	st, _ := status.FromError(err)
	require.Equal(t, want.String(), st.Code().String(), "message: %s", st.Message())
	require.GreaterOrEqual(t, len(st.Message()), 20, "message %q says too little", st.Message())
}

// TestAuthEveryCall: without a token, with a bad one, or with a revoked
// one, every call is Unauthenticated; out of scope, PermissionDenied; and
// none of the refused calls changes the store.
func TestAuthEveryCall(t *testing.T) {
	e := newAuthEnv(t)
	before := snapshot(t, e.b)
	ctx := ctxT(t)
	tkt := e.scanB.Endpoint[0].Ticket
	for _, who := range []string{"", "Bearer-less", "weft_" + strings.Repeat("A", 43)} {
		c := e.as(who)
		for name, call := range calls(e, c, "a") {
			t.Run("unauthenticated/"+who+"/"+name, func(t *testing.T) {
				requireStatus(t, call(ctx), codes.Unauthenticated)
			})
		}
		t.Run("unauthenticated/"+who+"/DoGet", func(t *testing.T) {
			for _, err := range c.Read(ctx, client.Endpoint{Ticket: tkt.Ticket}) {
				requireStatus(t, err, codes.Unauthenticated)
			}
		})
		t.Run("unauthenticated/"+who+"/ListActions", func(t *testing.T) {
			s, err := c.Flight().ListActions(ctx, &arrowflight.Empty{})
			if err == nil {
				_, err = s.Recv()
			}
			requireStatus(t, err, codes.Unauthenticated)
		})
	}
	// A header that is not "Bearer …", and two headers.
	_, err := e.as("").Flight().GetSchema(metadata.AppendToOutgoingContext(ctx, "authorization", "Basic dXNlcjpwYXNz"), pathDesc("a", "main", "t"))
	requireStatus(t, err, codes.Unauthenticated)
	_, err = e.client.GetSchema(metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+e.tokens["root"]), pathDesc("a", "main", "t"))
	requireStatus(t, err, codes.Unauthenticated)

	readerA := e.as("readerA")
	for name, call := range calls(e, readerA, "a") {
		t.Run("reader/"+name, func(t *testing.T) {
			err := call(ctx)
			switch name {
			case "create_branch", "DoPut", "DoPut media":
				requireStatus(t, err, codes.PermissionDenied)
				require.Contains(t, status.Convert(err).Message(), `needs write`)
			default:
				require.NoError(t, err)
			}
		})
	}
	for name, call := range calls(e, readerA, "b") {
		t.Run("other project/"+name, func(t *testing.T) {
			err := call(ctx)
			requireStatus(t, err, codes.PermissionDenied)
			require.Contains(t, status.Convert(err).Message(), `project "b"`)
		})
	}
	t.Run("create_project", func(t *testing.T) {
		for _, who := range []string{"readerA", "writerA", "readerB"} {
			_, err := e.as(who).CreateProject(ctx, "c")
			requireStatus(t, err, codes.PermissionDenied)
		}
	})
	require.Equal(t, before, snapshot(t, e.b), "refused calls changed the store")

	t.Run("granted", func(t *testing.T) {
		_, err := e.as("adminC").CreateProject(ctx, "c")
		require.NoError(t, err, "admin on a project may create it")
		_, err = e.as("adminC").CreateProject(ctx, "d")
		requireStatus(t, err, codes.PermissionDenied)
		w := e.as("writerA")
		for _, name := range []string{"create_branch", "DoPut", "scan", "log"} {
			require.NoError(t, calls(e, w, "a")[name](ctx), name)
		}
	})
	t.Run("revoked", func(t *testing.T) {
		secret, tok, err := auth.CreateToken(ctx, e.b, auth.TokenSpec{Name: "temp", Projects: map[string]auth.Scope{"a": auth.Read}}, time.Now())
		require.NoError(t, err)
		e.tokens["temp"] = secret
		c := e.as("temp")
		_, err = c.Branches(ctx, "a")
		require.NoError(t, err)
		_, err = auth.RevokeToken(ctx, e.b, tok.ID)
		require.NoError(t, err)
		_, err = c.Branches(ctx, "a")
		requireStatus(t, err, codes.Unauthenticated)
		require.Contains(t, status.Convert(err).Message(), "revoked")
	})
}

// TestAuthRunsAndTickets: a token of project a cannot learn of b's runs
// (NotFound, worded as for a run that does not exist), nor use b's
// tickets; ListFlights lists only what it may read.
func TestAuthRunsAndTickets(t *testing.T) {
	e := newAuthEnv(t)
	ctx := ctxT(t)
	readerA := e.as("readerA")
	runB := e.runB.Record.Run

	t.Run("run of another project is not found", func(t *testing.T) {
		unknown := strings.Repeat("f", 64)
		_, errUnknown := readerA.Resume(ctx, unknown, 1, 0)
		requireStatus(t, errUnknown, codes.NotFound)
		for _, ref := range []string{runB, runB[:12]} {
			_, err := readerA.Resume(ctx, ref, 1, 0)
			requireStatus(t, err, codes.NotFound)
			// Word for word what an unknown id of that length gets.
			_, errU := readerA.Resume(ctx, unknown[:len(ref)], 1, 0)
			require.Equal(t, strings.ReplaceAll(status.Convert(errU).Message(), unknown[:len(ref)], ref), status.Convert(err).Message())
			_, err = readerA.Flight().GetSchema(ctx, runDesc(t, map[string]any{"run": ref}))
			requireStatus(t, err, codes.NotFound)
		}
		// Its own run, and b's with a token for b, resume.
		_, err := readerA.Resume(ctx, e.runA.Record.Run[:12], 1, 0)
		require.NoError(t, err)
		_, err = e.as("readerB").Resume(ctx, runB, 1, 0)
		require.NoError(t, err)
	})
	t.Run("recipe over two projects needs both", func(t *testing.T) {
		r := client.Recipe{Seed: 1, BatchSize: 10, Components: []client.Component{{Project: "a", Table: "t", Weight: 1}, {Project: "b", Table: "t", Weight: 1}}}
		_, err := readerA.Resolve(ctx, r, 1)
		requireStatus(t, err, codes.PermissionDenied)
		plan, err := e.as("readAB").Resolve(ctx, r, 2)
		require.NoError(t, err)
		// Its rank tickets need both too.
		for _, err := range readerA.ReadRank(ctx, plan.Ranks[1]) {
			requireStatus(t, err, codes.PermissionDenied)
			break
		}
		for _, err := range e.as("readAB").ReadRank(ctx, plan.Ranks[1]) {
			require.NoError(t, err)
			break
		}
	})
	t.Run("tickets of another project", func(t *testing.T) {
		for _, err := range readerA.Read(ctx, client.Endpoint{Ticket: e.scanB.Endpoint[0].Ticket.Ticket}) {
			requireStatus(t, err, codes.PermissionDenied)
			break
		}
		for _, err := range readerA.ReadRank(ctx, e.runB.Ranks[0]) {
			requireStatus(t, err, codes.PermissionDenied)
			break
		}
		n := 0
		for rec, err := range e.as("readerB").Read(ctx, client.Endpoint{Ticket: e.scanB.Endpoint[0].Ticket.Ticket}) {
			require.NoError(t, err)
			n += int(rec.NumRows())
		}
		require.Equal(t, int(e.scanB.TotalRecords), n)
	})
	t.Run("ListFlights lists what the token may read", func(t *testing.T) {
		list := func(c *client.Client) []string {
			s, err := c.Flight().ListFlights(ctx, &arrowflight.Criteria{})
			require.NoError(t, err)
			var out []string
			for {
				info, err := s.Recv()
				if errors.Is(err, io.EOF) {
					return out
				}
				require.NoError(t, err)
				out = append(out, info.FlightDescriptor.Path[0])
			}
		}
		require.Equal(t, []string{"a"}, list(readerA))
		require.Equal(t, []string{"b"}, list(e.as("readerB")))
		require.Equal(t, []string{"a", "b"}, list(e.c))
	})
}

// TestForgedTickets: over the wire, a ticket with any byte changed, one
// signed by another store, one minted in the old checksummed layout and
// one with a made-up signature are InvalidArgument, saying to plan again.
func TestForgedTickets(t *testing.T) {
	e := newAuthEnv(t)
	other := newEnv(t, bucket.NewMem(), envOpts{})
	other.createProject("b")
	other.mustPut("b", "main", "t", 0, 300, 100, 8)
	foreign := other.info(pathDesc("b", "main", "t")).Endpoint[0].Ticket.Ticket

	good := e.scanB.Endpoint[0].Ticket.Ticket
	payload := good[:len(good)-auth.TicketOverhead]
	v1 := append([]byte("weft\x01\x01"), payload[6:]...)
	sum := sha256.Sum256(v1)
	v1 = append(v1, sum[:8]...)
	cases := map[string][]byte{
		"another store": foreign,
		"version 1":     v1,
		"made-up mac":   append(slices.Clone(good[:len(good)-32]), make([]byte, 32)...),
		"empty":         nil,
	}
	for _, i := range []int{0, 5, 10, len(payload) / 2, len(payload), len(good) - 1} {
		bad := slices.Clone(good)
		bad[i] ^= 0x20
		cases[fmt.Sprintf("byte %d", i)] = bad
	}
	cases["edited rows"] = append([]byte(strings.Replace(string(payload), `"n":`, `"n":1`, 1)), good[len(payload):]...)
	for name, tkt := range cases {
		t.Run(name, func(t *testing.T) {
			_, _, err := e.read(ctxT(t), &arrowflight.Ticket{Ticket: tkt}, nil)
			requireStatus(t, err, codes.InvalidArgument)
			require.Contains(t, status.Convert(err).Message(), "GetFlightInfo")
		})
	}
	ids, _, err := e.read(ctxT(t), &arrowflight.Ticket{Ticket: good}, nil)
	require.NoError(t, err)
	require.Len(t, ids, 300)
}

// TestIdempotentPut: a put retried with its key commits once; the retry
// answers the first commit with replayed; bad keys are InvalidArgument
// and store nothing.
func TestIdempotentPut(t *testing.T) {
	e := newEnv(t, bucket.NewMem(), envOpts{})
	e.createProject("p")
	ctx := ctxT(t)
	put := func(table, key string) (client.PutResult, error) {
		rec := makeBatch(e.cmem, 0, 50, 8)
		defer rec.Release()
		r, err := array.NewRecordReader(testSchema, []arrow.RecordBatch{rec})
		require.NoError(t, err)
		defer r.Release()
		return e.c.Put(ctx, client.PutDescriptor{Project: "p", Branch: "main", Table: table, IdempotencyKey: key}, r)
	}
	first, err := put("t", "3f1c9a6e-key")
	require.NoError(t, err)
	require.False(t, first.Replayed)
	again, err := put("t", "3f1c9a6e-key")
	require.NoError(t, err)
	require.Equal(t, client.PutResult{Commit: first.Commit, Rows: 50, Replayed: true}, again)
	plan, err := e.c.Scan(ctx, client.ScanRequest{Project: "p", Ref: "main", Table: "t"})
	require.NoError(t, err)
	require.EqualValues(t, 50, plan.Rows, "rows once")
	log, err := e.c.Log(ctx, "p", "main", 0)
	require.NoError(t, err)
	require.Len(t, log, 2, "one commit besides the root")

	other, err := put("t", "")
	require.NoError(t, err)
	require.NotEqual(t, first.Commit, other.Commit, "no key: a new commit")

	before := snapshot(t, e.b)
	for _, key := range []string{"a b", strings.Repeat("k", 257), "a\x01"} {
		_, err := put("t", key)
		requireCode(t, err, codes.InvalidArgument, "idempotency key")
	}
	_, err = put("u", "3f1c9a6e-key")
	requireCode(t, err, codes.InvalidArgument, "use a new key")
	// Empty and malformed metadata, with the raw client.
	for meta, want := range map[string]string{`{"idempotency_key":""}`: "idempotency key", `{"idempotency_key":7}`: "idempotency_key", `{"key":"x"}`: "key", `nope`: "JSON"} {
		err := rawPut(t, e, pathDesc("p", "main", "t"), []byte(meta))
		requireCode(t, err, codes.InvalidArgument, want)
	}
	require.Equal(t, before, snapshot(t, e.b), "refused puts changed the store")
}

// rawPut sends one batch with meta as its app_metadata.
func rawPut(t *testing.T, e *env, d *arrowflight.FlightDescriptor, meta []byte) error {
	stream, err := e.client.DoPut(ctxT(t))
	require.NoError(t, err)
	w := arrowflight.NewRecordWriter(stream, ipc.WithSchema(testSchema), ipc.WithAllocator(e.cmem))
	w.SetFlightDescriptor(d)
	rec := makeBatch(e.cmem, 0, 5, 8)
	werr := w.WriteWithAppMetadata(rec, meta)
	rec.Release()
	_ = w.Close()
	_ = stream.CloseSend()
	for {
		if _, err := stream.Recv(); err != nil {
			if errors.Is(err, io.EOF) {
				return werr
			}
			return err
		}
	}
}

// TestPutTimeout: a put whose client stalls past the put timeout fails
// with DeadlineExceeded, saying what to do, and commits nothing.
func TestPutTimeout(t *testing.T) {
	e := newEnv(t, bucket.NewMem(), envOpts{flight: func(o *flight.Options) { o.PutTimeout = 300 * time.Millisecond }})
	e.createProject("p")
	before := snapshot(t, e.b)
	stream, err := e.client.DoPut(ctxT(t))
	require.NoError(t, err)
	w := arrowflight.NewRecordWriter(stream, ipc.WithSchema(testSchema), ipc.WithAllocator(e.cmem))
	w.SetFlightDescriptor(pathDesc("p", "main", "t"))
	rec := makeBatch(e.cmem, 0, 5, 8)
	require.NoError(t, w.Write(rec))
	rec.Release()
	// Stall: never finish the stream; the server gives up on its own.
	_, err = stream.Recv()
	requireCode(t, err, codes.DeadlineExceeded, "put timeout", "--put-timeout")
	_ = w.Close()
	require.Equal(t, before, snapshot(t, e.b))
}
