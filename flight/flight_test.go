package flight_test

import (
	"encoding/json"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	arrowflight "github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"google.golang.org/grpc/codes"

	"github.com/weftdata/weft/bucket"
	"github.com/weftdata/weft/flight"
	"github.com/weftdata/weft/internal/s3test"
	"github.com/weftdata/weft/tables"
)

func TestMain(m *testing.M) {
	code := s3test.Main(m)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			println("goleak:", err.Error())
			code = 1
		}
	}
	os.Exit(code)
}

// backends lists the buckets the protocol tests run on.
func backends(t *testing.T) map[string]func(t *testing.T) bucket.Bucket {
	return map[string]func(t *testing.T) bucket.Bucket{
		"mem": func(t *testing.T) bucket.Bucket { return bucket.NewMem() },
		"fs": func(t *testing.T) bucket.Bucket {
			b, err := bucket.NewFS(t.TempDir())
			require.NoError(t, err)
			return b
		},
		"minio": func(t *testing.T) bucket.Bucket { return s3test.SharedMinIO(t).NewBucket(t, t.Name()) },
	}
}

func TestActions(t *testing.T) {
	e := newEnv(t, bucket.NewMem(), envOpts{})

	stream, err := e.client.ListActions(ctxT(t), &arrowflight.Empty{})
	require.NoError(t, err)
	var names []string
	for {
		a, err := stream.Recv()
		if err != nil {
			break
		}
		require.NotEmpty(t, a.Description, a.Type)
		names = append(names, a.Type)
	}
	require.Equal(t, []string{"create_project", "create_branch", "list_branches", "log", "stat_media", "read_media", "import"}, names)

	var cp map[string]string
	e.mustAction("create_project", `{"project":"robotics"}`, &cp)
	require.Equal(t, []string{"branch", "commit", "project"}, sortedKeys(cp))
	require.Equal(t, "robotics", cp["project"])
	require.Equal(t, "main", cp["branch"])
	require.Len(t, cp["commit"], 64)
	root := cp["commit"]

	put := e.mustPut("robotics", "main", "grasps", 0, 10, 10, 8)

	var cb map[string]string
	e.mustAction("create_branch", `{"project":"robotics","branch":"exp","from":"`+root[:8]+`"}`, &cb)
	require.Equal(t, map[string]string{"branch": "exp", "commit": root}, cb)
	e.mustAction("create_branch", `{"project":"robotics","branch":"exp2"}`, &cb) // from defaults to main
	require.Equal(t, map[string]string{"branch": "exp2", "commit": put.Commit}, cb)

	var lb []map[string]string
	e.mustAction("list_branches", `{"project":"robotics"}`, &lb)
	require.Equal(t, []map[string]string{
		{"branch": "exp", "commit": root},
		{"branch": "exp2", "commit": put.Commit},
		{"branch": "main", "commit": put.Commit},
	}, lb)

	var log []map[string]any
	e.mustAction("log", `{"project":"robotics","ref":"main"}`, &log)
	require.Len(t, log, 2)
	require.Equal(t, []string{"commit", "message", "parent", "tables", "time"}, sortedKeys(log[0]))
	require.Equal(t, put.Commit, log[0]["commit"])
	require.Equal(t, root, log[0]["parent"])
	require.Contains(t, log[0]["tables"], "grasps")
	require.Equal(t, root, log[1]["commit"])
	require.Nil(t, log[1]["parent"])
	require.Empty(t, log[1]["tables"])
	_, err = time.Parse(time.RFC3339Nano, log[0]["time"].(string))
	require.NoError(t, err)

	e.mustAction("log", `{"project":"robotics","ref":"main","limit":1}`, &log)
	require.Len(t, log, 1)
	e.mustAction("log", `{"project":"robotics","ref":"exp"}`, &log)
	require.Len(t, log, 1)
}

