package flight

import (
	"context"
	"encoding/json"
	"fmt"

	arrowflight "github.com/apache/arrow-go/v18/arrow/flight"

	"github.com/weftdata/weft/auth"
	"github.com/weftdata/weft/client"
	"github.com/weftdata/weft/errdefs"
	"github.com/weftdata/weft/importers"
)

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
