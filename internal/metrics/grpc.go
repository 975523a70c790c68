package metrics

import (
	"context"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/stats"
	"google.golang.org/grpc/status"
)

// ServerOptions returns the gRPC server options that count calls, time
// them, track running streams and count message bytes.
//
// The interceptors are installed with grpc.UnaryInterceptor and
// grpc.StreamInterceptor, which gRPC runs before every chained
// interceptor: they see every call that reaches a registered method,
// including calls that authentication refuses and handlers that panic and
// are recovered. (A server can hold one of each; a second panics at
// grpc.NewServer.) Calls to unknown methods never reach interceptors, so
// the method label only takes the server's registered method names.
func (m *Metrics) ServerOptions() []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.UnaryInterceptor(m.UnaryInterceptor),
		grpc.StreamInterceptor(m.StreamInterceptor),
		grpc.StatsHandler(statsHandler{m}),
	}
}

// UnaryInterceptor counts and times unary calls.
func (m *Metrics) UnaryInterceptor(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	start := time.Now()
	resp, err := handler(ctx, req)
	m.observeCall(info.FullMethod, start, err)
	return resp, err
}

// StreamInterceptor counts and times streaming calls and tracks the ones
// running.
func (m *Metrics) StreamInterceptor(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	active := m.grpcActive.WithLabelValues(info.FullMethod)
	active.Inc()
	defer active.Dec()
	start := time.Now()
	err := handler(srv, ss)
	m.observeCall(info.FullMethod, start, err)
	return err
}

func (m *Metrics) observeCall(method string, start time.Time, err error) {
	m.grpcRequests.WithLabelValues(method, status.Code(err).String()).Inc()
	m.grpcDuration.WithLabelValues(method).Observe(time.Since(start).Seconds())
}

// statsHandler counts the wire bytes of every message in and out.
type statsHandler struct{ m *Metrics }

func (h statsHandler) HandleRPC(_ context.Context, s stats.RPCStats) {
	switch s := s.(type) {
	case *stats.InPayload:
		h.m.bytesReceived.Add(float64(s.WireLength))
	case *stats.OutPayload:
		h.m.bytesSent.Add(float64(s.WireLength))
	}
}

func (statsHandler) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context   { return ctx }
func (statsHandler) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context { return ctx }
func (statsHandler) HandleConn(context.Context, stats.ConnStats)                       {}
