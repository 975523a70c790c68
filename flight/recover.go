package flight

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// recoverStream answers a panic in a handler (every method is served as
// a stream) with Internal and an error id, logging the panic and its stack
// under that id; the server keeps serving. A panic in a goroutine a
// handler started is not covered: those must not panic.
func (s *Service) recoverStream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = s.panicked(ss.Context(), info.FullMethod, p)
		}
	}()
	return handler(srv, ss)
}

func (s *Service) panicked(ctx context.Context, method string, p any) error {
	id := errorID()
	s.log.LogAttrs(ctx, slog.LevelError, "panic in handler", slog.String("method", method), slog.String("error_id", id),
		slog.String("panic", fmt.Sprint(p)), slog.String("stack", string(debug.Stack())))
	return status.Errorf(codes.Internal, "%s: internal server error (error id %s); the server log has the cause", method, id)
}

// hook runs the test hook of method, if any.
func (s *Service) hook(method string) {
	if s.beforeCall != nil {
		s.beforeCall(method)
	}
}
