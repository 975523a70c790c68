package auth

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/weftdata/weft/errdefs"
)

// MetadataKey is the gRPC metadata key of the bearer token ("authorization:
// Bearer weft_…"). pyarrow.flight sends it with
// FlightCallOptions(headers=[(b"authorization", b"Bearer weft_…")]).
const MetadataKey = "authorization"

// InterceptorOptions configure the gRPC interceptors.
type InterceptorOptions struct {
	// Authenticator checks tokens: a *Store, or Open{} for the loopback
	// development mode. Required.
	Authenticator Authenticator
	// ToStatus turns an error of Authenticator into the gRPC status error
	// the client gets; nil uses DefaultToStatus. The Flight layer passes
	// its one error mapping here.
	ToStatus func(error) error
	// Skip lists full method names ("/arrow.flight.protocol.FlightService/Handshake")
	// that run without a principal.
	Skip []string
}

// DefaultToStatus maps errdefs kinds to gRPC codes for the interceptors:
// Unauthenticated, PermissionDenied, else Unavailable (the token store
// could not be read) with the message.
func DefaultToStatus(err error) error {
	switch {
	case errors.Is(err, errdefs.ErrUnauthenticated):
		return status.Error(codes.Unauthenticated, err.Error())
	case errors.Is(err, errdefs.ErrPermissionDenied):
		return status.Error(codes.PermissionDenied, err.Error())
	case errors.Is(err, context.Canceled):
		return status.Error(codes.Canceled, err.Error())
	case errors.Is(err, context.DeadlineExceeded):
		return status.Error(codes.DeadlineExceeded, err.Error())
	}
	return status.Error(codes.Unavailable, fmt.Sprintf("checking the token failed: %v", err))
}

// Interceptors authenticate every gRPC call before its handler runs and
// put the Principal into the handler's context (FromContext). Handlers
// then call Require(ctx, project, scope) for each project they touch.
type Interceptors struct {
	opts InterceptorOptions
	skip map[string]bool
}

// NewInterceptors checks opts and returns the interceptors.
func NewInterceptors(opts InterceptorOptions) (*Interceptors, error) {
	if opts.Authenticator == nil {
		return nil, fmt.Errorf("%w: the auth interceptors need an Authenticator (a token Store, or auth.Open{} on loopback)", ErrInvalid)
	}
	if opts.ToStatus == nil {
		opts.ToStatus = DefaultToStatus
	}
	skip := make(map[string]bool, len(opts.Skip))
	for _, m := range opts.Skip {
		skip[m] = true
	}
	return &Interceptors{opts: opts, skip: skip}, nil
}

// ServerOptions are both interceptors as grpc.ServerOptions, to chain
// after recovery and before logging.
func (i *Interceptors) ServerOptions() []grpc.ServerOption {
	return []grpc.ServerOption{grpc.ChainUnaryInterceptor(i.Unary), grpc.ChainStreamInterceptor(i.Stream)}
}

// authenticate reads the token from ctx's incoming metadata.
func (i *Interceptors) authenticate(ctx context.Context) (context.Context, error) {
	var bearer string
	if md, ok := metadata.FromIncomingContext(ctx); ok {
		vals := md.Get(MetadataKey)
		if len(vals) > 1 {
			return nil, i.opts.ToStatus(fmt.Errorf("%w: %d authorization headers; send one", ErrBadToken, len(vals)))
		}
		if len(vals) == 1 {
			tok, err := ParseBearer(vals[0])
			if err != nil {
				return nil, i.opts.ToStatus(err)
			}
			bearer = tok
		}
	}
	p, err := i.opts.Authenticator.Authenticate(ctx, bearer)
	if err != nil {
		return nil, i.opts.ToStatus(err)
	}
	return NewContext(ctx, p), nil
}

// Unary is the grpc.UnaryServerInterceptor.
func (i *Interceptors) Unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if i.skip[info.FullMethod] {
		return handler(ctx, req)
	}
	ctx, err := i.authenticate(ctx)
	if err != nil {
		return nil, err
	}
	return handler(ctx, req)
}

// Stream is the grpc.StreamServerInterceptor.
func (i *Interceptors) Stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	if i.skip[info.FullMethod] {
		return handler(srv, ss)
	}
	ctx, err := i.authenticate(ss.Context())
	if err != nil {
		return err
	}
	return handler(srv, &principalStream{ServerStream: ss, ctx: ctx})
}

type principalStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *principalStream) Context() context.Context { return s.ctx }

// IsLoopback reports whether a listen address ("127.0.0.1:8815",
// "[::1]:0", "localhost:8815") binds only loopback interfaces: where a
// server may run Open. An empty host (":8815", all interfaces) is not.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}
