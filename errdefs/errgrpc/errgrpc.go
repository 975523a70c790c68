// Package errgrpc maps Weft's error kinds (package errdefs) to gRPC status
// codes and back. It is the one place where a kind becomes a code: the
// Flight server calls ToGRPC on every error it returns, and the Go client
// calls ToNative on every error it receives, so that errors.Is(err,
// errdefs.ErrNotFound) holds on both sides of the wire (containerd's
// errdefs/pkg/errgrpc is the model).
//
// Every status message is capped at MaxMessageBytes: gRPC carries the
// message in a header, and peers drop or reset a stream whose headers are
// too large, so a long message would arrive as a transport error instead of
// itself.
package errgrpc

import (
	"context"
	"errors"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/weftdata/weft/errdefs"
)

// MaxMessageBytes caps the message of every status ToGRPC makes.
const MaxMessageBytes = 1024

// Code returns the gRPC code for err: OK for nil, Canceled and
// DeadlineExceeded for the context errors, the code of err's kind, the code
// of a gRPC status err carries (a transport error met while reading a
// client's stream), and Internal for anything else.
func Code(err error) codes.Code {
	var se interface{ GRPCStatus() *status.Status }
	switch {
	case err == nil:
		return codes.OK
	case errors.Is(err, context.Canceled):
		return codes.Canceled
	case errors.Is(err, context.DeadlineExceeded):
		return codes.DeadlineExceeded
	}
	if k := errdefs.Kind(err); k != nil {
		return kindCode[k]
	}
	if errors.As(err, &se) {
		if st := se.GRPCStatus(); st != nil {
			return st.Code()
		}
	}
	return codes.Internal
}

var kindCode = map[error]codes.Code{
	errdefs.ErrInvalidArgument:    codes.InvalidArgument,
	errdefs.ErrNotFound:           codes.NotFound,
	errdefs.ErrAlreadyExists:      codes.AlreadyExists,
	errdefs.ErrConflict:           codes.Aborted,
	errdefs.ErrCorrupt:            codes.Internal,
	errdefs.ErrFailedPrecondition: codes.FailedPrecondition,
	errdefs.ErrUnauthenticated:    codes.Unauthenticated,
	errdefs.ErrPermissionDenied:   codes.PermissionDenied,
	errdefs.ErrResourceExhausted:  codes.ResourceExhausted,
	errdefs.ErrUnavailable:        codes.Unavailable,
	errdefs.ErrUnimplemented:      codes.Unimplemented,
}

// codeKind is the inverse of kindCode, less Internal: a client cannot tell
// corrupt data from any other fault inside the server.
var codeKind = map[codes.Code]error{
	codes.InvalidArgument:    errdefs.ErrInvalidArgument,
	codes.NotFound:           errdefs.ErrNotFound,
	codes.AlreadyExists:      errdefs.ErrAlreadyExists,
	codes.Aborted:            errdefs.ErrConflict,
	codes.DataLoss:           errdefs.ErrCorrupt,
	codes.FailedPrecondition: errdefs.ErrFailedPrecondition,
	codes.Unauthenticated:    errdefs.ErrUnauthenticated,
	codes.PermissionDenied:   errdefs.ErrPermissionDenied,
	codes.ResourceExhausted:  errdefs.ErrResourceExhausted,
	codes.Unavailable:        errdefs.ErrUnavailable,
	codes.Unimplemented:      errdefs.ErrUnimplemented,
	codes.Canceled:           context.Canceled,
	codes.DeadlineExceeded:   context.DeadlineExceeded,
}

// ToGRPC returns a gRPC status error for err (nil for nil) with the code
// Code gives and err's message capped at MaxMessageBytes. An error that is
// already a bare status keeps its own message.
func ToGRPC(err error) error {
	if err == nil {
		return nil
	}
	c := Code(err)
	msg := err.Error()
	if se, ok := err.(interface{ GRPCStatus() *status.Status }); ok { //nolint:errorlint // a bare status, not a wrapped one
		msg = se.GRPCStatus().Message()
	}
	return status.Error(c, Truncate(msg, MaxMessageBytes))
}

// ToNative turns an error from a gRPC call into one that errors.Is the
// matching kind (context.Canceled and context.DeadlineExceeded for those
// codes) and whose message is the server's. It keeps the status: status.Code
// and status.Convert still work on the result. Errors that carry no status
// are returned unchanged, and so is nil.
func ToNative(err error) error {
	if err == nil {
		return nil
	}
	st, ok := status.FromError(err)
	if !ok {
		return err
	}
	return &remoteError{st: st, kind: Kind(st.Code())}
}

// Kind is the kind ToNative gives an error with code c: an errdefs kind,
// context.Canceled or context.DeadlineExceeded, or nil for codes without
// a kind (Internal, Unknown, …).
func Kind(c codes.Code) error { return codeKind[c] }

// remoteError is a status received from a server, classified by its kind.
type remoteError struct {
	st   *status.Status
	kind error // nil for codes without a kind (Internal, Unknown, ...)
}

func (e *remoteError) Error() string { return e.st.Message() }

func (e *remoteError) Unwrap() error { return e.kind }

func (e *remoteError) GRPCStatus() *status.Status { return e.st }

// Truncate is errdefs.Truncate: s cut to max bytes on a UTF-8 boundary,
// saying how many bytes were dropped.
func Truncate(s string, max int) string { return errdefs.Truncate(s, max) }
