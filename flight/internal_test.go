package flight

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/weftdata/weft/auth"
	"github.com/weftdata/weft/bucket"
	"github.com/weftdata/weft/mix"
	"github.com/weftdata/weft/sampler"
	"github.com/weftdata/weft/tables"
	"github.com/weftdata/weft/versions"
)

func TestCode(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("outer: %w", fmt.Errorf("inner: %w", err)) }
	cases := []struct {
		err  error
		want codes.Code
	}{
		{nil, codes.OK},
		{wrap(ErrBadRequest), codes.InvalidArgument},
		{wrap(ErrBadTicket), codes.InvalidArgument},
		{wrap(versions.ErrInvalidName), codes.InvalidArgument},
		{wrap(versions.ErrInvalidRef), codes.InvalidArgument},
		{wrap(versions.ErrAmbiguousRef), codes.InvalidArgument},
		{wrap(tables.ErrSchemaMismatch), codes.InvalidArgument},
		{wrap(tables.ErrEmptyAppend), codes.InvalidArgument},
		{wrap(tables.ErrBadSchema), codes.InvalidArgument},
		{wrap(tables.ErrBadColumns), codes.InvalidArgument},
		{wrap(tables.ErrColumnNotFound), codes.InvalidArgument},
		{wrap(tables.ErrBlockOutOfRange), codes.InvalidArgument},
		{wrap(bucket.ErrInvalidKey), codes.InvalidArgument},
		{wrap(versions.ErrProjectNotFound), codes.NotFound},
		{wrap(versions.ErrBranchNotFound), codes.NotFound},
		{wrap(versions.ErrRefNotFound), codes.NotFound},
		{wrap(versions.ErrCommitNotFound), codes.NotFound},
		{wrap(tables.ErrTableNotFound), codes.NotFound},
		{wrap(versions.ErrProjectExists), codes.AlreadyExists},
		{wrap(versions.ErrBranchExists), codes.AlreadyExists},
		{wrap(versions.ErrTooManyRetries), codes.Aborted},
		{wrap(versions.ErrConflict), codes.Aborted},
		{wrap(ErrUnimplemented), codes.Unimplemented},
		{wrap(sampler.ErrWorldSize), codes.InvalidArgument},
		{wrap(sampler.ErrInvalid), codes.InvalidArgument},
		{wrap(mix.ErrBadRecipe), codes.InvalidArgument},
		{wrap(mix.ErrEmptyComponent), codes.InvalidArgument},
		{wrap(mix.ErrStepRange), codes.InvalidArgument},
		{wrap(mix.ErrRunNotFound), codes.NotFound},
		{wrap(context.Canceled), codes.Canceled},
		{wrap(context.DeadlineExceeded), codes.DeadlineExceeded},
		{wrap(auth.ErrNoToken), codes.Unauthenticated},
		{wrap(auth.ErrBadToken), codes.Unauthenticated},
		{wrap(auth.ErrDenied), codes.PermissionDenied},
		{kindError{kind: ErrBadTicket, err: auth.ErrBadTicket}, codes.InvalidArgument},
		{wrap(status.Error(codes.ResourceExhausted, "grpc: received message larger than max")), codes.ResourceExhausted},
		{wrap(versions.ErrCorrupt), codes.Internal},
		{wrap(versions.ErrManifestNotFound), codes.Internal}, // clients never name manifests
		{wrap(bucket.ErrNotFound), codes.NotFound},
		{wrap(fmt.Errorf("%w: data file: %w", versions.ErrCorrupt, bucket.ErrNotFound)), codes.Internal}, // the outer kind wins
		{wrap(bucket.ErrTooLarge), codes.ResourceExhausted},
		{wrap(tables.ErrUnsupportedType), codes.InvalidArgument},
		{wrap(tables.ErrBadData), codes.InvalidArgument},
		{wrap(tables.ErrUnreadableSchema), codes.FailedPrecondition},
		{errors.New("disk on fire"), codes.Internal},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprint(tc.err), func(t *testing.T) {
			require.Equal(t, tc.want.String(), code(tc.err).String())
		})
	}
}

