package client

import (
	"errors"
	"fmt"

	"google.golang.org/grpc/status"

	"github.com/weftdata/weft/errdefs"
	"github.com/weftdata/weft/errdefs/errgrpc"
)

// ErrBadResponse: the server answered something this client cannot read
// (a result that is not the documented JSON, a rank stream whose step
// parts are out of order). It is a corrupt reply, not bad input.
var ErrBadResponse = fmt.Errorf("%w: bad response from the server", errdefs.ErrCorrupt)

// ErrReaderClosed: Read on a ReadMedia reader after Close.
var ErrReaderClosed = fmt.Errorf("%w: reader closed", errdefs.ErrFailedPrecondition)

// Error is an error the server answered: its gRPC status, classified by
// the errdefs kind it wraps (errgrpc.Kind: nil for Internal and Unknown).
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
	return &Error{err: err, st: st, kind: errgrpc.Kind(st.Code())}
}
