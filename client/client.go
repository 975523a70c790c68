package client

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"net/url"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	arrowflight "github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
)

// Options configure a Client.
type Options struct {
	// TLS, when set, connects with TLS (grpc+tls://); nil is plaintext,
	// for loopback.
	TLS *tls.Config
	// Token, when set, is sent as "authorization: Bearer TOKEN" on every
	// call.
	Token string
	// MaxRecvMessageBytes bounds one incoming message; 0 keeps gRPC's
	// default (4 MiB), which every Weft stream fits unless a single row
	// is larger: the server splits bigger steps and scan batches.
	MaxRecvMessageBytes int
	// MaxSendMessageBytes bounds one outgoing message (one Put batch); 0
	// keeps gRPC's default (no limit on the client side; the server
	// accepts 64 MiB by default). Put cuts batches into pieces of about
	// PutPieceBytes anyway.
	MaxSendMessageBytes int
	// Allocator for the Arrow memory of streams; nil means
	// memory.DefaultAllocator.
	Allocator memory.Allocator
	// DialOptions are added to the client's own.
	DialOptions []grpc.DialOption
	// Logger receives what the client tells no caller: a rank exchange
	// it had to cancel once ExchangeEndWait ran out (DeviceConsumer.Ended).
	// nil discards.
	Logger *slog.Logger
}

// PutPieceBytes is the most Arrow bytes Put sends in one message, when
// rows allow: larger batches go as consecutive slices, well within the
// server's message limit (flightd --max-message-size, 64 MiB by default).
const PutPieceBytes = 16 << 20

// pieces yields rec as slices of about at most size bytes (whole rows;
// sizes estimated from the average row), each to be released.
func pieces(rec arrow.RecordBatch, size int64) iter.Seq[arrow.RecordBatch] {
	return func(yield func(arrow.RecordBatch) bool) {
		n := rec.NumRows()
		var total int64
		for _, c := range rec.Columns() {
			total += dataBytes(c.Data())
		}
		if total <= size || n <= 1 {
			rec.Retain()
			yield(rec)
			return
		}
		rows := max(1, n*size/total)
		for i := int64(0); i < n; i += rows {
			if !yield(rec.NewSlice(i, min(n, i+rows))) {
				return
			}
		}
	}
}

// dataBytes is the bytes of d's buffers and its children's.
func dataBytes(d arrow.ArrayData) int64 {
	var n int64
	for _, b := range d.Buffers() {
		if b != nil {
			n += int64(b.Len())
		}
	}
	for _, c := range d.Children() {
		n += dataBytes(c)
	}
	return n
}

// Client is a connection to a flightd. Safe for concurrent use.
type Client struct {
	fc  arrowflight.Client
	mem memory.Allocator
	log *slog.Logger
}

// Dial connects to the flightd at addr (HOST:PORT). The connection is made
// lazily, on the first call.
func Dial(addr string, opts Options) (*Client, error) {
	var dial []grpc.DialOption
	if opts.TLS != nil {
		dial = append(dial, grpc.WithTransportCredentials(credentials.NewTLS(opts.TLS)))
	} else {
		dial = append(dial, grpc.WithTransportCredentials(insecure.NewCredentials()))
	}
	if opts.Token != "" {
		dial = append(dial, grpc.WithPerRPCCredentials(bearer{token: opts.Token, secure: opts.TLS != nil}))
	}
	var call []grpc.CallOption
	if opts.MaxRecvMessageBytes > 0 {
		call = append(call, grpc.MaxCallRecvMsgSize(opts.MaxRecvMessageBytes))
	}
	if opts.MaxSendMessageBytes > 0 {
		call = append(call, grpc.MaxCallSendMsgSize(opts.MaxSendMessageBytes))
	}
	if len(call) > 0 {
		dial = append(dial, grpc.WithDefaultCallOptions(call...))
	}
	dial = append(dial, opts.DialOptions...)
	fc, err := arrowflight.NewClientWithMiddleware(addr, nil, nil, dial...)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	mem := opts.Allocator
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Client{fc: fc, mem: mem, log: log}, nil
}

// Close closes the connection.
func (c *Client) Close() error { return c.fc.Close() }

// Flight is the underlying Flight client, for calls this package does not
// wrap.
func (c *Client) Flight() arrowflight.Client { return c.fc }

// bearer sends a bearer token with every call.
type bearer struct {
	token  string
	secure bool
}

func (b bearer) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + b.token}, nil
}

func (b bearer) RequireTransportSecurity() bool { return b.secure }

// action runs one DoAction with a JSON body and decodes its one result.
func (c *Client) action(ctx context.Context, name string, body, into any) error {
	raw, err := json.Marshal(body)
	if err != nil {
		return fmt.Errorf("%s: encode body: %w", name, err)
	}
	stream, err := c.fc.DoAction(ctx, &arrowflight.Action{Type: name, Body: raw})
	if err != nil {
		return fromWire(err)
	}
	n := 0
	for {
		r, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fromWire(err)
		}
		n++
		if err := json.Unmarshal(r.Body, into); err != nil {
			return fmt.Errorf("%w: %s result: %w", ErrBadResponse, name, err)
		}
	}
	if n != 1 {
		return fmt.Errorf("%w: %s answered %d results, not 1", ErrBadResponse, name, n)
	}
	return nil
}