// TestPutAndScan is the protocol's round trip, on every backend: several
// batches make one commit; the scan has the right schema, count, commit and
// endpoints; endpoints read in order (or in parallel) give the rows in
// ordinal order.
func TestPutAndScan(t *testing.T) {
	for name, open := range backends(t) {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, open(t), envOpts{
				tables: func(o *tables.Options) { o.RowGroupRows = 100 },
				flight: func(o *flight.Options) { o.EndpointBytes = 1 }, // one endpoint per row group
			})
			ctx := ctxT(t)
			root := e.createProject("p")

			first := e.mustPut("p", "main", "t", 0, 250, 60, 16) // 5 batches, 3 row groups
			second := e.mustPut("p", "main", "t", 250, 150, 150, 16)
			var log []map[string]any
			e.mustAction("log", `{"project":"p","ref":"main"}`, &log)
			require.Len(t, log, 3, "each put is exactly one commit")
			require.Equal(t, []any{second.Commit, first.Commit, root}, []any{log[0]["commit"], log[1]["commit"], log[2]["commit"]})

			info := e.info(pathDesc("p", "main", "t"))
			require.EqualValues(t, 400, info.TotalRecords)
			require.True(t, info.Ordered)
			require.Equal(t, second.Commit, infoCommit(t, info))
			schema, err := arrowflight.DeserializeSchema(info.Schema, e.cmem)
			require.NoError(t, err)
			require.True(t, schema.Equal(testSchema), "%v", schema)
			require.Len(t, info.Endpoint, 5) // 100+100+50 | 100+50
			require.Equal(t, seq(0, 400), e.scan(info))

			// Parallel readers, one per endpoint; concatenated in endpoint order.
			parts := make([][]int64, len(info.Endpoint))
			var wg sync.WaitGroup
			for i, ep := range info.Endpoint {
				wg.Go(func() {
					ids, _, err := e.read(ctx, ep.Ticket, nil)
					require.NoError(t, err)
					parts[i] = ids
				})
			}
			wg.Wait()
			var all []int64
			for _, p := range parts {
				all = append(all, p...)
			}
			require.Equal(t, seq(0, 400), all)

			// GetSchema, and the scan command with a projection.
			sr, err := e.client.GetSchema(ctx, pathDesc("p", first.Commit, "t"))
			require.NoError(t, err)
			got, err := arrowflight.DeserializeSchema(sr.Schema, e.cmem)
			require.NoError(t, err)
			require.True(t, got.Equal(testSchema))

			cmd := `{"scan": {"project":"p","ref":"` + first.Commit[:10] + `","table":"t","columns":["blob","id"]}}`
			sr, err = e.client.GetSchema(ctx, cmdDesc(cmd))
			require.NoError(t, err)
			got, err = arrowflight.DeserializeSchema(sr.Schema, e.cmem)
			require.NoError(t, err)
			require.Equal(t, []string{"blob", "id"}, fieldNames(got))

			info = e.info(cmdDesc(cmd))
			require.EqualValues(t, 250, info.TotalRecords)
			require.Equal(t, first.Commit, infoCommit(t, info))
			var ids []int64
			for _, ep := range info.Endpoint {
				got, s, err := e.read(ctx, ep.Ticket, func(rec arrow.RecordBatch) {
					require.Equal(t, []string{"blob", "id"}, fieldNames(rec.Schema()))
				})
				require.NoError(t, err)
				require.Equal(t, []string{"blob", "id"}, fieldNames(s))
				ids = append(ids, got...)
			}
			require.Equal(t, seq(0, 250), ids)
		})
	}
}

func fieldNames(s *arrow.Schema) []string {
	var out []string
	for _, f := range s.Fields() {
		out = append(out, f.Name)
	}
	return out
}

