package flight

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
)

// Options configure a Service.
type Options struct {
	// Logger receives one line per call and the causes of internal errors;
	// nil discards.
	Logger *slog.Logger
	// Allocator for the Arrow memory of streams; nil means
	// memory.DefaultAllocator.
	Allocator memory.Allocator
	// MaxRecvMessageBytes bounds one incoming gRPC message (one DoPut
	// batch). gRPC's default is 4 MiB; Weft accepts 64 MiB, so that every
	// put leases one message's worth of the memory budget before it
	// receives anything. The clients cut larger batches into pieces of
	// 16 MiB (client.PutPieceBytes, python/weft).
	MaxRecvMessageBytes int
	// BatchBytes is the target size of one DoGet record batch: scans are
	// sliced to stay at or below it whenever single rows allow. Keep it
	// well under 4 MiB, the default receive limit of gRPC clients.
	BatchBytes int64
	// EndpointBytes is the target Parquet size of one scan endpoint: a
	// scan's row groups are grouped, in order, into endpoints of about
	// this many bytes (never splitting a row group).
	EndpointBytes int64
	// Prefetch is how many batches DoGet decodes ahead of the one it is
	// sending (0: decode and send in turn).
	Prefetch int
	// ShutdownGrace is how long Serve lets running calls finish after its
	// context ends before it cancels them.
	ShutdownGrace time.Duration
	// StepMessageBytes is the largest message of a rank stream: a step
	// whose batch is larger goes out as several slices of it, each at most
	// this size when single rows allow, with app_metadata parts that
	// clients reassemble (docs/flight.md). 3 MiB keeps every step within
	// gRPC clients' default 4 MiB receive limit.
	StepMessageBytes int64
	// SlotInlineBytes: on a host-slot exchange, steps smaller than this
	// (their Arrow buffers) are sent inline, as DoGet sends them: for a
	// step of a few KiB, a copy through gRPC costs less than a slot's
	// descriptor and release (two messages instead of one). 0 puts every
	// step that fits in a slot.
	SlotInlineBytes int64
	// PutTimeout bounds a DoPut from its first message to its commit: a
	// put still running then fails with DeadlineExceeded and commits
	// nothing. It must stay well under the grace period of garbage
	// collection (`flightd admin gc --older-than`, 24 h by convention),
	// which assumes every put finishes within it (see package gc).
	PutTimeout time.Duration
	// Limits on each request (see docs/operations.md, "Limits"): a call
	// over one is refused with InvalidArgument (too big by definition) or,
	// for the concurrency limits, ResourceExhausted after waiting up to
	// QueueWait.

	// MaxCommandBytes bounds a JSON command (a GetFlightInfo or GetSchema
	// descriptor), a DoAction body and a DoPut's app_metadata, checked
	// before they are decoded.
	MaxCommandBytes int
	// MaxWorldSize bounds a run command's world_size: the endpoints, and
	// the tickets, of one FlightInfo.
	MaxWorldSize int
	// MaxReplyBytes bounds the encoded size of one FlightInfo (a run's
	// record and endpoints, a scan's endpoints).
	MaxReplyBytes int
	// MaxStepBytes bounds one rank's step (batch_size/world_size rows
	// times the run's widest row), refused when a run is planned and when
	// its stream starts. With a Budget, a rank stream's estimated holding
	// (StreamSteps steps and StreamBlocks blocks) must also fit in half of
	// it.
	MaxStepBytes int64
	// MaxListEntries bounds the entries of one log or list_branches
	// result.
	MaxListEntries int
	// MaxStreams bounds the DoGet streams (scans and rank streams) served
	// at once; MaxPuts the DoPuts. A call over the bound waits up to
	// QueueWait for a slot, then fails with ResourceExhausted.
	MaxStreams, MaxPuts int
	QueueWait           time.Duration
	// MaxReceiving bounds the calls (other than DoPut, which leases its
	// messages) whose first message is being received at once, each up to
	// MaxRecvMessageBytes before any lease counts it (recvgate.go); a call
	// over it waits up to QueueWait, then fails with ResourceExhausted.
	// Messages after a call's first (a DoExchange's slot releases) are
	// refused over 64 KiB, before they are received. Keep ReceivingBytes
	// of the process's memory out of the Budget.
	MaxReceiving int
	// MaxConnections bounds the client connections served at once (Serve
	// closes the ones accepted over it; LimitListener); MaxConnStreams the
	// calls open at once on one connection (grpc refuses more); and
	// ConnTimeout how long a new connection may take to set up (its TLS
	// and HTTP/2 handshakes: a client that sends nothing is closed then).
	// Each connection holds grpc's buffers (128 KiB counted) that no lease
	// counts (conns.go): ReceivingBytes counts them.
	MaxConnections, MaxConnStreams int
	ConnTimeout                    time.Duration
	// ConnIdle is how long a connection with no call open is kept: then
	// the server closes it (grpc's MaxConnectionIdle: a GOAWAY; grpc and
	// pyarrow clients reconnect at their next call), so connections that
	// completed their handshake and then sit idle (a forgotten notebook,
	// or a client holding places on purpose) give back their
	// MaxConnections places.
	ConnIdle time.Duration
	// MaxCalls bounds the calls open at once on all connections together
	// (every method; a call waiting at a limit, for a slot or for memory,
	// is open): one over it is refused with ResourceExhausted as its
	// headers arrive, before anything of it is received or authenticated
	// (conns.go, callLimit). Each open call may hold a flow-control window
	// (StreamWindowBytes) of data its handler has not read, which no lease
	// counts: ReceivingBytes counts MaxCalls windows. The default, 512, is
	// twice MaxStreams: every stream slot busy (a trainer of 64 ranks
	// holds 128, a rank stream and a slot exchange each, and its scans
	// more) with as many calls again waiting for one or running briefly
	// (plans, actions, MaxPuts puts); at 256 KiB windows it keeps 128 MiB
	// out of the budget. A hostile client is bounded by it, not by
	// MaxConnections × MaxConnStreams windows (64 GiB at the defaults); it
	// can still take every place for as long as its calls stay open (an
	// unauthenticated call ends at its authentication; a waiting one
	// after QueueWait or ReceiveTimeout).
	MaxCalls int
	// StreamWindowBytes is the server's flow-control window of each call
	// (grpc's InitialWindowSize, fixed: grpc's bandwidth estimate would
	// grow it to 16 MiB): what grpc buffers of a call whose handler is not
	// reading, and what a client may send a call per round trip when its
	// messages are smaller than the window. A message larger than the
	// window is let in whole while its handler reads it (grpc opens the
	// window by the message's size), so a DoPut of the clients' 16 MiB
	// pieces is not slowed by a small window; one of small batches is
	// (BenchmarkPutWindow, 1 ms round trip, 64 KiB messages: 240 MB/s at
	// 1 MiB, 69 MB/s at 256 KiB, 24 MB/s at 64 KiB; 16 MiB pieces
	// ~800 MB/s at all three). 64 KiB (HTTP/2's default) to 16 MiB (the
	// connection's window).
	StreamWindowBytes int
	// ReceiveTimeout bounds how long an admitted call's first message may
	// take to arrive (it holds one of MaxReceiving places meanwhile); the
	// call then fails with DeadlineExceeded. Keep it under QueueWait.
	ReceiveTimeout time.Duration
	// StreamSteps and StreamBlocks are what a rank stream holds at most:
	// steps being built, prefetched or sent (mix's Prefetch + 2) and
	// decoded blocks pinned for them (mix's ReadAhead). A stream leases
	// their estimated bytes from the Budget for as long as it runs.
	StreamSteps, StreamBlocks int
	// PutBufferBytes is what a put buffers before its row group is
	// written (tables' RowGroupBytes): a put leases up to this much, as
	// its rows arrive, on top of one message.
	PutBufferBytes int64

	// Advertise lists the Flight locations (grpc://HOST:PORT or
	// grpc+tls://HOST:PORT) of the servers over this one's bucket, this
	// one included if it should get streams: endpoint i of a run (rank i)
	// or a scan gets them all as its locations, starting with server
	// i mod N (advertise.go). Empty: endpoints carry no location (clients
	// read from the server they asked).
	Advertise []string

	// ServerOptions are added to the gRPC server's own (interceptors run
	// after the Service's recovery interceptor). They may not set an
	// InTapHandle (the Service's call limit is grpc's one tap).
	ServerOptions []grpc.ServerOption
}

