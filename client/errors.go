package client

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/weftdata/weft/errdefs"
)

// ErrBadResponse: the server answered something this client cannot read
// (a result that is not the documented JSON, a rank stream whose step
// parts are out of order). It is a corrupt reply, not bad input.
var ErrBadResponse = fmt.Errorf("%w: bad response from the server", errdefs.ErrCorrupt)

// Error is an error the server answered: its gRPC status, classified by
// the errdefs kind it wraps (nil for Internal and Unknown).
type Error struct {
	err  error // as gRPC returned it
	st   *status.Status
	kind error
}

func (e *Error) Error() string { return e.err.Error() }

// GRPCStatus is the server's status (status.FromError and status.Code use it).
func (e *Error) GRPCStatus() *status.Status { return e.st }

// Unwrap lets errors.Is see the kind and the original error.
func (e *Error) Unwrap() []error {
	if e.kind == nil {
		return []error{e.err}
	}
	return []error{e.kind, e.err}
}

// kindOf maps a gRPC code to an errdefs kind (or a context error).
//
// TODO(integrator): errdefs/errgrpc.ToNative is the shared version of this
// mapping; swap this function for it once it lands.
func kindOf(c codes.Code) error {
	switch c {
	case codes.InvalidArgument, codes.OutOfRange:
		return errdefs.ErrInvalidArgument
	case codes.NotFound:
		return errdefs.ErrNotFound
	case codes.AlreadyExists:
		return errdefs.ErrAlreadyExists
	case codes.Aborted, codes.FailedPrecondition:
		return errdefs.ErrConflict
	case codes.DataLoss:
		return errdefs.ErrCorrupt
	case codes.Unauthenticated:
		return errdefs.ErrUnauthenticated
	case codes.PermissionDenied:
		return errdefs.ErrPermissionDenied
	case codes.ResourceExhausted:
		return errdefs.ErrResourceExhausted
	case codes.Unavailable:
		return errdefs.ErrUnavailable
	case codes.Unimplemented:
		return errdefs.ErrUnimplemented
	case codes.Canceled:
		return context.Canceled
	case codes.DeadlineExceeded:
		return context.DeadlineExceeded
	}
	return nil
}

// fromWire classifies an error from a gRPC call or stream; errors without
// a gRPC status (local ones) pass unchanged.
func fromWire(err error) error {
	if err == nil {
		return nil
	}
	var ce *Error
	if errors.As(err, &ce) {
		return err
	}
	var se interface{ GRPCStatus() *status.Status }
	if !errors.As(err, &se) || se.GRPCStatus() == nil {
		return err
	}
	st := se.GRPCStatus()
	return &Error{err: err, st: st, kind: kindOf(st.Code())}
}
