package adversarial_test

import (
	"context"
	"errors"
	"fmt"
	"io"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
)

// The proto category: Flight messages that are not valid protobuf, sent
// as raw bytes (the Go protobuf runtime refuses to marshal them, as
// pyarrow's C++ one does not): strings that are not UTF-8, truncated
// fields, impossible wire types. grpc-go used to answer them Internal
// before any handler ran; the server's codec (flight/codec.go) makes them
// InvalidArgument.

// rawCodec sends and receives messages as the bytes they are.
type rawCodec struct{}

func (rawCodec) Name() string { return "proto" }

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	return mem.BufferSlice{mem.SliceBuffer(*v.(*[]byte))}, nil
}

func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	*v.(*[]byte) = data.Materialize()
	return nil
}

const flightService = "/arrow.flight.protocol.FlightService/"

// rawCall sends msg to method: unary, or a stream (server or both ways)
// read to its end.
func rawCall(ctx context.Context, conn *grpc.ClientConn, method string, msg []byte) error {
	opt := grpc.ForceCodecV2(rawCodec{})
	switch method {
	case "GetFlightInfo", "GetSchema":
		var out []byte
		return conn.Invoke(ctx, flightService+method, &msg, &out, opt)
	}
	s, err := conn.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true, ClientStreams: method == "DoPut"}, flightService+method, opt)
	if err != nil {
		return err
	}
	if err := s.SendMsg(&msg); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	if err := s.CloseSend(); err != nil {
		return err
	}
	for {
		var out []byte
		if err := s.RecvMsg(&out); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return err
		}
	}
}

func descPath(path ...string) []byte {
	b := protowire.AppendTag(nil, 1, protowire.VarintType)
	b = protowire.AppendVarint(b, 1) // PATH
	for _, p := range path {
		b = protowire.AppendTag(b, 3, protowire.BytesType)
		b = protowire.AppendString(b, p)
	}
	return b
}

func actionMsg(typ string, body []byte) []byte {
	b := protowire.AppendTag(nil, 1, protowire.BytesType)
	b = protowire.AppendString(b, typ)
	b = protowire.AppendTag(b, 2, protowire.BytesType)
	return protowire.AppendBytes(b, body)
}

func flightData(desc []byte) []byte {
	b := protowire.AppendTag(nil, 1, protowire.BytesType)
	return protowire.AppendBytes(b, desc)
}

// protoInputs are the raw messages of the proto category.
func protoInputs() []input {
	var out []input
	add := func(name, method string, msg []byte) {
		out = append(out, input{category: "proto", name: name, want: want(codes.InvalidArgument), call: func(ctx context.Context, fx *fixture) error {
			return rawCall(ctx, fx.raw, method, msg)
		}})
	}
	bad := map[string]string{
		"0xff":               "ad\xffv",
		"overlong":           "ma\xc0\x80in",
		"surrogate":          "\xed\xa0\x80",
		"cut multibyte":      "adv\xe2\x82",
		"latin-1":            "caf\xe9",
		"lone continuation":  "\x80adv",
		"past U+10FFFF":      "\xf4\x90\x80\x80",
		"five-byte sequence": "\xf8\x88\x80\x80\x80",
	}
	for _, name := range []string{"0xff", "overlong", "surrogate", "cut multibyte", "latin-1", "lone continuation", "past U+10FFFF", "five-byte sequence"} {
		add(fmt.Sprintf("GetFlightInfo path element %s", name), "GetFlightInfo", descPath("adv", bad[name], "t"))
	}
	add("GetSchema path element 0xff", "GetSchema", descPath(bad["0xff"], "main", "t"))
	add("GetFlightInfo last path element surrogate", "GetFlightInfo", descPath("adv", "main", bad["surrogate"]))
	add("DoAction type 0xff", "DoAction", actionMsg("log\xff", []byte(`{"project": "adv"}`)))
	add("DoAction type latin-1", "DoAction", actionMsg("cr\xe9ate_branch", []byte(`{}`)))
	add("DoAction type overlong", "DoAction", actionMsg("\xc0\xafetc", nil))
	add("DoPut descriptor path 0xff", "DoPut", flightData(descPath("adv", "ma\xffin", "t")))
	add("DoPut descriptor path surrogate", "DoPut", flightData(descPath(bad["surrogate"], "main", "t")))
	// Not protobuf at all.
	for _, m := range []string{"GetFlightInfo", "GetSchema", "DoAction", "DoGet", "ListFlights", "DoPut"} {
		add(m+" invalid tag", m, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
		add(m+" field longer than the message", m, []byte{0x1a, 0x7f, 'a'})
		add(m+" wire type 7", m, []byte{0x0f, 0x00})
	}
	add("GetFlightInfo field number 0", "GetFlightInfo", []byte{0x02, 0x01, 'a'})
	add("DoGet ticket cut short", "DoGet", []byte{0x0a, 0x10, 'w', 'e', 'f', 't'})
	add("GetFlightInfo group never ended", "GetFlightInfo", []byte{0x23, 0x08, 0x01})
	return out
}
