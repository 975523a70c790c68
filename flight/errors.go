package flight

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/weftdata/weft/errdefs"
	"github.com/weftdata/weft/errdefs/errgrpc"
)

// Error kinds of this package, each wrapping an errdefs kind, so that
// errgrpc maps them to gRPC codes like every other package's errors.
var (
	// ErrBadRequest: a request the protocol does not allow (bad JSON, a
	// short path, an unknown action, a bad ticket, a malformed stream).
	ErrBadRequest = fmt.Errorf("%w: bad request", errdefs.ErrInvalidArgument)
	// ErrUnimplemented: a protocol row that is specified but not built yet.
	ErrUnimplemented = errdefs.ErrUnimplemented
	// ErrBadTicket: a ticket that this server did not issue, or that was
	// cut short or altered.
	ErrBadTicket = fmt.Errorf("%w: bad ticket", ErrBadRequest)
	// ErrTooLarge: a request over one of the server's limits by itself
	// (a JSON input, a world size, a step, a reply, a list): it will never
	// be served as it is.
	ErrTooLarge = fmt.Errorf("%w: over a server limit", errdefs.ErrInvalidArgument)
	// ErrBadMedia: an uploaded media file that is not an MP4 this server
	// can index (corrupt, truncated, an unsupported codec). Nothing is
	// stored.
	ErrBadMedia = fmt.Errorf("%w: unusable media", errdefs.ErrInvalidArgument)
	// ErrBusy: the server is at its limit of streams or puts running at
	// once, or of memory; the same call may succeed later.
	ErrBusy = fmt.Errorf("%w: server busy", errdefs.ErrResourceExhausted)
	// ErrUnavailableDelivery: a "cuda-ipc" exchange that started with
	// device slots meets a step it cannot serve so (frames of different
	// sizes in one step, a segment the GPU path cannot decode, no larger
	// ring within --gpu-memory-limit for larger frames, a malformed video
	// window); ask again with delivery "shm".
	ErrUnavailableDelivery = fmt.Errorf("%w: cuda-ipc delivery cannot serve this step", errdefs.ErrFailedPrecondition)
)

// errClientEnded is the cause an exchange with slots is cancelled with
// when its client ends its side before the end message (readReleases;
// setRing, when it ended before the ring was made); never a call's error:
// the call ends with OK.
var errClientEnded = fmt.Errorf("%w: the client ended its side of the exchange before its end", context.Canceled)

// code classifies err; errgrpc.Code is the one mapping from kinds to codes.
func code(err error) codes.Code { return errgrpc.Code(err) }

// status turns the error of call op into the gRPC status the client sees,
// its message capped by errgrpc. Internal errors (no kind: faults inside
// the server; or errdefs.ErrCorrupt: damage to the store) are logged with
// their cause under a fresh error id, and the client gets only the id.
func (s *Service) status(ctx context.Context, op string, err error) error {
	if err == nil {
		return nil
	}
	if code(err) != codes.Internal {
		return errgrpc.ToGRPC(fmt.Errorf("%s: %w", op, err))
	}
	id := errorID()
	s.log.LogAttrs(ctx, slog.LevelError, "internal error", slog.String("op", op), slog.String("error_id", id), slog.Any("err", err))
	return status.Errorf(codes.Internal, "%s: internal server error (error id %s); the server log has the cause", op, id)
}

func errorID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