// DefaultOptions: 64 MiB put messages, 3 MiB scan batches and step
// messages, 128 MiB endpoints, 4 batches decoded ahead, 10 s shutdown
// grace, 1 h put timeout; limits: 4 MiB commands, world_size 4096, 16 MiB
// replies, 256 MiB steps, 10,000 list entries, 256 streams, 16 puts and
// 2 first messages being received at once with 10 s of waiting for a
// slot; 512 connections of at most 128 calls each, 10 s to set one up,
// 512 calls open at once, 256 KiB stream windows.
func DefaultOptions() Options {
	return Options{
		MaxCommandBytes:     4 << 20,
		MaxWorldSize:        4096,
		MaxReplyBytes:       16 << 20,
		MaxStepBytes:        256 << 20,
		MaxListEntries:      10000,
		MaxStreams:          256,
		MaxPuts:             16,
		MaxReceiving:        2,
		MaxConnections:      512,
		MaxConnStreams:      128,
		MaxCalls:            512,
		StreamWindowBytes:   256 << 10,
		ConnTimeout:         10 * time.Second,
		ConnIdle:            5 * time.Minute,
		ReceiveTimeout:      5 * time.Second,
		QueueWait:           10 * time.Second,
		StreamSteps:         6,
		StreamBlocks:        8,
		PutBufferBytes:      128 << 20,
		MaxRecvMessageBytes: 64 << 20,
		BatchBytes:          3 << 20,
		EndpointBytes:       128 << 20,
		Prefetch:            4,
		ShutdownGrace:       10 * time.Second,
		StepMessageBytes:    3 << 20,
		SlotInlineBytes:     64 << 10,
		PutTimeout:          time.Hour,
	}
}