func TestStatusHidesInternalCauses(t *testing.T) {
	s := &Service{log: discardLogger()}
	err := s.status(context.Background(), "DoGet", errors.New("open /secret/file: permission denied"))
	st := status.Convert(err)
	require.Equal(t, codes.Internal, st.Code())
	require.NotContains(t, st.Message(), "secret")
	require.Contains(t, st.Message(), "error id")

	err = s.status(context.Background(), "DoPut", fmt.Errorf("append: %w", tables.ErrSchemaMismatch))
	require.Equal(t, codes.InvalidArgument, status.Code(err))
	require.Contains(t, status.Convert(err).Message(), "schema mismatch")
	require.NoError(t, s.status(context.Background(), "x", nil))
}

// ticketService is a Service that can only sign and verify tickets, with
// the keys of a fresh in-memory bucket.
func ticketService(tb testing.TB) *Service {
	tb.Helper()
	signer, err := auth.NewSigner(context.Background(), bucket.NewMem(), auth.DefaultSignerOptions())
	require.NoError(tb, err)
	return &Service{signer: signer, log: discardLogger()}
}

func validScanTicket(t *testing.T, s *Service) []byte {
	tkt, err := s.encodeTicket(context.Background(), kindScan, scanTicket{Project: "p", Commit: versions.CommitID(fmt64('a')), Table: "t", Columns: []string{"id"}, First: 0, End: 3, Rows: 300})
	require.NoError(t, err)
	return tkt
}

func fmt64(c byte) string {
	b := make([]byte, 64)
	for i := range b {
		b[i] = c
	}
	return string(b)
}

func TestTicketRoundTrip(t *testing.T) {
	s := ticketService(t)
	tkt := validScanTicket(t, s)
	kind, payload, err := s.decodeTicket(context.Background(), tkt)
	require.NoError(t, err)
	require.Equal(t, kindScan, kind)
	st, err := decodeScanTicket(payload)
	require.NoError(t, err)
	require.Equal(t, scanTicket{Project: "p", Commit: versions.CommitID(fmt64('a')), Table: "t", Columns: []string{"id"}, First: 0, End: 3, Rows: 300}, *st)
}

// TestTicketTruncatedOrAltered: every prefix and every single-byte change
// of a valid ticket is rejected as a bad ticket.
func TestTicketTruncatedOrAltered(t *testing.T) {
	ctx := context.Background()
	s := ticketService(t)
	tkt := validScanTicket(t, s)
	for n := range len(tkt) {
		_, _, err := s.decodeTicket(ctx, tkt[:n])
		require.ErrorIs(t, err, ErrBadTicket, "prefix of %d bytes", n)
	}
	for i := range tkt {
		for _, x := range []byte{1, 0x80, 0xff} {
			bad := append([]byte(nil), tkt...)
			bad[i] ^= x
			_, _, err := s.decodeTicket(ctx, bad)
			require.ErrorIs(t, err, ErrBadTicket, "byte %d ^ %#x", i, x)
		}
	}
}

// TestTicketForged: tickets a server of this store did not sign are
// refused before their payload is read: one from another store (a valid
// signature under another key 1), one with the same payload and a MAC
// made up, and a version 1 ticket (checksummed, never signed).
func TestTicketForged(t *testing.T) {
	ctx := context.Background()
	s, other := ticketService(t), ticketService(t)
	tkt := validScanTicket(t, s)
	payload := tkt[:len(tkt)-auth.TicketOverhead]
	v1 := append([]byte("weft\x01\x01"), payload[ticketHeadLen:]...)
	sum := sha256.Sum256(v1)
	v1 = append(v1, sum[:8]...)
	for name, forged := range map[string][]byte{
		"another store": validScanTicket(t, other),
		"made-up mac":   append(slices.Clone(tkt[:len(tkt)-32]), make([]byte, 32)...),
		"unknown key":   append(append(slices.Clone(payload), 0, 0, 0, 9), tkt[len(tkt)-32:]...),
		"version 1":     v1,
		"payload only":  payload,
	} {
		t.Run(name, func(t *testing.T) {
			_, _, err := s.decodeTicket(ctx, forged)
			require.ErrorIs(t, err, ErrBadTicket)
			require.Equal(t, codes.InvalidArgument, code(err))
			require.Contains(t, err.Error(), "GetFlightInfo")
		})
	}
	_, _, err := other.decodeTicket(ctx, tkt)
	require.ErrorIs(t, err, ErrBadTicket, "and the other way round")
}

