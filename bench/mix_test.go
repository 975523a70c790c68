package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	arrowflight "github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"

	"github.com/weftdata/weft/bucket"
	"github.com/weftdata/weft/client"
	"github.com/weftdata/weft/flight"
	"github.com/weftdata/weft/internal/benchdata"
	"github.com/weftdata/weft/internal/s3test"
	"github.com/weftdata/weft/mix"
	"github.com/weftdata/weft/tables"
	"github.com/weftdata/weft/versions"
)

func TestMain(m *testing.M) { os.Exit(s3test.Main(m)) }

// Scale, overridable for quick runs:
//
//	WEFT_MIX_SMALL="1000000,4000000"  rows of the two small-row tables
//	WEFT_MIX_LARGE_BYTES=2147483648   total bytes of the two 100 KiB-value tables
//	WEFT_MIX_STORES=fs,minio
//	WEFT_MIX_PARTS=scan,mix,mix4,large,large4,resume,rss
//	WEFT_MIX_ROUNDS=5                 rounds of the paired measurements (best reported)
func envInts(name string, def []int64) []int64 {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	var out []int64
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.ParseInt(strings.TrimSpace(f), 10, 64)
		if err != nil {
			panic(fmt.Sprintf("%s: %v", name, err))
		}
		out = append(out, n)
	}
	return out
}

const valueBytes = 100 << 10

// genReader yields rows [0, n) of a benchmark table in batches.
type genReader struct {
	schema *arrow.Schema
	n, at  int64
	per    int64
	rng    *rand.Rand
	rec    arrow.RecordBatch
	refs   int64
}

func newGen(schema *arrow.Schema, n, per int64, seed uint64) *genReader {
	return &genReader{schema: schema, n: n, per: per, rng: rand.New(rand.NewPCG(seed, 7)), refs: 1}
}

func (g *genReader) Schema() *arrow.Schema          { return g.schema }
func (g *genReader) RecordBatch() arrow.RecordBatch { return g.rec }
func (g *genReader) Record() arrow.RecordBatch      { return g.rec }
func (g *genReader) Err() error                     { return nil }
func (g *genReader) Retain()                        { g.refs++ }
func (g *genReader) Release() {
	if g.refs--; g.refs == 0 && g.rec != nil {
		g.rec.Release()
		g.rec = nil
	}
}

func (g *genReader) Next() bool {
	if g.rec != nil {
		g.rec.Release()
		g.rec = nil
	}
	if g.at >= g.n {
		return false
	}
	k := min(g.per, g.n-g.at)
	b := array.NewRecordBuilder(memory.DefaultAllocator, g.schema)
	defer b.Release()
	switch g.schema {
	case benchdata.SmallSchema:
		fl := b.Field(1).(*array.FixedSizeListBuilder)
		fv := fl.ValueBuilder().(*array.Float32Builder)
		fv.Reserve(int(k) * 32)
		for i := g.at; i < g.at+k; i++ {
			b.Field(0).(*array.Int64Builder).Append(i)
			fl.Append(true)
			for range 32 {
				fv.UnsafeAppend(float32(g.rng.NormFloat64()))
			}
			b.Field(2).(*array.Int64Builder).Append(int64(g.rng.IntN(1000)))
		}
	case benchdata.LargeSchema:
		buf := make([]byte, valueBytes)
		bb := b.Field(1).(*array.BinaryBuilder)
		bb.ReserveData(int(k) * valueBytes)
		for i := g.at; i < g.at+k; i++ {
			b.Field(0).(*array.Int64Builder).Append(i)
			for j := 0; j < len(buf); j += 8 {
				v := g.rng.Uint64()
				for q := range 8 {
					buf[j+q] = byte(v >> (8 * q))
				}
			}
			bb.Append(buf)
		}
	}
	g.rec = b.NewRecordBatch()
	g.at += k
	return true
}

// tableSet is the benchmark data in one store.
type tableSet struct {
	smallRows []int64
	largeRows int64
	dir       string // the fs store's directory
}

