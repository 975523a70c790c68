package adversarial_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	arrowflight "github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"

	"github.com/weftdata/weft/client"
)

// input is one bad input: how to send it, and what it must get.
type input struct {
	category, name string
	want           expectation
	call           func(ctx context.Context, fx *fixture) error
	// ok: the call must succeed (want is unused); commits: and it may
	// change the store (the one valid put of the idem category).
	ok, commits bool
}

func (in input) key() string { return in.category + "/" + in.name }

// fileInput is one row of testdata/adversarial/inputs.json (see
// gen_inputs.py there).
type fileInput struct {
	Category string   `json:"category"`
	Name     string   `json:"name"`
	Call     string   `json:"call"`
	Code     string   `json:"code"`
	Body     *string  `json:"body"`
	Encoding string   `json:"encoding"`
	Action   string   `json:"action"`
	Path     []string `json:"path"`
	Contains string   `json:"contains"`
}

func inputsFile() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "testdata", "adversarial", "inputs.json")
}

// readInputsFile reads the shared inputs.
func readInputsFile(t testing.TB) []fileInput {
	t.Helper()
	raw, err := os.ReadFile(inputsFile())
	require.NoError(t, err)
	var f struct {
		Inputs []fileInput `json:"inputs"`
	}
	require.NoError(t, json.Unmarshal(raw, &f))
	return f.Inputs
}

var codeByName = func() map[string]codes.Code {
	m := map[string]codes.Code{}
	for c := codes.OK; c <= codes.Unauthenticated; c++ {
		m[c.String()] = c
	}
	return m
}()

var templateRE = regexp.MustCompile(`\{\{(rep:(\d+):(.*?)|commit8|commit|root|run8|run)\}\}`)

// expand fills the templates of s with the fixture's ids (vars may be nil:
// then only {{rep}} is expanded and the ids become placeholders).
func expand(s string, vars map[string]string) string {
	return templateRE.ReplaceAllStringFunc(s, func(m string) string {
		sub := templateRE.FindStringSubmatch(m)
		if strings.HasPrefix(sub[1], "rep:") {
			n, _ := strconv.Atoi(sub[2])
			return strings.Repeat(sub[3], n)
		}
		if v, ok := vars[sub[1]]; ok {
			return v
		}
		return strings.Repeat("0", 64)
	})
}

// encode turns an expanded string into the bytes sent.
func encode(s, encoding string) []byte {
	if encoding != "latin1" {
		return []byte(s)
	}
	out := make([]byte, 0, len(s))
	for _, r := range s {
		out = append(out, byte(r))
	}
	return out
}

func (fx *fixture) vars() map[string]string {
	return map[string]string{"commit": fx.head, "commit8": fx.head[:8], "root": fx.root, "run": fx.run, "run8": fx.run[:8]}
}

// fileInputs turns the shared inputs into calls against fx.
func fileInputs(t *testing.T, vars map[string]string) []input {
	var out []input
	for _, fi := range readInputsFile(t) {
		code, ok := codeByName[fi.Code]
		require.True(t, ok, "input %s: code %q", fi.Name, fi.Code)
		var body []byte
		if fi.Body != nil {
			body = encode(expand(*fi.Body, vars), fi.Encoding)
		}
		path := make([]string, len(fi.Path))
		for i, p := range fi.Path {
			path[i] = expand(p, vars)
		}
		action := expand(fi.Action, vars)
		var call func(ctx context.Context, fx *fixture) error
		switch fi.Call {
		case "info":
			call = func(ctx context.Context, fx *fixture) error { return fx.info(ctx, cmdDesc(body)) }
		case "schema":
			call = func(ctx context.Context, fx *fixture) error { return fx.schema(ctx, cmdDesc(body)) }
		case "info_path":
			call = func(ctx context.Context, fx *fixture) error { return fx.info(ctx, pathDesc(path...)) }
		case "schema_path":
			call = func(ctx context.Context, fx *fixture) error { return fx.schema(ctx, pathDesc(path...)) }
		case "action":
			call = func(ctx context.Context, fx *fixture) error { return fx.action(ctx, action, body) }
		case "list_flights":
			call = func(ctx context.Context, fx *fixture) error { return fx.listFlights(ctx, body) }
		case "put_path":
			call = func(ctx context.Context, fx *fixture) error {
				return fx.put(ctx, pathDesc(path...), nil, goodBatch)
			}
		case "doget":
			call = func(ctx context.Context, fx *fixture) error { return fx.doGet(ctx, body) }
		default:
			t.Fatalf("input %s: unknown call %q", fi.Name, fi.Call)
		}
		out = append(out, input{category: fi.Category, name: fi.Name, want: expectation{codes: []codes.Code{code}, contains: fi.Contains}, call: call})
	}
	return out
}

func cmdDesc(cmd []byte) *arrowflight.FlightDescriptor {
	return &arrowflight.FlightDescriptor{Type: arrowflight.DescriptorCMD, Cmd: cmd}
}

func pathDesc(path ...string) *arrowflight.FlightDescriptor {
	return &arrowflight.FlightDescriptor{Type: arrowflight.DescriptorPATH, Path: path}
}

func (fx *fixture) info(ctx context.Context, d *arrowflight.FlightDescriptor) error {
	_, err := fx.c.Flight().GetFlightInfo(ctx, d)
	return err
}

func (fx *fixture) schema(ctx context.Context, d *arrowflight.FlightDescriptor) error {
	_, err := fx.c.Flight().GetSchema(ctx, d)
	return err
}