func TestScanTicketValidation(t *testing.T) {
	for _, payload := range []string{
		``, `null`, `[]`, `{}`, `{"p":"p"}`,
		`{"p":"p","c":"` + fmt64('a') + `","t":"t","b0":0,"b1":1,"n":1,"x":1}`, // unknown field
		`{"p":"a/b","c":"` + fmt64('a') + `","t":"t","b0":0,"b1":1,"n":1}`,
		`{"p":"p","c":"` + fmt64('g') + `","t":"t","b0":0,"b1":1,"n":1}`,
		`{"p":"p","c":"abc","t":"t","b0":0,"b1":1,"n":1}`,
		`{"p":"p","c":"` + fmt64('a') + `","t":"..","b0":0,"b1":1,"n":1}`,
		`{"p":"p","c":"` + fmt64('a') + `","t":"t","b0":2,"b1":1,"n":1}`,
		`{"p":"p","c":"` + fmt64('a') + `","t":"t","b0":-1,"b1":1,"n":1}`,
		`{"p":"p","c":"` + fmt64('a') + `","t":"t","b0":0,"b1":1,"n":-1}`,
		`{"p":"p","c":"` + fmt64('a') + `","t":"t","b0":0,"b1":1,"n":1} {}`,
		`{"p":"p","c":"` + fmt64('a') + `","t":"t","b0":0,"b1":1e99,"n":1}`,
	} {
		_, err := decodeScanTicket([]byte(payload))
		require.ErrorIs(t, err, ErrBadTicket, payload)
	}
}

func TestRankTicketValidation(t *testing.T) {
	good := rankTicket{Run: mix.RunID(fmt64('c')), Project: "p", Rank: 1, World: 4, Start: 0, End: 10}
	s := ticketService(t)
	tkt, err := s.encodeTicket(context.Background(), kindRank, good)
	require.NoError(t, err)
	kind, payload, err := s.decodeTicket(context.Background(), tkt)
	require.NoError(t, err)
	require.Equal(t, kindRank, kind)
	got, err := decodeRankTicket(payload)
	require.NoError(t, err)
	require.Equal(t, good, *got)
	run := fmt64('c')
	for _, payload := range []string{
		``, `null`, `[]`, `{}`,
		`{"run":"` + run + `","p":"p","r":0,"w":1,"s0":0,"s1":1,"x":1}`, // unknown field
		`{"run":"abc","p":"p","r":0,"w":1,"s0":0,"s1":1}`,
		`{"run":"` + run + `","p":"a/b","r":0,"w":1,"s0":0,"s1":1}`,
		`{"run":"` + run + `","p":"p","r":1,"w":1,"s0":0,"s1":1}`,
		`{"run":"` + run + `","p":"p","r":-1,"w":1,"s0":0,"s1":1}`,
		`{"run":"` + run + `","p":"p","r":0,"w":0,"s0":0,"s1":1}`,
		`{"run":"` + run + `","p":"p","r":0,"w":1,"s0":-1,"s1":1}`,
		`{"run":"` + run + `","p":"p","r":0,"w":1,"s0":3,"s1":3}`,
		`{"run":"` + run + `","p":"p","r":0,"w":1,"s0":0,"s1":1} {}`,
		`{"run":"` + run + `","p":"p","ps":["q","a/b"],"r":0,"w":1,"s0":0,"s1":1}`,
		`{"run":"` + run + `","p":"p","ps":"q","r":0,"w":1,"s0":0,"s1":1}`,
	} {
		_, err := decodeRankTicket([]byte(payload))
		require.ErrorIs(t, err, ErrBadTicket, payload)
	}
}

// FuzzTicket: no input makes ticket decoding panic, and whatever it
// rejects, it rejects as a bad ticket.
func FuzzTicket(f *testing.F) {
	s := ticketService(f)
	tkt, _ := s.encodeTicket(context.Background(), kindScan, scanTicket{Project: "p", Commit: versions.CommitID(fmt64('b')), Table: "t", End: 1, Rows: 5})
	f.Add(tkt)
	f.Add([]byte("weft"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		kind, payload, err := s.decodeTicket(context.Background(), data)
		if err != nil {
			require.ErrorIs(t, err, ErrBadTicket)
			return
		}
		switch kind {
		case kindScan:
			if _, err := decodeScanTicket(payload); err != nil {
				require.ErrorIs(t, err, ErrBadTicket)
			}
		case kindRank:
			if _, err := decodeRankTicket(payload); err != nil {
				require.ErrorIs(t, err, ErrBadTicket)
			}
		}
	})
}

