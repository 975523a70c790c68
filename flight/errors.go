package flight

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/weftdata/weft/bucket"
	"github.com/weftdata/weft/sampler"
	"github.com/weftdata/weft/tables"
	"github.com/weftdata/weft/versions"
)

// Error kinds of this package, checked with errors.Is and mapped to gRPC
// codes by Service.status.
var (
	// ErrBadRequest: a request the protocol does not allow (bad JSON, a
	// short path, an unknown action, a bad ticket, a malformed stream).
	ErrBadRequest = errors.New("bad request")
	// ErrUnimplemented: a protocol row that is specified but not built yet.
	ErrUnimplemented = errors.New("not implemented yet")
	// ErrBadTicket: a ticket that this server did not issue, or that was
	// cut short or altered.
	ErrBadTicket = fmt.Errorf("%w: bad ticket", ErrBadRequest)
)

// code classifies err. It is the single place where Weft's error kinds
// become gRPC codes; status is its only caller outside the tests.
func code(err error) codes.Code {
	var se interface{ GRPCStatus() *status.Status }
	switch {
	case err == nil:
		return codes.OK
	case errors.Is(err, context.Canceled):
		return codes.Canceled
	case errors.Is(err, context.DeadlineExceeded):
		return codes.DeadlineExceeded
	case authCode(err) != codes.OK: // Unauthenticated, PermissionDenied (authz.go)
		return authCode(err)
	case errors.Is(err, ErrUnimplemented):
		return codes.Unimplemented
	case errors.Is(err, ErrBadRequest),
		errors.Is(err, tables.ErrColumnNotFound), // a bad projection is bad input
		errors.Is(err, versions.ErrInvalid),
		errors.Is(err, sampler.ErrInvalid),
		errors.Is(err, bucket.ErrInvalidKey):
		return codes.InvalidArgument
	case errors.Is(err, versions.ErrManifestNotFound):
		// Clients never name manifests: a commit's missing manifest is
		// damage to the store.
		return codes.Internal
	case errors.Is(err, versions.ErrNotFound):
		return codes.NotFound
	case errors.Is(err, versions.ErrAlreadyExists):
		return codes.AlreadyExists
	case errors.Is(err, versions.ErrConflict):
		return codes.Aborted
	case errors.As(err, &se):
		// A transport status met while reading the client's stream: the
		// client cancelled, or sent a message over the size limit.
		return se.GRPCStatus().Code()
	}
	return codes.Internal
}

// status turns the error of call op into the gRPC status the client sees.
// Internal errors are logged with their cause under a fresh error id, and
// the client gets only the id.
func (s *Service) status(ctx context.Context, op string, err error) error {
	c := code(err)
	switch c {
	case codes.OK:
		return nil
	case codes.Internal:
		id := errorID()
		s.log.LogAttrs(ctx, slog.LevelError, "internal error", slog.String("op", op), slog.String("error_id", id), slog.Any("err", err))
		return status.Errorf(codes.Internal, "%s: internal server error (error id %s); the server log has the cause", op, id)
	}
	return status.Errorf(c, "%s: %v", op, err)
}

func errorID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
