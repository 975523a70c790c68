package flight

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

type ctxKey struct{}

// TestStopDeadline: stopDeadline finds the timer of the contexts grpc
// gives its tap (metadata over a context.WithTimeout) and stops it, and
// touches no other context.
func TestStopDeadline(t *testing.T) {
	for _, tc := range []struct {
		name    string
		make    func() (context.Context, context.CancelFunc)
		stopped bool
	}{
		{"metadata over a deadline", func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
			return context.WithValue(ctx, ctxKey{}, 1), cancel
		}, true},
		{"a deadline", func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), time.Hour)
		}, true},
		{"metadata over a cancel", func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			return context.WithValue(ctx, ctxKey{}, 1), cancel
		}, false},
		{"a deadline under two values", func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
			return context.WithValue(context.WithValue(ctx, ctxKey{}, 1), ctxKey{}, 2), cancel
		}, false},
		{"background", func() (context.Context, context.CancelFunc) { return context.Background(), func() {} }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := tc.make()
			require.Equal(t, tc.stopped, stopDeadline(ctx))
			require.NoError(t, ctx.Err(), "stopping the timer does not end the context")
			cancel()
			if ctx.Done() != nil {
				require.Error(t, ctx.Err(), "its cancel still ends it")
			}
		})
	}
}
