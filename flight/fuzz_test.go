package flight_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	arrowflight "github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/weftdata/weft/auth"
	"github.com/weftdata/weft/bucket"
	"github.com/weftdata/weft/client"
	"github.com/weftdata/weft/errdefs/errgrpc"
	"github.com/weftdata/weft/flight"
	"github.com/weftdata/weft/mix"
	"github.com/weftdata/weft/tables"
	"github.com/weftdata/weft/versions"
)

// Fuzz tests of every JSON decoder through the wire: each fuzzed input is
// sent to a real Service over a loopback gRPC connection, and must get an
// answer (success, or a status of an allowed code with a message of at
// most errgrpc.MaxMessageBytes), never a crash; after each, the server
// still answers. Seeds: the shared adversarial inputs
// (testdata/adversarial/inputs.json at the module root), plus the corpus
// in testdata/fuzz/<FuzzName>/. Run one for a while with, e.g.:
//
//	go test -run '^$' -fuzz '^FuzzGetFlightInfo$' -fuzztime 60s ./flight/

// fuzzEnv is a Service over a memory bucket with a small fixture: project
// p with table t (10 rows) and branch dev, and a run of t for 2 ranks.
type fuzzEnv struct {
	c          *client.Client
	signer     *auth.Signer // the Service's, over the same bucket
	vars       map[string]string
	scanTicket []byte
	rankTicket []byte
}

func newFuzzEnv(tb testing.TB) *fuzzEnv {
	tb.Helper()
	must := func(err error) {
		tb.Helper()
		if err != nil {
			tb.Fatal(err)
		}
	}
	b := bucket.NewMem()
	v, err := versions.New(b, versions.DefaultOptions())
	must(err)
	signer, err := auth.NewSigner(context.Background(), b, auth.DefaultSignerOptions())
	must(err)
	ts, err := tables.New(v, tables.DefaultOptions())
	must(err)
	eng, err := mix.New(ts, mix.DefaultOptions())
	must(err)
	fo := flight.DefaultOptions()
	fo.ShutdownGrace = time.Second
	fo.SlotInlineBytes = 0 // every step of a host-slot exchange in a slot: releases reach the ring (FuzzExchangeRelease)
	svc, err := flight.New(flight.Parts{Tables: ts, Mix: eng, Signer: signer}, fo)
	must(err)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	must(err)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- svc.Serve(ctx, lis) }()
	c, err := client.Dial(lis.Addr().String(), client.Options{})
	must(err)
	tb.Cleanup(func() {
		cancel()
		<-served
		eng.Close()
		c.Close()
	})

	e := &fuzzEnv{c: c, signer: signer}
	res, err := c.CreateProject(ctx, "p")
	must(err)
	rec := makeBatch(memory.DefaultAllocator, 0, 10, 4)
	r, err := array.NewRecordReader(testSchema, []arrow.RecordBatch{rec})
	rec.Release()
	must(err)
	put, err := c.Put(ctx, client.PutDescriptor{Project: "p", Branch: "main", Table: "t"}, r)
	r.Release()
	must(err)
	_, err = c.CreateBranch(ctx, client.CreateBranchRequest{Project: "p", Branch: "dev"})
	must(err)
	plan, err := c.Resolve(ctx, client.Recipe{Seed: 1, BatchSize: 4, Components: []client.Component{{Project: "p", Table: "t"}}}, 2)
	must(err)
	scan, err := c.Scan(ctx, client.ScanRequest{Project: "p", Ref: "main", Table: "t"})
	must(err)
	e.scanTicket, e.rankTicket = scan.Endpoints[0].Ticket, plan.Ranks[1].Ticket
	e.vars = map[string]string{"commit": put.Commit, "commit8": put.Commit[:8], "root": res.Commit, "run": plan.Record.Run, "run8": plan.Record.Run[:8]}
	return e
}

// fuzzCodes are the codes a bad request may get; OK is allowed too (a
// fuzzed input may be a good request).
var fuzzCodes = []codes.Code{codes.OK, codes.InvalidArgument, codes.NotFound, codes.AlreadyExists, codes.FailedPrecondition,
	codes.ResourceExhausted, codes.Unimplemented, codes.OutOfRange}