// writeData writes the four tables into an fs store: small-row tables with
// the default layout, 100 KiB-value tables with row groups of 8 MiB (as
// docs/flight.md advises for wide rows).
func writeData(b *testing.B, dir string, small []int64, largeRows int64) {
	ctx := context.Background()
	fsb, err := bucket.NewFS(dir)
	require.NoError(b, err)
	v, err := versions.New(fsb, versions.DefaultOptions())
	require.NoError(b, err)
	_, err = v.CreateProject(ctx, "bench")
	require.NoError(b, err)
	ts, err := tables.New(v, tables.DefaultOptions())
	require.NoError(b, err)
	for i, n := range small {
		start := time.Now()
		g := newGen(benchdata.SmallSchema, n, 65536, uint64(i+1))
		res, err := ts.Append(ctx, "bench", "main", versions.TableName(fmt.Sprintf("small_%c", 'a'+i)), g, "")
		require.NoError(b, err)
		b.Logf("small_%c: %d rows, %.0f MiB Parquet, %d row groups, written in %v", 'a'+i, n, float64(res.File.Size)/(1<<20), len(res.File.RowGroups), time.Since(start).Round(time.Second))
	}
	lo := tables.DefaultOptions()
	lo.RowGroupBytes = 8 << 20
	tl, err := tables.New(v, lo)
	require.NoError(b, err)
	for i := range 2 {
		start := time.Now()
		g := newGen(benchdata.LargeSchema, largeRows, 64, uint64(i+10))
		res, err := tl.Append(ctx, "bench", "main", versions.TableName(fmt.Sprintf("large_%c", 'a'+i)), g, "")
		require.NoError(b, err)
		b.Logf("large_%c: %d rows of 100 KiB, %.0f MiB Parquet, %d row groups, written in %v", 'a'+i, largeRows, float64(res.File.Size)/(1<<20), len(res.File.RowGroups), time.Since(start).Round(time.Second))
	}
}

// copyStore copies every object of one bucket into another.
func copyStore(ctx context.Context, from, to bucket.Bucket) error {
	for info, err := range from.List(ctx, "") {
		if err != nil {
			return err
		}
		r, err := from.Open(ctx, info.Key)
		if err != nil {
			return err
		}
		_, err = to.Put(ctx, info.Key, io.NewSectionReader(r, 0, r.Size()), r.Size())
		r.Close()
		if err != nil {
			return fmt.Errorf("copy %s: %w", info.Key, err)
		}
	}
	return nil
}

// server is an in-process flightd over one store.
type server struct {
	svc  *flight.Service
	addr string
	stop func()
}

func serve(b *testing.B, bk bucket.Bucket) *server {
	v, err := versions.New(bk, versions.DefaultOptions())
	require.NoError(b, err)
	ts, err := tables.New(v, tables.DefaultOptions())
	require.NoError(b, err)
	engine, err := mix.New(ts, mix.DefaultOptions())
	require.NoError(b, err)
	svc, err := flight.New(flight.Parts{Tables: ts, Mix: engine}, flight.DefaultOptions())
	require.NoError(b, err)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(b, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = svc.Serve(ctx, lis); close(done) }()
	s := &server{svc: svc, addr: lis.Addr().String()}
	var once sync.Once
	s.stop = func() { once.Do(func() { cancel(); <-done; engine.Close() }) }
	b.Cleanup(s.stop)
	return s
}

func dial(b *testing.B, addr string) *client.Client {
	c, err := client.Dial(addr, client.Options{MaxRecvMessageBytes: 1 << 30})
	require.NoError(b, err)
	b.Cleanup(func() { c.Close() })
	return c
}

// drain reads one stream of batches to its end (or limit rows): rows and
// Arrow bytes received, and the time to the first batch.
func drain(batches iter.Seq2[arrow.RecordBatch, error], limit int64) (rows, bytes int64, first time.Duration, err error) {
	start := time.Now()
	for rec, err := range batches {
		if err != nil {
			return rows, bytes, first, err
		}
		if first == 0 {
			first = time.Since(start)
		}
		rows += rec.NumRows()
		bytes += tables.RecordBytes(rec)
		if limit > 0 && rows >= limit {
			break
		}
	}
	return rows, bytes, first, nil
}

