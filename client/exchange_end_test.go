package client

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	arrowflight "github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/stretchr/testify/require"
)

// endingStream is the client side of an exchange whose releases carried
// events, after the loop ended: CloseSend succeeds, and Recv returns the
// call's end (io.EOF) at once when flightd ends the call at the client's
// end, or waits for the call to be cancelled (ctx) when flightd serves on
// (an older one).
type endingStream struct {
	arrowflight.FlightService_DoExchangeClient
	ctx       context.Context
	servesOn  bool
	closeSent bool
}

func (s *endingStream) CloseSend() error { s.closeSent = true; return nil }

func (s *endingStream) Recv() (*arrowflight.FlightData, error) {
	if !s.servesOn {
		return nil, io.EOF
	}
	<-s.ctx.Done()
	return nil, s.ctx.Err()
}

// TestExchangeEndWaitWarns: at a break out of ReadRankDevice whose
// releases carried events, the client ends its side and reads the call to
// its status; a flightd that ends the call is not logged, one that serves
// on past the wait (ExchangeEndWait; short here) gets the call cancelled
// and a warning in Options.Logger (nothing is yielded: the loop is over).
// DeviceConsumer.Ended runs after the call is over either way.
func TestExchangeEndWaitWarns(t *testing.T) {
	for _, tc := range []struct {
		name     string
		servesOn bool
	}{
		{"flightd ends the call", false},
		{"flightd serves on", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			s := &endingStream{ctx: ctx, servesOn: tc.servesOn}
			ended := false
			x := &rankExchange{
				c:      &Client{log: slog.New(slog.NewTextHandler(&logs, nil))},
				stream: s,
				events: true,
				dev: DeviceConsumer{Ended: func() error {
					require.Error(t, ctx.Err(), "the call is over (cancelled after its status) before Ended")
					ended = true
					return nil
				}},
			}
			require.NoError(t, x.end(cancel, time.Millisecond))
			require.True(t, s.closeSent, "the client ended its side")
			require.True(t, ended)
			if tc.servesOn {
				require.Contains(t, logs.String(), "level=WARN")
				require.Contains(t, logs.String(), "flightd did not end the rank exchange")
			} else {
				require.Empty(t, logs.String())
			}
		})
	}
}