// action runs a DoAction to its end.
func (fx *fixture) action(ctx context.Context, name string, body []byte) error {
	stream, err := fx.c.Flight().DoAction(ctx, &arrowflight.Action{Type: name, Body: body})
	if err != nil {
		return err
	}
	return drain(stream.Recv)
}

func (fx *fixture) listFlights(ctx context.Context, criteria []byte) error {
	stream, err := fx.c.Flight().ListFlights(ctx, &arrowflight.Criteria{Expression: criteria})
	if err != nil {
		return err
	}
	return drain(stream.Recv)
}

// doGet reads a ticket's stream to its end.
func (fx *fixture) doGet(ctx context.Context, ticket []byte) error {
	stream, err := fx.c.Flight().DoGet(ctx, &arrowflight.Ticket{Ticket: ticket})
	if err != nil {
		return err
	}
	return drain(stream.Recv)
}

// put sends one DoPut with the raw Flight client: the batches make builds
// (released here), each message with meta as app_metadata when given.
func (fx *fixture) put(ctx context.Context, d *arrowflight.FlightDescriptor, meta []byte, make func() (*arrow.Schema, []arrow.RecordBatch, error)) error {
	schema, recs, err := make()
	if err != nil {
		return err
	}
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := fx.c.Flight().DoPut(ctx)
	if err != nil {
		return err
	}
	w := arrowflight.NewRecordWriter(stream, ipc.WithSchema(schema))
	w.SetFlightDescriptor(d)
	var werr error
	for _, r := range recs {
		if meta != nil {
			werr = w.WriteWithAppMetadata(r, meta)
		} else {
			werr = w.Write(r)
		}
		if werr != nil {
			break
		}
	}
	if werr == nil {
		werr = w.Close()
	} else {
		_ = w.Close()
	}
	_ = stream.CloseSend()
	n := 0
	for {
		_, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err // the server's status
		}
		n++
	}
	if werr != nil {
		return werr
	}
	if n != 1 {
		return fmt.Errorf("put answered %d results", n)
	}
	return nil
}

// The fixture's tables.
var (
	tSchema = arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "x", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	}, nil)
	uSchema = arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "z", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	}, nil)
)

// fromJSON builds one record batch of schema from JSON rows.
func fromJSON(schema *arrow.Schema, rows string) (*arrow.Schema, []arrow.RecordBatch, error) {
	rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, schema, strings.NewReader(rows))
	if err != nil {
		return nil, nil, err
	}
	return schema, []arrow.RecordBatch{rec}, nil
}

func tRows(first, n int) string {
	var rows []string
	for i := first; i < first+n; i++ {
		x := strconv.FormatFloat(float64(i)/2, 'f', -1, 64)
		if i%7 == 3 {
			x = "null"
		}
		rows = append(rows, fmt.Sprintf(`{"id": %d, "name": "row-%d", "x": %s}`, i, i, x))
	}
	return "[" + strings.Join(rows, ",") + "]"
}

// goodBatch is 3 rows that t accepts: bad inputs that put it are bad
// only in their descriptor or metadata.
func goodBatch() (*arrow.Schema, []arrow.RecordBatch, error) { return fromJSON(tSchema, tRows(100, 3)) }

// fixtureRecipe is the fixture's run: 5 steps of 4 rows of t.
var fixtureRecipe = client.Recipe{Seed: 1, BatchSize: 4, Components: []client.Component{{Project: "adv", Table: "t"}}}

// setup builds the fixture through the Go client.
func setup(t *testing.T, addr string) *fixture {
	t.Helper()
	ctx := ctxT(t)
	fx := &fixture{c: dial(t, addr), addr: addr, raw: dialRaw(t, addr)}
	res, err := fx.c.CreateProject(ctx, "adv")
	require.NoError(t, err)
	fx.root = res.Commit
	for _, p := range []struct {
		table  string
		schema *arrow.Schema
		rows   string
	}{
		{"t", tSchema, tRows(0, 20)},
		{"u", uSchema, `[{"id": "a", "z": 1}, {"id": "b", "z": null}, {"id": null, "z": 3}, {"id": "d", "z": 4}, {"id": "e", "z": 5}]`},
	} {
		schema, recs, err := fromJSON(p.schema, p.rows)
		require.NoError(t, err)
		r, err := array.NewRecordReader(schema, recs)
		require.NoError(t, err)
		recs[0].Release()
		put, err := fx.c.Put(ctx, client.PutDescriptor{Project: "adv", Branch: "main", Table: p.table}, r)
		r.Release()
		require.NoError(t, err)
		fx.head = put.Commit
	}
	_, err = fx.c.CreateBranch(ctx, client.CreateBranchRequest{Project: "adv", Branch: "dev", From: "main"})
	require.NoError(t, err)
	plan, err := fx.c.Resolve(ctx, fixtureRecipe, 2)
	require.NoError(t, err)
	require.EqualValues(t, 5, plan.Record.Steps)
	fx.run = plan.Record.Run
	for _, r := range plan.Ranks {
		fx.rankTicket = append(fx.rankTicket, r.Ticket)
	}
	scan, err := fx.c.Scan(ctx, client.ScanRequest{Project: "adv", Ref: "main", Table: "t"})
	require.NoError(t, err)
	require.NotEmpty(t, scan.Endpoints)
	fx.scanTicket = scan.Endpoints[0].Ticket
	return fx
}
