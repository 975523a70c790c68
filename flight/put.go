package flight

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/apache/arrow-go/v18/arrow"
	"io"

	"github.com/apache/arrow-go/v18/arrow/array"
	arrowflight "github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"google.golang.org/grpc/status"

	"github.com/weftdata/weft/auth"
	"github.com/weftdata/weft/client"
	"github.com/weftdata/weft/tables"
	"github.com/weftdata/weft/versions"
)

// DoPut with a CMD descriptor {"media": {…}} uploads a media file (see
// putMedia). Otherwise it
// appends every batch of the stream to the table its path descriptor
// [project, branch, table] names, as one commit, and answers one PutResult
// with app_metadata {"commit","rows"} ("replayed": true added on a replay). Nothing is committed
// unless the client ends its stream normally and every batch was stored,
// within Options.PutTimeout.
//
// The first batch's app_metadata may carry {"idempotency_key": K}
// (client.PutMetadata): a put whose key already committed on this table
// and branch commits nothing and answers that commit with "replayed":
// true, so a client whose acknowledgement was lost retries safely.
func (s *Service) DoPut(stream arrowflight.FlightService_DoPutServer) error {
	ctx := stream.Context()
	putCtx, cancel := context.WithTimeout(ctx, s.opts.PutTimeout)
	defer cancel()
	err := func() error {
		release, err := s.slot(ctx, s.lim.puts, "puts", s.opts.MaxPuts, "--max-puts")
		if err != nil {
			return err
		}
		defer release()
		// Room, before anything is received, for one message twice (gRPC
		// receives it whole, and the codec copies its body out once) and
		// for the row group being encoded: the
		// encoder holds its pages (about its Arrow bytes, as noise does
		// not compress) in a buffer that doubles as it grows (mapped and
		// grown in place, so only what is written takes memory:
		// tables.Store.WriteAllocator; on the heap it cost the copies
		// too). It is leased whole, up front: puts that each held part of
		// what they need and waited for the rest would wait for each
		// other.
		lease, err := s.lease(putCtx, s.putCost(), "a DoPut (one message received and decoded, and one row group being encoded)")
		if err != nil {
			return err
		}
		defer lease.Release()
		// The bodies of the messages, a piece of the put each, are
		// unmapped as soon as their batch is stored (putstream.go) where
		// nothing can hold on to their bytes: tables copies what it keeps.
		// They stay on the heap for a batch check (Parts.AppendCheck),
		// which may keep values that alias them (arrow's strings do).
		bodies := s.tables.WriteAllocator()
		r, err := newPutStream(&deadlineStream{FlightService_DoPutServer: stream, ctx: putCtx}, s.mem, ipc.WithAllocator(s.mem))
		if err != nil {
			return putStreamError(err)
		}
		defer r.Release()
		// Read the descriptor now: the reader forgets it at the stream's end.
		d := r.LatestFlightDescriptor()
		if d != nil && d.GetType() == arrowflight.DescriptorCMD {
			r.SetBodyAllocator(bodies) // chunkReader copies the chunks out
			return s.putMedia(putCtx, stream, r, d.GetCmd())
		}
		p, b, t, err := parsePutDescriptor(d)
		if err != nil {
			return err
		}
		if err := allow(ctx, string(p), auth.Write); err != nil {
			return err
		}
		var opts tables.AppendOptions
		if s.appendCheck != nil {
			// From the schema the file is written under: the table's, when
			// it exists, whose field metadata (a video column's weft.kind)
			// the put's schema may lack (schemas are compared without it).
			opts.CheckFor = func(schema *arrow.Schema) (tables.BatchCheck, error) {
				return s.appendCheck(putCtx, p, t, schema)
			}
		}
		if s.appendCheck == nil || !mayCheck(r.Schema()) {
			r.SetBodyAllocator(bodies)
		}
		// The first batch, for its app_metadata; putReader serves it again.
		pr := &putReader{putStream: r, pending: r.Next()}
		if pr.pending {
			if err := s.checkLen("DoPut app_metadata", r.LatestAppMetadata()); err != nil {
				return err
			}
			if opts.IdempotencyKey, err = parsePutMetadata(r.LatestAppMetadata()); err != nil {
				return err
			}
		}
		res, err := s.tables.AppendWith(putCtx, p, b, t, pr, opts)
		if err != nil {
			return err
		}
		meta, err := json.Marshal(client.PutResult{Commit: string(res.Commit.ID), Rows: res.Rows, Replayed: res.Replayed})
		if err != nil {
			return err
		}
		s.log.DebugContext(ctx, "put committed", "project", p, "branch", b, "table", t, "commit", res.Commit.ID, "rows", res.Rows, "replayed", res.Replayed)
		return stream.Send(&arrowflight.PutResult{AppMetadata: meta})
	}()
	if err != nil && ctx.Err() == nil && errors.Is(putCtx.Err(), context.DeadlineExceeded) {
		err = fmt.Errorf("%w: the put ran longer than the server's put timeout (%v) and committed nothing; send less per put (split the data into several appends) or ask the operator to raise --put-timeout", context.DeadlineExceeded, s.opts.PutTimeout)
	}
	return s.status(ctx, "DoPut", err)
}

