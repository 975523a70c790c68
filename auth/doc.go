// Package auth decides who may call a Weft server and what a ticket is
// worth: bearer tokens scoped per project, the gRPC interceptors that check
// them, and the HMAC signer of Flight tickets. Everything it stores lives in
// the bucket under auth/ (docs/format.md, "Auth objects"), so every server
// over one bucket agrees on tokens and keys without talking to the others.
//
// # Tokens
//
// A token is a secret "weft_" + base64url(32 random bytes) (48 characters),
// shown once by CreateToken (`flightd admin token create`) and stored
// nowhere: the bucket holds only a record keyed by the secret's SHA-256,
// auth/tokens/HASH, naming the token, its grants and when it was made. A
// token grants a Scope per project, Read < Write < Admin (each includes
// the ones before), and may be a global admin (Admin everywhere). Its short
// id, the first 12 hex digits of the hash, names it in ListTokens and
// RevokeToken and reveals nothing of the secret.
//
// Store authenticates secrets. It caches each lookup, found or not, for
// Options.CacheTTL (5 s by default): a revoked token is refused, and a new
// token accepted, by every server within that time.
//
// # The Flight layer
//
// The server chains the Interceptors (NewInterceptors with the Store, or
// with Open{} in the loopback development mode; see IsLoopback) after panic
// recovery. They read "authorization: Bearer <secret>" from the call's
// metadata (pyarrow.flight: FlightCallOptions(headers=[(b"authorization",
// b"Bearer weft_…")])), answer Unauthenticated without a valid token, and
// otherwise put the Principal into the handler's context. Each handler then
// calls Require(ctx, project, scope) for every project it touches, once it
// knows them: from the descriptor path, the JSON body, the run record or the
// verified ticket. Require fails with ErrDenied (errdefs.ErrPermissionDenied)
// naming the project and the scope needed.
//
// # Signed tickets
//
// A Signer appends a key id and an HMAC-SHA256 to a ticket's payload
// (Sign) and checks them (Verify): a ticket cut short, edited in any byte,
// or minted without a key of this bucket is refused with ErrBadTicket
// (errdefs.ErrInvalidArgument: the client sent bytes no server made; the
// message says to get a fresh ticket). The signature proves a server made
// the ticket; it does not replace Require, which the handler still calls
// for the projects the verified payload names, so a ticket is worth no
// more than the caller's token may read.
//
// Keys live at auth/ticket-keys/ID (ID a decimal number, 10 digits). The
// first server over a bucket creates key 1 with PutIfAbsent; servers
// starting at the same time race, and the losers read the winner's key.
//
// Rotation: `flightd admin ticket-key rotate` (RotateTicketKey) adds key
// n+1. Each server re-reads the key list every SignerOptions.Refresh (30
// s), and at once when a ticket names a key it does not know; it signs with
// the newest key it holds and verifies with every key listed. So after a
// rotation new tickets use the new key within Refresh, and tickets already
// handed out keep working. `flightd admin ticket-key remove ID`
// (RemoveTicketKey) deletes an old key: within Refresh, tickets signed
// with it are refused (clients get a fresh one from GetFlightInfo). The
// newest key cannot be removed. Anyone who can read the bucket can read the
// keys, as they can read the data itself: protect the bucket.
package auth
