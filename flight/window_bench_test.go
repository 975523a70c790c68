package flight_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/mem"
)

// BenchmarkPutWindow measures what the server's stream window costs a
// DoPut's transport: one call sends 1 GiB to a grpc server whose handler
// reads and drops each message (no Weft code: the put's own work is not
// measured), with the server's stream window at 1 MiB, 256 KiB and 64 KiB,
// messages of 16 MiB (the clients' pieces), 1 MiB and 64 KiB, over
// loopback and through a proxy that delays every byte by 0.5 ms each way
// (a 1 ms round trip).
//
//	go test -run '^$' -bench BenchmarkPutWindow -benchtime 1x ./flight/
func BenchmarkPutWindow(b *testing.B) {
	if testing.Short() {
		b.Skip("sends 1 GiB per case")
	}
	const total = 1 << 30
	for _, rtt := range []time.Duration{0, time.Millisecond} {
		for _, msg := range []int{16 << 20, 1 << 20, 64 << 10} {
			for _, window := range []int32{1 << 20, 256 << 10, 64 << 10} {
				b.Run(fmt.Sprintf("rtt=%s/msg=%dKiB/window=%dKiB", rtt, msg>>10, window>>10), func(b *testing.B) {
					addr := serveSink(b, window)
					if rtt > 0 {
						addr = delayProxy(b, addr, rtt/2)
					}
					conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
						grpc.WithDefaultCallOptions(grpc.ForceCodecV2(rawCodec{}), grpc.MaxCallSendMsgSize(64<<20)))
					require.NoError(b, err)
					b.Cleanup(func() { _ = conn.Close() })
					body := &rawMsg{make([]byte, msg)}
					b.SetBytes(total)
					b.ResetTimer()
					for range b.N {
						s, err := conn.NewStream(context.Background(), &grpc.StreamDesc{ClientStreams: true, ServerStreams: true}, "/bench.Sink/Put")
						require.NoError(b, err)
						for sent := 0; sent < total; sent += msg {
							require.NoError(b, s.SendMsg(body))
						}
						require.NoError(b, s.CloseSend())
						require.ErrorIs(b, s.RecvMsg(&rawMsg{}), io.EOF)
					}
				})
			}
		}
	}
}

// serveSink serves a stream method that reads every message and drops
// it, with the server's stream window fixed at window (as flightd's).
func serveSink(b *testing.B, window int32) string {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(b, err)
	srv := grpc.NewServer(grpc.MaxRecvMsgSize(64<<20), grpc.InitialWindowSize(window), grpc.InitialConnWindowSize(16<<20), grpc.ForceServerCodecV2(dropCodec{}))
	srv.RegisterService(&grpc.ServiceDesc{ServiceName: "bench.Sink", HandlerType: (*any)(nil), Streams: []grpc.StreamDesc{{
		StreamName: "Put", ClientStreams: true, ServerStreams: true,
		Handler: func(_ any, ss grpc.ServerStream) error {
			for {
				var m rawMsg
				if err := ss.RecvMsg(&m); errors.Is(err, io.EOF) {
					return nil
				} else if err != nil {
					return err
				}
			}
		},
	}}}, nil)
	go func() { _ = srv.Serve(lis) }()
	b.Cleanup(srv.Stop)
	return lis.Addr().String()
}

// dropCodec receives messages without copying them out of grpc's buffers.
type dropCodec struct{ rawCodec }

func (dropCodec) Unmarshal(mem.BufferSlice, any) error { return nil }

// delayProxy forwards connections to addr, each byte delay after it
// arrived (unbounded bandwidth, a fixed latency each way).
func delayProxy(b *testing.B, addr string, delay time.Duration) string {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(b, err)
	var wg sync.WaitGroup
	b.Cleanup(func() { _ = lis.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", addr)
			if err != nil {
				_ = c.Close()
				continue
			}
			b.Cleanup(func() { _ = c.Close(); _ = s.Close() })
			wg.Go(func() { delayCopy(s, c, delay) })
			wg.Go(func() { delayCopy(c, s, delay) })
		}
	})
	return lis.Addr().String()
}

// delayCopy copies src to dst, writing each chunk delay after it was read.
func delayCopy(dst, src net.Conn, delay time.Duration) {
	type chunk struct {
		at time.Time
		b  []byte
	}
	ch := make(chan chunk, 1<<14)
	go func() {
		defer close(ch)
		for {
			buf := make([]byte, 64<<10)
			n, err := src.Read(buf)
			if n > 0 {
				ch <- chunk{time.Now().Add(delay), buf[:n]}
			}
			if err != nil {
				return
			}
		}
	}()
	for c := range ch {
		time.Sleep(time.Until(c.at))
		if _, err := dst.Write(c.b); err != nil {
			break
		}
	}
	_ = dst.Close()
	for range ch {
	}
}