// rankBatches is a rank stream as its steps' batches, as they arrived
// (ReadRankParts: a step sent in several messages is not copied into one
// batch; a trainer copies rows into its tensors anyway).
func rankBatches(ctx context.Context, c *client.Client, ep client.RankEndpoint) iter.Seq2[arrow.RecordBatch, error] {
	return func(yield func(arrow.RecordBatch, error) bool) {
		for st, err := range c.ReadRankParts(ctx, ep) {
			if err != nil {
				yield(nil, err)
				return
			}
			for _, p := range st.Parts {
				if !yield(p, nil) {
					return
				}
			}
		}
	}
}

type result struct {
	rows, bytes int64
	secs        float64
}

func (r result) rowsPerSec() float64 { return float64(r.rows) / r.secs }
func (r result) mbPerSec() float64   { return float64(r.bytes) / 1e6 / r.secs }

// scan reads tables in order over one stream: every endpoint of each.
func scan(b *testing.B, c *client.Client, names ...string) result {
	ctx := context.Background()
	start := time.Now()
	var res result
	for _, name := range names {
		plan, err := c.Scan(ctx, client.ScanRequest{Project: "bench", Ref: "main", Table: name})
		require.NoError(b, err)
		for _, ep := range plan.Endpoints {
			n, by, _, err := drain(c.Read(ctx, ep), 0)
			require.NoError(b, err)
			res.rows += n
			res.bytes += by
		}
	}
	res.secs = time.Since(start).Seconds()
	return res
}

// runMix resolves a recipe for world ranks and reads every rank at once.
func runMix(b *testing.B, c *client.Client, recipe client.Recipe, world int) (result, string) {
	ctx := context.Background()
	start := time.Now()
	plan, err := c.Resolve(ctx, recipe, world)
	require.NoError(b, err)
	var (
		mu  sync.Mutex
		res result
		wg  sync.WaitGroup
	)
	for _, ep := range plan.Ranks {
		wg.Go(func() {
			n, by, _, err := drain(rankBatches(ctx, c, ep), 0)
			require.NoError(b, err)
			mu.Lock()
			res.rows += n
			res.bytes += by
			mu.Unlock()
		})
	}
	wg.Wait()
	res.secs = time.Since(start).Seconds()
	return res, plan.Record.Run
}

func ceilingRun(b *testing.B, rec arrow.RecordBatch, count int) result {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(b, err)
	srv := grpc.NewServer(grpc.MaxSendMsgSize(1 << 30))
	arrowflight.RegisterFlightServiceServer(srv, &benchdata.Ceiling{Rec: rec, Count: count})
	go func() { _ = srv.Serve(lis) }()
	defer srv.Stop()
	c := dial(b, lis.Addr().String())
	start := time.Now()
	n, by, _, err := drain(c.Read(context.Background(), client.Endpoint{Ticket: []byte("x")}), 0)
	require.NoError(b, err)
	return result{rows: n, bytes: by, secs: time.Since(start).Seconds()}
}

// flightdRSS runs a real flightd process over a store, drives the small-row
// mix through it, and returns its peak RSS (VmHWM) and the mix's figures.
func flightdRSS(b *testing.B, bin string, args []string, env []string, recipe client.Recipe) (int64, result) {
	cmd := exec.Command(bin, append([]string{"serve", "--addr", "127.0.0.1:0", "--log-format", "json"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	stderr, err := cmd.StderrPipe()
	require.NoError(b, err)
	require.NoError(b, cmd.Start())
	addrc := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			var line struct{ Msg, Addr string }
			if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "serving" {
				addrc <- line.Addr
			}
		}
	}()
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGKILL)
		_ = cmd.Wait()
	}()
	var addr string
	select {
	case addr = <-addrc:
	case <-time.After(60 * time.Second):
		b.Fatal("flightd did not start")
	}
	c := dial(b, addr)
	res, _ := runMix(b, c, recipe, 1)
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", cmd.Process.Pid))
	require.NoError(b, err)
	var kb int64
	for _, line := range strings.Split(string(status), "\n") {
		if strings.HasPrefix(line, "VmHWM:") {
			_, err := fmt.Sscanf(strings.TrimSpace(strings.TrimPrefix(line, "VmHWM:")), "%d kB", &kb)
			require.NoError(b, err)
		}
	}
	return kb << 10, res
}

