package flight

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	arrowflight "github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"

	"github.com/weftdata/weft/mix"
	"github.com/weftdata/weft/versions"
)

// mixRequest is a {"recipe": …} or {"run": …} command: a run, a world size
// and the steps to serve.
type mixRequest struct {
	Recipe    json.RawMessage `json:"recipe"`
	Run       *string         `json:"run"`
	WorldSize *int            `json:"world_size"`
	StartStep int64           `json:"start_step"`
	EndStep   int64           `json:"end_step"`
}

const mixCommands = `{"recipe": {…}, "world_size"?, "start_step"?, "end_step"?} or {"run": ID, "world_size"?, "start_step"?, "end_step"?}`

func parseMixCommand(cmd []byte) (*mixRequest, error) {
	var req mixRequest
	if err := decodeBody("run command", cmd, &req); err != nil {
		return nil, fmt.Errorf("%w; a run command is %s", err, mixCommands)
	}
	switch {
	case req.Recipe != nil && req.Run != nil:
		return nil, fmt.Errorf("%w: a command has \"recipe\" or \"run\", not both", ErrBadRequest)
	case req.WorldSize != nil && *req.WorldSize < 1:
		return nil, fmt.Errorf("%w: world_size %d must be at least 1", mix.ErrWorldSize, *req.WorldSize)
	}
	return &req, nil
}

func (r *mixRequest) world() int {
	if r.WorldSize == nil {
		return 1
	}
	return *r.WorldSize
}

// resolveRun resolves a recipe (storing its run record) or loads a run.
func (s *Service) resolveRun(ctx context.Context, r *mixRequest) (*mix.Run, error) {
	if r.Recipe != nil {
		recipe, err := mix.ParseRecipe(r.Recipe)
		if err != nil {
			return nil, err
		}
		return s.mix.Resolve(ctx, recipe)
	}
	id, err := mix.ParseRunID(*r.Run)
	if err != nil {
		return nil, err
	}
	return s.mix.Load(ctx, id, "")
}

// rankTicket names rank Rank of World of a run, steps [Start, End).
type rankTicket struct {
	Run     mix.RunID            `json:"run"`
	Project versions.ProjectName `json:"p"` // where the run record is stored
	Rank    int                  `json:"r"`
	World   int                  `json:"w"`
	Start   int64                `json:"s0"`
	End     int64                `json:"s1"`
}

func decodeRankTicket(payload []byte) (*rankTicket, error) {
	var rt rankTicket
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rt); err != nil {
		return nil, fmt.Errorf("%w: rank ticket payload: %w", ErrBadTicket, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: rank ticket payload has trailing data", ErrBadTicket)
	}
	if _, err := mix.ParseRunID(string(rt.Run)); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadTicket, err)
	}
	if _, err := versions.ParseProjectName(string(rt.Project)); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadTicket, err)
	}
	if rt.World < 1 || rt.Rank < 0 || rt.Rank >= rt.World || rt.Start < 0 || rt.End <= rt.Start {
		return nil, fmt.Errorf("%w: rank ticket names rank %d of %d, steps [%d, %d)", ErrBadTicket, rt.Rank, rt.World, rt.Start, rt.End)
	}
	return &rt, nil
}

// runInfo answers a run command: the run's schema, one endpoint per rank
// (endpoint r is rank r), and the run record as app_metadata.
func (s *Service) runInfo(ctx context.Context, d *arrowflight.FlightDescriptor, r *mixRequest) (*arrowflight.FlightInfo, error) {
	run, err := s.resolveRun(ctx, r)
	if err != nil {
		return nil, err
	}
	world := r.world()
	if err := run.CheckWorld(world); err != nil {
		return nil, err
	}
	end := r.EndStep
	if end == 0 {
		end = run.Steps()
	}
	if err := run.CheckSteps(r.StartStep, end); err != nil {
		return nil, err
	}
	info := &arrowflight.FlightInfo{
		Schema:           arrowflight.SerializeSchema(run.Schema(), s.mem),
		FlightDescriptor: d,
		TotalRecords:     (end - r.StartStep) * int64(run.BatchSize()),
		TotalBytes:       -1,
		AppMetadata:      run.JSON(),
	}
	project := run.Record().Components[0].Project
	for rank := range world {
		tkt, err := encodeTicket(kindRank, rankTicket{Run: run.ID(), Project: project, Rank: rank, World: world, Start: r.StartStep, End: end})
		if err != nil {
			return nil, err
		}
		meta, err := json.Marshal(struct {
			Run       mix.RunID `json:"run"`
			Rank      int       `json:"rank"`
			WorldSize int       `json:"world_size"`
			StartStep int64     `json:"start_step"`
			EndStep   int64     `json:"end_step"`
		}{run.ID(), rank, world, r.StartStep, end})
		if err != nil {
			return nil, err
		}
		info.Endpoint = append(info.Endpoint, &arrowflight.FlightEndpoint{Ticket: &arrowflight.Ticket{Ticket: tkt}, AppMetadata: meta})
	}
	return info, nil
}

// doGetRank streams a rank's steps: one record batch per step, with
// app_metadata {"run","step"}.
func (s *Service) doGetRank(ctx context.Context, rt *rankTicket, stream arrowflight.FlightService_DoGetServer) (err error) {
	run, err := s.mix.Load(ctx, rt.Run, rt.Project)
	if err != nil {
		return err
	}
	if err := run.CheckStream(rt.Rank, rt.World, rt.Start, rt.End); err != nil {
		return fmt.Errorf("%w: %w", ErrBadTicket, err)
	}
	w := arrowflight.NewRecordWriter(stream, ipc.WithSchema(run.Schema()), ipc.WithAllocator(s.mem))
	defer func() {
		if cerr := w.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("finish stream: %w", cerr)
		}
	}()
	for st, err := range s.mix.Steps(ctx, run, rt.Rank, rt.World, rt.Start, rt.End) {
		if err != nil {
			return err
		}
		meta := fmt.Appendf(nil, `{"run":%q,"step":%d}`, run.ID(), st.Step)
		werr := w.WriteWithAppMetadata(st.Batch, meta)
		st.Batch.Release()
		if werr != nil {
			return fmt.Errorf("send step %d: %w", st.Step, werr)
		}
	}
	return nil
}
