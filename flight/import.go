package flight

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	arrowflight "github.com/apache/arrow-go/v18/arrow/flight"

	"github.com/weftdata/weft/auth"
	"github.com/weftdata/weft/client"
	"github.com/weftdata/weft/errdefs"
	"github.com/weftdata/weft/importers"
)

// importUnits names, per format, the option bounding the largest unit it
// holds whole in memory (an MDS shard, compressed and decompressed; a
// WebDataset sample, its members together), and that option's default.
var importUnits = map[string]struct {
	option string
	def    int64
	copies int64
}{
	"mds": {"max_shard_bytes", 1 << 30, 2},
	"wds": {"max_sample_bytes", 1 << 30, 1},
}

// importWriterCost is what an import's writer holds: a row group being
// filled and one being encoded.
func (s *Service) importWriterCost() int64 { return 2 * s.opts.PutBufferBytes }

// importHeld is what a server-side import holds whole at once, beyond the
// writer's buffers. The format's unit option defaults, on this server, to
// at most half of what the memory budget leaves after the writer's buffers
// (set in req.Options, so the import uses it); one asked for over that is
// refused.
func (s *Service) importHeld(req *client.ImportRequest) (int64, error) {
	u, ok := importUnits[req.Format]
	if !ok {
		return 0, nil
	}
	limit := u.def
	if total := s.budget.Stats().Total; total > 0 {
		limit = min(limit, max(total-s.importWriterCost(), 0)/2/u.copies)
		if limit < 1 {
			return 0, fmt.Errorf("%w: this server's --memory-limit leaves no room for an import (its writer alone holds %d bytes)", errdefs.ErrResourceExhausted, s.importWriterCost())
		}
	}
	n := limit
	if v, ok := req.Options[u.option]; ok {
		var err error
		if n, err = strconv.ParseInt(v, 10, 64); err != nil || n < 1 {
			return 0, fmt.Errorf("%w: option %s=%q is not a positive integer", ErrBadRequest, u.option, v)
		}
		if n > limit {
			return 0, fmt.Errorf("%w: option %s=%d is over what this server lets an import hold (%d bytes: half of what --memory-limit's budget leaves after the import's writer)", errdefs.ErrResourceExhausted, u.option, n, limit)
		}
	}
	if req.Options == nil {
		req.Options = map[string]string{}
	}
	req.Options[u.option] = strconv.FormatInt(n, 10)
	return n * u.copies, nil
}

// importAction runs DoAction import: write scope on the project first,
// then the import in this process (the source is read here, the tables
// written to this server's store), sending one Result per progress tick
// and the commit last. A client that goes away cancels the import, which
// then commits nothing.
func (s *Service) importAction(ctx context.Context, body []byte, stream arrowflight.FlightService_DoActionServer) error {
	var req client.ImportRequest
	if err := decode(ErrBadRequest, client.ActionImport, body, &req); err != nil {
		return err
	}
	p, err := parseProject(req.Project)
	if err != nil {
		return err
	}
	if err := allow(ctx, string(p), auth.Write); err != nil {
		return err
	}
	if s.importer == nil {
		return fmt.Errorf("%w: this server has no importer", errdefs.ErrUnimplemented)
	}
	held, err := s.importHeld(&req)
	if err != nil {
		return err
	}
	// An import is a put: it takes a --max-puts slot, and leases what it
	// holds (the writer's buffers, and the format's whole unit) from the
	// memory budget for as long as it runs.
	release, err := s.slot(ctx, s.lim.puts, "puts", s.opts.MaxPuts, "--max-puts")
	if err != nil {
		return err
	}
	defer release()
	lease, err := s.lease(ctx, s.importWriterCost()+held, fmt.Sprintf("an import (%s, holding up to %d bytes at once)", req.Format, held))
	if err != nil {
		return err
	}
	defer lease.Release()
	send := func(ev client.ImportEvent) error {
		b, err := json.Marshal(ev)
		if err != nil {
			return fmt.Errorf("encode result: %w", err)
		}
		return stream.Send(&arrowflight.Result{Body: b})
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var sendErr error
	progress := func(pr importers.Progress, done bool) {
		if sendErr != nil {
			return
		}
		if sendErr = send(client.ImportEvent{Progress: &client.ImportProgress{
			Files: pr.Files, FilesTotal: pr.FilesTotal, Rows: pr.Rows, Bytes: pr.Bytes, BytesTotal: pr.BytesTotal,
			ElapsedSec: pr.Elapsed.Seconds(), BytesPerSec: pr.BytesPerSec, RowsPerSec: pr.RowsPerSec, ETASec: pr.ETA.Seconds(), Done: done,
		}}); sendErr != nil {
			cancel() // the client is gone: stop, commit nothing
		}
	}
	res, err := s.importer.Import(ctx, importers.Request{
		Format: req.Format, Source: req.Source, Project: req.Project, Branch: req.Branch, Table: req.Table, Options: req.Options,
	}, progress)
	if err != nil {
		if sendErr != nil {
			return fmt.Errorf("send import progress: %w", sendErr)
		}
		return err
	}
	rec, err := json.Marshal(res.Record)
	if err != nil {
		return fmt.Errorf("encode import record: %w", err)
	}
	return send(client.ImportEvent{Commit: string(res.Commit.ID), Record: rec})
}
