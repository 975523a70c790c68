package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"syscall"
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
	"github.com/weftdata/weft/internal/s3test"
)

// asFlightd makes the test binary run as flightd (TestMain).
const asFlightd = "WEFT_TEST_AS_FLIGHTD"

// flightdProc is a flightd child process.
type flightdProc struct {
	cmd  *exec.Cmd
	addr string
	done chan struct{}
}

// startFlightd runs `flightd serve` (this test binary) over a store, on a
// free port, and returns once it serves.
func startFlightd(t testing.TB, env []string, args ...string) *flightdProc {
	t.Helper()
	return startBinary(t, os.Args[0], env, append([]string{"--row-group-rows", "300"}, args...)...)
}

// startBinary runs `BIN serve` over a store (BIN: a flightd binary, or
// this test binary), on a free port, and returns once it serves.
func startBinary(t testing.TB, bin string, env []string, args ...string) *flightdProc {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"serve", "--addr", "127.0.0.1:0", "--log-format", "json"}, args...)...)
	cmd.Env = append(append(os.Environ(), asFlightd+"=1"), env...)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	p := &flightdProc{cmd: cmd, done: make(chan struct{})}
	addr := make(chan string, 1)
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			var line struct{ Msg, Addr string }
			if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "serving" {
				addr <- line.Addr
			}
		}
		_ = cmd.Wait()
	}()
	select {
	case p.addr = <-addr:
	case <-p.done:
		t.Fatal("flightd exited before serving")
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("flightd did not start")
	}
	t.Cleanup(func() { p.kill() })
	return p
}

// kill sends SIGKILL and waits.
func (p *flightdProc) kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

func dial(t testing.TB, addr string) *client.Client {
	c, err := client.Dial(addr, client.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

var e2eSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "action", Type: arrow.FixedSizeListOf(7, arrow.PrimitiveTypes.Float32)},
	{Name: "image", Type: arrow.BinaryTypes.Binary},
}, nil)

// putRows appends rows [first, first+n) (id = ordinal) in one DoPut.
func putRows(t *testing.T, c *client.Client, table string, first, n int64) {
	t.Helper()
	b := array.NewRecordBuilder(memory.DefaultAllocator, e2eSchema)
	defer b.Release()
	img := make([]byte, 300)
	for i := first; i < first+n; i++ {
		b.Field(0).(*array.Int64Builder).Append(i)
		fl := b.Field(1).(*array.FixedSizeListBuilder)
		fl.Append(true)
		for k := range 7 {
			fl.ValueBuilder().(*array.Float32Builder).Append(float32(i) + float32(k))
		}
		for k := range img {
			img[k] = byte(i) + byte(k)
		}
		b.Field(2).(*array.BinaryBuilder).Append(img)
	}
	rec := b.NewRecordBatch()
	r, err := array.NewRecordReader(e2eSchema, []arrow.RecordBatch{rec})
	rec.Release()
	require.NoError(t, err)
	defer r.Release()
	_, err = c.Put(context.Background(), client.PutDescriptor{Project: "robotics", Branch: "main", Table: table}, r)
	require.NoError(t, err)
}

func plan(c *client.Client, cmd client.RunCommand) (*client.RunPlan, string, error) {
	p, err := c.PlanRun(context.Background(), cmd)
	if err != nil {
		return nil, "", err
	}
	return p, p.Record.Run, nil
}

func world(w int) *int { return &w }

// readRank returns a rank's steps: the (component, row) pairs of each,
// checking that every row is the row its _row names.
func readRank(t *testing.T, c *client.Client, ep client.RankEndpoint, run string) map[int64][][2]int64 {
	t.Helper()
	out := map[int64][][2]int64{}
	for st, err := range c.ReadRank(context.Background(), ep) {
		require.NoError(t, err)
		require.Equal(t, run, st.Run)
		rec := st.Batch
		ids := rec.Column(0).(*array.Int64)
		comps := rec.Column(3).(*array.Int32)
		rows := rec.Column(4).(*array.Int64)
		for i := range ids.Len() {
			require.Equal(t, rows.Value(i), ids.Value(i))
			out[st.Step] = append(out[st.Step], [2]int64{int64(comps.Value(i)), rows.Value(i)})
		}
	}
	return out
}

