package versions

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/weftdata/weft/errdefs"
)

// ProjectName, BranchName and TableName are validated names: 1 to 128 of
// [A-Za-z0-9_.-], not "." or "..", not starting with ".weft", and not 8 to
// 64 hex digits in any case (a ref could read such a name as a commit id or
// prefix, and a pinned read must never see a branch). Build them with
// the Parse functions at the edge; inside Weft they are trusted.
type (
	ProjectName string
	BranchName  string
	TableName   string
)

// MainBranch is the branch every project starts with.
const MainBranch BranchName = "main"

var nameRE = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,128}$`)

func validateName(kind, s string) error {
	switch {
	case !nameRE.MatchString(s):
		return fmt.Errorf("%w: %s name %s must be 1 to 128 characters of A-Z a-z 0-9 _ . -", ErrInvalidName, kind, errdefs.Quote(s))
	case s == "." || s == "..":
		return fmt.Errorf("%w: %s name %q is reserved; pick another", ErrInvalidName, kind, s)
	case strings.HasPrefix(s, ".weft"):
		return fmt.Errorf("%w: %s name %q starts with the reserved prefix .weft; pick another", ErrInvalidName, kind, s)
	case looksLikeCommit(s):
		return fmt.Errorf("%w: %s name %q is %d hex digits, which a ref could read as a commit id or prefix; add a letter outside a-f or a separator (e.g. %q)", ErrHexName, kind, s, len(s), "v-"+s)
	}
	return nil
}

// validRefName reports whether s may name an existing branch in a ref: the
// naming rule less the hex rule, which is newer than some stores' branches.
func validRefName(s string) bool {
	err := validateName("branch", s)
	return err == nil || errors.Is(err, ErrHexName)
}

// looksLikeCommit reports whether s is MinPrefixLen to 64 hex digits in any
// case: something a ref could mean as a commit id or prefix.
func looksLikeCommit(s string) bool {
	if len(s) < MinPrefixLen || len(s) > idLen {
		return false
	}
	return isHex(strings.ToLower(s))
}

// ParseProjectName validates a project name.
func ParseProjectName(s string) (ProjectName, error) {
	return ProjectName(s), validateName("project", s)
}

// ParseBranchName validates a branch name.
func ParseBranchName(s string) (BranchName, error) {
	return BranchName(s), validateName("branch", s)
}

// ParseTableName validates a table name.
func ParseTableName(s string) (TableName, error) {
	return TableName(s), validateName("table", s)
}

// CommitID and ManifestID are 64 lowercase hex digits (SHA-256).
type (
	CommitID   string
	ManifestID string
)

// Short returns the first 12 hex digits, for display.
func (c CommitID) Short() string {
	if len(c) > 12 {
		return string(c[:12])
	}
	return string(c)
}

const idLen = 64

// MinPrefixLen is the shortest commit id prefix a ref may use.
const MinPrefixLen = 8

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// ParseCommitID validates a full commit id.
func ParseCommitID(s string) (CommitID, error) {
	if len(s) != idLen || !isHex(s) {
		return "", fmt.Errorf("%w: commit id %s must be %d lowercase hex digits", ErrInvalidRef, errdefs.Quote(s), idLen)
	}
	return CommitID(s), nil
}

// ParseManifestID validates a full manifest id.
func ParseManifestID(s string) (ManifestID, error) {
	if len(s) != idLen || !isHex(s) {
		return "", fmt.Errorf("%w: manifest id %s must be %d lowercase hex digits", ErrInvalid, errdefs.Quote(s), idLen)
	}
	return ManifestID(s), nil
}
