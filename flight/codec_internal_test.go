package flight

import (
	"bytes"
	"runtime"
	"testing"

	arrowflight "github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/encoding"
	grpcproto "google.golang.org/grpc/encoding/proto"
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

// frames cuts b into the pieces grpc's transport receives a message in
// (one per HTTP/2 DATA frame of 16 KiB), each in its own buffer, as the
// codec is handed them.
func frames(b []byte, size int) mem.BufferSlice {
	var s mem.BufferSlice
	for len(b) > 0 {
		n := min(size, len(b))
		s = append(s, mem.SliceBuffer(bytes.Clone(b[:n])))
		b = b[n:]
	}
	return s
}

func newTestCodec() *requestCodec {
	return &requestCodec{proto: encoding.GetCodecV2(grpcproto.Name), nonce: []byte("0123456789abcdef"), maxCommand: 4 << 20}
}

// TestFlightDataDecode: the codec's own decoder of FlightData gives what
// protobuf gives, for messages of every field, repeated fields, unknown
// fields and any cut into frames.
func TestFlightDataDecode(t *testing.T) {
	body := bytes.Repeat([]byte("0123456789"), 5000)
	desc := &arrowflight.FlightDescriptor{Type: arrowflight.DescriptorPATH, Path: []string{"p", "main", "t"}}
	full := &arrowflight.FlightData{FlightDescriptor: desc, DataHeader: []byte("header"), AppMetadata: []byte(`{"k":1}`), DataBody: body}
	enc := func(m proto.Message) []byte {
		b, err := proto.Marshal(m)
		require.NoError(t, err)
		return b
	}
	unknown := protoAppendBytes(nil, 7, []byte("unknown"))
	twice := append(enc(&arrowflight.FlightData{AppMetadata: []byte("first"), FlightDescriptor: &arrowflight.FlightDescriptor{Path: []string{"a"}}}),
		enc(&arrowflight.FlightData{AppMetadata: []byte("second"), FlightDescriptor: &arrowflight.FlightDescriptor{Path: []string{"b"}}})...)
	for _, tc := range []struct {
		name string
		wire []byte
	}{
		{"empty", nil},
		{"every field", enc(full)},
		{"body only", enc(&arrowflight.FlightData{DataBody: body})},
		{"repeated fields", twice},
		{"unknown field", append(enc(full), unknown...)},
		{"varint field", append(protoAppendVarint(nil, 9, 42), enc(full)...)},
	} {
		for _, size := range []int{1, 7, 16 << 10, 1 << 20} {
			want := &arrowflight.FlightData{}
			require.NoError(t, proto.Unmarshal(tc.wire, want))
			got := &arrowflight.FlightData{}
			require.NoError(t, newTestCodec().Unmarshal(frames(tc.wire, size), got), "%s in frames of %d", tc.name, size)
			require.True(t, proto.Equal(want, got), "%s in frames of %d", tc.name, size)
		}
	}
	// Malformed: marked as protobuf would refuse it.
	for _, bad := range [][]byte{
		{0x0a},             // a descriptor without its length
		{0x12, 0x05, 'a'},  // data_header shorter than its length
		{0xc2, 0x3e},       // data_body's tag, nothing more
		{0x0a, 0x02, 0xff}, // a descriptor that does not parse
	} {
		var m arrowflight.FlightData
		c := newTestCodec()
		require.NoError(t, c.Unmarshal(frames(bad, 1), &m))
		kind, msg, ok := c.marked(&m)
		require.True(t, ok, "%x", bad)
		require.Equal(t, byte(markMalformed), kind)
		require.NotEmpty(t, msg)
	}
}

func protoAppendBytes(b []byte, num int, v []byte) []byte {
	b = append(b, byte(num<<3|2), byte(len(v)))
	return append(b, v...)
}

func protoAppendVarint(b []byte, num int, v byte) []byte {
	return append(b, byte(num<<3), v)
}

// TestFlightDataDecodeCopies: decoding a 16 MiB put piece, received in
// frames, allocates its body once (the codec copies it out of grpc's
// frames, which grpc reuses), not the gathered copy and protobuf's copy
// that grpc's proto codec makes: the transient of one message is its
// frames and its body, which putCost leases (two messages).
func TestFlightDataDecodeCopies(t *testing.T) {
	const piece = 16 << 20
	wire, err := proto.Marshal(&arrowflight.FlightData{DataHeader: make([]byte, 200), DataBody: bytes.Repeat([]byte{7}, piece)})
	require.NoError(t, err)
	c := newTestCodec()
	var allocated uint64
	const rounds = 4
	for range rounds {
		data := frames(wire, 16<<10)
		var m arrowflight.FlightData
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		require.NoError(t, c.Unmarshal(data, &m))
		runtime.ReadMemStats(&after)
		require.Len(t, m.DataBody, piece)
		allocated += after.TotalAlloc - before.TotalAlloc
	}
	per := allocated / rounds
	t.Logf("decoding a %d MiB FlightData allocated %.1f MiB", piece>>20, float64(per)/(1<<20))
	require.Less(t, per, uint64(piece+piece/8), "the codec copied the body more than once")
	s := &Service{opts: DefaultOptions()}
	require.GreaterOrEqual(t, s.putCost()-2*s.opts.PutBufferBytes, int64(len(wire))+int64(per), "a put leases its message's frames and what decoding it allocates")
}

// FuzzFlightDataDecode: the codec's own FlightData decoder agrees with
// protobuf on any bytes, however grpc cuts them: both refuse them, or both
// decode the same message; and the decoded message does not alias grpc's
// buffers (overwriting them after Unmarshal changes nothing). Run it with:
//
//	go test -run '^$' -fuzz '^FuzzFlightDataDecode$' -fuzztime 30s ./flight/
func FuzzFlightDataDecode(f *testing.F) {
	full, err := proto.Marshal(&arrowflight.FlightData{
		FlightDescriptor: &arrowflight.FlightDescriptor{Type: arrowflight.DescriptorCMD, Cmd: []byte(`{"scan":{}}`), Path: []string{"a"}},
		AppMetadata:      []byte(`{"step":1}`), DataHeader: []byte{1, 2, 3}, DataBody: make([]byte, 300)})
	require.NoError(f, err)
	f.Add(full, []byte{3, 1, 200})
	f.Add(append(append([]byte(nil), full...), full...), []byte{})
	grp := protowire.AppendTag(nil, 9, protowire.StartGroupType)
	grp = protowire.AppendTag(grp, 1, protowire.VarintType)
	grp = protowire.AppendVarint(grp, 7)
	grp = protowire.AppendTag(grp, 9, protowire.EndGroupType)
	f.Add(grp, []byte{1, 1})
	f.Add([]byte{0x1a, 0xff, 0xff, 0xff, 0xff, 0x0f}, []byte{2})
	f.Fuzz(func(t *testing.T, data, cuts []byte) {
		want := &arrowflight.FlightData{}
		wantErr := proto.Unmarshal(data, want)
		bufs := splitSlice(bytes.Clone(data), cuts)
		got := &arrowflight.FlightData{}
		gotErr := unmarshalFlightData(bufs, got, nil)
		if wantErr != nil {
			require.Error(t, gotErr, "protobuf refuses %x (%v), the codec decodes it", data, wantErr)
			return
		}
		require.NoError(t, gotErr, "protobuf decodes %x, the codec does not", data)
		for _, b := range bufs {
			d := b.ReadOnlyData()
			for i := range d {
				d[i] ^= 0xff // grpc reuses its buffers once the codec returns
			}
		}
		require.True(t, proto.Equal(want, got), "%x: protobuf %v, codec %v", data, want, got)
	})
}
