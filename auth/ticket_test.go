package auth_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftdata/weft/auth"
	"github.com/weftdata/weft/bucket"
	"github.com/weftdata/weft/errdefs"
)

func newSigner(t *testing.T, b bucket.Bucket, c *clock) *auth.Signer {
	t.Helper()
	opts := auth.DefaultSignerOptions()
	opts.Now = c.Now
	s, err := auth.NewSigner(context.Background(), b, opts)
	require.NoError(t, err)
	return s
}

func TestTicketsRejectForgery(t *testing.T) {
	ctx := context.Background()
	c := newClock()
	b := newFS(t)
	s := newSigner(t, b, c)
	payload := []byte(`{"run":"abc","rank":0,"project":"a"}`)
	ticket := s.Sign(ctx, payload)
	got, err := s.Verify(ctx, ticket)
	require.NoError(t, err)
	require.Equal(t, payload, got)

	t.Run("every edited byte", func(t *testing.T) {
		for i := range ticket {
			for _, bit := range []byte{0x01, 0x80} {
				edited := append([]byte(nil), ticket...)
				edited[i] ^= bit
				_, err := s.Verify(ctx, edited)
				require.ErrorIs(t, err, auth.ErrBadTicket, "byte %d", i)
				require.ErrorIs(t, err, errdefs.ErrInvalidArgument)
			}
		}
	})
	t.Run("cut short or extended", func(t *testing.T) {
		for _, bad := range [][]byte{nil, ticket[:auth.TicketOverhead-1], ticket[:len(ticket)-1], ticket[1:], append(append([]byte(nil), ticket...), 0)} {
			_, err := s.Verify(ctx, bad)
			require.ErrorIs(t, err, auth.ErrBadTicket)
		}
	})
	t.Run("the payload alone, unsigned", func(t *testing.T) {
		_, err := s.Verify(ctx, payload)
		require.ErrorIs(t, err, auth.ErrBadTicket)
	})
	t.Run("minted with another bucket's key", func(t *testing.T) {
		other := newSigner(t, newFS(t), c)
		forged := other.Sign(ctx, payload) // same key id 1, another secret
		_, err := s.Verify(ctx, forged)
		require.ErrorIs(t, err, auth.ErrBadTicket)
	})
}

// TestSignersAgree: servers starting at once over one bucket race to create
// the first key; all end up with the same one and accept each other's
// tickets.
func TestSignersAgree(t *testing.T) {
	ctx := context.Background()
	c := newClock()
	for name, b := range map[string]bucket.Bucket{"fs": newFS(t), "mem": bucket.NewMem()} {
		t.Run(name, func(t *testing.T) {
			const n = 16
			signers := make([]*auth.Signer, n)
			var wg sync.WaitGroup
			start := make(chan struct{})
			for i := range n {
				wg.Go(func() {
					<-start
					opts := auth.DefaultSignerOptions()
					opts.Now = c.Now
					s, err := auth.NewSigner(ctx, b, opts)
					if err == nil {
						signers[i] = s
					} else {
						t.Error(err)
					}
				})
			}
			close(start)
			wg.Wait()
			keys, err := auth.ListTicketKeys(ctx, b)
			require.NoError(t, err)
			require.Len(t, keys, 1, "one key, made by the race's winner")
			for i, a := range signers {
				tk := a.Sign(ctx, []byte{byte(i)})
				for _, v := range signers {
					p, err := v.Verify(ctx, tk)
					require.NoError(t, err)
					require.Equal(t, []byte{byte(i)}, p)
				}
			}
		})
	}
}

func TestTicketKeyRotation(t *testing.T) {
	ctx := context.Background()
	c := newClock()
	b := newFS(t)
	s1 := newSigner(t, b, c) // a server that will see the rotation late
	old := s1.Sign(ctx, []byte("old"))

	k2, err := auth.RotateTicketKey(ctx, b, c.Now())
	require.NoError(t, err)
	require.EqualValues(t, 2, k2.ID)
	s2 := newSigner(t, b, c) // a server started after the rotation
	fresh := s2.Sign(ctx, []byte("new"))

	// s1 has not re-read the keys, yet verifies the new key's ticket at
	// once (an unknown key id triggers a re-read), and both verify the old.
	for _, s := range []*auth.Signer{s1, s2} {
		_, err := s.Verify(ctx, old)
		require.NoError(t, err)
		_, err = s.Verify(ctx, fresh)
		require.NoError(t, err)
	}
	// After Refresh, s1 signs with key 2 as well: removing key 1 then
	// leaves every new ticket valid.
	c.Add(auth.DefaultSignerOptions().Refresh)
	newer := s1.Sign(ctx, []byte("newer"))

	require.ErrorIs(t, auth.RemoveTicketKey(ctx, b, 2), errdefs.ErrInvalidArgument, "the newest key stays")
	require.ErrorIs(t, auth.RemoveTicketKey(ctx, b, 7), auth.ErrKeyNotFound)
	require.NoError(t, auth.RemoveTicketKey(ctx, b, 1))
	c.Add(auth.DefaultSignerOptions().Refresh)
	for _, s := range []*auth.Signer{s1, s2} {
		_, err := s.Verify(ctx, old)
		require.ErrorIs(t, err, auth.ErrBadTicket, "a removed key's tickets are refused")
		_, err = s.Verify(ctx, newer)
		require.NoError(t, err)
		_, err = s.Verify(ctx, fresh)
		require.NoError(t, err)
	}
	_ = time.Second
}