// check asserts the answer to one fuzzed call, then that the server still
// answers.
func (e *fuzzEnv) check(t *testing.T, what string, err error) {
	t.Helper()
	st, _ := status.FromError(err)
	if err != nil && st == nil {
		t.Fatalf("%s: not a gRPC status: %v", what, err)
	}
	if !slices.Contains(fuzzCodes, st.Code()) {
		t.Fatalf("%s: code %s: %s", what, st.Code(), st.Message())
	}
	if n := len(st.Message()); n > errgrpc.MaxMessageBytes {
		t.Fatalf("%s: message of %d bytes, over %d", what, n, errgrpc.MaxMessageBytes)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := e.c.Branches(ctx, "p"); err != nil {
		t.Fatalf("after %s: the server no longer answers: %v", what, err)
	}
}

// drain reads a server stream to its end.
func drain[T any](recv func() (T, error)) error {
	for {
		if _, err := recv(); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return err
		}
	}
}

// sharedInputs reads the adversarial inputs of the given calls, templates
// expanded with vars; inputs over 64 KiB are left out (they slow the
// fuzzer down and the adversarial suite sends them).
func sharedInputs(tb testing.TB, vars map[string]string, calls ...string) []fileInput {
	tb.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "testdata", "adversarial", "inputs.json"))
	if err != nil {
		tb.Fatal(err)
	}
	var f struct {
		Inputs []struct {
			Call, Body, Encoding, Action string
			Path                         []string
		}
	}
	if err := json.Unmarshal(raw, &f); err != nil {
		tb.Fatal(err)
	}
	var out []fileInput
	for _, in := range f.Inputs {
		if !slices.Contains(calls, in.Call) {
			continue
		}
		body := encodeInput(expandInput(in.Body, vars), in.Encoding)
		action := expandInput(in.Action, vars)
		if len(body) > 64<<10 || len(action) > 64<<10 {
			continue
		}
		out = append(out, fileInput{call: in.Call, body: body, action: action})
	}
	return out
}

type fileInput struct {
	call, action string
	body         []byte
}

var templateRE = regexp.MustCompile(`\{\{(rep:(\d+):(.*?)|commit8|commit|root|run8|run)\}\}`)

// expandInput fills the templates of testdata/adversarial/gen_inputs.py.
func expandInput(s string, vars map[string]string) string {
	return templateRE.ReplaceAllStringFunc(s, func(m string) string {
		sub := templateRE.FindStringSubmatch(m)
		if strings.HasPrefix(sub[1], "rep:") {
			n, _ := strconv.Atoi(sub[2])
			return strings.Repeat(sub[3], n)
		}
		return vars[sub[1]]
	})
}

// encodeInput: "latin1" sends each character as one byte.
func encodeInput(s, encoding string) []byte {
	if encoding != "latin1" {
		return []byte(s)
	}
	out := make([]byte, 0, len(s))
	for _, r := range s {
		out = append(out, byte(r))
	}
	return out
}

// FuzzGetFlightInfo sends fuzzed command descriptors to GetFlightInfo and
// GetSchema.
func FuzzGetFlightInfo(f *testing.F) {
	e := newFuzzEnv(f)
	for _, in := range sharedInputs(f, e.vars, "info", "schema") {
		f.Add(in.body)
	}
	for _, good := range []string{
		`{"scan": {"project": "p", "ref": "main", "table": "t", "columns": ["id"]}}`,
		`{"run": "` + e.vars["run"] + `", "world_size": 2, "start_step": 1, "end_step": 2}`,
		`{"recipe": {"seed": 3, "batch_size": 4, "components": [{"project": "p", "ref": "dev", "table": "t", "weight": 0.5}], "shuffle": {"buffer_rows": 4}, "steps": 2}, "world_size": 4}`,
	} {
		f.Add([]byte(good))
	}
	f.Fuzz(func(t *testing.T, cmd []byte) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		d := &arrowflight.FlightDescriptor{Type: arrowflight.DescriptorCMD, Cmd: cmd}
		_, err := e.c.Flight().GetFlightInfo(ctx, d)
		e.check(t, "GetFlightInfo", err)
		_, err = e.c.Flight().GetSchema(ctx, d)
		e.check(t, "GetSchema", err)
	})
}

