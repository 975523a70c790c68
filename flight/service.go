package flight

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	arrowflight "github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/weftdata/weft/auth"
	"github.com/weftdata/weft/importers"
	"github.com/weftdata/weft/internal/membudget"
	"github.com/weftdata/weft/mix"
	"github.com/weftdata/weft/slots"
	"github.com/weftdata/weft/tables"
	"github.com/weftdata/weft/versions"
)

// Service implements the Flight protocol over a tables.Store. It holds no
// state of its own beyond the store: any number of Services over one
// bucket serve the same data and accept each other's tickets.
type Service struct {
	arrowflight.BaseFlightServer

	tables *tables.Store
	v      *versions.Store
	mix    *mix.Engine
	// importer runs DoAction import; nil: the action is unimplemented.
	importer *importers.Importer
	// appendCheck builds each put's batch check (Parts.AppendCheck); nil: none.
	appendCheck func(ctx context.Context, p versions.ProjectName, t versions.TableName, schema *arrow.Schema) (tables.BatchCheck, error)
	authn       *auth.Interceptors
	signer      *auth.Signer
	opts        Options
	budget      *membudget.Budget // nil: unlimited
	lim         *limiter          // limits.go
	calls       *callLimit        // conns.go
	mem         memory.Allocator
	log         *slog.Logger
	// beforeCall, when set (tests only), runs at the start of DoAction,
	// GetFlightInfo and DoGet with the method's name.
	beforeCall func(method string)
	// localPeer says whether a call's peer is on this host (isLocalPeer;
	// tests replace it to play a remote peer).
	localPeer func(ctx context.Context) bool
	// slotDir is where host-slot rings are made ("": /dev/shm); ringHook,
	// when set (tests only), is called with each ring made.
	slotDir  string
	ringHook func(*slots.Ring)
	// clientEndHook, when set (tests only), is called when an exchange's
	// client has ended its side (readReleases' io.EOF).
	clientEndHook func()
	// slotBytes, when positive (tests only), is every ring's slot size.
	slotBytes int64
	// slotSteps counts host-slot steps by how they reached their slot.
	slotSteps slotCounts
	// gpu serves "cuda-ipc" exchanges; nil: none (they get host slots).
	gpu *GPUDelivery
}

var _ arrowflight.FlightServer = (*Service)(nil)

// Parts are what a Service serves, built by the caller (cmd/flightd wires
// them in one place) and owned by it: the Service closes none of them.
type Parts struct {
	// Tables is the store of tables; required.
	Tables *tables.Store
	// Mix serves training runs; required. Build it over Tables.
	Mix *mix.Engine
	// Authenticator checks the bearer token of every call (an
	// *auth.Store); nil is auth.Open{}: every call may do everything, the
	// loopback development mode (cmd/flightd allows it only on a loopback
	// address, or with --insecure). The handlers check scopes either way
	// (see authz.go).
	Authenticator auth.Authenticator
	// Signer signs the tickets the Service issues and verifies those DoGet
	// receives. Share one key set by building it over the Tables' bucket
	// (auth.NewSigner), so that every server over the bucket accepts every
	// other's tickets. nil: New builds one over that bucket with
	// auth.DefaultSignerOptions, which creates the bucket's first key if
	// there is none (a write to the store; cmd/flightd builds it itself).
	Signer *auth.Signer
	// Budget is the process's memory budget (flightd's --memory-limit):
	// rank and scan streams lease the bytes they hold, puts the message
	// and the row group they buffer. Build the mix engine's and the
	// tables store's caches over the same budget. nil is unlimited.
	Budget *membudget.Budget
	// AppendCheck, if set, is called once per put (DoPut of rows) with the
	// put's schema, before any batch is stored; the check it returns (nil:
	// none) becomes the append's tables.AppendOptions.Check, which refuses
	// batches (episodes.AppendCheck: video rows whose time has no frame).
	AppendCheck func(ctx context.Context, p versions.ProjectName, t versions.TableName, schema *arrow.Schema) (tables.BatchCheck, error)
	// Importer runs DoAction import (server-side imports); nil refuses
	// them (Unimplemented). Build it over Tables, with the server's
	// import roots.
	Importer *importers.Importer
	// GPU, if set, serves exchanges that ask for delivery "cuda-ipc":
	// video windows decoded on its device into device slots (docs/gpu.md).
	// nil: those exchanges get host slots, and their header says why.
	GPU *GPUDelivery
	// Metrics: a prometheus.Registerer joins here with issue 11's metrics
	// (not a dependency yet).
}

