package flight

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	arrowflight "github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"

	"github.com/weftdata/weft/auth"
	"github.com/weftdata/weft/client"
	"github.com/weftdata/weft/mix"
	"github.com/weftdata/weft/versions"
)

// resolveRun prepares a recipe's run (pinned, laid out, its id computed;
// nothing stored: runInfo stores the record once every check has passed,
// and GetSchema never does) or loads a run by its id or a unique prefix of
// it. A recipe needs read access to every component's project, checked
// before anything is resolved; a run the token may not read (every project
// of its components) is answered as if it did not exist, and a prefix is
// looked up only among the projects the token may read.
func (s *Service) resolveRun(ctx context.Context, r *client.RunCommand) (*mix.Run, error) {
	if err := r.Validate(); err != nil { // Decode checked it; callers may build commands too
		return nil, kindError{kind: ErrBadRequest, err: err}
	}
	if r.Recipe != nil {
		if err := requireRecipe(ctx, r.Recipe); err != nil {
			return nil, err
		}
		return s.mix.Prepare(ctx, mix.NewRecipe(r.Recipe))
	}
	p, _ := auth.FromContext(ctx)
	id, err := s.mix.FindRunIn(ctx, r.Run, func(project versions.ProjectName) bool { return p.Can(string(project), auth.Read) })
	if err != nil {
		return nil, err
	}
	run, err := s.mix.Load(ctx, id, "")
	if err != nil {
		return nil, err
	}
	if !canReadRun(ctx, run) {
		return nil, runNotFound(r.Run)
	}
	return run, nil
}

// planRun resolves a run command (resolveRun) and checks all of it
// against the run: world size (the server's limit, and that it divides the
// batch size), the step range, the step's size. It returns the run and the
// end step. GetFlightInfo and GetSchema both call it, so that a command one
// refuses the other refuses too; neither stores anything here.
func (s *Service) planRun(ctx context.Context, r *client.RunCommand) (*mix.Run, int64, error) {
	world := r.World()
	if err := s.checkWorldSize(world); err != nil {
		return nil, 0, err
	}
	run, err := s.resolveRun(ctx, r)
	if err != nil {
		return nil, 0, err
	}
	if err := run.CheckWorld(world); err != nil {
		return nil, 0, err
	}
	end := r.EndStep
	if end == 0 {
		end = run.Steps()
	}
	if err := run.CheckSteps(r.StartStep, end); err != nil {
		return nil, 0, err
	}
	rowBytes, err := s.runRowBytes(ctx, run)
	if err != nil {
		return nil, 0, err
	}
	if err := s.checkStep(run.BatchSize(), world, rowBytes); err != nil {
		return nil, 0, err
	}
	return run, end, nil
}

// rankTicket names rank Rank of World of a run, steps [Start, End).
type rankTicket struct {
	Run     mix.RunID            `json:"run"`
	Project versions.ProjectName `json:"p"` // where the run record is stored
	// Reads lists the projects of the run's components other than
	// Project: DoGet requires read on Project and on each.
	Reads []versions.ProjectName `json:"ps,omitempty"`
	Rank  int                    `json:"r"`
	World int                    `json:"w"`
	Start int64                  `json:"s0"`
	End   int64                  `json:"s1"`
}

// projects are the projects a rank ticket reads.
func (rt *rankTicket) projects() []string {
	out := []string{string(rt.Project)}
	for _, p := range rt.Reads {
		out = append(out, string(p))
	}
	return out
}

func decodeRankTicket(payload []byte) (*rankTicket, error) {
	var rt rankTicket
	if err := decode(ErrBadTicket, "rank ticket payload", payload, &rt); err != nil {
		return nil, err
	}
	if _, err := mix.ParseRunID(string(rt.Run)); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadTicket, err)
	}
	for _, p := range rt.projects() {
		if _, err := versions.ParseProjectName(p); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrBadTicket, err)
		}
	}
	if rt.World < 1 || rt.Rank < 0 || rt.Rank >= rt.World || rt.Start < 0 || rt.End <= rt.Start {
		return nil, fmt.Errorf("%w: rank ticket names rank %d of %d, steps [%d, %d)", ErrBadTicket, rt.Rank, rt.World, rt.Start, rt.End)
	}
	return &rt, nil
}

// runInfo answers a run command: the run's schema, one endpoint per rank
// (endpoint r is rank r), and the run record as app_metadata.
func (s *Service) runInfo(ctx context.Context, d *arrowflight.FlightDescriptor, r *client.RunCommand) (*arrowflight.FlightInfo, error) {
	world := r.World()
	run, end, err := s.planRun(ctx, r)
	if err != nil {
		return nil, err
	}
	info := &arrowflight.FlightInfo{
		Schema:           arrowflight.SerializeSchema(run.Schema(), s.mem),
		FlightDescriptor: d,
		TotalRecords:     (end - r.StartStep) * int64(run.BatchSize()),
		TotalBytes:       -1,
		AppMetadata:      run.JSON(),
	}
	projects := runProjects(run)
	reads := make([]versions.ProjectName, 0, len(projects)-1)
	for _, p := range projects[1:] {
		reads = append(reads, versions.ProjectName(p))
	}
	for rank := range world {
		tkt, err := s.encodeTicket(ctx, kindRank, rankTicket{Run: run.ID(), Project: versions.ProjectName(projects[0]), Reads: reads, Rank: rank, World: world, Start: r.StartStep, End: end})
		if err != nil {
			return nil, err
		}
		meta, err := json.Marshal(client.RankMetadata{Run: string(run.ID()), Rank: rank, WorldSize: world, StartStep: r.StartStep, EndStep: end})
		if err != nil {
			return nil, err
		}
		info.Endpoint = append(info.Endpoint, &arrowflight.FlightEndpoint{Ticket: &arrowflight.Ticket{Ticket: tkt}, Location: s.locations(rank), AppMetadata: meta})
	}
	if err := s.checkReply(info); err != nil {
		return nil, fmt.Errorf("%w; plan fewer ranks (world_size)", err)
	}
	if r.Recipe != nil {
		// Every check passed: a client is planning this run. Store its
		// record (or find it stored, perhaps with other refs as given).
		if run, err = s.mix.Store(ctx, run); err != nil {
			return nil, err
		}
		info.AppMetadata = run.JSON()
	}
	return info, nil
}

