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
	if got := errdefs.Kind(errors.New("plain")); got != nil {
		t.Errorf("Kind(plain) = %v, want nil", got)
	}
}