// TestSliceRanges: slices cover the batch in order, and each one's IPC body
// is at most the target unless it is a single row. Seeded, many shapes.
func TestSliceRanges(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rng := rand.New(rand.NewPCG(1, 2))
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "i", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.String},
		{Name: "lb", Type: arrow.BinaryTypes.LargeBinary},
		{Name: "l", Type: arrow.ListOf(arrow.PrimitiveTypes.Int64)},
		{Name: "f", Type: arrow.FixedSizeListOf(3, arrow.PrimitiveTypes.Float32)},
		{Name: "st", Type: arrow.StructOf(arrow.Field{Name: "a", Type: arrow.BinaryTypes.Binary}, arrow.Field{Name: "b", Type: arrow.FixedWidthTypes.Boolean})},
	}, nil)
	for round := range 30 {
		n := rng.IntN(2000) + 1
		b := array.NewRecordBuilder(mem, schema)
		for r := range n {
			big := rng.IntN(50) == 0
			size := rng.IntN(200)
			if big {
				size = rng.IntN(20000)
			}
			if r%5 == 0 {
				b.Field(0).AppendNull()
			} else {
				b.Field(0).(*array.Int32Builder).Append(int32(r))
			}
			b.Field(1).(*array.StringBuilder).Append(string(make([]byte, size)))
			b.Field(2).(*array.BinaryBuilder).Append(make([]byte, size/2))
			lb := b.Field(3).(*array.ListBuilder)
			lb.Append(true)
			for range size % 17 {
				lb.ValueBuilder().(*array.Int64Builder).Append(int64(r))
			}
			fb := b.Field(4).(*array.FixedSizeListBuilder)
			fb.Append(true)
			fb.ValueBuilder().(*array.Float32Builder).AppendValues([]float32{1, 2, 3}, nil)
			sb := b.Field(5).(*array.StructBuilder)
			sb.Append(true)
			sb.FieldBuilder(0).(*array.BinaryBuilder).Append(make([]byte, size%100))
			sb.FieldBuilder(1).(*array.BooleanBuilder).Append(r%2 == 0)
		}
		full := b.NewRecordBatch()
		b.Release()
		// Slice the batch first, as a scan of a sliced parent would.
		off := int64(rng.IntN(n))
		rec := full.NewSlice(off, int64(n))
		full.Release()
		target := int64(rng.IntN(64<<10) + 1024)
		ranges := sliceRanges(rec, target)
		next := int64(0)
		for _, r := range ranges {
			require.Equal(t, next, r[0], "round %d: ranges are contiguous", round)
			require.Greater(t, r[1], r[0])
			next = r[1]
			part := rec.NewSlice(r[0], r[1])
			body := ipcBodyBytes(t, mem, part)
			part.Release()
			if r[1]-r[0] > 1 {
				// The estimate ignores IPC's 8-byte padding of each buffer.
				require.LessOrEqual(t, body, target+8*32, "round %d: range %v", round, r)
			}
		}
		require.Equal(t, rec.NumRows(), next)
		rec.Release()
	}
}

// ipcBodyBytes is the size of rec's IPC record batch message body: the
// stream's size less that of the same stream with an empty slice of rec
// (same schema and metadata shape, no data).
func ipcBodyBytes(t *testing.T, mem memory.Allocator, rec arrow.RecordBatch) int64 {
	size := func(r arrow.RecordBatch) int64 {
		var w countWriter
		iw := ipc.NewWriter(&w, ipc.WithSchema(r.Schema()), ipc.WithAllocator(mem))
		require.NoError(t, iw.Write(r))
		require.NoError(t, iw.Close())
		return w.n
	}
	empty := rec.NewSlice(0, 0)
	defer empty.Release()
	return size(rec) - size(empty)
}

type countWriter struct{ n int64 }

func (c *countWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

var _ io.Writer = (*countWriter)(nil)

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
