package shmfile

import (
	"fmt"

	"github.com/weftdata/weft/errdefs"
)

// ErrNoSpace: the file's bytes could not be allocated (the tmpfs is full).
var ErrNoSpace = fmt.Errorf("shared memory %w", errdefs.ErrResourceExhausted)
