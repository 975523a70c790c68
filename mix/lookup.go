package mix

import (
	"context"
	"fmt"
	"slices"

	"github.com/weftdata/weft/versions"
)

// MinRunPrefix is the fewest hex digits of a run id that name a run, as
// for commit ids.
const MinRunPrefix = 8

// FindRun returns the run whose id is ref, or starts with ref: a unique
// prefix of at least MinRunPrefix hex digits, like a commit id's. A full
// id is returned as is (Load reports whether it exists). A prefix is
// looked up by listing the run records that start with it in every
// project: none is ErrRunNotFound, several is ErrBadRunID naming how many.
func (e *Engine) FindRun(ctx context.Context, ref string) (RunID, error) {
	return e.FindRunIn(ctx, ref, nil)
}

// FindRunIn is FindRun looking only at the run records stored in projects
// for which visible is true (nil: every project), so that a caller who may
// read some projects only learns nothing of the runs of the others: an
// id prefix matching runs elsewhere is not found, not ambiguous.
func (e *Engine) FindRunIn(ctx context.Context, ref string, visible func(versions.ProjectName) bool) (RunID, error) {
	if len(ref) == 64 {
		return ParseRunID(ref)
	}
	if len(ref) < MinRunPrefix || len(ref) > 64 || !isLowerHex(ref) {
		return "", fmt.Errorf("%w: %q must be 64 lowercase hex digits (the \"run\" of a resolved recipe) or a unique prefix of at least %d of them", ErrBadRunID, ref, MinRunPrefix)
	}
	projects, err := e.v.ListProjects(ctx)
	if err != nil {
		return "", err
	}
	var found []RunID
	for _, p := range projects {
		if visible != nil && !visible(p) {
			continue
		}
		ids, err := e.v.RunRecordIDs(ctx, p, ref)
		if err != nil {
			return "", err
		}
		for _, s := range ids {
			id := RunID(s)
			if _, err := ParseRunID(s); err == nil && !slices.Contains(found, id) {
				found = append(found, id)
			}
		}
	}
	switch len(found) {
	case 0:
		return "", fmt.Errorf("%w: no run starts with %s in this store; resolve its recipe with {\"recipe\": …} first", ErrRunNotFound, ref)
	case 1:
		return found[0], nil
	}
	slices.Sort(found)
	return "", fmt.Errorf("%w: run id prefix %s is ambiguous: %d runs start with it (%s, %s, …); give more digits", ErrBadRunID, ref, len(found), found[0].Short(), found[1].Short())
}

func isLowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