// BenchmarkMix measures training mixes over Flight against a plain scan and
// the Flight ceiling, from the fs store and from MinIO. It prints a table
// (and writes it to mix-results.md when WEFT_MIX_RESULTS names a file).
//
//	make bench-mix   (or: go test -run '^$' -bench BenchmarkMix -benchtime 1x -timeout 60m ./bench/)
func BenchmarkMix(b *testing.B) {
	if testing.Short() {
		b.Skip("writes ~3 GB: not in -short")
	}
	small := envInts("WEFT_MIX_SMALL", []int64{1_000_000, 4_000_000})
	largeBytes := envInts("WEFT_MIX_LARGE_BYTES", []int64{2 << 30})[0]
	largeRows := largeBytes / 2 / valueBytes
	stores := strings.Split(os.Getenv("WEFT_MIX_STORES"), ",")
	if os.Getenv("WEFT_MIX_STORES") == "" {
		stores = []string{"fs", "minio"}
	}
	parts := map[string]bool{}
	for _, p := range strings.Split(os.Getenv("WEFT_MIX_PARTS"), ",") {
		parts[p] = true
	}
	want := func(p string) bool { return os.Getenv("WEFT_MIX_PARTS") == "" || parts[p] }
	ctx := context.Background()
	dir := b.TempDir()
	start := time.Now()
	writeData(b, dir, small, largeRows)
	b.Logf("data written in %v", time.Since(start).Round(time.Second))

	bin := filepath.Join(b.TempDir(), "flightd")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/weftdata/weft/cmd/flightd").CombinedOutput()
	require.NoError(b, err, string(out))

	var report strings.Builder
	pf := func(format string, a ...any) {
		fmt.Fprintf(&report, format, a...)
	}
	pf("Training mixes over Flight, Go client, loopback, %d CPUs (GOMAXPROCS %d), %s\n\n", runtime.NumCPU(), runtime.GOMAXPROCS(0), time.Now().UTC().Format("2006-01-02"))
	pf("| store | benchmark | samples/s | MB/s | vs | notes |\n| --- | --- | ---: | ---: | --- | --- |\n")

	smallNames := []string{}
	for i := range small {
		smallNames = append(smallNames, fmt.Sprintf("small_%c", 'a'+i))
	}
	smallRecipe := client.Recipe{Seed: 1, BatchSize: 256, Components: []client.Component{
		{Project: "bench", Table: "small_a", Weight: 0.3},
		{Project: "bench", Table: "small_b", Weight: 0.7}}}
	largeRecipe := client.Recipe{Seed: 1, BatchSize: 64, Components: []client.Component{
		{Project: "bench", Table: "large_a", Weight: 0.5},
		{Project: "bench", Table: "large_b", Weight: 0.5}}}

	rounds := int(envInts("WEFT_MIX_ROUNDS", []int64{5})[0])
	// The ceiling: one prebuilt batch of a large step (64 rows of 100 KiB).
	g := newGen(benchdata.LargeSchema, 64, 64, 99)
	require.True(b, g.Next())
	probe := g.RecordBatch()
	defer g.Release()
	steps := int(2 * largeRows / 64)

	for _, storeName := range stores {
		var bk bucket.Bucket
		var flightdArgs, flightdEnv []string
		switch storeName {
		case "fs":
			fsb, err := bucket.NewFS(dir)
			require.NoError(b, err)
			bk = fsb
			flightdArgs = []string{"--store", dir}
		case "minio":
			m := s3test.SharedMinIO(b)
			name := m.MakeBucket(b, "bench-mix")
			s3b, err := bucket.NewS3(ctx, m.Config(name))
			require.NoError(b, err)
			fsb, err := bucket.NewFS(dir)
			require.NoError(b, err)
			t0 := time.Now()
			require.NoError(b, copyStore(ctx, fsb, s3b))
			b.Logf("copied the store to MinIO in %v", time.Since(t0).Round(time.Second))
			bk = s3b
			flightdArgs = []string{"--store", "s3://" + name, "--s3-endpoint", m.Endpoint, "--s3-region", m.Region}
			flightdEnv = []string{"AWS_ACCESS_KEY_ID=" + m.AccessKey, "AWS_SECRET_ACCESS_KEY=" + m.SecretKey}
		default:
			b.Fatalf("unknown store %q", storeName)
		}

		// Small rows: a plain scan, then the mix (each on a fresh server:
		// cold caches).
		// Small rows: a plain scan and the mix, in alternating rounds (each
		// on a fresh server: cold caches), so that load from elsewhere on the
		// machine hits both alike; the best round of each is reported.
		if want("mix") {
			var scs, mxs []result
			var decodes int64
			for round := range rounds {
				srv := serve(b, bk)
				sc := scan(b, dial(b, srv.addr), smallNames...)
				srv.stop()
				srv = serve(b, bk)
				stopProfile := func() {}
				if round == 0 {
					stopProfile = profile(b, "mix")
				}
				mx, _ := runMix(b, dial(b, srv.addr), smallRecipe, 1)
				stopProfile()
				decodes = srv.svc.MixStats().Decodes
				srv.stop()
				b.Logf("%s round %d: scan %.0f rows/s, mix %.0f samples/s (%.0f%%)", storeName, round, sc.rowsPerSec(), mx.rowsPerSec(), 100*mx.rowsPerSec()/sc.rowsPerSec())
				scs, mxs = append(scs, sc), append(mxs, mx)
			}
			sc, mx := best(scs), best(mxs)
			pf("| %s | small rows: sequential DoGet scan of both tables, 1 stream | %.0f | %.0f | | %d rows; best of %d |\n", storeName, sc.rowsPerSec(), sc.mbPerSec(), sc.rows, rounds)
			pf("| %s | small rows: mix 0.3/0.7, B = 256, 1 stream | %.0f | %.0f | **%.0f%%** of scan rows/s (goal ≥ 50%%) | %d samples, %d block decodes; best of %d |\n", storeName, mx.rowsPerSec(), mx.mbPerSec(), 100*mx.rowsPerSec()/sc.rowsPerSec(), mx.rows, decodes, rounds)
		}
		if want("mix4") {
			srv := serve(b, bk)
			m4, run := runMix(b, dial(b, srv.addr), smallRecipe, 4)
			st := srv.svc.MixStats()
			blocks := runBlocks(b, srv, run)
			srv.stop()
			pf("| %s | small rows: mix, W = 4 ranks on one server | %.0f | %.0f | aggregate | %d block decodes for %d blocks (%.2f per block) |\n", storeName, m4.rowsPerSec(), m4.mbPerSec(), st.Decodes, blocks, float64(st.Decodes)/float64(blocks))
		}

		// Large rows.
		if want("large") {
			srv := serve(b, bk)
			ls := scan(b, dial(b, srv.addr), "large_a", "large_b")
			srv.stop()
			pf("| %s | large rows: sequential DoGet scan of both tables, 1 stream (context: the store's read path) | %.0f | %.0f | | %.2f GB |\n", storeName, ls.rowsPerSec(), ls.mbPerSec(), float64(ls.bytes)/1e9)
			var ceils, lgs []result
			var decodes int64
			var lblocks int
			for round := range rounds {
				ceils = append(ceils, ceilingRun(b, probe, steps))
				srv := serve(b, bk)
				stopProfile := func() {}
				if round == 0 {
					stopProfile = profile(b, "large")
				}
				lg, lrun := runMix(b, dial(b, srv.addr), largeRecipe, 1)
				stopProfile()
				decodes = srv.svc.MixStats().Decodes
				lblocks = runBlocks(b, srv, lrun)
				srv.stop()
				b.Logf("%s round %d: ceiling %.0f MB/s, mix %.0f MB/s (%.0f%%)", storeName, round, ceils[round].mbPerSec(), lg.mbPerSec(), 100*lg.mbPerSec()/ceils[round].mbPerSec())
				lgs = append(lgs, lg)
			}
			ceil, lg := best(ceils), best(lgs)
			pf("| %s | ceiling: arrow-go Flight resending one prebuilt 64 × 100 KiB batch | %.0f | %.0f | | %d batches of %.1f MB; best of %d |\n", storeName, ceil.rowsPerSec(), ceil.mbPerSec(), steps, float64(ceil.bytes)/float64(steps)/1e6, rounds)
			pf("| %s | large rows (100 KiB): mix 0.5/0.5, B = 64, 1 stream | %.0f | %.0f | **%.0f%%** of the ceiling (goal ≥ 60%%) | %.2f GB; %d decodes for %d blocks; best of %d |\n", storeName, lg.rowsPerSec(), lg.mbPerSec(), 100*lg.mbPerSec()/ceil.mbPerSec(), float64(lg.bytes)/1e9, decodes, lblocks, rounds)
		}
		if want("large4") {
			srv := serve(b, bk)
			l4, lrun := runMix(b, dial(b, srv.addr), largeRecipe, 4)
			st := srv.svc.MixStats()
			lblocks := runBlocks(b, srv, lrun)
			srv.stop()
			pf("| %s | large rows: mix, W = 4 ranks on one server | %.0f | %.0f | aggregate | %d block decodes for %d blocks |\n", storeName, l4.rowsPerSec(), l4.mbPerSec(), st.Decodes, lblocks)
		}

		// Resume far into a long run: time to the first batch on a cold server.
		if want("resume") {
			srv := serve(b, bk)
			c := dial(b, srv.addr)
			long := client.Recipe{Seed: 1, BatchSize: 256, Steps: 2_000_000, Components: smallRecipe.Components}
			plan, err := c.Resolve(ctx, long, 1)
			require.NoError(b, err)
			srv.stop()
			srv = serve(b, bk)
			c = dial(b, srv.addr)
			t0 := time.Now()
			resumed, err := c.Resume(ctx, plan.Record.Run, 1, 1_000_000)
			require.NoError(b, err)
			_, _, first, err := drain(rankBatches(ctx, c, resumed.Ranks[0]), 1)
			require.NoError(b, err)
			ttfb := time.Since(t0)
			srv.stop()
			pf("| %s | resume at step 10^6 of 2·10^6 (B = 256), cold server: time to first batch | | | | %v (GetFlightInfo + DoGet; DoGet alone %v) |\n", storeName, ttfb.Round(time.Millisecond), first.Round(time.Millisecond))
		}

		// Peak RSS of a real flightd for the small-row mix with the default cache.
		if !want("rss") {
			continue
		}
		rss, rres := flightdRSS(b, bin, flightdArgs, flightdEnv, smallRecipe)
		pf("| %s | flightd process, small-row mix, default 1 GiB cache (and default --memory-limit, cache + 512 MiB): peak RSS | %.0f | %.0f | | VmHWM %.0f MiB |\n", storeName, rres.rowsPerSec(), rres.mbPerSec(), float64(rss)/(1<<20))
		rss, rres = flightdRSS(b, bin, flightdArgs, append(slices.Clone(flightdEnv), "GOMEMLIMIT=9223372036854775807"), smallRecipe)
		pf("| %s | the same without a memory limit (GOGC 100 only) | %.0f | %.0f | | VmHWM %.0f MiB |\n", storeName, rres.rowsPerSec(), rres.mbPerSec(), float64(rss)/(1<<20))
		rss, rres = flightdRSS(b, bin, append(slices.Clone(flightdArgs), "--cache-size", "256MiB"), flightdEnv, smallRecipe)
		pf("| %s | the same with --cache-size 256MiB (the tables' 720 MB of blocks do not fit) | %.0f | %.0f | | VmHWM %.0f MiB |\n", storeName, rres.rowsPerSec(), rres.mbPerSec(), float64(rss)/(1<<20))
	}
	fmt.Fprint(os.Stdout, "\n"+report.String())
	if path := os.Getenv("WEFT_MIX_RESULTS"); path != "" {
		require.NoError(b, os.WriteFile(path, []byte(report.String()), 0o644))
	}
}

// best is the fastest of several runs.
func best(rs []result) result {
	out := rs[0]
	for _, r := range rs[1:] {
		if r.secs < out.secs {
			out = r
		}
	}
	return out
}

// profile writes a CPU profile of one part to $WEFT_MIX_PROFILE.PART.
func profile(b *testing.B, part string) func() {
	base := os.Getenv("WEFT_MIX_PROFILE")
	if base == "" {
		return func() {}
	}
	f, err := os.Create(base + "." + part)
	require.NoError(b, err)
	require.NoError(b, pprof.StartCPUProfile(f))
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}

// runBlocks counts the blocks of a run's components (from its record).
func runBlocks(b *testing.B, srv *server, run string) int {
	c := dial(b, srv.addr)
	plan, err := c.PlanRun(context.Background(), client.RunCommand{Run: run})
	require.NoError(b, err)
	n := 0
	for _, c := range plan.Record.Components {
		n += len(c.Blocks)
	}
	return n
}
