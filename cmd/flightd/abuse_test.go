package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	arrowflight "github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/weftdata/weft/client"
)

// The abuse scenario of issue 11: 100 rank streams whose readers stop
// after one message, 4 giant run plans and 4 puts of 200 MB, against one
// flightd with --memory-limit. Every call must answer (OK, or
// RESOURCE_EXHAUSTED / INVALID_ARGUMENT with a message), the server must
// stay up, and its peak RSS (VmHWM) must stay under the limit.

const (
	abuseLimit     = 1 << 30
	abuseImgBytes  = 4 << 10
	abuseRows      = 16384
	abuseStreams   = 100
	abusePutBytes  = 200 << 20
	abusePuts      = 4
	abuseRowGroups = "4096"
)

// abuseArgs are the flags of the flightd under abuse (the limits are
// defaults, but for the waits, shortened to keep the test short).
func abuseArgs(store string) []string {
	return []string{"--store", store, "--memory-limit", "1GiB", "--memory-wait", "3s", "--queue-wait", "3s", "--row-group-rows", abuseRowGroups}
}

var wideSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "image", Type: arrow.BinaryTypes.Binary},
}, nil)

// wideReader yields rows [first, first+n) of wide rows (id, img bytes of
// noise) in batches of about batchBytes, built as they are read, so that
// a put of hundreds of MB does not sit in the client's memory at once.
type wideReader struct {
	first, n, next int64
	img            int
	batchRows      int64
	rng            *rand.ChaCha8
	cur            arrow.RecordBatch
	refs           int64
}

func newWideReader(first, n int64, img int, batchBytes int64) *wideReader {
	var seed [32]byte
	seed[0] = byte(first)
	return &wideReader{first: first, n: n, next: first, img: img, batchRows: max(1, batchBytes/int64(img)), rng: rand.NewChaCha8(seed), refs: 1}
}

func (r *wideReader) Schema() *arrow.Schema { return wideSchema }
func (r *wideReader) Retain()               { r.refs++ }
func (r *wideReader) Release() {
	if r.refs--; r.refs == 0 && r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
}
func (r *wideReader) Err() error                     { return nil }
func (r *wideReader) RecordBatch() arrow.RecordBatch { return r.cur }
func (r *wideReader) Record() arrow.RecordBatch      { return r.cur }

func (r *wideReader) Next() bool {
	if r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
	if r.next >= r.first+r.n {
		return false
	}
	rows := min(r.batchRows, r.first+r.n-r.next)
	b := array.NewRecordBuilder(memory.DefaultAllocator, wideSchema)
	defer b.Release()
	img := make([]byte, r.img)
	bin := b.Field(1).(*array.BinaryBuilder)
	bin.ReserveData(int(rows) * r.img)
	for i := r.next; i < r.next+rows; i++ {
		b.Field(0).(*array.Int64Builder).Append(i)
		_, _ = r.rng.Read(img)
		bin.Append(img)
	}
	r.next += rows
	r.cur = b.NewRecordBatch()
	return true
}

// peakRSS is the VmHWM of process pid, in bytes.
func peakRSS(pid int) (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			return kb << 10, err
		}
	}
	return 0, errors.New("no VmHWM")
}

// outcomes counts the codes of the abuse calls and checks each answer.
type outcomes struct {
	mu     sync.Mutex
	counts map[string]int
	bad    []string
}

func (o *outcomes) add(what string, err error, allowed ...codes.Code) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.counts == nil {
		o.counts = map[string]int{}
	}
	c := status.Code(err)
	o.counts[what+" "+c.String()]++
	if err == nil {
		return
	}
	msg := status.Convert(err).Message()
	ok := false
	for _, a := range allowed {
		ok = ok || a == c
	}
	if !ok || len(msg) < 20 {
		o.bad = append(o.bad, fmt.Sprintf("%s: %v", what, err))
	}
}

// abuseSetup creates the project and the table the streams read.
func abuseSetup(t testing.TB, c *client.Client) {
	ctx := context.Background()
	_, err := c.CreateProject(ctx, "robotics")
	require.NoError(t, err)
	r := newWideReader(0, abuseRows, abuseImgBytes, 4<<20)
	defer r.Release()
	_, err = c.Put(ctx, client.PutDescriptor{Project: "robotics", Branch: "main", Table: "wide"}, r)
	require.NoError(t, err)
}