// doGetRank streams a rank's steps: one record batch per step, with
// app_metadata {"run","step"}, or, for a step over StepMessageBytes,
// several zero-copy slices of it with {"run","step","part","parts"}.
func (s *Service) doGetRank(ctx context.Context, rt *rankTicket, stream arrowflight.FlightService_DoGetServer) error {
	return s.serveRank(ctx, rt, func(run *mix.Run, _ int64) (rankSink, error) {
		return s.newPlainSink(stream, run), nil
	})
}

// rankSink sends a rank stream's steps: as DoGet does (plainSink) or in
// host slots (exchange.go). close ends the sending; serveRank calls it once.
type rankSink interface {
	send(ctx context.Context, run mix.RunID, step int64, batch arrow.RecordBatch) error
	close() error
}

// serveRank is a rank stream, whatever carries it: it checks the ticket's
// run against its record, leases the stream's memory, opens the sink
// (given the run and its estimated step bytes) and sends each step to it.
// DoGet and DoExchange share it, so both refuse and serve alike.
func (s *Service) serveRank(ctx context.Context, rt *rankTicket, open func(run *mix.Run, stepBytes int64) (rankSink, error)) (err error) {
	run, err := s.mix.Load(ctx, rt.Run, rt.Project)
	if err != nil {
		return err
	}
	if !canReadRun(ctx, run) { // the ticket named them all; checked again against the record
		return fmt.Errorf("%w: the ticket's run reads projects %q; get a ticket for a run your token may read", auth.ErrDenied, runProjects(run))
	}
	if err := run.CheckStream(rt.Rank, rt.World, rt.Start, rt.End); err != nil {
		return fmt.Errorf("%w: %w", ErrBadTicket, err)
	}
	// Lease what the stream will hold (its steps and pinned blocks) for as
	// long as it runs: a reader that stops reading costs its own stream's
	// worth, counted against --memory-limit.
	rowBytes, err := s.runRowBytes(ctx, run)
	if err != nil {
		return err
	}
	if err := s.checkStep(run.BatchSize(), rt.World, rowBytes); err != nil {
		return err
	}
	step, _, cost := s.streamCost(rowBytes, int64(run.BatchSize()/rt.World))
	lease, err := s.lease(ctx, cost, fmt.Sprintf("rank stream %d/%d of run %s", rt.Rank, rt.World, run.ID().Short()))
	if err != nil {
		return err
	}
	defer lease.Release()
	sink, err := open(run, step)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := sink.close(); err == nil && cerr != nil {
			err = fmt.Errorf("finish stream: %w", cerr)
		}
	}()
	sm, _ := sink.(mix.StepMemory) // host slots: steps gathered into the slot
	for st, err := range s.mix.StepsInto(ctx, run, rt.Rank, rt.World, rt.Start, rt.End, sm) {
		if err != nil {
			return err
		}
		werr := sink.send(ctx, run.ID(), st.Step, st.Batch)
		st.Batch.Release()
		if werr != nil {
			return fmt.Errorf("send step %d: %w", st.Step, werr)
		}
	}
	return nil
}

// plainSink sends steps as record batch messages (sendStep).
type plainSink struct {
	s *Service
	w *arrowflight.Writer
}

func (s *Service) newPlainSink(stream arrowflight.DataStreamWriter, run *mix.Run) *plainSink {
	return &plainSink{s: s, w: arrowflight.NewRecordWriter(stream, ipc.WithSchema(run.Schema()), ipc.WithAllocator(s.mem))}
}

func (p *plainSink) send(_ context.Context, run mix.RunID, step int64, batch arrow.RecordBatch) error {
	return p.s.sendStep(p.w, run, step, batch)
}

func (p *plainSink) close() error { return p.w.Close() }

// sendStep writes one step as one message, or as consecutive slices of
// at most StepMessageBytes each (whole rows: a row larger than that is a
// message of its own).
func (s *Service) sendStep(w *arrowflight.Writer, run mix.RunID, step int64, batch arrow.RecordBatch) error {
	ranges := sliceRanges(batch, s.opts.StepMessageBytes)
	if len(ranges) <= 1 {
		meta, err := json.Marshal(client.StepMetadata{Run: string(run), Step: step})
		if err != nil {
			return err
		}
		return w.WriteWithAppMetadata(batch, meta)
	}
	for i, r := range ranges {
		meta, err := json.Marshal(client.StepMetadata{Run: string(run), Step: step, Part: i, Parts: len(ranges)})
		if err != nil {
			return err
		}
		part := batch.NewSlice(r[0], r[1])
		err = w.WriteWithAppMetadata(part, meta)
		part.Release()
		if err != nil {
			return err
		}
	}
	return nil
}
