package tables_test

import (
	"testing"

	"github.com/weftdata/weft/bucket"
)

// newMinIOBucket is replaced once internal/s3test lands.
func newMinIOBucket(t testing.TB) bucket.Bucket {
	t.Skip("minio harness not wired yet")
	return nil
}
