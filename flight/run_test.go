package flight_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	arrowflight "github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	"github.com/weftdata/weft/bucket"
	"github.com/weftdata/weft/mix"
	"github.com/weftdata/weft/tables"
)

// rankStep is one step of a rank stream as a client sees it.
type rankStep struct {
	run   string
	step  int64
	comps []int32
	rows  []int64
}

// readRank streams a rank's ticket, checking that every row's id is its
// _row (the test tables number their rows).
func (e *env) readRank(ctx context.Context, tkt *arrowflight.Ticket) ([]rankStep, *arrow.Schema, error) {
	stream, err := e.client.DoGet(ctx, tkt)
	if err != nil {
		return nil, nil, err
	}
	r, err := arrowflight.NewRecordReader(stream, ipc.WithAllocator(e.cmem))
	if err != nil {
		return nil, nil, err
	}
	defer r.Release()
	var out []rankStep
	for r.Next() {
		rec := r.RecordBatch()
		var meta struct {
			Run  string `json:"run"`
			Step int64  `json:"step"`
		}
		require.NoError(e.t, json.Unmarshal(r.LatestAppMetadata(), &meta))
		s := rankStep{run: meta.Run, step: meta.Step}
		sc := rec.Schema()
		s.comps = append(s.comps, rec.Column(sc.FieldIndices(mix.ComponentColumn)[0]).(*array.Int32).Int32Values()...)
		s.rows = append(s.rows, rec.Column(sc.FieldIndices(mix.RowColumn)[0]).(*array.Int64).Int64Values()...)
		if idx := sc.FieldIndices("id"); len(idx) == 1 {
			require.Equal(e.t, s.rows, rec.Column(idx[0]).(*array.Int64).Int64Values())
		}
		out = append(out, s)
	}
	return out, r.Schema(), r.Err()
}

func runDesc(t *testing.T, cmd any) *arrowflight.FlightDescriptor {
	b, err := json.Marshal(cmd)
	require.NoError(t, err)
	return &arrowflight.FlightDescriptor{Type: arrowflight.DescriptorCMD, Cmd: b}
}

type runRecord struct {
	Format     int    `json:"format"`
	Run        string `json:"run"`
	Seed       uint64 `json:"seed"`
	BatchSize  int    `json:"batch_size"`
	Steps      int64  `json:"steps"`
	Components []struct {
		Project, Ref, Table, Commit string
		Weight                      float64
		Columns                     []string
		Rows                        int64
		Blocks                      []int64
	} `json:"components"`
	Shuffle struct {
		BufferRows int64 `json:"buffer_rows"`
	} `json:"shuffle"`
}

func mixRecipe(p string) map[string]any {
	return map[string]any{"seed": 2048, "batch_size": 64, "components": []map[string]any{
		{"project": p, "table": "a", "weight": 0.3},
		{"project": p, "table": "b", "weight": 0.7},
	}}
}

