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
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"

	"github.com/weftdata/weft/bucket"
	"github.com/weftdata/weft/client"
	"github.com/weftdata/weft/errdefs"
	"github.com/weftdata/weft/flight"
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

// readRank streams a rank with the Weft client, checking that every row's
// id is its _row (the test tables number their rows).
func (e *env) readRank(ctx context.Context, ep client.RankEndpoint) ([]rankStep, error) {
	var out []rankStep
	for st, err := range e.c.ReadRank(ctx, ep) {
		if err != nil {
			return out, err
		}
		rec := st.Batch
		s := rankStep{run: st.Run, step: st.Step}
		sc := rec.Schema()
		s.comps = append(s.comps, rec.Column(sc.FieldIndices(mix.ComponentColumn)[0]).(*array.Int32).Int32Values()...)
		s.rows = append(s.rows, rec.Column(sc.FieldIndices(mix.RowColumn)[0]).(*array.Int64).Int64Values()...)
		if idx := sc.FieldIndices("id"); len(idx) == 1 {
			require.Equal(e.t, s.rows, rec.Column(idx[0]).(*array.Int64).Int64Values())
		}
		out = append(out, s)
	}
	return out, nil
}

// plan plans a run with the Weft client.
func (e *env) plan(cmd client.RunCommand) *client.RunPlan {
	e.t.Helper()
	p, err := e.c.PlanRun(ctxT(e.t), cmd)
	require.NoError(e.t, err)
	return p
}

func runDesc(t *testing.T, cmd any) *arrowflight.FlightDescriptor {
	b, err := json.Marshal(cmd)
	require.NoError(t, err)
	return &arrowflight.FlightDescriptor{Type: arrowflight.DescriptorCMD, Cmd: b}
}

func mixRecipe(p string) client.Recipe {
	return client.Recipe{Seed: 2048, BatchSize: 64, Components: []client.Component{
		{Project: p, Table: "a", Weight: 0.3},
		{Project: p, Table: "b", Weight: 0.7},
	}}
}

// mixRecipeMap is mixRecipe as a JSON object, for malformed variants.
func mixRecipeMap(p string) map[string]any {
	return map[string]any{"seed": 2048, "batch_size": 64, "components": []map[string]any{
		{"project": p, "table": "a", "weight": 0.3},
		{"project": p, "table": "b", "weight": 0.7},
	}}
}

