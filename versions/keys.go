package versions

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// Every object key of the store format (docs/format.md) is built here and
// nowhere else. Keys are relative to the bucket's root:
//
//	projects/P/refs/heads/BRANCH      ref: commit id + "\n"
//	projects/P/commits/ID             commit
//	projects/P/manifests/ID           table manifest
//	projects/P/data/TABLE/ID.parquet  data file (a manifest names it by its path relative to projects/P/)
//	projects/P/media/SHA256.mp4       media object (a manifest names it by its path relative to projects/P/)
//	projects/P/runs/RUNID             run record (package mix)
//	projects/P/idempotency/SHA256(K)  idempotency record of put key K
//	auth/tokens/SHA256(SECRET)        token record (package auth)
//	auth/ticket-keys/KID              ticket-signing key (package auth)
//
// The garbage collector (package gc) may delete objects under
// CommitsPrefix, ManifestsPrefix, DataPrefix and MediaPrefix; it reads refs and run
// records as roots and never touches auth/ or idempotency records.

// ProjectsPrefix is the prefix of every key of the store.
const ProjectsPrefix = "projects/"

// ProjectKey is the key prefix of everything in project p ("projects/P/").
func ProjectKey(p ProjectName) string { return ProjectsPrefix + string(p) + "/" }

// RefsPrefix is the key prefix of the branch refs of p.
func RefsPrefix(p ProjectName) string { return ProjectKey(p) + "refs/heads/" }

// RefKey is the key of the ref of branch b of p.
func RefKey(p ProjectName, b BranchName) string { return RefsPrefix(p) + string(b) }

// CommitsPrefix is the key prefix of the commits of p.
func CommitsPrefix(p ProjectName) string { return ProjectKey(p) + "commits/" }

// CommitKey is the key of commit c of p.
func CommitKey(p ProjectName, c CommitID) string { return CommitsPrefix(p) + string(c) }

// ManifestsPrefix is the key prefix of the manifests of p.
func ManifestsPrefix(p ProjectName) string { return ProjectKey(p) + "manifests/" }

// ManifestKey is the key of manifest m of p.
func ManifestKey(p ProjectName, m ManifestID) string { return ManifestsPrefix(p) + string(m) }

// DataPrefix is the key prefix of the data files of p (DataFile.Path is
// relative to ProjectKey(p) and starts with "data/").
func DataPrefix(p ProjectName) string { return ProjectKey(p) + DataDir }

// DataDir is the part of a project's key space holding data files: every
// manifest's data file path starts with it.
const DataDir = "data/"

// DataPath is the path, relative to its project, of data file id (a
// random hex name) of table t: what a manifest records (DataFile.Path).
func DataPath(t TableName, id string) string {
	return "data/" + string(t) + "/" + id + ".parquet"
}

// DataFileKey is the key of the data file at path (DataFile.Path, relative
// to the project) of p.
func DataFileKey(p ProjectName, path string) string { return ProjectKey(p) + path }

// MediaDir is the part of a project's key space holding media objects.
const MediaDir = "media/"

// MediaPrefix is the key prefix of the media objects of p.
func MediaPrefix(p ProjectName) string { return ProjectKey(p) + MediaDir }

// MediaPath is the path, relative to its project, of the media object whose
// content hashes to sha (64 lowercase hex digits): what a manifest records
// (MediaObject.Path).
func MediaPath(sha string) string { return MediaDir + sha + ".mp4" }

// MediaKey is the key of the media object with digest sha in p.
func MediaKey(p ProjectName, sha string) string { return ProjectKey(p) + MediaPath(sha) }

// MediaSHA256 returns the digest a media object key of p names, and false
// for any other key.
func MediaSHA256(p ProjectName, key string) (string, bool) {
	rest, ok := strings.CutPrefix(key, MediaPrefix(p))
	if !ok {
		return "", false
	}
	sha, ok := strings.CutSuffix(rest, ".mp4")
	if !ok || ValidateSHA256(sha) != nil {
		return "", false
	}
	return sha, true
}

// RunsPrefix is the key prefix of the run records stored in p.
func RunsPrefix(p ProjectName) string { return ProjectKey(p) + "runs/" }

// RunKey is the key of the record of run id (64 hex digits) in p.
func RunKey(p ProjectName, id string) string { return RunsPrefix(p) + id }

// IdempotencyDir is the part of a project's key space holding idempotency
// records ("projects/P/idempotency/").
const IdempotencyDir = "idempotency/"

// idempotencyKey is the key of the record of idempotency key k in project
// p: the hex SHA-256 of k, so any client string maps to a valid key.
func idempotencyKey(p ProjectName, k IdempotencyKey) string {
	h := sha256.Sum256([]byte(k))
	return ProjectKey(p) + IdempotencyDir + hex.EncodeToString(h[:])
}

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

// projectOfMainRef returns the project whose main ref key is key.
func projectOfMainRef(key string) (ProjectName, bool) {
	rest, ok := strings.CutPrefix(key, ProjectsPrefix)
	if !ok {
		return "", false
	}
	p, _, ok := strings.Cut(rest, "/")
	if !ok || key != RefKey(ProjectName(p), MainBranch) {
		return "", false
	}
	return ProjectName(p), true
}
