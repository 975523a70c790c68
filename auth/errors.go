package auth

import (
	"fmt"

	"github.com/weftdata/weft/errdefs"
)

// Sentinels of package auth, each wrapping an errdefs kind.
var (
	// ErrNoToken: a call without an "authorization: Bearer …" header.
	ErrNoToken = fmt.Errorf("%w: no bearer token", errdefs.ErrUnauthenticated)
	// ErrBadToken: a token that is malformed, unknown or revoked.
	ErrBadToken = fmt.Errorf("%w: token not valid", errdefs.ErrUnauthenticated)
	// ErrDenied: a valid token without the scope the call needs.
	ErrDenied = fmt.Errorf("%w", errdefs.ErrPermissionDenied)
	// ErrBadTicket: a ticket that was cut short, edited, or signed with a
	// key this store does not hold (never issued, or its key was removed).
	ErrBadTicket = fmt.Errorf("%w: ticket signature does not verify", errdefs.ErrInvalidArgument)
	// ErrInvalid: bad input to an admin operation (a scope, a name, an id).
	ErrInvalid = fmt.Errorf("%w", errdefs.ErrInvalidArgument)
	// ErrTokenNotFound: revoking a token id that matches no token.
	ErrTokenNotFound = fmt.Errorf("token %w", errdefs.ErrNotFound)
	// ErrKeyNotFound: removing a ticket key id that does not exist.
	ErrKeyNotFound = fmt.Errorf("ticket key %w", errdefs.ErrNotFound)
	// ErrCorrupt: a stored token record or ticket key that cannot be read.
	ErrCorrupt = fmt.Errorf("%w", errdefs.ErrCorrupt)
)
