package auth

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/weftdata/weft/bucket"
	"github.com/weftdata/weft/versions"
)

// Authenticator turns a bearer token into a Principal. Errors wrap
// ErrNoToken or ErrBadToken (errdefs.ErrUnauthenticated) for bad
// credentials; anything else is a fault of the store.
type Authenticator interface {
	Authenticate(ctx context.Context, bearer string) (*Principal, error)
}

// Options configure a Store.
type Options struct {
	// CacheTTL is how long a token lookup (found or not) is reused. A
	// revoked token stops working, and a new one starts working, within
	// CacheTTL on every server.
	CacheTTL time.Duration
	// MaxCached bounds the cached lookups (each is a few hundred bytes).
	MaxCached int
	// Now is the clock; Logger gets debug lines (nil discards).
	Now    func() time.Time
	Logger *slog.Logger
}

// DefaultOptions: lookups cached for 5 seconds, at most 10,000 of them.
func DefaultOptions() Options {
	return Options{CacheTTL: 5 * time.Second, MaxCached: 10000, Now: time.Now}
}

// Validate reports an unusable option.
func (o Options) Validate() error {
	if o.CacheTTL < 0 || o.MaxCached < 1 || o.Now == nil {
		return fmt.Errorf("%w: auth options need CacheTTL >= 0, MaxCached >= 1 and a clock", ErrInvalid)
	}
	return nil
}

// Store authenticates bearer tokens against the token records in a bucket.
// Safe for concurrent use.
type Store struct {
	b    bucket.Bucket
	opts Options
	log  *slog.Logger

	mu struct {
		sync.Mutex
		cache map[string]cached // by secret hash
	}
}

type cached struct {
	tok     *Token // nil: no such token
	fetched time.Time
}

var _ Authenticator = (*Store)(nil)

// NewStore returns a Store over the token records in b.
func NewStore(b bucket.Bucket, opts Options) (*Store, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	s := &Store{b: b, opts: opts, log: opts.Logger}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.mu.cache = make(map[string]cached)
	return s, nil
}

// ParseBearer extracts the token from an "authorization" header value
// ("Bearer weft_…"; the scheme is case-insensitive).
func ParseBearer(header string) (string, error) {
	scheme, tok, ok := strings.Cut(strings.TrimSpace(header), " ")
	if !ok || !strings.EqualFold(scheme, "bearer") || strings.TrimSpace(tok) == "" {
		return "", fmt.Errorf("%w: the authorization header must be \"Bearer <token>\"", ErrBadToken)
	}
	return strings.TrimSpace(tok), nil
}

// Authenticate returns the principal of token secret bearer (without the
// "Bearer " scheme). An empty bearer is ErrNoToken; a malformed, unknown
// or revoked one is ErrBadToken.
func (s *Store) Authenticate(ctx context.Context, bearer string) (*Principal, error) {
	if bearer == "" {
		return nil, fmt.Errorf("%w: pass a token (authorization: Bearer …; Python: weft.Client(uri, token=…) or $WEFT_TOKEN)", ErrNoToken)
	}
	if !wellFormed(bearer) {
		return nil, fmt.Errorf("%w: not a Weft token (they look like %s…, %d characters); check what you passed", ErrBadToken, TokenPrefix, secretLen)
	}
	tok, err := s.lookup(ctx, HashSecret(bearer))
	if err != nil {
		return nil, err
	}
	if tok == nil {
		return nil, fmt.Errorf("%w: unknown or revoked token; ask an admin for a new one", ErrBadToken)
	}
	projects := make(map[string]Scope, len(tok.Projects))
	for p, sc := range tok.Projects {
		projects[p] = sc
	}
	return &Principal{Name: tok.Name, ID: tok.ID, GlobalAdmin: tok.GlobalAdmin, Projects: projects}, nil
}

// lookup reads the record of hash through the cache; nil means none.
func (s *Store) lookup(ctx context.Context, hash string) (*Token, error) {
	now := s.opts.Now()
	s.mu.Lock()
	c, ok := s.mu.cache[hash]
	s.mu.Unlock()
	if ok && now.Sub(c.fetched) < s.opts.CacheTTL {
		return c.tok, nil
	}
	data, _, err := getSmall(ctx, s.b, versions.TokenKey(hash))
	var tok *Token
	switch {
	case errors.Is(err, bucket.ErrNotFound):
	case err != nil:
		return nil, fmt.Errorf("read token %s: %w", TokenID(hash), err)
	default:
		if tok, err = decodeToken(data, hash); err != nil {
			return nil, err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.mu.cache) >= s.opts.MaxCached {
		s.evictLocked(now)
	}
	s.mu.cache[hash] = cached{tok: tok, fetched: now}
	return tok, nil
}

// evictLocked drops expired lookups, and, if the cache is still full, half
// of the rest (map order: arbitrary).
func (s *Store) evictLocked(now time.Time) {
	for h, c := range s.mu.cache {
		if now.Sub(c.fetched) >= s.opts.CacheTTL {
			delete(s.mu.cache, h)
		}
	}
	for h := range s.mu.cache {
		if len(s.mu.cache) < s.opts.MaxCached/2 {
			break
		}
		delete(s.mu.cache, h)
	}
}

// Open is the Authenticator of a server running without tokens (the
// loopback development mode): every call, with or without a token, runs as
// Loopback(). Use it only where IsLoopback holds, or with an explicit
// --insecure.
type Open struct{}

// Authenticate returns Loopback().
func (Open) Authenticate(context.Context, string) (*Principal, error) { return Loopback(), nil }
