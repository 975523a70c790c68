package flight

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow/array"
	arrowflight "github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"google.golang.org/grpc/status"

	"github.com/weftdata/weft/versions"
)

type putResult struct {
	Commit versions.CommitID `json:"commit"`
	Rows   int64             `json:"rows"`
}

// DoPut appends every batch of the stream to the table its path descriptor
// [project, branch, table] names, as one commit, and answers one PutResult
// with app_metadata {"commit","rows"}. Nothing is committed unless the
// client ends its stream normally and every batch was stored.
func (s *Service) DoPut(stream arrowflight.FlightService_DoPutServer) error {
	ctx := stream.Context()
	err := func() error {
		r, err := arrowflight.NewRecordReader(stream, ipc.WithAllocator(s.mem))
		if err != nil {
			return putStreamError(err)
		}
		defer r.Release()
		// Read the descriptor now: the reader forgets it at the stream's end.
		d := r.LatestFlightDescriptor()
		p, b, t, err := parsePutDescriptor(d)
		if err != nil {
			return err
		}
		res, err := s.tables.Append(ctx, p, b, t, putReader{r}, "")
		if err != nil {
			return err
		}
		meta, err := json.Marshal(putResult{Commit: res.Commit.ID, Rows: res.Rows})
		if err != nil {
			return err
		}
		s.log.DebugContext(ctx, "put committed", "project", p, "branch", b, "table", t, "commit", res.Commit.ID, "rows", res.Rows)
		return stream.Send(&arrowflight.PutResult{AppMetadata: meta})
	}()
	return s.status(ctx, "DoPut", err)
}

func parsePutDescriptor(d *arrowflight.FlightDescriptor) (versions.ProjectName, versions.BranchName, versions.TableName, error) {
	if d == nil || d.GetType() != arrowflight.DescriptorPATH {
		return "", "", "", fmt.Errorf("%w: DoPut needs a path descriptor [project, branch, table]", ErrBadRequest)
	}
	path := d.GetPath()
	if len(path) != 3 {
		return "", "", "", fmt.Errorf("%w: DoPut path %q has %d parts; want [project, branch, table]", ErrBadRequest, path, len(path))
	}
	p, err := versions.ParseProjectName(path[0])
	if err != nil {
		return "", "", "", err
	}
	b, err := versions.ParseBranchName(path[1])
	if err != nil {
		return "", "", "", err
	}
	t, err := versions.ParseTableName(path[2])
	if err != nil {
		return "", "", "", err
	}
	return p, b, t, nil
}

// putReader is the client's stream as the record reader tables.Append
// consumes. It classifies stream errors: transport statuses (the client
// cancelled, a message over the size limit) keep their code; anything else
// is a malformed stream, which is the client's fault.
type putReader struct{ *arrowflight.Reader }

var _ array.RecordReader = putReader{}

func (r putReader) Err() error { return putStreamError(r.Reader.Err()) }

func putStreamError(err error) error {
	var se interface{ GRPCStatus() *status.Status }
	switch {
	case err == nil:
		return nil
	case errors.Is(err, io.EOF):
		return fmt.Errorf("%w: DoPut stream ended before its schema; send a schema and at least one batch", ErrBadRequest)
	case errors.As(err, &se):
		return err
	}
	return fmt.Errorf("%w: DoPut stream is not a valid Arrow IPC stream: %w", ErrBadRequest, err)
}