// TestRunProtocol: a recipe resolves to a run with W endpoints; rank r's
// rows are positions r, r+W, … of the W = 1 batch; the run resumes by id on
// another server at any step and world size; bad inputs get their codes.
func TestRunProtocol(t *testing.T) {
	for name, newBucket := range backends(t) {
		t.Run(name, func(t *testing.T) {
			b := newBucket(t)
			e := newEnv(t, b, envOpts{tables: func(o *tables.Options) { o.RowGroupRows = 200 }})
			e.createProject("p")
			e.mustPut("p", "main", "a", 0, 941, 400, 16)
			e.mustPut("p", "main", "b", 0, 2100, 700, 16)

			info := e.info(runDesc(t, map[string]any{"recipe": mixRecipe("p"), "world_size": 1}))
			var rec runRecord
			require.NoError(t, json.Unmarshal(info.AppMetadata, &rec))
			require.Len(t, rec.Run, 64)
			require.Equal(t, int64((941+2100+63)/64), rec.Steps)
			require.Equal(t, int64(941), rec.Components[0].Rows)
			require.Equal(t, "main", rec.Components[0].Ref)
			require.Len(t, rec.Components[1].Commit, 64)
			require.Equal(t, rec.Steps*64, info.TotalRecords)
			require.Len(t, info.Endpoint, 1)
			schema, err := arrowflight.DeserializeSchema(info.Schema, memory.DefaultAllocator)
			require.NoError(t, err)
			require.Equal(t, []string{"id", "name", "blob", "emb", mix.ComponentColumn, mix.RowColumn}, fieldNames(schema))

			w1, got, err := e.readRank(ctxT(t), info.Endpoint[0].Ticket)
			require.NoError(t, err)
			require.True(t, got.Equal(schema))
			require.Len(t, w1, int(rec.Steps))
			for s, st := range w1 {
				require.Equal(t, rec.Run, st.run)
				require.Equal(t, int64(s), st.step)
				var n [2]int
				for _, c := range st.comps {
					n[c]++
				}
				require.Contains(t, []int{19, 20}, n[0], "step %d: 0.3 of 64 is 19.2", s)
				require.Equal(t, 64, n[0]+n[1])
			}

			// W = 2, 4, 8, on this server and on a second one over the bucket.
			e2 := newEnv(t, b, envOpts{})
			for _, w := range []int{2, 4, 8} {
				srv := e
				if w == 4 {
					srv = e2
				}
				info := srv.info(runDesc(t, map[string]any{"recipe": mixRecipe("p"), "world_size": w}))
				var again runRecord
				require.NoError(t, json.Unmarshal(info.AppMetadata, &again))
				require.Equal(t, rec.Run, again.Run, "the same recipe at the same commits is the same run")
				require.Len(t, info.Endpoint, w)
				for r, ep := range info.Endpoint {
					var em struct {
						Rank      int `json:"rank"`
						WorldSize int `json:"world_size"`
					}
					require.NoError(t, json.Unmarshal(ep.AppMetadata, &em))
					require.Equal(t, r, em.Rank)
					require.Equal(t, w, em.WorldSize)
					steps, _, err := srv.readRank(ctxT(t), ep.Ticket)
					require.NoError(t, err)
					require.Len(t, steps, len(w1))
					for s, st := range steps {
						require.Len(t, st.rows, 64/w)
						for i := range st.rows {
							require.Equal(t, w1[s].rows[r+i*w], st.rows[i], "W=%d rank %d step %d", w, r, s)
							require.Equal(t, w1[s].comps[r+i*w], st.comps[i])
						}
					}
				}
			}

			// Resume by run id from step 17 on 8 ranks, on the second server.
			info = e2.info(runDesc(t, map[string]any{"run": rec.Run, "world_size": 8, "start_step": 17}))
			require.Equal(t, (rec.Steps-17)*64, info.TotalRecords)
			for r, ep := range info.Endpoint {
				steps, _, err := e2.readRank(ctxT(t), ep.Ticket)
				require.NoError(t, err)
				require.Equal(t, int64(17), steps[0].step)
				for k, st := range steps {
					for i := range st.rows {
						require.Equal(t, w1[17+k].rows[r+i*8], st.rows[i])
					}
				}
			}
			// An end step.
			info = e.info(runDesc(t, map[string]any{"run": rec.Run, "world_size": 2, "start_step": 3, "end_step": 5}))
			steps, _, err := e.readRank(ctxT(t), info.Endpoint[1].Ticket)
			require.NoError(t, err)
			require.Len(t, steps, 2)
			require.Equal(t, int64(4), steps[1].step)

			// Appending mid-run changes nothing in the run; resolving again
			// makes a new run.
			e.mustPut("p", "main", "a", 941, 100, 100, 16)
			info = e.info(runDesc(t, map[string]any{"run": rec.Run, "world_size": 1}))
			after, _, err := e.readRank(ctxT(t), info.Endpoint[0].Ticket)
			require.NoError(t, err)
			require.Equal(t, w1, after)
			info = e.info(runDesc(t, map[string]any{"recipe": mixRecipe("p"), "world_size": 1}))
			var next runRecord
			require.NoError(t, json.Unmarshal(info.AppMetadata, &next))
			require.NotEqual(t, rec.Run, next.Run)
			require.Equal(t, int64(1041), next.Components[0].Rows)
		})
	}
}

