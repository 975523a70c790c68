package flight_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	arrowflight "github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/weftdata/weft/bucket"
	"github.com/weftdata/weft/flight"
	"github.com/weftdata/weft/internal/benchdata"
	"github.com/weftdata/weft/internal/s3test"
	"github.com/weftdata/weft/mix"
	"github.com/weftdata/weft/tables"
	"github.com/weftdata/weft/versions"
)

func recBytes(rec arrow.RecordBatch) int64 {
	var n int64
	for _, c := range rec.Columns() {
		n += arrayBytesOf(c.Data(), c.Data().Offset(), c.Len())
	}
	return n
}

// arrayBytesOf counts the bytes a (possibly sliced) array's rows occupy,
// for the flat types of the benchmark table.
func arrayBytesOf(d arrow.ArrayData, off, n int) int64 {
	switch d.DataType().ID() {
	case arrow.BINARY:
		offsets := arrow.Int32Traits.CastFromBytes(d.Buffers()[1].Bytes())
		return int64(offsets[off+n]-offsets[off]) + int64(4*n)
	default:
		return int64(n * d.DataType().(arrow.FixedWidthDataType).BitWidth() / 8)
	}
}

// dialBench connects with gRPC's default receive limit, as a plain client would.
func dialBench(b *testing.B, addr string) arrowflight.Client {
	c, err := arrowflight.NewClientWithMiddleware(addr, nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(b, err)
	return c
}

// readStreams reads tickets over `streams` concurrent streams (stream k
// reads tickets k, k+streams, …) and returns the Arrow bytes received.
func readStreams(ctx context.Context, c arrowflight.Client, tickets []*arrowflight.Ticket, streams int) (int64, error) {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		total int64
		errs  []error
	)
	for k := range streams {
		wg.Go(func() {
			var n int64
			for i := k; i < len(tickets); i += streams {
				stream, err := c.DoGet(ctx, tickets[i])
				if err == nil {
					var r *arrowflight.Reader
					if r, err = arrowflight.NewRecordReader(stream); err == nil {
						for r.Next() {
							n += recBytes(r.RecordBatch())
						}
						err = r.Err()
						r.Release()
					}
				}
				if err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
					return
				}
			}
			mu.Lock()
			total += n
			mu.Unlock()
		})
	}
	wg.Wait()
	return total, errors.Join(errs...)
}

// ceilingServer resends one prebuilt batch until `total` bytes are sent:
// arrow-go Flight with no Weft code, the loopback ceiling.
type ceilingServer struct {
	arrowflight.BaseFlightServer
	rec arrow.RecordBatch
}

// DoGet sends at least as many bytes as the ticket (a decimal number) says.
func (s *ceilingServer) DoGet(t *arrowflight.Ticket, stream arrowflight.FlightService_DoGetServer) error {
	total, err := strconv.ParseInt(string(t.Ticket), 10, 64)
	if err != nil {
		return err
	}
	w := arrowflight.NewRecordWriter(stream, ipc.WithSchema(s.rec.Schema()))
	defer w.Close()
	for sent := int64(0); sent < total; sent += recBytes(s.rec) {
		if err := w.Write(s.rec); err != nil {
			return err
		}
	}
	return nil
}

func serveBench(b *testing.B, register func(*grpc.Server)) string {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(b, err)
	srv := grpc.NewServer(grpc.MaxRecvMsgSize(256<<20), grpc.MaxSendMsgSize(256<<20))
	register(srv)
	go func() { _ = srv.Serve(lis) }()
	b.Cleanup(srv.Stop)
	return lis.Addr().String()
}