// parsePutMetadata reads the idempotency key from the app_metadata of a
// put's first batch; none is "".
func parsePutMetadata(meta []byte) (versions.IdempotencyKey, error) {
	if len(meta) == 0 {
		return "", nil
	}
	var pm client.PutMetadata
	if err := decode(ErrBadRequest, "DoPut app_metadata", meta, &pm); err != nil {
		return "", err
	}
	if pm.IdempotencyKey == "" {
		// Absent is no key; present but empty is refused, like any bad key.
		var fields map[string]json.RawMessage
		if json.Unmarshal(meta, &fields) != nil || fields["idempotency_key"] == nil {
			return "", nil
		}
	}
	return versions.ParseIdempotencyKey(pm.IdempotencyKey)
}

func parsePutDescriptor(d *arrowflight.FlightDescriptor) (versions.ProjectName, versions.BranchName, versions.TableName, error) {
	if d == nil || d.GetType() != arrowflight.DescriptorPATH {
		return "", "", "", fmt.Errorf(`%w: DoPut needs a path descriptor [project, branch, table], or a command descriptor {"media": {…}} to upload a media file`, ErrBadRequest)
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
// consumes, its first batch already read (pending). It classifies stream
// errors: transport statuses (the client cancelled, a message over the
// size limit) keep their code; anything else is a malformed stream, which
// is the client's fault.
type putReader struct {
	*putStream
	pending bool // Next has read a batch that the consumer has not seen
}

var _ array.RecordReader = (*putReader)(nil)

func (r *putReader) Next() bool {
	if r.pending {
		r.pending = false
		return true
	}
	return r.putStream.Next()
}

func (r *putReader) Err() error { return putStreamError(r.putStream.Err()) }

func putStreamError(err error) error {
	var se interface{ GRPCStatus() *status.Status }
	switch {
	case err == nil:
		return nil
	case errors.Is(err, io.EOF):
		return fmt.Errorf("%w: DoPut stream ended before its schema; send a schema and at least one batch", ErrBadRequest)
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return err
	case errors.As(err, &se):
		return err
	}
	return fmt.Errorf("%w: DoPut stream is not a valid Arrow IPC stream: %w", ErrBadRequest, err)
}

// deadlineStream is a DoPut stream whose Recv gives up when ctx ends (the
// put timeout): gRPC's own Recv waits for the client for as long as the
// call lives. A Recv abandoned that way finishes in its goroutine once the
// handler returns and gRPC ends the call; no Recv starts after ctx ended,
// so two never run at once.
type deadlineStream struct {
	arrowflight.FlightService_DoPutServer
	ctx context.Context
}

type recvResult struct {
	data *arrowflight.FlightData
	err  error
}

func (s *deadlineStream) Recv() (*arrowflight.FlightData, error) {
	if err := s.ctx.Err(); err != nil {
		return nil, err
	}
	ch := make(chan recvResult, 1)
	go func() {
		d, err := s.FlightService_DoPutServer.Recv()
		ch <- recvResult{d, err}
	}()
	select {
	case r := <-ch:
		return r.data, r.err
	case <-s.ctx.Done():
		return nil, s.ctx.Err()
	}
}

// mayCheck reports whether an append check may keep values of a put with
// this schema: whether it has a struct column, which a table's video
// column is (with weft.kind in the table's field metadata, which the put's
// may lack). Such a put's bodies stay on the Go heap.
func mayCheck(schema *arrow.Schema) bool {
	for _, f := range schema.Fields() {
		if f.Type.ID() == arrow.STRUCT {
			return true
		}
	}
	return false
}