// TestRunBadInput: every bad run input gets its code and a message that
// names the problem, and changes nothing in the store.
func TestRunBadInput(t *testing.T) {
	b := bucket.NewMem()
	e := newEnv(t, b, envOpts{})
	e.createProject("p")
	e.mustPut("p", "main", "a", 0, 300, 300, 8)
	e.mustPut("p", "main", "b", 0, 300, 300, 8)
	// A table whose "id" is a string.
	other := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.BinaryTypes.String}}, nil)
	bld := array.NewRecordBuilder(e.cmem, other)
	bld.Field(0).(*array.StringBuilder).Append("x")
	_, err := e.put(ctxT(t), pathDesc("p", "main", "s"), other, bld.NewRecordBatch())
	bld.Release()
	require.NoError(t, err)

	info := e.info(runDesc(t, map[string]any{"recipe": mixRecipe("p"), "world_size": 4}))
	var rec runRecord
	require.NoError(t, json.Unmarshal(info.AppMetadata, &rec))
	before := snapshot(t, b)

	recipeWith := func(edit func(r map[string]any)) map[string]any {
		r := mixRecipe("p")
		edit(r)
		return map[string]any{"recipe": r, "world_size": 2}
	}
	comp := func(r map[string]any, i int) map[string]any { return r["components"].([]map[string]any)[i] }
	bogus := "0000000000000000000000000000000000000000000000000000000000000000"
	for _, tc := range []struct {
		name string
		cmd  any
		code codes.Code
		msg  []string
	}{
		{"zero weight", recipeWith(func(r map[string]any) { comp(r, 1)["weight"] = 0 }), codes.InvalidArgument, []string{"component 1 (p/b): weight 0"}},
		{"negative weight", recipeWith(func(r map[string]any) { comp(r, 0)["weight"] = -0.5 }), codes.InvalidArgument, []string{"weight -0.5"}},
		{"zero batch", recipeWith(func(r map[string]any) { r["batch_size"] = 0 }), codes.InvalidArgument, []string{"batch_size 0"}},
		{"unknown recipe field", recipeWith(func(r map[string]any) { r["sed"] = 1 }), codes.InvalidArgument, []string{`unknown field "sed"`}},
		{"unknown command field", map[string]any{"recipe": mixRecipe("p"), "world": 2}, codes.InvalidArgument, []string{`unknown field "world"`}},
		{"recipe and run", map[string]any{"recipe": mixRecipe("p"), "run": rec.Run}, codes.InvalidArgument, []string{"not both"}},
		{"world 0", map[string]any{"recipe": mixRecipe("p"), "world_size": 0}, codes.InvalidArgument, []string{"world_size 0"}},
		{"world 3", map[string]any{"recipe": mixRecipe("p"), "world_size": 3}, codes.InvalidArgument, []string{"world_size 3 does not divide batch_size 64"}},
		{"unknown project", recipeWith(func(r map[string]any) { comp(r, 1)["project"] = "nope" }), codes.NotFound, []string{"component 1", "nope"}},
		{"unknown table", recipeWith(func(r map[string]any) { comp(r, 0)["table"] = "nope" }), codes.NotFound, []string{"component 0", "nope"}},
		{"unknown ref", recipeWith(func(r map[string]any) { comp(r, 0)["ref"] = "nope" }), codes.NotFound, []string{"nope"}},
		{"unknown column", recipeWith(func(r map[string]any) { comp(r, 0)["columns"] = []string{"id", "nope"} }), codes.InvalidArgument, []string{`"nope" is not a column`}},
		{"column type", map[string]any{"recipe": map[string]any{"seed": 1, "batch_size": 8, "components": []map[string]any{
			{"project": "p", "table": "a", "columns": []string{"id"}}, {"project": "p", "table": "s"}}}}, codes.InvalidArgument, []string{`component 1 (p/s): column "id" is utf8 there but int64 in component 0`}},
		{"unknown run", map[string]any{"run": bogus, "world_size": 1}, codes.NotFound, []string{"no run 0000"}},
		{"bad run id", map[string]any{"run": "xyz"}, codes.InvalidArgument, []string{`"xyz" must be 64 lowercase hex digits`}},
		{"start step past the end", map[string]any{"run": rec.Run, "start_step": rec.Steps}, codes.InvalidArgument, []string{fmt.Sprintf("start_step %d is not in 0..%d", rec.Steps, rec.Steps-1)}},
		{"negative start step", map[string]any{"run": rec.Run, "start_step": -1}, codes.InvalidArgument, []string{"start_step -1"}},
		{"end step", map[string]any{"run": rec.Run, "start_step": 2, "end_step": 1}, codes.InvalidArgument, []string{"end_step 1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.client.GetFlightInfo(ctxT(t), runDesc(t, tc.cmd))
			requireCode(t, err, tc.code, tc.msg...)
		})
	}
	require.Equal(t, before, snapshot(t, b), "a rejected call changes nothing")

	// A rank ticket altered: rejected.
	tkt := append([]byte(nil), info.Endpoint[1].Ticket.Ticket...)
	tkt[len(tkt)/2] ^= 1
	_, _, err = e.readRank(ctxT(t), &arrowflight.Ticket{Ticket: tkt})
	requireCode(t, err, codes.InvalidArgument, "ticket")
}

// TestRunBigSteps: a step is one message; with wide rows it exceeds gRPC's
// 4 MiB default, which a client raises with MaxCallRecvMsgSize. A client
// that cancels mid-stream leaves nothing allocated on the server.
func TestRunBigSteps(t *testing.T) {
	e := newEnv(t, bucket.NewMem(), envOpts{})
	e.createProject("p")
	e.mustPut("p", "main", "a", 0, 200, 50, 64<<10)
	e.mustPut("p", "main", "b", 0, 200, 50, 64<<10)
	info := e.info(runDesc(t, map[string]any{"recipe": map[string]any{"seed": 1, "batch_size": 96, "components": []map[string]any{
		{"project": "p", "table": "a"}, {"project": "p", "table": "b"}}}, "world_size": 1}))
	_, _, err := e.readRank(ctxT(t), info.Endpoint[0].Ticket)
	requireCode(t, err, codes.ResourceExhausted, "larger than max")

	big := newEnv(t, e.b, envOpts{dial: []grpc.DialOption{grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(64 << 20))}})
	steps, _, err := big.readRank(ctxT(t), info.Endpoint[0].Ticket)
	require.NoError(t, err)
	require.Len(t, steps, 5)

	// Cancel after the first step.
	ctx, cancel := context.WithCancel(ctxT(t))
	stream, err := big.client.DoGet(ctx, info.Endpoint[0].Ticket)
	require.NoError(t, err)
	r, err := arrowflight.NewRecordReader(stream, ipc.WithAllocator(big.cmem))
	require.NoError(t, err)
	require.True(t, r.Next())
	cancel()
	for r.Next() {
	}
	r.Release()
}
