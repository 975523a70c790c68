package errgrpc_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/weftdata/weft/errdefs"
	"github.com/weftdata/weft/errdefs/errgrpc"
)

func wrap(err error) error { return fmt.Errorf("outer: %w", fmt.Errorf("inner: %w", err)) }

func TestRoundTrip(t *testing.T) {
	cases := []struct {
		kind error
		code codes.Code
	}{
		{errdefs.ErrInvalidArgument, codes.InvalidArgument},
		{errdefs.ErrNotFound, codes.NotFound},
		{errdefs.ErrAlreadyExists, codes.AlreadyExists},
		{errdefs.ErrConflict, codes.Aborted},
		{errdefs.ErrFailedPrecondition, codes.FailedPrecondition},
		{errdefs.ErrUnauthenticated, codes.Unauthenticated},
		{errdefs.ErrPermissionDenied, codes.PermissionDenied},
		{errdefs.ErrResourceExhausted, codes.ResourceExhausted},
		{errdefs.ErrUnavailable, codes.Unavailable},
		{errdefs.ErrUnimplemented, codes.Unimplemented},
		{context.Canceled, codes.Canceled},
		{context.DeadlineExceeded, codes.DeadlineExceeded},
	}
	for _, tc := range cases {
		t.Run(tc.code.String(), func(t *testing.T) {
			src := fmt.Errorf("table %q: %w", "t", wrap(tc.kind))
			g := errgrpc.ToGRPC(src)
			require.Equal(t, tc.code, status.Code(g))
			require.Equal(t, src.Error(), status.Convert(g).Message())

			back := errgrpc.ToNative(g)
			require.ErrorIs(t, back, tc.kind)
			require.Equal(t, src.Error(), back.Error(), "the server's message is kept")
			require.Equal(t, tc.code, status.Code(back), "the status is kept")
			for _, other := range errdefs.Kinds {
				if other != tc.kind {
					require.NotErrorIs(t, back, other)
				}
			}
			// A wrapped native error maps back to the same code.
			require.Equal(t, tc.code, status.Code(errgrpc.ToGRPC(fmt.Errorf("client: %w", back))))
		})
	}
}

func TestCode(t *testing.T) {
	cases := []struct {
		name string
		err  error
		want codes.Code
	}{
		{"nil", nil, codes.OK},
		{"no kind", errors.New("disk on fire"), codes.Internal},
		{"corrupt", wrap(errdefs.ErrCorrupt), codes.Internal},
		{"status kept", wrap(status.Error(codes.ResourceExhausted, "grpc: received message larger than max")), codes.ResourceExhausted},
		{"bare status", status.Error(codes.PermissionDenied, "no"), codes.PermissionDenied},
		{"canceled beats kind", fmt.Errorf("%w: %w", context.Canceled, errdefs.ErrNotFound), codes.Canceled},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, errgrpc.Code(tc.err))
		})
	}
	require.NoError(t, errgrpc.ToGRPC(nil))
	require.NoError(t, errgrpc.ToNative(nil))
	plain := errors.New("dial: refused")
	require.Same(t, plain, errgrpc.ToNative(plain))
	require.Equal(t, "no", status.Convert(errgrpc.ToGRPC(status.Error(codes.PermissionDenied, "no"))).Message())
	internal := errgrpc.ToNative(status.Error(codes.Internal, "boom"))
	require.Nil(t, errdefs.Kind(internal))
	require.ErrorIs(t, errgrpc.ToNative(status.Error(codes.DataLoss, "gone")), errdefs.ErrCorrupt)
}

func TestMessageCap(t *testing.T) {
	cases := []struct {
		name string
		msg  string
	}{
		{"ascii", strings.Repeat("x", 5000)},
		{"17 MiB", strings.Repeat("n", 17<<20)},
		{"multibyte", strings.Repeat("é", 3000)},
		{"cjk", strings.Repeat("界", 3000)},
		{"just over", strings.Repeat("y", errgrpc.MaxMessageBytes+1)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := errgrpc.ToGRPC(fmt.Errorf("%s: %w", tc.msg, errdefs.ErrInvalidArgument))
			msg := status.Convert(g).Message()
			require.LessOrEqual(t, len(msg), errgrpc.MaxMessageBytes)
			require.True(t, utf8.ValidString(msg))
			require.True(t, strings.HasPrefix(tc.msg, strings.SplitN(msg, "…", 2)[0]))
			require.Regexp(t, `… \(\d+ more bytes\)$`, msg)
		})
	}
	short := strings.Repeat("z", errgrpc.MaxMessageBytes)
	require.Equal(t, short, errgrpc.Truncate(short, errgrpc.MaxMessageBytes))
	g := errgrpc.ToGRPC(status.Error(codes.Unavailable, strings.Repeat("s", 4000)))
	require.LessOrEqual(t, len(status.Convert(g).Message()), errgrpc.MaxMessageBytes)
	require.Equal(t, codes.Unavailable, status.Code(g))
}