func world(w int) *int { return &w }

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

			plan, err := e.c.Resolve(ctxT(t), mixRecipe("p"), 1)
			require.NoError(t, err)
			rec := plan.Record
			require.Len(t, rec.Run, 64)
			require.Equal(t, int64((941+2100+63)/64), rec.Steps)
			require.Equal(t, int64(941), rec.Components[0].Rows)
			require.Equal(t, "main", rec.Components[0].Ref)
			require.Len(t, rec.Components[1].Commit, 64)
			require.Equal(t, rec.Steps*64, plan.Rows)
			require.Len(t, plan.Ranks, 1)
			require.Equal(t, []string{"id", "name", "blob", "emb", mix.ComponentColumn, mix.RowColumn}, fieldNames(plan.Schema))

			w1, err := e.readRank(ctxT(t), plan.Ranks[0])
			require.NoError(t, err)
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
				again, err := srv.c.Resolve(ctxT(t), mixRecipe("p"), w)
				require.NoError(t, err)
				require.Equal(t, rec.Run, again.Record.Run, "the same recipe at the same commits is the same run")
				require.Len(t, again.Ranks, w)
				for r, ep := range again.Ranks {
					require.Equal(t, r, ep.Rank)
					require.Equal(t, w, ep.WorldSize)
					steps, err := srv.readRank(ctxT(t), ep)
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
			resumed, err := e2.c.Resume(ctxT(t), rec.Run, 8, 17)
			require.NoError(t, err)
			require.Equal(t, (rec.Steps-17)*64, resumed.Rows)
			for r, ep := range resumed.Ranks {
				steps, err := e2.readRank(ctxT(t), ep)
				require.NoError(t, err)
				require.Equal(t, int64(17), steps[0].step)
				for k, st := range steps {
					for i := range st.rows {
						require.Equal(t, w1[17+k].rows[r+i*8], st.rows[i])
					}
				}
			}
			// An end step, and a 16-digit prefix of the run id.
			ended := e.plan(client.RunCommand{Run: rec.Run[:16], WorldSize: world(2), StartStep: 3, EndStep: 5})
			require.Equal(t, rec.Run, ended.Record.Run)
			steps, err := e.readRank(ctxT(t), ended.Ranks[1])
			require.NoError(t, err)
			require.Len(t, steps, 2)
			require.Equal(t, int64(4), steps[1].step)

			// Appending mid-run changes nothing in the run; resolving again
			// makes a new run.
			e.mustPut("p", "main", "a", 941, 100, 100, 16)
			after, err := e.readRank(ctxT(t), e.plan(client.RunCommand{Run: rec.Run}).Ranks[0])
			require.NoError(t, err)
			require.Equal(t, w1, after)
			next, err := e.c.Resolve(ctxT(t), mixRecipe("p"), 1)
			require.NoError(t, err)
			require.NotEqual(t, rec.Run, next.Record.Run)
			require.Equal(t, int64(1041), next.Record.Components[0].Rows)
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

	plan, err := e.c.Resolve(ctxT(t), mixRecipe("p"), 4)
	require.NoError(t, err)
	rec := plan.Record
	before := snapshot(t, b)

	recipeWith := func(edit func(r map[string]any)) map[string]any {
		r := mixRecipeMap("p")
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
		{"unknown command field", map[string]any{"recipe": mixRecipeMap("p"), "world": 2}, codes.InvalidArgument, []string{`unknown field "world"`}},
		{"recipe and run", map[string]any{"recipe": mixRecipeMap("p"), "run": rec.Run}, codes.InvalidArgument, []string{"not both"}},
		{"world 0", map[string]any{"recipe": mixRecipeMap("p"), "world_size": 0}, codes.InvalidArgument, []string{"world_size 0"}},
		{"world 3", map[string]any{"recipe": mixRecipeMap("p"), "world_size": 3}, codes.InvalidArgument, []string{"world_size 3 does not divide batch_size 64"}},
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
	tkt := append([]byte(nil), plan.Ranks[1].Ticket...)
	tkt[len(tkt)/2] ^= 1
	_, err = e.readRank(ctxT(t), client.RankEndpoint{Ticket: tkt})
	requireCode(t, err, codes.InvalidArgument, "ticket")
	require.ErrorIs(t, err, errdefs.ErrInvalidArgument)
}

// TestRunBigSteps: a step of 64 rows of 1 MiB (64 MiB) reaches a client
// with gRPC's default 4 MiB receive limit as several messages, reassembled
// exactly; a client that cancels mid-stream leaves nothing allocated on the
// server.
func TestRunBigSteps(t *testing.T) {
	if testing.Short() {
		t.Skip("streams 256 MiB: skipped with -short")
	}
	e := newEnv(t, bucket.NewMem(), envOpts{tables: func(o *tables.Options) { o.RowGroupRows = 32 }})
	e.createProject("p")
	const blob = 1<<20 + 17
	e.mustPut("p", "main", "a", 0, 128, 16, blob)
	plan, err := e.c.Resolve(ctxT(t), client.Recipe{Seed: 1, BatchSize: 64, Components: []client.Component{{Project: "p", Table: "a"}}}, 1)
	require.NoError(t, err)
	require.EqualValues(t, 2, plan.Record.Steps)

	seen := map[int64]bool{}
	for st, err := range e.c.ReadRank(ctxT(t), plan.Ranks[0]) {
		require.NoError(t, err)
		rec := st.Batch
		require.EqualValues(t, 64, rec.NumRows())
		require.Greater(t, st.Messages, 16, "a 64 MiB step in messages of at most 3 MiB")
		ids := rec.Column(0).(*array.Int64)
		blobs := rec.Column(2).(*array.Binary)
		rows := rec.Column(rec.Schema().FieldIndices(mix.RowColumn)[0]).(*array.Int64)
		for i := range ids.Len() {
			id := ids.Value(i)
			require.Equal(t, rows.Value(i), id)
			require.False(t, seen[id], "row %d twice", id)
			seen[id] = true
			v := blobs.Value(i)
			require.Len(t, v, blob)
			for k := 0; k < len(v); k += 4099 {
				require.Equal(t, byte(id)^byte(k), v[k], "row %d byte %d", id, k)
			}
		}
	}
	require.Len(t, seen, 128, "every row once")

	// The same steps as their parts, uncopied: the same rows in the same
	// order, one batch per message.
	var joined, parted []int64
	for st, err := range e.c.ReadRank(ctxT(t), plan.Ranks[0]) {
		require.NoError(t, err)
		require.Nil(t, st.Parts)
		joined = append(joined, st.Batch.Column(0).(*array.Int64).Int64Values()...)
	}
	for st, err := range e.c.ReadRankParts(ctxT(t), plan.Ranks[0]) {
		require.NoError(t, err)
		require.Nil(t, st.Batch)
		require.Len(t, st.Parts, st.Messages)
		require.EqualValues(t, 64, st.Rows())
		for _, p := range st.Parts {
			parted = append(parted, p.Column(0).(*array.Int64).Int64Values()...)
		}
	}
	require.Equal(t, joined, parted)

	// Cancel after the first step.
	ctx, cancel := context.WithCancel(ctxT(t))
	for _, err := range e.c.ReadRank(ctx, plan.Ranks[0]) {
		require.NoError(t, err)
		cancel()
		break
	}
	cancel()
}

// TestStepMessages: steps under StepMessageBytes stay one message with
// the old metadata {"run","step"}; bigger ones are parts in order.
func TestStepMessages(t *testing.T) {
	e := newEnv(t, bucket.NewMem(), envOpts{flight: func(o *flight.Options) { o.StepMessageBytes = 4 << 10 }})
	e.createProject("p")
	e.mustPut("p", "main", "a", 0, 100, 100, 1000)
	e.mustPut("p", "main", "b", 0, 100, 100, 10)
	for _, tc := range []struct {
		table string
		parts bool
	}{{"a", true}, {"b", false}} {
		t.Run(tc.table, func(t *testing.T) {
			plan, err := e.c.Resolve(ctxT(t), client.Recipe{Seed: 1, BatchSize: 20, Components: []client.Component{{Project: "p", Table: tc.table}}}, 1)
			require.NoError(t, err)
			stream, err := e.client.DoGet(ctxT(t), &arrowflight.Ticket{Ticket: plan.Ranks[0].Ticket})
			require.NoError(t, err)
			r, err := arrowflight.NewRecordReader(stream, ipc.WithAllocator(e.cmem))
			require.NoError(t, err)
			defer r.Release()
			var metas []string
			for r.Next() {
				metas = append(metas, string(r.LatestAppMetadata()))
			}
			require.NoError(t, r.Err())
			run := plan.Record.Run
			if !tc.parts {
				require.Len(t, metas, 5)
				require.Equal(t, fmt.Sprintf(`{"run":%q,"step":0}`, run), metas[0])
				return
			}
			require.Greater(t, len(metas), 5)
			require.Regexp(t, fmt.Sprintf(`^\{"run":%q,"step":0,"part":0,"parts":[0-9]+\}$`, run), metas[0])
			steps, err := e.readRank(ctxT(t), plan.Ranks[0])
			require.NoError(t, err)
			require.Len(t, steps, 5)
		})
	}
}