func TestListFlights(t *testing.T) {
	e := newEnv(t, bucket.NewMem(), envOpts{})
	e.createProject("a")
	e.createProject("b")
	e.mustPut("a", "main", "t2", 0, 5, 5, 4)
	e.mustPut("a", "main", "t1", 0, 7, 7, 4)
	e.mustPut("b", "main", "x", 0, 3, 3, 4)
	e.mustAction("create_branch", `{"project":"b","branch":"dev","from":"main"}`, nil)
	e.mustPut("b", "dev", "only-on-dev", 0, 3, 3, 4)

	list := func(criteria string) []string {
		stream, err := e.client.ListFlights(ctxT(t), &arrowflight.Criteria{Expression: []byte(criteria)})
		require.NoError(t, err)
		var out []string
		for {
			info, err := stream.Recv()
			if err != nil {
				requireEOF(t, err)
				break
			}
			p := info.FlightDescriptor.Path
			out = append(out, p[0]+"/"+p[1]+"/"+p[2]+":"+itoa(info.TotalRecords))
			require.NotEmpty(t, info.Endpoint)
			require.Len(t, infoCommit(t, info), 64)
		}
		return out
	}
	require.Equal(t, []string{"a/main/t1:7", "a/main/t2:5", "b/main/x:3"}, list(""))
	require.Equal(t, []string{"b/main/x:3"}, list("b"))
	stream, err := e.client.ListFlights(ctxT(t), &arrowflight.Criteria{Expression: []byte("nope")})
	require.NoError(t, err)
	_, err = stream.Recv()
	requireCode(t, err, codes.NotFound, "nope")
}

// TestPinnedCommitAndBranches: a FlightInfo (and its tickets) stay at the
// commit they were planned at; a write on a branch leaves main alone.
func TestPinnedCommitAndBranches(t *testing.T) {
	e := newEnv(t, bucket.NewMem(), envOpts{})
	e.createProject("p")
	first := e.mustPut("p", "main", "t", 0, 100, 30, 8)
	pinned := e.info(pathDesc("p", "main", "t"))

	e.mustPut("p", "main", "t", 100, 50, 50, 8)
	require.Equal(t, seq(0, 100), e.scan(pinned), "an old ticket still reads its commit")
	require.Equal(t, seq(0, 100), e.scan(e.info(pathDesc("p", first.Commit, "t"))))
	require.Equal(t, seq(0, 150), e.scan(e.info(pathDesc("p", "main", "t"))))

	e.mustAction("create_branch", `{"project":"p","branch":"exp","from":"`+first.Commit+`"}`, nil)
	onBranch := e.mustPut("p", "exp", "t", 1000, 10, 10, 8)
	e.mustPut("p", "exp", "other", 0, 10, 10, 8)
	require.Equal(t, append(seq(0, 100), seq(1000, 10)...), e.scan(e.info(pathDesc("p", "exp", "t"))))
	mainInfo := e.info(pathDesc("p", "main", "t"))
	require.Equal(t, seq(0, 150), e.scan(mainInfo))
	require.NotEqual(t, onBranch.Commit, infoCommit(t, mainInfo))
	_, err := e.client.GetFlightInfo(ctxT(t), pathDesc("p", "main", "other"))
	requireCode(t, err, codes.NotFound, "other")
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

func requireEOF(t *testing.T, err error) {
	t.Helper()
	require.ErrorContains(t, err, "EOF")
}

// TestGracefulShutdown: Serve returns nil when its context ends, after
// cancelling a stream that outlives the grace period.
func TestGracefulShutdown(t *testing.T) {
	e := newEnv(t, bucket.NewMem(), envOpts{flight: func(o *flight.Options) {
		o.ShutdownGrace = 200 * time.Millisecond
		o.BatchBytes = 1 << 10
	}})
	e.createProject("p")
	e.mustPut("p", "main", "t", 0, 20000, 20000, 64)
	info := e.info(pathDesc("p", "main", "t"))
	stream, err := e.client.DoGet(ctxT(t), info.Endpoint[0].Ticket)
	require.NoError(t, err)
	_, err = stream.Recv() // started, then never read again: the server blocks on flow control
	require.NoError(t, err)
	start := time.Now()
	e.stop()
	require.Less(t, time.Since(start), 10*time.Second)
}
