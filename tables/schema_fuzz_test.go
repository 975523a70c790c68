package tables_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/stretchr/testify/require"

	"github.com/weftdata/weft/errdefs"
	"github.com/weftdata/weft/tables"
)

// FuzzDecodeSchema feeds hostile bytes to the decoder of a manifest's
// schema (a manifest's id covers them, but its author may be any tool):
// it fails only with Corrupt, never panics, and allocates in proportion
// to its input.
func FuzzDecodeSchema(f *testing.F) {
	for _, s := range []*arrow.Schema{fuzzSchema, testSchema} {
		enc, err := tables.EncodeSchema(s)
		require.NoError(f, err)
		f.Add(enc)
		f.Add(enc[:len(enc)/2])
		for i := 8; i < len(enc); i += 7 {
			m := bytes.Clone(enc)
			m[i] ^= 0xff
			f.Add(m)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := tables.DecodeSchema(data)
		if err != nil {
			require.True(t, errors.Is(err, errdefs.ErrCorrupt), "%v", err)
			return
		}
		require.NotNil(t, s)
	})
}
