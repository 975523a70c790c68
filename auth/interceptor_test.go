package auth_test

import (
	"context"
	"io"
	"net"
	"testing"

	arrowflight "github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/weftdata/weft/auth"
)

// toyFlight is a Flight service whose handlers check scopes the way Weft's
// will: GetSchema (unary) needs read on the project in the path, DoAction
// (stream) needs write, ListActions (stream) names the caller.
type toyFlight struct {
	arrowflight.BaseFlightServer
}

func (toyFlight) GetSchema(ctx context.Context, d *arrowflight.FlightDescriptor) (*arrowflight.SchemaResult, error) {
	if err := auth.Require(ctx, d.Path[0], auth.Read); err != nil {
		return nil, auth.DefaultToStatus(err)
	}
	return &arrowflight.SchemaResult{}, nil
}

func (toyFlight) DoAction(a *arrowflight.Action, s arrowflight.FlightService_DoActionServer) error {
	if err := auth.Require(s.Context(), string(a.Body), auth.Write); err != nil {
		return auth.DefaultToStatus(err)
	}
	return s.Send(&arrowflight.Result{Body: []byte("done")})
}

func (toyFlight) ListActions(_ *arrowflight.Empty, s arrowflight.FlightService_ListActionsServer) error {
	p, ok := auth.FromContext(s.Context())
	if !ok {
		return status.Error(codes.Internal, "no principal")
	}
	return s.Send(&arrowflight.ActionType{Type: p.Name})
}

// serve starts the toy service on 127.0.0.1 behind the interceptors.
func serve(t *testing.T, a auth.Authenticator) arrowflight.Client {
	t.Helper()
	ic, err := auth.NewInterceptors(auth.InterceptorOptions{Authenticator: a})
	require.NoError(t, err)
	srv := grpc.NewServer(ic.ServerOptions()...)
	arrowflight.RegisterFlightServiceServer(srv, &toyFlight{})
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	return arrowflight.NewClientFromConn(conn, nil)
}

func withToken(ctx context.Context, header string) context.Context {
	if header == "" {
		return ctx
	}
	return metadata.AppendToOutgoingContext(ctx, "authorization", header)
}

func TestInterceptors(t *testing.T) {
	ctx := context.Background()
	b := newFS(t)
	c := newClock()
	reader, _, err := auth.CreateToken(ctx, b, auth.TokenSpec{Name: "reader", Projects: map[string]auth.Scope{"a": auth.Read}}, c.Now())
	require.NoError(t, err)
	writer, _, err := auth.CreateToken(ctx, b, auth.TokenSpec{Name: "writer", Projects: map[string]auth.Scope{"a": auth.Write}}, c.Now())
	require.NoError(t, err)
	root, _, err := auth.CreateToken(ctx, b, auth.TokenSpec{Name: "root", GlobalAdmin: true}, c.Now())
	require.NoError(t, err)
	client := serve(t, newStore(t, b, c))

	unary := func(header, project string) codes.Code {
		_, err := client.GetSchema(withToken(ctx, header), &arrowflight.FlightDescriptor{Type: arrowflight.DescriptorPATH, Path: []string{project}})
		return status.Code(err)
	}
	stream := func(header, project string) codes.Code {
		s, err := client.DoAction(withToken(ctx, header), &arrowflight.Action{Type: "x", Body: []byte(project)})
		if err != nil {
			return status.Code(err)
		}
		for {
			if _, err := s.Recv(); err != nil {
				if err == io.EOF {
					return codes.OK
				}
				return status.Code(err)
			}
		}
	}
	for _, tc := range []struct {
		name, header, project string
		read, write           codes.Code
	}{
		{"no token", "", "a", codes.Unauthenticated, codes.Unauthenticated},
		{"not bearer", "Basic " + reader, "a", codes.Unauthenticated, codes.Unauthenticated},
		{"garbage", "Bearer nope", "a", codes.Unauthenticated, codes.Unauthenticated},
		{"unknown", "Bearer weft_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "a", codes.Unauthenticated, codes.Unauthenticated},
		{"reader", "Bearer " + reader, "a", codes.OK, codes.PermissionDenied},
		{"reader, other project", "Bearer " + reader, "b", codes.PermissionDenied, codes.PermissionDenied},
		{"writer", "bearer " + writer, "a", codes.OK, codes.OK},
		{"writer, other project", "Bearer " + writer, "b", codes.PermissionDenied, codes.PermissionDenied},
		{"global admin", "Bearer " + root, "b", codes.OK, codes.OK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.read, unary(tc.header, tc.project), "unary")
			require.Equal(t, tc.write, stream(tc.header, tc.project), "stream")
		})
	}
	t.Run("principal in the stream's context", func(t *testing.T) {
		s, err := client.ListActions(withToken(ctx, "Bearer "+writer), &arrowflight.Empty{})
		require.NoError(t, err)
		a, err := s.Recv()
		require.NoError(t, err)
		require.Equal(t, "writer", a.Type)
	})
	t.Run("two authorization headers", func(t *testing.T) {
		md := metadata.Pairs("authorization", "Bearer "+root, "authorization", "Bearer "+reader)
		_, err := client.GetSchema(metadata.NewOutgoingContext(ctx, md), &arrowflight.FlightDescriptor{Type: arrowflight.DescriptorPATH, Path: []string{"a"}})
		require.Equal(t, codes.Unauthenticated, status.Code(err))
	})
	t.Run("open on loopback", func(t *testing.T) {
		open := serve(t, auth.Open{})
		_, err := open.GetSchema(ctx, &arrowflight.FlightDescriptor{Type: arrowflight.DescriptorPATH, Path: []string{"anything"}})
		require.NoError(t, err)
		s, err := open.ListActions(ctx, &arrowflight.Empty{})
		require.NoError(t, err)
		a, err := s.Recv()
		require.NoError(t, err)
		require.Equal(t, "loopback", a.Type)
	})
}
