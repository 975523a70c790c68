package gpu

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestFlightdNeedsNoCUDA builds cmd/flightd (with cgo, as `make flightd`
// does, and with CGO_ENABLED=0 as the static build) and reads the ELF
// dynamic section: no NEEDED libcuda or libnvcuvid, ever (they are dlopened).
func TestFlightdNeedsNoCUDA(t *testing.T) {
	if testing.Short() {
		t.Skip("builds flightd twice; not in -short")
	}
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Dir(filepath.Dir(file))
	for _, cgo := range []string{"1", "0"} {
		t.Run("CGO_ENABLED="+cgo, func(t *testing.T) {
			bin := filepath.Join(t.TempDir(), "flightd")
			cmd := exec.Command("go", "build", "-o", bin, "./cmd/flightd")
			cmd.Dir = root
			cmd.Env = append(os.Environ(), "CGO_ENABLED="+cgo)
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "%s", out)
			f, err := elf.Open(bin)
			require.NoError(t, err)
			defer f.Close()
			libs, err := f.ImportedLibraries()
			require.NoError(t, err)
			t.Logf("NEEDED: %v", libs)
			for _, l := range libs {
				require.False(t, strings.Contains(l, "cuda") || strings.Contains(l, "nvcuvid"), "flightd NEEDs %s", l)
			}
			if cgo == "0" {
				require.Empty(t, libs, "the CGO_ENABLED=0 build must stay static")
			}
		})
	}
}
