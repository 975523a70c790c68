package flight

import (
	"testing"

	arrowflight "github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// splitSlice is data as a mem.BufferSlice cut at cuts (each byte of cuts
// a chunk length, 0 skipped), as grpc hands a message to the codec.
func splitSlice(data, cuts []byte) mem.BufferSlice {
	var bs mem.BufferSlice
	for _, c := range cuts {
		n := min(int(c), len(data))
		if n == 0 {
			continue
		}
		bs = append(bs, mem.SliceBuffer(data[:n]))
		data = data[n:]
	}
	if len(data) > 0 {
		bs = append(bs, mem.SliceBuffer(data))
	}
	return bs
}

// FuzzFlightDataSizes: the codec's tag walker never panics on hostile
// bytes, however grpc cuts them, and for every FlightData that protobuf
// decodes it parses too, with app_metadata's size exactly and at least
// the decoded descriptor's size (a repeated descriptor is merged: its
// parts' sizes add up to no less), so that no message that decodes
// slips past the size limits. Run it with:
//
//	go test -run '^$' -fuzz '^FuzzFlightDataSizes$' -fuzztime 60s ./flight/
func FuzzFlightDataSizes(f *testing.F) {
	desc, err := proto.Marshal(&arrowflight.FlightData{
		FlightDescriptor: &arrowflight.FlightDescriptor{Type: arrowflight.DescriptorCMD, Cmd: []byte(`{"scan":{}}`)},
		AppMetadata:      []byte(`{"step":1}`), DataHeader: []byte{1, 2, 3}, DataBody: make([]byte, 300)})
	require.NoError(f, err)
	f.Add(desc, []byte{3, 1, 200})
	f.Add(append(append([]byte(nil), desc...), desc...), []byte{})
	// an unknown group before app_metadata (protobuf skips it)
	grp := protowire.AppendTag(nil, 9, protowire.StartGroupType)
	grp = protowire.AppendTag(grp, 1, protowire.VarintType)
	grp = protowire.AppendVarint(grp, 7)
	grp = protowire.AppendTag(grp, 9, protowire.EndGroupType)
	grp = protowire.AppendTag(grp, fieldAppMetadata, protowire.BytesType)
	grp = protowire.AppendBytes(grp, make([]byte, 100))
	f.Add(grp, []byte{1, 1})
	f.Add([]byte{0x1a, 0xff, 0xff, 0xff, 0xff, 0x0f}, []byte{2})
	f.Fuzz(func(t *testing.T, data, cuts []byte) {
		desc, meta, ok := flightDataSizes(splitSlice(data, cuts))
		if ok {
			require.GreaterOrEqual(t, desc, 0)
			require.GreaterOrEqual(t, meta, 0)
			require.LessOrEqual(t, desc+meta, len(data))
		}
		var fd arrowflight.FlightData
		if proto.Unmarshal(data, &fd) != nil {
			return
		}
		require.True(t, ok, "protobuf decodes it, the walker does not")
		require.Equal(t, len(fd.AppMetadata), meta)
		if fd.FlightDescriptor != nil {
			require.GreaterOrEqual(t, desc, proto.Size(fd.FlightDescriptor))
		}
	})
}
