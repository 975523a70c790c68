package versions

import (
	"crypto/sha256"
	"encoding/hex"
)

// Keys of the objects added for issue 11 (auth, signed tickets,
// idempotent appends). They live here until the key builders are folded
// into one file; docs/format.md ("Auth objects", "Idempotency records")
// describes their bodies.

// AuthPrefix is the key prefix of everything package auth stores. It sits
// beside projects/, outside every project, and is never garbage-collected.
const AuthPrefix = "auth/"

// TokenPrefix is the key prefix of the stored token records.
const TokenPrefix = AuthPrefix + "tokens/"

// TokenKey is the key of the token record whose secret hashes to hash
// (64 lowercase hex digits of SHA-256).
func TokenKey(hash string) string { return TokenPrefix + hash }

// TicketKeyPrefix is the key prefix of the ticket-signing keys.
const TicketKeyPrefix = AuthPrefix + "ticket-keys/"

// TicketKeyKey is the key of ticket-signing key kid.
func TicketKeyKey(kid string) string { return TicketKeyPrefix + kid }

// IdempotencyDir is the part of a project's key space holding idempotency
// records ("projects/P/idempotency/").
const IdempotencyDir = "idempotency/"

// idempotencyKey is the key of the record of idempotency key k in project
// p: the hex SHA-256 of k, so any client string maps to a valid key.
func idempotencyKey(p ProjectName, k IdempotencyKey) string {
	h := sha256.Sum256([]byte(k))
	return ProjectKey(p) + IdempotencyDir + hex.EncodeToString(h[:])
}

// Key prefixes inside a project, for the garbage collector (package gc):
// the objects it may delete live under CommitsPrefix, ManifestsPrefix and
// DataPrefix; RunsPrefix holds run records, which it reads as roots.

// CommitsPrefix is the key prefix of project p's commits.
func CommitsPrefix(p ProjectName) string { return ProjectKey(p) + "commits/" }

// ManifestsPrefix is the key prefix of project p's manifests.
func ManifestsPrefix(p ProjectName) string { return ProjectKey(p) + "manifests/" }

// DataPrefix is the key prefix of project p's data files (DataFile.Path is
// relative to ProjectKey(p) and starts with "data/").
func DataPrefix(p ProjectName) string { return ProjectKey(p) + "data/" }

// RunsPrefix is the key prefix of the run records stored in project p.
func RunsPrefix(p ProjectName) string { return ProjectKey(p) + "runs/" }

// DataFileKey is the key of data file f of project p.
func DataFileKey(p ProjectName, f DataFile) string { return ProjectKey(p) + f.Path }
