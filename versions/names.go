package versions

import (
	"fmt"
	"regexp"
	"strings"
)

// ProjectName, BranchName and TableName are validated names: 1 to 128 of
// [A-Za-z0-9_.-], not "." or "..", not starting with ".weft". Build them with
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
		return fmt.Errorf("%w: %s name %q must be 1 to 128 characters of A-Z a-z 0-9 _ . -", ErrInvalidName, kind, s)
	case s == "." || s == "..":
		return fmt.Errorf("%w: %s name %q is reserved; pick another", ErrInvalidName, kind, s)
	case strings.HasPrefix(s, ".weft"):
		return fmt.Errorf("%w: %s name %q starts with the reserved prefix .weft; pick another", ErrInvalidName, kind, s)
	}
	return nil
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
		return "", fmt.Errorf("%w: commit id %q must be %d lowercase hex digits", ErrInvalidRef, s, idLen)
	}
	return CommitID(s), nil
}

// ParseManifestID validates a full manifest id.
func ParseManifestID(s string) (ManifestID, error) {
	if len(s) != idLen || !isHex(s) {
		return "", fmt.Errorf("%w: manifest id %q must be %d lowercase hex digits", ErrInvalid, s, idLen)
	}
	return ManifestID(s), nil
}