// TestEndToEnd runs a real flightd process on the fs store and on MinIO,
// drives it with a Go Flight client, kills it with SIGKILL mid-stream, and
// resumes the run on a new process over the same store.
func TestEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end: skipped with -short")
	}
	stores := map[string]func(t *testing.T) ([]string, []string){
		"fs": func(t *testing.T) ([]string, []string) { return []string{"--store", t.TempDir()}, nil },
		"minio": func(t *testing.T) ([]string, []string) {
			m := s3test.SharedMinIO(t)
			b := m.MakeBucket(t, "e2e")
			return []string{"--store", "s3://" + b, "--s3-endpoint", m.Endpoint, "--s3-region", m.Region},
				[]string{"AWS_ACCESS_KEY_ID=" + m.AccessKey, "AWS_SECRET_ACCESS_KEY=" + m.SecretKey}
		},
	}
	for name, store := range stores {
		t.Run(name, func(t *testing.T) {
			args, env := store(t)
			srv := startFlightd(t, env, args...)
			c := dial(t, srv.addr)
			_, err := c.CreateProject(context.Background(), "robotics")
			require.NoError(t, err)
			putRows(t, c, "failed", 0, 941)
			putRows(t, c, "nominal", 0, 2203)

			recipe := &client.Recipe{Seed: 2048, BatchSize: 64, Components: []client.Component{
				{Project: "robotics", Table: "failed", Weight: 0.3},
				{Project: "robotics", Table: "nominal", Weight: 0.7}}}
			info, run, err := plan(c, client.RunCommand{Recipe: recipe, WorldSize: world(1)})
			require.NoError(t, err)
			w1 := readRank(t, c, info.Ranks[0], run)
			steps := int64(len(w1))
			require.EqualValues(t, (941+2203+63)/64, steps)
			for s := range steps {
				n := 0
				for _, p := range w1[s] {
					n += int(1 - p[0])
				}
				require.Contains(t, []int{19, 20}, n, "step %d", s)
			}
			for _, w := range []int{2, 4, 8} {
				info, again, err := plan(c, client.RunCommand{Recipe: recipe, WorldSize: world(w)})
				require.NoError(t, err)
				require.Equal(t, run, again)
				for r, ep := range info.Ranks {
					got := readRank(t, c, ep, run)
					for s := range steps {
						for i, p := range got[s] {
							require.Equal(t, w1[s][r+i*w], p, "W=%d rank %d step %d", w, r, s)
						}
					}
				}
			}

			// kill -9 mid-stream, then a NEW process over the same store.
			info, _, err = plan(c, client.RunCommand{Run: run, WorldSize: world(4), StartStep: 10})
			require.NoError(t, err)
			ds, err := c.Flight().DoGet(context.Background(), &arrowflight.Ticket{Ticket: info.Ranks[1].Ticket})
			require.NoError(t, err)
			_, err = ds.Recv()
			require.NoError(t, err)
			srv.kill()
			for err == nil {
				_, err = ds.Recv()
			}
			srv2 := startFlightd(t, env, args...)
			c2 := dial(t, srv2.addr)
			info, _, err = plan(c2, client.RunCommand{Run: run[:12], WorldSize: world(8), StartStep: 10})
			require.NoError(t, err)
			for r, ep := range info.Ranks {
				got := readRank(t, c2, ep, run)
				require.Len(t, got, int(steps-10))
				for s := int64(10); s < steps; s++ {
					for i, p := range got[s] {
						require.Equal(t, w1[s][r+i*8], p, "after restart: rank %d step %d", r, s)
					}
				}
			}

			// A mid-run commit changes nothing in the run; the recipe now is a new run.
			putRows(t, c2, "failed", 941, 59)
			info, _, err = plan(c2, client.RunCommand{Run: run})
			require.NoError(t, err)
			require.Equal(t, w1, readRank(t, c2, info.Ranks[0], run))
			_, again, err := plan(c2, client.RunCommand{Recipe: recipe})
			require.NoError(t, err)
			require.NotEqual(t, run, again)

			// Bad inputs get their codes.
			for _, tc := range []struct {
				cmd  client.RunCommand
				code codes.Code
				msg  string
			}{
				{client.RunCommand{Recipe: recipe, WorldSize: world(3)}, codes.InvalidArgument, "does not divide"},
				{client.RunCommand{Run: run, StartStep: steps}, codes.InvalidArgument, fmt.Sprintf("start_step %d", steps)},
				{client.RunCommand{Run: otherRun(run), WorldSize: world(1)}, codes.NotFound, "no run"},
				{client.RunCommand{Recipe: &client.Recipe{Seed: 1, BatchSize: 8, Components: []client.Component{{Project: "robotics", Table: "nope"}}}}, codes.NotFound, "nope"},
			} {
				_, _, err := plan(c2, tc.cmd)
				require.Equal(t, tc.code, status.Code(err), "%v", err)
				require.ErrorContains(t, err, tc.msg)
			}
		})
	}
}

// otherRun is a well-formed run id that is not run.
func otherRun(run string) string {
	if run[0] == '0' {
		return "1" + run[1:]
	}
	return "0" + run[1:]
}
