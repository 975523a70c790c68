package slots

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// shmDir is /dev/shm, or skips the test (fails it under CI=true) on a
// host without it.
func shmDir(t *testing.T) string {
	t.Helper()
	if fi, err := os.Stat(DefaultDir); err != nil || !fi.IsDir() {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is missing (%v): host slots cannot be tested", DefaultDir, err)
		}
		t.Skipf("SKIPPED: %s is missing (%v): host slots are not tested here", DefaultDir, err)
	}
	return DefaultDir
}
