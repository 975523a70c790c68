package flight_test

import (
	"context"
	"os"
	"runtime/pprof"
	"testing"
	"time"

	arrowflight "github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"

	"github.com/weftdata/weft/bucket"
	"github.com/weftdata/weft/flight"
	"github.com/weftdata/weft/tables"
	"github.com/weftdata/weft/versions"
)

func BenchmarkScratch(b *testing.B) {
	dir := "/tmp/scanbench"
	_, statErr := os.Stat(dir)
	bk, err := bucket.NewFS(dir)
	require.NoError(b, err)
	v, _ := versions.New(bk, versions.DefaultOptions())
	ts, _ := tables.New(v, tables.DefaultOptions())
	ctx := context.Background()
	if statErr != nil {
		v.CreateProject(ctx, "bench")
		g := newGenReader(benchRows())
		_, err := ts.Append(ctx, "bench", "main", "t", g, "")
		require.NoError(b, err)
	}
	opts := flight.DefaultOptions()
	if os.Getenv("PREFETCH") != "" {
		opts.Prefetch = 0
	}
	svc, _ := flight.New(ts, opts)
	addr := serveBench(b, func(s *grpc.Server) { arrowflight.RegisterFlightServiceServer(s, svc) })
	c := dialBench(b, addr)
	info, err := c.GetFlightInfo(ctx, pathDesc("bench", "main", "t"))
	require.NoError(b, err)
	var tk []*arrowflight.Ticket
	for _, ep := range info.Endpoint {
		tk = append(tk, ep.Ticket)
	}
	f, _ := os.Create("/tmp/scan.prof")
	pprof.StartCPUProfile(f)
	start := time.Now()
	n, err := readStreams(ctx, c, tk, 1)
	require.NoError(b, err)
	pprof.StopCPUProfile()
	b.Logf("%d bytes in %v: %.0f MB/s", n, time.Since(start), float64(n)/1e6/time.Since(start).Seconds())
	start = time.Now()
	for i := range info.Endpoint {
		vv, _ := ts.Table(ctx, "bench", "main", "t")
		_ = i
		for rec, err := range ts.Scan(ctx, vv, nil, 0, len(vv.Blocks())) {
			require.NoError(b, err)
			rec.Release()
		}
		break
	}
	b.Logf("tables.Scan alone: %v: %.0f MB/s", time.Since(start), float64(n)/1e6/time.Since(start).Seconds())
}
