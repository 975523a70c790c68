package tables_test

import (
	"os"
	"testing"

	"github.com/weftdata/weft/bucket"
	"github.com/weftdata/weft/internal/s3test"
)

func TestMain(m *testing.M) { os.Exit(s3test.Main(m)) }

// newMinIOBucket is a fresh bucket on the test binary's shared MinIO server.
func newMinIOBucket(t testing.TB) bucket.Bucket {
	return s3test.SharedMinIO(t).NewBucket(t, t.Name())
}
