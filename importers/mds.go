package importers

import (
	"context"
	"fmt"
)

// MDS imports MosaicML Streaming datasets ("mds").
type MDS struct{}

// Name is "mds".
func (MDS) Name() string { return "mds" }

// Import is not written yet.
func (MDS) Import(ctx context.Context, src Source, w *Writer, o FormatOptions) error {
	return fmt.Errorf("%w: mds", ErrNotImplemented)
}
