package errdefs_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/weftdata/weft/errdefs"
)

func TestKind(t *testing.T) {
	for _, k := range errdefs.Kinds {
		wrapped := fmt.Errorf("outer: %w", fmt.Errorf("thing %w", k))
		if got := errdefs.Kind(wrapped); got != k {
			t.Errorf("Kind(%v) = %v, want %v", wrapped, got, k)
		}
	}
	outer := fmt.Errorf("%w: data file x: %w", errdefs.ErrCorrupt, fmt.Errorf("get: %w", errdefs.ErrNotFound))
	if got := errdefs.Kind(outer); got != errdefs.ErrCorrupt {
		t.Errorf("Kind(%v) = %v, want the outer kind", outer, got)
	}
	inner := fmt.Errorf("read: %w", fmt.Errorf("%w; %w", errors.New("plain"), errdefs.ErrConflict))
	if got := errdefs.Kind(inner); got != errdefs.ErrConflict {
		t.Errorf("Kind(%v) = %v, want conflict", inner, got)
	}
	if got := errdefs.Kind(errors.New("plain")); got != nil {
		t.Errorf("Kind(plain) = %v, want nil", got)
	}
}
