package auth_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftdata/weft/auth"
	"github.com/weftdata/weft/bucket"
	"github.com/weftdata/weft/errdefs"
	"github.com/weftdata/weft/versions"
)

// clock is a settable test clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *clock { return &clock{now: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func newFS(t *testing.T) bucket.Bucket {
	t.Helper()
	b, err := bucket.NewFS(t.TempDir())
	require.NoError(t, err)
	return b
}

func newStore(t *testing.T, b bucket.Bucket, c *clock) *auth.Store {
	t.Helper()
	opts := auth.DefaultOptions()
	opts.Now = c.Now
	s, err := auth.NewStore(b, opts)
	require.NoError(t, err)
	return s
}

func TestTokensStoreOnlyHashes(t *testing.T) {
	ctx := context.Background()
	b := newFS(t)
	c := newClock()
	secret, tok, err := auth.CreateToken(ctx, b, auth.TokenSpec{Name: "trainer", Projects: map[string]auth.Scope{"robotics": auth.Write}}, c.Now())
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(secret, auth.TokenPrefix))
	require.Len(t, secret, 48)
	require.Len(t, tok.ID, auth.TokenIDLen)
	require.False(t, strings.Contains(secret, tok.ID), "the id is not a piece of the secret")

	// No stored object holds the secret, its random part, or its raw bytes.
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(secret, auth.TokenPrefix))
	require.NoError(t, err)
	n := 0
	for info, err := range b.List(ctx, "") {
		require.NoError(t, err)
		data, _, err := b.Get(ctx, info.Key)
		require.NoError(t, err)
		for _, needle := range [][]byte{[]byte(secret), []byte(strings.TrimPrefix(secret, auth.TokenPrefix)), raw} {
			require.False(t, bytes.Contains(data, needle), "object %s holds the secret", info.Key)
			require.False(t, strings.Contains(info.Key, string(needle)), "key %s holds the secret", info.Key)
		}
		require.Equal(t, "auth/tokens/"+auth.HashSecret(secret), info.Key)
		n++
	}
	require.Equal(t, 1, n)

	list, err := auth.ListTokens(ctx, b)
	require.NoError(t, err)
	require.Len(t, list, 1)
	require.Equal(t, "trainer", list[0].Name)
	require.Equal(t, tok.ID, list[0].ID)
	require.Equal(t, auth.Write, list[0].Projects["robotics"])
}

func TestAuthenticate(t *testing.T) {
	ctx := context.Background()
	b := newFS(t)
	c := newClock()
	s := newStore(t, b, c)
	secret, tok, err := auth.CreateToken(ctx, b, auth.TokenSpec{Name: "reader", Projects: map[string]auth.Scope{"a": auth.Read}}, c.Now())
	require.NoError(t, err)

	p, err := s.Authenticate(ctx, secret)
	require.NoError(t, err)
	require.Equal(t, "reader", p.Name)
	require.Equal(t, tok.ID, p.ID)

	other := "weft_" + strings.Repeat("A", 43)
	for name, tc := range map[string]struct {
		bearer string
		want   error
	}{
		"missing":   {"", auth.ErrNoToken},
		"malformed": {"hunter2", auth.ErrBadToken},
		"unknown":   {other, auth.ErrBadToken},
		"truncated": {secret[:len(secret)-1], auth.ErrBadToken},
		"edited":    {secret[:len(secret)-1] + flip(secret[len(secret)-1]), auth.ErrBadToken},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := s.Authenticate(ctx, tc.bearer)
			require.ErrorIs(t, err, tc.want)
			require.ErrorIs(t, err, errdefs.ErrUnauthenticated)
		})
	}

	t.Run("revoke", func(t *testing.T) {
		_, err := auth.RevokeToken(ctx, b, "123")
		require.ErrorIs(t, err, errdefs.ErrInvalidArgument)
		_, err = auth.RevokeToken(ctx, b, "00000000")
		require.ErrorIs(t, err, auth.ErrTokenNotFound)
		got, err := auth.RevokeToken(ctx, b, tok.ID)
		require.NoError(t, err)
		require.Equal(t, "reader", got.Name)
		// Within the cache TTL the server may still accept it; after, never.
		c.Add(auth.DefaultOptions().CacheTTL)
		_, err = s.Authenticate(ctx, secret)
		require.ErrorIs(t, err, auth.ErrBadToken)
		// A fresh store (another server) refuses it at once.
		_, err = newStore(t, b, c).Authenticate(ctx, secret)
		require.ErrorIs(t, err, auth.ErrBadToken)
	})

	t.Run("bad specs", func(t *testing.T) {
		for name, spec := range map[string]auth.TokenSpec{
			"no grants":   {Name: "x"},
			"bad name":    {Name: "a b", GlobalAdmin: true},
			"bad project": {Name: "x", Projects: map[string]auth.Scope{"../etc": auth.Read}},
			"scope none":  {Name: "x", Projects: map[string]auth.Scope{"a": auth.None}},
			"empty name":  {GlobalAdmin: true},
		} {
			_, _, err := auth.CreateToken(ctx, b, spec, c.Now())
			require.ErrorIs(t, err, errdefs.ErrInvalidArgument, name)
		}
	})
}