// abuse runs the scenario's calls against c, all at once, and returns
// what they answered. withPuts adds the 4 puts of 200 MB.
func abuse(t testing.TB, c *client.Client, withPuts bool) *outcomes {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	o := &outcomes{}
	var (
		wg      sync.WaitGroup
		stalled sync.WaitGroup // streams that got their first message and stopped reading
	)
	ready := make(chan struct{})
	for i := range abuseStreams {
		stalled.Add(1)
		wg.Go(func() {
			recipe := &client.Recipe{Seed: uint64(i), BatchSize: 64, Components: []client.Component{{Project: "robotics", Table: "wide"}}}
			plan, err := c.PlanRun(ctx, client.RunCommand{Recipe: recipe})
			if err != nil {
				stalled.Done()
				o.add("plan stream", err, codes.ResourceExhausted)
				return
			}
			ds, err := c.Flight().DoGet(ctx, &arrowflight.Ticket{Ticket: plan.Ranks[0].Ticket})
			if err == nil {
				_, err = ds.Recv()
			}
			stalled.Done()
			o.add("stalled stream", err, codes.ResourceExhausted)
			<-ready // hold the stream, unread, until the end
		})
	}
	giants := []struct {
		what string
		cmd  []byte
		want []codes.Code
	}{
		{"batch 2^20 world 2^20", mustJSON(client.RunCommand{Recipe: giantRecipe(), WorldSize: world(1 << 20)}), []codes.Code{codes.InvalidArgument}},
		{"batch 2^20 world 1", mustJSON(client.RunCommand{Recipe: giantRecipe()}), []codes.Code{codes.InvalidArgument}},
		{"batch 2^20 world 4096", mustJSON(client.RunCommand{Recipe: giantRecipe(), WorldSize: world(4096)}), []codes.Code{codes.ResourceExhausted}},
		{"57 MB JSON", bigJSON(57 << 20), []codes.Code{codes.InvalidArgument}},
	}
	for _, g := range giants {
		wg.Go(func() {
			_, err := c.Flight().GetFlightInfo(ctx, &arrowflight.FlightDescriptor{Type: arrowflight.DescriptorCMD, Cmd: g.cmd})
			o.add("giant "+g.what, err, g.want...)
		})
	}
	if withPuts {
		for i := range abusePuts {
			wg.Go(func() {
				r := newWideReader(int64(1_000_000*(i+1)), abusePutBytes/(64<<10), 64<<10, client.PutPieceBytes)
				defer r.Release()
				_, err := c.Put(ctx, client.PutDescriptor{Project: "robotics", Branch: "main", Table: fmt.Sprintf("upload%d", i)}, r)
				o.add("put 200 MB", err, codes.ResourceExhausted)
			})
		}
	}
	stalled.Wait()
	// Every stalled stream answered; the giants and puts finish meanwhile.
	done := make(chan struct{})
	go func() {
		for {
			o.mu.Lock()
			n := 0
			for _, v := range o.counts {
				n += v
			}
			o.mu.Unlock()
			want := abuseStreams + len(giants)
			if withPuts {
				want += abusePuts
			}
			if n >= want {
				close(done)
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	<-done
	close(ready)
	cancel()
	wg.Wait()
	return o
}

func giantRecipe() *client.Recipe {
	return &client.Recipe{Seed: 1, BatchSize: 1 << 20, Components: []client.Component{{Project: "robotics", Table: "wide"}}}
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// bigJSON is a well-formed run command of about n bytes (one huge column
// name).
func bigJSON(n int) []byte {
	return []byte(`{"recipe": {"seed": 1, "batch_size": 8, "components": [{"project": "robotics", "table": "wide", "columns": ["` + strings.Repeat("x", n) + `"]}]}}`)
}

// TestAbuse: 100 stalled rank streams and 4 giant run plans at once, under
// --memory-limit 1GiB; then 4 concurrent puts of 200 MB under the same
// limit.
// productBinary builds flightd as users run it (no -race, no test code)
// once per test process: peak RSS is measured on it, since the race
// detector alone multiplies a process's memory several times.
func productBinary(t testing.TB) string {
	t.Helper()
	productOnce.Do(func() {
		dir, err := os.MkdirTemp("", "weft-abuse-")
		if err != nil {
			productErr = err
			return
		}
		productBin = filepath.Join(dir, "flightd")
		out, err := exec.Command("go", "build", "-o", productBin, ".").CombinedOutput()
		if err != nil {
			productErr = fmt.Errorf("go build flightd: %v\n%s", err, out)
		}
	})
	require.NoError(t, productErr)
	return productBin
}

var (
	productOnce sync.Once
	productBin  string
	productErr  error
)

func TestAbuse(t *testing.T) {
	if testing.Short() {
		t.Skip("abuse: skipped with -short")
	}
	bin := productBinary(t)
	t.Cleanup(func() { _ = os.RemoveAll(filepath.Dir(bin)) })
	for _, tc := range []struct {
		name string
		puts bool
	}{{"streams and giant plans", false}, {"puts", true}} {
		t.Run(tc.name, func(t *testing.T) {
			// Puts wait for memory as long as flightd's default: they
			// should all get through, one after another if need be.
			args := abuseArgs(t.TempDir())
			if tc.puts {
				args = append(args, "--memory-wait", "30s")
			}
			srv := startBinary(t, bin, nil, args...)
			c := dial(t, srv.addr)
			abuseSetup(t, c)
			var o *outcomes
			if tc.puts {
				o = abusePutsOnly(t, c)
			} else {
				o = abuse(t, c, false)
			}
			peak, err := peakRSS(srv.cmd.Process.Pid)
			require.NoError(t, err)
			t.Logf("outcomes: %v", o.counts)
			t.Logf("peak RSS %d MiB under --memory-limit %d MiB", peak>>20, abuseLimit>>20)
			require.Empty(t, o.bad, "calls answered with an unexpected code or a short message")
			// Still serving: a small plan works.
			_, err = c.PlanRun(context.Background(), client.RunCommand{Recipe: &client.Recipe{Seed: 5, BatchSize: 8, Components: []client.Component{{Project: "robotics", Table: "wide"}}}})
			require.NoError(t, err, "the server no longer answers")
			require.Less(t, peak, int64(abuseLimit), "peak RSS over --memory-limit")
		})
	}
}

// abusePutsOnly runs the 4 puts of 200 MB at once.
func abusePutsOnly(t testing.TB, c *client.Client) *outcomes {
	o := &outcomes{}
	var wg sync.WaitGroup
	for i := range abusePuts {
		wg.Go(func() {
			r := newWideReader(int64(1_000_000*(i+1)), abusePutBytes/(64<<10), 64<<10, client.PutPieceBytes)
			defer r.Release()
			_, err := c.Put(context.Background(), client.PutDescriptor{Project: "robotics", Branch: "main", Table: fmt.Sprintf("upload%d", i)}, r)
			o.add("put 200 MB", err, codes.ResourceExhausted)
		})
	}
	wg.Wait()
	return o
}

// BenchmarkAbuse prints flightd's peak RSS through the whole abuse
// scenario at once: 100 stalled rank streams, 4 giant plans and 4 puts
// of 200 MB, with --memory-limit 1GiB. $WEFT_ABUSE_FLIGHTD names another
// flightd binary to measure (e.g. one built from main before the limits:
// it gets only the flags it knows). Results: bench/abuse-results.md.
//
//	go test -run '^$' -bench Abuse -benchtime 1x ./cmd/flightd/
func BenchmarkAbuse(b *testing.B) {
	bin, env := productBinary(b), []string(nil)
	args := abuseArgs(b.TempDir())
	if other := os.Getenv("WEFT_ABUSE_FLIGHTD"); other != "" {
		bin, env = other, nil
		args = []string{"--store", b.TempDir(), "--memory-limit", "1GiB", "--row-group-rows", abuseRowGroups}
	}
	for b.Loop() {
		srv := startBinary(b, bin, env, args...)
		c := dial(b, srv.addr)
		abuseSetup(b, c)
		o := abuse(b, c, true)
		peak, err := peakRSS(srv.cmd.Process.Pid)
		require.NoError(b, err)
		alive := "yes"
		if _, err := c.Branches(context.Background(), "robotics"); err != nil {
			alive = "no: " + err.Error()
		}
		fmt.Printf("binary %s\noutcomes %v\npeak RSS %d MiB (--memory-limit 1024 MiB); still serving: %s\n", bin, o.counts, peak>>20, alive)
		b.ReportMetric(float64(peak>>20), "peak-MiB")
		srv.kill()
		args[1] = b.TempDir()
	}
}