// CreateProject creates a project with branch "main" at an empty root
// commit.
func (c *Client) CreateProject(ctx context.Context, project string) (CreateProjectResult, error) {
	var res CreateProjectResult
	err := c.action(ctx, ActionCreateProject, CreateProjectRequest{Project: project}, &res)
	return res, err
}

// CreateBranch creates a branch at the commit a ref names (req.From, "main"
// by default).
func (c *Client) CreateBranch(ctx context.Context, req CreateBranchRequest) (Branch, error) {
	var res Branch
	err := c.action(ctx, ActionCreateBranch, req, &res)
	return res, err
}

// Branches lists a project's branches, sorted by name.
func (c *Client) Branches(ctx context.Context, project string) ([]Branch, error) {
	var res []Branch
	err := c.action(ctx, ActionListBranches, ListBranchesRequest{Project: project}, &res)
	return res, err
}

// Log lists the commits reachable from ref ("" means "main"), newest
// first; limit 0 lists all.
func (c *Client) Log(ctx context.Context, project, ref string, limit int) ([]LogEntry, error) {
	req := LogRequest{Project: project, Ref: ref}
	if limit != 0 {
		req.Limit = &limit
	}
	var res []LogEntry
	err := c.action(ctx, ActionLog, req, &res)
	return res, err
}

// Put appends every batch of r to the table d names as ONE commit (the
// first put creates the table). r is read to its end; it is not released.
// If r fails, the stream is cancelled and nothing is committed.
func (c *Client) Put(ctx context.Context, d PutDescriptor, r array.RecordReader) (PutResult, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := c.fc.DoPut(ctx)
	if err != nil {
		return PutResult{}, fromWire(err)
	}
	w := arrowflight.NewRecordWriter(stream, ipc.WithSchema(r.Schema()), ipc.WithAllocator(c.mem))
	w.SetFlightDescriptor(&arrowflight.FlightDescriptor{Type: arrowflight.DescriptorPATH, Path: d.Path()})
	var meta []byte
	if d.IdempotencyKey != "" {
		if meta, err = json.Marshal(PutMetadata{IdempotencyKey: d.IdempotencyKey}); err != nil {
			return PutResult{}, err
		}
	}
	var werr error
	for r.Next() && werr == nil {
		for piece := range pieces(r.RecordBatch(), PutPieceBytes) {
			if werr == nil {
				if meta != nil {
					werr = w.WriteWithAppMetadata(piece, meta)
					meta = nil
				} else {
					werr = w.Write(piece)
				}
			}
			piece.Release()
		}
	}
	if err := r.Err(); err != nil {
		cancel() // an abandoned stream commits nothing
		_ = w.Close()
		return PutResult{}, fmt.Errorf("put %s/%s/%s: read the batches: %w", d.Project, d.Branch, d.Table, err)
	}
	var res PutResult
	if err := finishPut(stream, w, werr, "put", &res); err != nil {
		return PutResult{}, err
	}
	return res, nil
}

// finishPut closes a DoPut's writer (werr: the first failed write, if
// any) and reads the server's one PutResult into res. The server's
// answer, or its error, explains a failed write: it may have closed the
// stream early, refusing the put or (a media upload of an object it has)
// answering before the last chunk.
func finishPut(stream arrowflight.FlightService_DoPutClient, w *arrowflight.Writer, werr error, what string, res any) error {
	if werr == nil {
		werr = w.Close()
	} else {
		_ = w.Close()
	}
	if werr == nil {
		werr = stream.CloseSend()
	}
	n := 0
	for {
		pr, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fromWire(err)
		}
		n++
		if err := json.Unmarshal(pr.AppMetadata, res); err != nil {
			return fmt.Errorf("%w: %s result: %w", ErrBadResponse, what, err)
		}
	}
	if n == 1 {
		return nil
	}
	if werr != nil && !errors.Is(werr, io.EOF) {
		return fromWire(werr)
	}
	return fmt.Errorf("%w: %s answered %d results, not 1", ErrBadResponse, what, n)
}

// Endpoint is one stream of a scan: read it with Read.
type Endpoint struct {
	Ticket []byte
	// Locations are the servers that serve the ticket, preferred first,
	// when the server was started with --advertise (docs/deploy.md); empty
	// means the server that planned it. See LocationAddr.
	Locations []string
}

