package gpu

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestOptionsValidate: DefaultOptions is valid (ReleaseWait 30 s); each
// unusable field is ErrInvalidOptions.
func TestOptionsValidate(t *testing.T) {
	require.NoError(t, DefaultOptions().Validate())
	require.Equal(t, 30*time.Second, DefaultOptions().ReleaseWait)
	for _, tc := range []struct {
		name string
		set  func(*Options)
	}{
		{"no CudaLib", func(o *Options) { o.CudaLib = "" }},
		{"negative device", func(o *Options) { o.Device = -1 }},
		{"no decoders", func(o *Options) { o.MaxDecoders = 0 }},
		{"no release wait", func(o *Options) { o.ReleaseWait = 0 }},
		{"negative release wait", func(o *Options) { o.ReleaseWait = -time.Second }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := DefaultOptions()
			tc.set(&o)
			require.ErrorIs(t, o.Validate(), ErrInvalidOptions)
		})
	}
}
