package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/weftdata/weft/bucket"
	"github.com/weftdata/weft/versions"
)

// TokenPrefix starts every token secret, so that a leaked one is easy to
// spot (secret scanners, logs).
const TokenPrefix = "weft_"

// secretBytes is the randomness of a token secret.
const secretBytes = 32

// secretLen is the length of a well-formed secret.
var secretLen = len(TokenPrefix) + base64.RawURLEncoding.EncodedLen(secretBytes)

// TokenFormat is the format version of stored token records.
const TokenFormat = 1

// Token is a stored token record (auth/tokens/HASH). It never holds the
// secret, only what the secret grants.
type Token struct {
	Format      int              `json:"format"`
	Name        string           `json:"name"`
	GlobalAdmin bool             `json:"global_admin,omitempty"`
	Projects    map[string]Scope `json:"projects,omitempty"`
	Created     time.Time        `json:"created"`

	// ID is TokenID of the record's hash (not stored; set on read).
	ID string `json:"-"`
}

// HashSecret is the hex SHA-256 of a token secret: the record's key.
func HashSecret(secret string) string {
	h := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(h[:])
}

// TokenIDLen is the length of a token's short id.
const TokenIDLen = 12

// TokenID is the short id of the token whose secret hashes to hash: its
// first 12 hex digits. It names the token in listings and revocation and
// reveals nothing of the secret.
func TokenID(hash string) string { return hash[:min(TokenIDLen, len(hash))] }

// wellFormed reports whether s could be a secret (before any lookup).
func wellFormed(s string) bool {
	if len(s) != secretLen || !strings.HasPrefix(s, TokenPrefix) {
		return false
	}
	_, err := base64.RawURLEncoding.DecodeString(s[len(TokenPrefix):])
	return err == nil
}

var tokenNameRE = regexp.MustCompile(`^[A-Za-z0-9_.@:-]{1,128}$`)

// TokenSpec is what CreateToken grants.
type TokenSpec struct {
	// Name labels the token in listings and errors (1 to 128 of
	// A-Z a-z 0-9 _ . @ : -). Several tokens may share a name.
	Name        string
	GlobalAdmin bool
	// Projects maps project names to scopes.
	Projects map[string]Scope
}

// CreateToken makes a new token and stores its record in b. It returns the
// secret, which is shown once and stored nowhere, and the record.
func CreateToken(ctx context.Context, b bucket.Bucket, spec TokenSpec, now time.Time) (string, *Token, error) {
	if !tokenNameRE.MatchString(spec.Name) {
		return "", nil, fmt.Errorf("%w: token name %q must be 1 to 128 of A-Z a-z 0-9 _ . @ : -", ErrInvalid, spec.Name)
	}
	if !spec.GlobalAdmin && len(spec.Projects) == 0 {
		return "", nil, fmt.Errorf("%w: token %q grants nothing; give a project and scope, or make it a global admin", ErrInvalid, spec.Name)
	}
	for p, s := range spec.Projects {
		if _, err := versions.ParseProjectName(p); err != nil {
			return "", nil, fmt.Errorf("%w: token %q: %w", ErrInvalid, spec.Name, err)
		}
		if s <= None || s > Admin {
			return "", nil, fmt.Errorf("%w: token %q: project %q needs a scope of read, write or admin", ErrInvalid, spec.Name, p)
		}
	}
	raw := make([]byte, secretBytes)
	if _, err := rand.Read(raw); err != nil {
		return "", nil, fmt.Errorf("token secret: %w", err)
	}
	secret := TokenPrefix + base64.RawURLEncoding.EncodeToString(raw)
	hash := HashSecret(secret)
	rec := &Token{Format: TokenFormat, Name: spec.Name, GlobalAdmin: spec.GlobalAdmin, Projects: spec.Projects, Created: now.UTC(), ID: TokenID(hash)}
	data, err := json.Marshal(rec)
	if err != nil {
		return "", nil, fmt.Errorf("encode token: %w", err)
	}
	if _, err := b.PutIfAbsent(ctx, versions.TokenKey(hash), data); err != nil {
		return "", nil, fmt.Errorf("store token %q: %w", spec.Name, err)
	}
	return secret, rec, nil
}

func decodeToken(data []byte, hash string) (*Token, error) {
	var t Token
	if err := json.Unmarshal(data, &t); err != nil {
		return nil, fmt.Errorf("%w: token record %s: %w", ErrCorrupt, TokenID(hash), err)
	}
	if t.Format != TokenFormat {
		return nil, fmt.Errorf("%w: token record %s has format %d; this Weft reads format %d (upgrade Weft)", ErrCorrupt, TokenID(hash), t.Format, TokenFormat)
	}
	t.ID = TokenID(hash)
	return &t, nil
}

// ListTokens returns every stored token record, sorted by creation time.
func ListTokens(ctx context.Context, b bucket.Bucket) ([]*Token, error) {
	var out []*Token
	for info, err := range b.List(ctx, versions.TokenPrefix) {
		if err != nil {
			return nil, fmt.Errorf("list tokens: %w", err)
		}
		hash := strings.TrimPrefix(info.Key, versions.TokenPrefix)
		data, _, err := getSmall(ctx, b, info.Key)
		if errors.Is(err, bucket.ErrNotFound) {
			continue // revoked meanwhile
		}
		if err != nil {
			return nil, fmt.Errorf("read token %s: %w", TokenID(hash), err)
		}
		t, err := decodeToken(data, hash)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Created.Before(out[j].Created) })
	return out, nil
}

// RevokeToken deletes the token whose id (or a unique prefix of at least 8
// hex digits of its hash) is id. Servers stop accepting it within their
// Store's CacheTTL.
func RevokeToken(ctx context.Context, b bucket.Bucket, id string) (*Token, error) {
	if len(id) < 8 || len(id) > 64 || strings.Trim(id, "0123456789abcdef") != "" {
		return nil, fmt.Errorf("%w: token id %q must be 8 to 64 lowercase hex digits (see 'flightd admin token list')", ErrInvalid, id)
	}
	var keys []string
	for info, err := range b.List(ctx, versions.TokenPrefix+id) {
		if err != nil {
			return nil, fmt.Errorf("find token %s: %w", id, err)
		}
		keys = append(keys, info.Key)
	}
	switch len(keys) {
	case 0:
		return nil, fmt.Errorf("%w: no token has id %s (see 'flightd admin token list')", ErrTokenNotFound, id)
	case 1:
	default:
		return nil, fmt.Errorf("%w: id %s matches %d tokens; give more digits", ErrInvalid, id, len(keys))
	}
	hash := strings.TrimPrefix(keys[0], versions.TokenPrefix)
	data, _, err := getSmall(ctx, b, keys[0])
	if err != nil {
		return nil, fmt.Errorf("read token %s: %w", id, err)
	}
	t, err := decodeToken(data, hash)
	if err != nil {
		return nil, err
	}
	if err := b.Delete(ctx, keys[0]); err != nil {
		return nil, fmt.Errorf("revoke token %s: %w", id, err)
	}
	return t, nil
}