func flip(c byte) string {
	if c == 'A' {
		return "B"
	}
	return "A"
}

// TestScopes is the matrix of granted scope × needed scope × project.
func TestScopes(t *testing.T) {
	grants := map[string]*auth.Principal{
		"read":         {Name: "r", Projects: map[string]auth.Scope{"a": auth.Read}},
		"write":        {Name: "w", Projects: map[string]auth.Scope{"a": auth.Write}},
		"admin":        {Name: "ad", Projects: map[string]auth.Scope{"a": auth.Admin}},
		"global admin": {Name: "g", GlobalAdmin: true},
		"loopback":     auth.Loopback(),
	}
	rank := map[string]auth.Scope{"read": auth.Read, "write": auth.Write, "admin": auth.Admin, "global admin": auth.Admin, "loopback": auth.Admin}
	for gname, p := range grants {
		for _, need := range []auth.Scope{auth.Read, auth.Write, auth.Admin} {
			for _, project := range []string{"a", "b"} {
				t.Run(gname+"/"+need.String()+"/"+project, func(t *testing.T) {
					allowed := rank[gname] >= need && (project == "a" || p.GlobalAdmin)
					err := p.Require(project, need)
					if allowed {
						require.NoError(t, err)
						return
					}
					require.ErrorIs(t, err, auth.ErrDenied)
					require.ErrorIs(t, err, errdefs.ErrPermissionDenied)
					require.Contains(t, err.Error(), `project "`+project+`"`)
					require.Contains(t, err.Error(), "needs "+need.String())
				})
			}
		}
	}
	t.Run("no principal", func(t *testing.T) {
		require.ErrorIs(t, auth.Require(context.Background(), "a", auth.Read), errdefs.ErrUnauthenticated)
		var p *auth.Principal
		require.ErrorIs(t, p.RequireGlobalAdmin("list projects"), errdefs.ErrUnauthenticated)
	})
	t.Run("readable", func(t *testing.T) {
		require.Equal(t, []string{"a"}, grants["read"].Readable([]string{"a", "b"}))
		require.Equal(t, []string{"a", "b"}, grants["global admin"].Readable([]string{"a", "b"}))
		require.ErrorIs(t, grants["admin"].RequireGlobalAdmin("list projects"), errdefs.ErrPermissionDenied)
	})
	t.Run("scope names", func(t *testing.T) {
		for _, s := range []string{"read", "write", "admin"} {
			v, err := auth.ParseScope(s)
			require.NoError(t, err)
			require.Equal(t, s, v.String())
		}
		_, err := auth.ParseScope("none")
		require.ErrorIs(t, err, errdefs.ErrInvalidArgument)
	})
}

func TestIsLoopback(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:8815": true, "[::1]:0": true, "localhost:1": true, "127.0.0.2:1": true,
		":8815": false, "0.0.0.0:8815": false, "[::]:1": false, "10.0.0.1:8815": false, "example.com:1": false,
	} {
		require.Equal(t, want, auth.IsLoopback(addr), addr)
	}
}

// TestHugeRecordsAreCorrupt: an object over bucket.MaxConditionalSize at a
// token's or a ticket key's key (another tool's, a damaged one) is
// ErrCorrupt and is never read whole into memory.
func TestHugeRecordsAreCorrupt(t *testing.T) {
	ctx := context.Background()
	b := newFS(t)
	c := newClock()
	secret, tok, err := auth.CreateToken(ctx, b, auth.TokenSpec{Name: "reader", Projects: map[string]auth.Scope{"a": auth.Read}}, c.Now())
	require.NoError(t, err)
	_, err = auth.RotateTicketKey(ctx, b, c.Now())
	require.NoError(t, err)
	huge := bytes.Repeat([]byte("x"), bucket.MaxConditionalSize+1)
	for _, prefix := range []string{versions.TokenPrefix, versions.TicketKeyPrefix} {
		for info, err := range b.List(ctx, prefix) {
			require.NoError(t, err)
			_, err = b.Put(ctx, info.Key, bytes.NewReader(huge), int64(len(huge)))
			require.NoError(t, err)
		}
	}
	for name, call := range map[string]func() error{
		"authenticate": func() error { _, err := newStore(t, b, c).Authenticate(ctx, secret); return err },
		"list tokens":  func() error { _, err := auth.ListTokens(ctx, b); return err },
		"revoke":       func() error { _, err := auth.RevokeToken(ctx, b, tok.ID); return err },
		"ticket keys":  func() error { _, err := auth.ListTicketKeys(ctx, b); return err },
	} {
		t.Run(name, func(t *testing.T) {
			err := call()
			require.ErrorIs(t, err, auth.ErrCorrupt)
			require.ErrorIs(t, err, bucket.ErrObjectTooLarge)
		})
	}
}