// ScanPlan is a planned scan, pinned to a commit: its endpoints, read in
// order, are the table's rows in ordinal order; they may also be read in
// parallel.
type ScanPlan struct {
	Commit    string
	Schema    *arrow.Schema
	Rows      int64
	Endpoints []Endpoint
	// Windowed scans only (ScanRequest.Windows): the canonical windows and
	// the most rows of one step; read the endpoints with ReadScanSteps.
	Windows  map[string]Window
	StepRows int
	// Filter (filtered scans) is the canonical filter; ShardRows
	// (balanced shards) the rows of each endpoint. Rows is -1 for a
	// filtered scan without shards (its count is not known ahead).
	Filter    string
	ShardRows []int64
}

// Scan plans a scan of a table at a ref (pinning the ref's commit now).
func (c *Client) Scan(ctx context.Context, req ScanRequest) (*ScanPlan, error) {
	info, err := c.info(ctx, Command{Scan: &req})
	if err != nil {
		return nil, err
	}
	plan := &ScanPlan{Rows: info.TotalRecords}
	var meta ScanMetadata
	if err := json.Unmarshal(info.AppMetadata, &meta); err != nil {
		return nil, fmt.Errorf("%w: scan app_metadata: %w", ErrBadResponse, err)
	}
	plan.Commit, plan.Windows, plan.StepRows = meta.Commit, meta.Windows, meta.StepRows
	plan.Filter, plan.ShardRows = meta.Filter, meta.ShardRows
	if plan.Schema, err = arrowflight.DeserializeSchema(info.Schema, c.mem); err != nil {
		return nil, fmt.Errorf("%w: scan schema: %w", ErrBadResponse, err)
	}
	for _, ep := range info.Endpoint {
		plan.Endpoints = append(plan.Endpoints, Endpoint{Ticket: ep.GetTicket().GetTicket(), Locations: locations(ep)})
	}
	return plan, nil
}

// info sends a command descriptor to GetFlightInfo.
func (c *Client) info(ctx context.Context, cmd any) (*arrowflight.FlightInfo, error) {
	raw, err := json.Marshal(cmd)
	if err != nil {
		return nil, fmt.Errorf("encode command: %w", err)
	}
	info, err := c.fc.GetFlightInfo(ctx, &arrowflight.FlightDescriptor{Type: arrowflight.DescriptorCMD, Cmd: raw})
	return info, fromWire(err)
}

// Read streams a scan endpoint's record batches. Each batch is valid until
// the loop continues (Retain it to keep it). Stopping the loop cancels the
// stream.
func (c *Client) Read(ctx context.Context, ep Endpoint) iter.Seq2[arrow.RecordBatch, error] {
	return func(yield func(arrow.RecordBatch, error) bool) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		r, err := c.doGet(ctx, ep.Ticket)
		if err != nil {
			yield(nil, err)
			return
		}
		defer r.Release()
		for r.Next() {
			if !yield(r.RecordBatch(), nil) {
				return
			}
		}
		if err := r.Err(); err != nil {
			yield(nil, fromWire(err))
		}
	}
}

func (c *Client) doGet(ctx context.Context, ticket []byte) (*arrowflight.Reader, error) {
	stream, err := c.fc.DoGet(ctx, &arrowflight.Ticket{Ticket: ticket})
	if err != nil {
		return nil, fromWire(err)
	}
	r, err := arrowflight.NewRecordReader(stream, ipc.WithAllocator(c.mem))
	if err != nil {
		return nil, fromWire(err)
	}
	return r, nil
}

func deserializeSchema(b []byte, c *Client) (*arrow.Schema, error) {
	s, err := arrowflight.DeserializeSchema(b, c.mem)
	if err != nil {
		return nil, fmt.Errorf("%w: schema: %w", ErrBadResponse, err)
	}
	return s, nil
}

// locations are an endpoint's location URIs, in order.
func locations(ep *arrowflight.FlightEndpoint) []string {
	var out []string
	for _, l := range ep.GetLocation() {
		out = append(out, l.GetUri())
	}
	return out
}

// LocationAddr turns an endpoint location (grpc://HOST:PORT,
// grpc+tcp://HOST:PORT or grpc+tls://HOST:PORT) into the address Dial
// takes and whether it needs Options.TLS. A client spreading streams over
// servers dials Locations[0] of each endpoint, with the same token and TLS
// settings, and on Unavailable the next location: every location serves
// the ticket.
func LocationAddr(loc string) (addr string, useTLS bool, err error) {
	u, err := url.Parse(loc)
	if err != nil {
		return "", false, fmt.Errorf("%w: location %q: %w", ErrBadResponse, loc, err)
	}
	switch u.Scheme {
	case "grpc", "grpc+tcp":
	case "grpc+tls":
		useTLS = true
	default:
		return "", false, fmt.Errorf("%w: location %q: scheme %q is not grpc, grpc+tcp or grpc+tls", ErrBadResponse, loc, u.Scheme)
	}
	if u.Host == "" {
		return "", false, fmt.Errorf("%w: location %q has no HOST:PORT", ErrBadResponse, loc)
	}
	return u.Host, useTLS, nil
}
