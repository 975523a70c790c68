package client_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftdata/weft/client"
	"github.com/weftdata/weft/errdefs"
)

func TestSlotMessagesDecode(t *testing.T) {
	t.Parallel()
	var d client.SlotDescriptor
	require.NoError(t, client.Decode("slot descriptor", []byte(`{"ring":"/dev/shm/weft-ring-00","slot":1,"generation":2,"offset":1048640,"length":408}`), &d))
	require.Equal(t, client.SlotDescriptor{Ring: "/dev/shm/weft-ring-00", Slot: 1, Generation: 2, Offset: 1048640, Length: 408}, d)
	var r client.SlotRelease
	require.NoError(t, client.Decode("slot release", []byte(`{"slot":1,"generation":2}`), &r))
	require.Equal(t, client.SlotRelease{Slot: 1, Generation: 2}, r)

	for _, tc := range []struct {
		name string
		body string
		v    any
	}{
		{"descriptor without ring", `{"slot":0,"generation":1,"offset":0,"length":8}`, &client.SlotDescriptor{}},
		{"descriptor generation 0", `{"ring":"r","slot":0,"generation":0,"offset":0,"length":8}`, &client.SlotDescriptor{}},
		{"descriptor negative slot", `{"ring":"r","slot":-1,"generation":1,"offset":0,"length":8}`, &client.SlotDescriptor{}},
		{"descriptor negative offset", `{"ring":"r","slot":0,"generation":1,"offset":-8,"length":8}`, &client.SlotDescriptor{}},
		{"descriptor empty", `{"ring":"r","slot":0,"generation":1,"offset":0,"length":0}`, &client.SlotDescriptor{}},
		{"descriptor unknown field", `{"ring":"r","slot":0,"generation":1,"offset":0,"length":8,"x":1}`, &client.SlotDescriptor{}},
		{"release generation 0", `{"slot":0,"generation":0}`, &client.SlotRelease{}},
		{"release negative slot", `{"slot":-1,"generation":1}`, &client.SlotRelease{}},
		{"release null", `{"slot":null,"generation":1}`, &client.SlotRelease{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.ErrorIs(t, client.Decode("slot message", []byte(tc.body), tc.v), errdefs.ErrInvalidArgument)
		})
	}
}