// BenchmarkScan measures DoGet scan throughput (Arrow bytes received per
// second by a Go client) of a ~1 GiB table with a 1 KiB binary column, on
// 1 and 2 parallel endpoint streams, from the fs store and from MinIO, and
// the ceiling: arrow-go Flight resending one prebuilt batch of the size
// Weft sends (Options.BatchBytes) over loopback.
//
//	make bench-flight    (or: go test -run '^$' -bench BenchmarkScan -benchtime 1x ./flight/)
func BenchmarkScan(b *testing.B) {
	if testing.Short() {
		b.Skip("the scan benchmark writes ~1 GiB twice; not in -short")
	}
	rows := benchdata.Rows()
	rounds := 3
	if n, err := strconv.Atoi(os.Getenv("WEFT_BENCH_ROUNDS")); err == nil && n > 0 {
		rounds = n
	}
	opts := flight.DefaultOptions()
	ctx := context.Background()

	// The table's Arrow size, and one batch the size DoGet sends.
	var tableBytes int64
	g := benchdata.NewReader(rows)
	for g.Next() {
		tableBytes += recBytes(g.RecordBatch())
	}
	g.Release()
	probe := benchdata.Batch(rand.New(rand.NewPCG(1, 1)), 0, 8192)
	r := sliceRows(probe, opts.BatchBytes)
	batch := probe.NewSlice(0, r)
	probe.Release()
	defer batch.Release()
	b.Logf("table: %d rows, %.1f MiB of Arrow; DoGet batches of %d rows (%.2f MiB)", rows, float64(tableBytes)/(1<<20), r, float64(recBytes(batch))/(1<<20))

	type config struct {
		name    string
		addr    string
		tickets []*arrowflight.Ticket
		streams int
		want    int64
	}
	var configs []config

	ceil := &ceilingServer{rec: batch}
	ceilAddr := serveBench(b, func(s *grpc.Server) { arrowflight.RegisterFlightServiceServer(s, ceil) })
	for _, streams := range []int{1, 2} {
		per := (tableBytes/int64(streams) + recBytes(batch) - 1) / recBytes(batch) * recBytes(batch)
		tkts := make([]*arrowflight.Ticket, streams)
		for i := range tkts {
			tkts[i] = &arrowflight.Ticket{Ticket: []byte(strconv.FormatInt(per, 10))}
		}
		configs = append(configs, config{fmt.Sprintf("ceiling/streams=%d", streams), ceilAddr, tkts, streams, per * int64(streams)})
	}

	stores := []struct {
		name string
		open func(b *testing.B) bucket.Bucket
	}{
		{"fs", func(b *testing.B) bucket.Bucket {
			fsb, err := bucket.NewFS(b.TempDir())
			require.NoError(b, err)
			return fsb
		}},
		{"minio", func(b *testing.B) bucket.Bucket { return s3test.SharedMinIO(b).NewBucket(b, "bench-flight") }},
	}
	for _, st := range stores {
		bk := st.open(b)
		v, err := versions.New(bk, versions.DefaultOptions())
		require.NoError(b, err)
		ts, err := tables.New(v, tables.DefaultOptions())
		require.NoError(b, err)
		_, err = v.CreateProject(ctx, "bench")
		require.NoError(b, err)
		start := time.Now()
		g := benchdata.NewReader(rows)
		res, err := ts.Append(ctx, "bench", "main", "t", g, "")
		g.Release()
		require.NoError(b, err)
		b.Logf("%s: appended %d rows (%.1f MiB Parquet, %d row groups) in %v", st.name, res.Rows, float64(res.File.Size)/(1<<20), len(res.File.RowGroups), time.Since(start).Round(time.Millisecond))

		eng, err := mix.New(ts, mix.DefaultOptions())
		require.NoError(b, err)
		b.Cleanup(eng.Close)
		svc, err := flight.New(flight.Parts{Tables: ts, Mix: eng}, opts)
		require.NoError(b, err)
		addr := serveBench(b, func(s *grpc.Server) { arrowflight.RegisterFlightServiceServer(s, svc) })
		c := dialBench(b, addr)
		info, err := c.GetFlightInfo(ctx, pathDesc("bench", "main", "t"))
		require.NoError(b, err)
		c.Close()
		tkts := make([]*arrowflight.Ticket, len(info.Endpoint))
		for i, ep := range info.Endpoint {
			tkts[i] = ep.Ticket
		}
		b.Logf("%s: %d endpoints", st.name, len(tkts))
		for _, streams := range []int{1, 2} {
			configs = append(configs, config{fmt.Sprintf("%s/streams=%d", st.name, streams), addr, tkts, streams, tableBytes})
		}
	}

	// Rounds interleave the configurations, so that load from elsewhere on
	// the machine hits them alike; the best round of each is reported.
	results := map[string][]float64{}
	b.ResetTimer()
	for range b.N {
		for round := range rounds {
			for _, cf := range configs {
				c := dialBench(b, cf.addr)
				start := time.Now()
				n, err := readStreams(ctx, c, cf.tickets, cf.streams)
				mbs := float64(n) / 1e6 / time.Since(start).Seconds()
				c.Close()
				require.NoError(b, err, cf.name)
				require.Equal(b, cf.want, n, cf.name)
				results[cf.name] = append(results[cf.name], mbs)
				b.Logf("round %d %-18s %6.0f MB/s", round, cf.name, mbs)
			}
		}
	}
	b.StopTimer()

	best := func(name string) float64 { return slices.Max(results[name]) }
	fmt.Fprintf(os.Stdout, "\nDoGet scan throughput, %d rows (%.0f MiB Arrow, 1 KiB binary column), Go client, loopback, best of %d interleaved rounds (median in brackets):\n", rows, float64(tableBytes)/(1<<20), rounds)
	for _, cf := range configs {
		v := best(cf.name)
		med := slices.Sorted(slices.Values(results[cf.name]))[len(results[cf.name])/2]
		fmt.Fprintf(os.Stdout, "  %-18s %6.0f MB/s [%4.0f]", cf.name, v, med)
		if cf.name != "ceiling/streams=1" {
			fmt.Fprintf(os.Stdout, "   %5.1f%% of the single-stream ceiling", 100*v/best("ceiling/streams=1"))
		}
		fmt.Fprintln(os.Stdout)
		b.ReportMetric(v, cf.name+"-MB/s")
	}
}

// sliceRows is how many rows of rec the first DoGet batch holds.
func sliceRows(rec arrow.RecordBatch, target int64) int64 {
	per := recBytes(rec) / rec.NumRows()
	return max(1, target/per)
}