// New returns a Service serving parts.
func New(parts Parts, opts Options) (*Service, error) {
	switch {
	case parts.Tables == nil:
		return nil, errors.New("flight: New needs Parts.Tables")
	case parts.Mix == nil:
		return nil, errors.New("flight: New needs Parts.Mix (mix.New over Parts.Tables)")
	}
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	s := &Service{tables: parts.Tables, v: parts.Tables.Versions(), mix: parts.Mix, importer: parts.Importer, appendCheck: parts.AppendCheck, gpu: parts.GPU, signer: parts.Signer, opts: opts, budget: parts.Budget, lim: newLimiter(opts), mem: opts.Allocator, log: opts.Logger, localPeer: isLocalPeer}
	if s.mem == nil {
		s.mem = memory.DefaultAllocator
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.calls = newCallLimit(opts.MaxCalls, s.log)
	authn := parts.Authenticator
	if authn == nil {
		authn = auth.Open{}
	}
	var err error
	if s.authn, err = auth.NewInterceptors(auth.InterceptorOptions{Authenticator: authn}); err != nil {
		return nil, err
	}
	if s.signer == nil {
		ctx, cancel := context.WithTimeout(context.Background(), signerTimeout)
		defer cancel()
		so := auth.DefaultSignerOptions()
		so.Logger = s.log
		if s.signer, err = auth.NewSigner(ctx, s.v.Bucket(), so); err != nil {
			return nil, fmt.Errorf("flight: ticket signer: %w", err)
		}
	}
	return s, nil
}

// signerTimeout bounds New's reading (or creating) of the ticket keys.
const signerTimeout = 30 * time.Second

// MixStats returns the counters of the block cache that serves runs.
func (s *Service) MixStats() mix.Stats { return s.mix.Stats() }

// Ping checks that the store answers: it lists at most one key.
func (s *Service) Ping(ctx context.Context) error {
	for _, err := range s.v.Bucket().List(ctx, versions.ProjectsPrefix) {
		return err
	}
	return nil
}

// NewServer returns a gRPC server with this Service registered as the
// Flight service, its message size limits set, one log line per call, panic
// recovery, and authentication of every call (after recovery, so that a
// panic in the token store is answered too). It serves every method as a
// stream and has no unary interceptors. Serve adds the connection limit
// (MaxConnections) to its listener; a caller serving the returned server
// itself should wrap its listener with LimitListener.
//
// It is a plain grpc.Server rather than arrow-go's flight.Server because
// Serve needs Stop (to cancel calls after the shutdown grace), which
// flight.Server hides; Weft uses no Flight auth handler, the one thing
// flight.NewServerWithMiddleware would add.
func (s *Service) NewServer() *grpc.Server {
	opts := append([]grpc.ServerOption{
		grpc.MaxRecvMsgSize(s.opts.MaxRecvMessageBytes),
		grpc.WaitForHandlers(true),
		// Every method is a stream (serviceDesc), so stream interceptors
		// cover every call; refuseOver first (the call limit's refusals of
		// calls with a deadline, conns.go), then recvCaps, on grpc's own stream.
		grpc.ChainStreamInterceptor(refuseOver, s.recvCaps, s.logStream, s.recoverStream, s.authn.Stream),
	}, s.opts.ServerOptions...)
	opts = append(opts, s.connOptions()...)             // connections' streams, handshakes, pings (conns.go)
	opts = append(opts, requestCodecOptions(s.opts)...) // malformed or oversized requests (codec.go)
	opts = append(opts, s.gateOptions()...)             // first messages received at once (recvgate.go)
	srv := grpc.NewServer(opts...)
	srv.RegisterService(s.serviceDesc(), s)
	return srv
}

// Serve serves Flight on lis until ctx ends, then stops accepting calls,
// lets running calls finish for up to Options.ShutdownGrace, cancels the
// rest, and returns once every handler has returned. It returns nil after
// a shutdown asked for by ctx. It closes lis; the Parts stay open.
func (s *Service) Serve(ctx context.Context, lis net.Listener) error {
	srv := s.NewServer()
	lis = LimitListener(lis, s.opts.MaxConnections, s.log)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	select {
	case err := <-served:
		return fmt.Errorf("flight server: %w", err)
	case <-ctx.Done():
	}
	s.log.Info("shutting down: no new calls; waiting for running calls", "grace", s.opts.ShutdownGrace)
	stopped := make(chan struct{})
	go func() {
		srv.GracefulStop()
		close(stopped)
	}()
	timer := time.NewTimer(s.opts.ShutdownGrace)
	defer timer.Stop()
	select {
	case <-stopped:
	case <-timer.C:
		s.log.Warn("shutdown grace is over: cancelling the running calls")
		srv.Stop()
		<-stopped
	}
	if err := <-served; err != nil && !errors.Is(err, grpc.ErrServerStopped) {
		return fmt.Errorf("flight server: %w", err)
	}
	s.log.Info("stopped")
	return nil
}

func (s *Service) logStream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	start := time.Now()
	err := handler(srv, ss)
	s.logCall(ss.Context(), info.FullMethod, start, err)
	return err
}

func (s *Service) logCall(ctx context.Context, method string, start time.Time, err error) {
	c := status.Code(err)
	level := slog.LevelInfo
	if c == codes.Internal || c == codes.Unknown {
		level = slog.LevelError
	}
	attrs := []slog.Attr{slog.String("method", method), slog.String("code", c.String()), slog.Duration("dur", time.Since(start))}
	if err != nil && c != codes.Internal {
		attrs = append(attrs, slog.String("err", status.Convert(err).Message()))
	}
	s.log.LogAttrs(ctx, level, "call", attrs...)
}