// Validate reports an unusable option.
func (o Options) Validate() error {
	switch {
	case o.ReceiveTimeout <= 0:
		return fmt.Errorf("flight options: ReceiveTimeout is %s; it must be positive", o.ReceiveTimeout)
	case o.MaxRecvMessageBytes < 1<<20:
		return fmt.Errorf("flight options: MaxRecvMessageBytes is %d; it must be at least 1 MiB", o.MaxRecvMessageBytes)
	case o.BatchBytes < 1:
		return fmt.Errorf("flight options: BatchBytes is %d; it must be positive", o.BatchBytes)
	case o.EndpointBytes < 1:
		return fmt.Errorf("flight options: EndpointBytes is %d; it must be positive", o.EndpointBytes)
	case o.Prefetch < 0:
		return fmt.Errorf("flight options: Prefetch is %d; it must be 0 or more", o.Prefetch)
	case o.ShutdownGrace < 0:
		return fmt.Errorf("flight options: ShutdownGrace is %v; it must be 0 or more", o.ShutdownGrace)
	case o.SlotInlineBytes < 0:
		return fmt.Errorf("flight options: SlotInlineBytes is %d; it must be 0 or more", o.SlotInlineBytes)
	case o.StepMessageBytes < 1:
		return fmt.Errorf("flight options: StepMessageBytes is %d; it must be positive", o.StepMessageBytes)
	case o.MaxCommandBytes < 1<<10 || o.MaxReplyBytes < 1<<10:
		return fmt.Errorf("flight options: MaxCommandBytes (%d) and MaxReplyBytes (%d) must be at least 1 KiB", o.MaxCommandBytes, o.MaxReplyBytes)
	case o.MaxWorldSize < 1 || o.MaxListEntries < 1 || o.MaxStreams < 1 || o.MaxPuts < 1 || o.MaxReceiving < 1:
		return fmt.Errorf("flight options: MaxWorldSize (%d), MaxListEntries (%d), MaxStreams (%d), MaxPuts (%d) and MaxReceiving (%d) must be at least 1", o.MaxWorldSize, o.MaxListEntries, o.MaxStreams, o.MaxPuts, o.MaxReceiving)
	case o.MaxStepBytes < 1 || o.PutBufferBytes < 0 || o.StreamSteps < 1 || o.StreamBlocks < 0 || o.QueueWait < 0:
		return fmt.Errorf("flight options: MaxStepBytes (%d) and StreamSteps (%d) must be positive; PutBufferBytes, StreamBlocks and QueueWait 0 or more", o.MaxStepBytes, o.StreamSteps)
	case o.MaxConnections < 1 || o.MaxConnStreams < 1 || o.ConnTimeout <= 0 || o.ConnIdle <= 0:
		return fmt.Errorf("flight options: MaxConnections (%d), MaxConnStreams (%d), ConnTimeout (%s) and ConnIdle (%s) must be positive", o.MaxConnections, o.MaxConnStreams, o.ConnTimeout, o.ConnIdle)
	case o.MaxCalls < 1:
		return fmt.Errorf("flight options: MaxCalls is %d; it must be at least 1", o.MaxCalls)
	case o.StreamWindowBytes < minStreamWindowBytes || o.StreamWindowBytes > recvConnWindowBytes:
		return fmt.Errorf("flight options: StreamWindowBytes is %d; it must be from 64 KiB to 16 MiB (the connection's window)", o.StreamWindowBytes)
	case o.PutTimeout <= 0:
		return fmt.Errorf("flight options: PutTimeout is %v; it must be positive (and under the gc grace period)", o.PutTimeout)
	}
	return checkAdvertise(o.Advertise)
}