// FuzzDoAction sends fuzzed action types and bodies to DoAction.
func FuzzDoAction(f *testing.F) {
	e := newFuzzEnv(f)
	for _, in := range sharedInputs(f, e.vars, "action") {
		f.Add(in.action, in.body)
	}
	for _, a := range []string{"create_project", "create_branch", "list_branches", "log"} {
		f.Add(a, []byte(`{"project": "p", "branch": "b1", "from": "main", "ref": "dev", "limit": 1}`))
	}
	f.Fuzz(func(t *testing.T, action string, body []byte) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		stream, err := e.c.Flight().DoAction(ctx, &arrowflight.Action{Type: action, Body: body})
		if err == nil {
			err = drain(stream.Recv)
		}
		if st, ok := status.FromError(err); ok && st.Code() == codes.Internal && strings.Contains(st.Message(), "marshal") {
			t.Skip("not sendable: the action type is not valid UTF-8") // refused by the client's protobuf
		}
		e.check(t, "DoAction", err)
	})
}

// FuzzExchangeRelease sends a fuzzed slot release (the app_metadata of a
// rank exchange's message after its command, which flightd decodes with
// client.SlotRelease: slot, generation, device, a device release's
// base64 event) on an exchange served in host slots, then ends its side.
func FuzzExchangeRelease(f *testing.F) {
	e := newFuzzEnv(f)
	for _, s := range []string{
		`{"slot":0,"generation":1}`, `{"slot":1,"generation":1}`, `{"slot":0,"generation":2}`,
		`{"slot":0,"generation":1,"event":"AAAA"}`, `{"slot":0,"generation":1,"device":true,"event":"L2Rldi9zaG0vd2VmdC1kZXZlbnQteA=="}`,
		`{"slot":-1,"generation":99999999999999999999}`, `{"slot":0}`, `release`, `null`, ``,
	} {
		f.Add([]byte(s))
	}
	cmd, err := json.Marshal(client.ExchangeCommand{RankExchange: &client.RankExchange{Ticket: e.rankTicket, Delivery: client.DeliveryShm}})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, meta []byte) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		stream, err := e.c.Flight().DoExchange(ctx)
		if err == nil {
			err = stream.Send(&arrowflight.FlightData{FlightDescriptor: &arrowflight.FlightDescriptor{Type: arrowflight.DescriptorCMD, Cmd: cmd}})
		}
		if err == nil {
			err = stream.Send(&arrowflight.FlightData{AppMetadata: meta})
		}
		if err == nil || errors.Is(err, io.EOF) { // EOF: the server ended the call; its status comes from Recv
			_ = stream.CloseSend()
			err = drain(stream.Recv)
		}
		e.check(t, "DoExchange release", err)
	})
}

// FuzzDoGetTicket sends fuzzed tickets to DoGet: as they are (the
// signature check must refuse them), or (mint) framed as a version 2
// ticket around the fuzzed kind byte and payload and signed with the
// Service's own key, so that the fuzzer reaches the payload decoders
// behind the signature (what only a server could issue).
func FuzzDoGetTicket(f *testing.F) {
	e := newFuzzEnv(f)
	for _, in := range sharedInputs(f, e.vars, "doget") {
		f.Add(in.body, false)
	}
	const head, sig = 5, auth.TicketOverhead // "weft" | version; key id | MAC
	for _, tkt := range [][]byte{e.scanTicket, e.rankTicket} {
		f.Add(tkt, false)
		f.Add(tkt[head:len(tkt)-sig], true) // kind and payload
		f.Add(tkt[:len(tkt)-3], false)
	}
	f.Fuzz(func(t *testing.T, data []byte, mint bool) {
		ticket := data
		if mint && len(data) > 0 {
			ticket = e.signer.Sign(context.Background(), append([]byte("weft\x02"), data...))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		stream, err := e.c.Flight().DoGet(ctx, &arrowflight.Ticket{Ticket: ticket})
		if err == nil {
			err = drain(stream.Recv)
		}
		e.check(t, "DoGet", err)
	})
}
