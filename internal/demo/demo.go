// Package demo is `flightd demo`: the story of Weft's seed, told against a
// real Flight server on a local-directory store in under a minute. It
// creates a robotics project with two tables of synthetic grasp episodes,
// trains a 0.3/0.7 mix on 4 ranks, commits new rows mid-run, resumes the
// run on 8 ranks from a saved step, shows that every step is identical, and
// ends with a throughput line. Everything goes through a Go Flight client,
// as a trainer's would.
package demo

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	arrowflight "github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"golang.org/x/sync/errgroup"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/weftdata/weft/bucket"
	"github.com/weftdata/weft/flight"
	"github.com/weftdata/weft/mix"
	"github.com/weftdata/weft/tables"
	"github.com/weftdata/weft/versions"
)

// Config is what the demo needs: a directory for its store.
type Config struct {
	Dir string // the local-directory store (created if missing; should be empty)
}

// The seed's story.
const (
	project     = "robotics"
	failedRows  = 9412
	nominalRows = 81006
	seed        = 2048
	batchSize   = 64
	firstWorld  = 4
	secondWorld = 8
	savedStep   = 6       // the checkpoint the 4-rank run saves
	shownSteps  = 12      // steps whose fingerprints are compared
	imageBytes  = 24 * 24 // an 8-bit 24×24 image-like blob
	framesPer   = 40
)

// Schema of both tables: one row per frame of a grasp episode.
var Schema = arrow.NewSchema([]arrow.Field{
	{Name: "episode_id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "frame", Type: arrow.PrimitiveTypes.Int32},
	{Name: "action", Type: arrow.FixedSizeListOf(7, arrow.PrimitiveTypes.Float32)},
	{Name: "success", Type: arrow.FixedWidthTypes.Boolean},
	{Name: "wrist_camera", Type: arrow.BinaryTypes.Binary},
}, nil)

// Run tells the story on out.
func Run(ctx context.Context, cfg Config, out io.Writer) error {
	start := time.Now()
	p := func(format string, a ...any) { fmt.Fprintf(out, format+"\n", a...) }

	b, err := bucket.NewFS(cfg.Dir)
	if err != nil {
		return err
	}
	vs, err := versions.New(b, versions.DefaultOptions())
	if err != nil {
		return err
	}
	ts, err := tables.New(vs, tables.DefaultOptions())
	if err != nil {
		return err
	}
	fo := flight.DefaultOptions()
	fo.Logger = slog.New(slog.DiscardHandler)
	svc, err := flight.New(ts, fo)
	if err != nil {
		return err
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	sctx, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- svc.Serve(sctx, lis) }()
	defer func() {
		stop()
		<-served
	}()
	c, err := arrowflight.NewClientWithMiddleware(lis.Addr().String(), nil, nil,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		// One step's slice is one message: raise gRPC's 4 MiB default.
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(256<<20)))
	if err != nil {
		return err
	}
	defer c.Close()
	cl := &client{c: c, mem: memory.DefaultAllocator}

	p("Weft demo: a Flight server at grpc://%s over the local-directory store %s", lis.Addr(), cfg.Dir)
	p("")
	p("1. Store two tables of synthetic grasp episodes (episode_id, frame, action float32[7], success, wrist_camera %d B)", imageBytes)
	if err := cl.action(ctx, "create_project", map[string]string{"project": project}, nil); err != nil {
		return err
	}
	for _, t := range []struct {
		name    string
		rows    int64
		success bool
	}{{"failed_grasps", failedRows, false}, {"nominal_grasps", nominalRows, true}} {
		t0 := time.Now()
		commit, err := cl.put(ctx, t.name, 0, t.rows, t.success)
		if err != nil {
			return err
		}
		p("   %s/%-15s %6d rows  commit %s  (%.1fs)", project, t.name, t.rows, commit[:12], time.Since(t0).Seconds())
	}

	p("")
	p("2. Train on the mix failed_grasps 0.3 / nominal_grasps 0.7, seed %d, batch %d, as %d ranks", seed, batchSize, firstWorld)
	recipe := map[string]any{"seed": seed, "batch_size": batchSize, "components": []map[string]any{
		{"project": project, "table": "failed_grasps", "weight": 0.3},
		{"project": project, "table": "nominal_grasps", "weight": 0.7},
	}}
	info, rec, err := cl.runInfo(ctx, map[string]any{"recipe": recipe, "world_size": firstWorld})
	if err != nil {
		return err
	}
	p("   run %s: %d steps, %d endpoints (one per rank), every table pinned:", rec.Run[:16], rec.Steps, len(info.Endpoint))
	for _, c := range rec.Components {
		unit := "blocks"
		if len(c.Blocks) == 1 {
			unit = "block"
		}
		p("     %-15s @ %s  %6d rows in %d %s", c.Table, c.Commit[:12], c.Rows, len(c.Blocks), unit)
	}
	first, err := cl.readRanks(ctx, info, 0, shownSteps)
	if err != nil {
		return err
	}
	p("   per-step shares of the global batch (all %d ranks together; 0.3 × 64 = 19.2):", firstWorld)
	for s := range 5 {
		n := first[s].counts()
		p("     step %d: failed %2d (%4.1f%%)  nominal %2d (%4.1f%%)   rank 0 got %v", s, n[0], 100*float64(n[0])/batchSize, n[1], 100*float64(n[1])/batchSize, first[s].perRank[0])
	}
	p("   the trainer checkpoints {run %s…, next step %d}", rec.Run[:12], savedStep)

	p("")
	p("3. Meanwhile someone commits new rows to failed_grasps")
	commit, err := cl.put(ctx, "failed_grasps", failedRows, 1000, false)
	if err != nil {
		return err
	}
	p("   +1000 rows: failed_grasps is now %d rows at commit %s", failedRows+1000, commit[:12])
	_, rec2, err := cl.runInfo(ctx, map[string]any{"recipe": recipe, "world_size": firstWorld})
	if err != nil {
		return err
	}
	p("   the same recipe resolved now is a new run (%s…); the running one is pinned and does not change", rec2.Run[:12])

	p("")
	p("4. The job restarts on %d ranks from the saved step: {\"run\": \"%s…\", \"world_size\": %d, \"start_step\": %d}", secondWorld, rec.Run[:12], secondWorld, savedStep)
	info8, _, err := cl.runInfo(ctx, map[string]any{"run": rec.Run, "world_size": secondWorld, "start_step": savedStep})
	if err != nil {
		return err
	}
	second, err := cl.readRanks(ctx, info8, savedStep, shownSteps)
	if err != nil {
		return err
	}
	p("   step  4 ranks (before)  %d ranks (after restart)", secondWorld)
	same := true
	for s := int64(savedStep); s < shownSteps; s++ {
		a, b := first[s].fingerprint(), second[s-savedStep].fingerprint()
		verdict := "identical"
		if a != b {
			verdict, same = "DIFFERENT", false
		}
		p("   %4d  %s      %s         %s", s, a, b, verdict)
	}
	if !same {
		return errors.New("demo: the resumed run differs from the original")
	}

	p("")
	p("5. The whole run again (%d steps), %d ranks reading at once from one server", rec.Steps, firstWorld)
	t0 := time.Now()
	rows, bytes, err := cl.drain(ctx, info)
	if err != nil {
		return err
	}
	el := time.Since(t0).Seconds()
	st := svc.MixStats()
	p("   block cache: %d blocks decoded in all (each once, whatever the ranks), %d requests served from the cache", st.Decodes, st.Hits)
	p("Throughput: %d samples in %.2fs = %.0f samples/s, %.1f MB/s of Arrow data to 4 ranks (demo took %.1fs)", rows, el, float64(rows)/el, float64(bytes)/1e6/el, time.Since(start).Seconds())
	return nil
}

// client is a small Flight client for the demo.
type client struct {
	c   arrowflight.Client
	mem memory.Allocator
}

func (c *client) action(ctx context.Context, name string, body, into any) error {
	raw, err := json.Marshal(body)
	if err != nil {
		return err
	}
	stream, err := c.c.DoAction(ctx, &arrowflight.Action{Type: name, Body: raw})
	if err != nil {
		return err
	}
	for {
		r, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if into != nil {
			if err := json.Unmarshal(r.Body, into); err != nil {
				return err
			}
		}
	}
}

// put appends rows [first, first+n) of synthetic episodes as one commit.
func (c *client) put(ctx context.Context, table string, first, n int64, success bool) (string, error) {
	stream, err := c.c.DoPut(ctx)
	if err != nil {
		return "", err
	}
	w := arrowflight.NewRecordWriter(stream, ipc.WithSchema(Schema), ipc.WithAllocator(c.mem))
	w.SetFlightDescriptor(&arrowflight.FlightDescriptor{Type: arrowflight.DescriptorPATH, Path: []string{project, "main", table}})
	rng := rand.New(rand.NewPCG(uint64(first), uint64(len(table))))
	for off := first; off < first+n; off += 8192 {
		rec := episodes(c.mem, rng, off, min(8192, first+n-off), success)
		err := w.Write(rec)
		rec.Release()
		if err != nil {
			w.Close()
			return "", fmt.Errorf("put %s: %w", table, err)
		}
	}
	if err := w.Close(); err != nil {
		return "", err
	}
	if err := stream.CloseSend(); err != nil {
		return "", err
	}
	var res struct {
		Commit string `json:"commit"`
	}
	for {
		r, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return "", fmt.Errorf("put %s: %w", table, err)
		}
		if err := json.Unmarshal(r.AppMetadata, &res); err != nil {
			return "", err
		}
	}
	return res.Commit, nil
}

// episodes builds frames [first, first+n): episodes of framesPer frames.
func episodes(mem memory.Allocator, rng *rand.Rand, first, n int64, success bool) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, Schema)
	defer b.Release()
	img := make([]byte, imageBytes)
	act := b.Field(2).(*array.FixedSizeListBuilder)
	actv := act.ValueBuilder().(*array.Float32Builder)
	for i := first; i < first+n; i++ {
		b.Field(0).(*array.Int64Builder).Append(i / framesPer)
		b.Field(1).(*array.Int32Builder).Append(int32(i % framesPer))
		act.Append(true)
		for range 7 {
			actv.Append(float32(rng.NormFloat64()) * 0.1)
		}
		b.Field(3).(*array.BooleanBuilder).Append(success)
		// A gradient with sensor noise: compresses a little, like a photo.
		for y := range 24 {
			for x := range 24 {
				img[y*24+x] = byte(x*5+y*3+int(i%framesPer)) + byte(rng.IntN(8))
			}
		}
		b.Field(4).(*array.BinaryBuilder).Append(img)
	}
	return b.NewRecordBatch()
}

type runRecord struct {
	Run        string `json:"run"`
	Steps      int64  `json:"steps"`
	Components []struct {
		Table  string  `json:"table"`
		Commit string  `json:"commit"`
		Rows   int64   `json:"rows"`
		Blocks []int64 `json:"blocks"`
	} `json:"components"`
}

func (c *client) runInfo(ctx context.Context, cmd any) (*arrowflight.FlightInfo, *runRecord, error) {
	raw, err := json.Marshal(cmd)
	if err != nil {
		return nil, nil, err
	}
	info, err := c.c.GetFlightInfo(ctx, &arrowflight.FlightDescriptor{Type: arrowflight.DescriptorCMD, Cmd: raw})
	if err != nil {
		return nil, nil, err
	}
	var rec runRecord
	if err := json.Unmarshal(info.AppMetadata, &rec); err != nil {
		return nil, nil, err
	}
	return info, &rec, nil
}

// globalStep is a step's samples gathered from every rank.
type globalStep struct {
	pairs   [][2]int64 // (component, row)
	perRank [][2]int   // per rank: rows of each component
}

func (g *globalStep) counts() [2]int {
	var n [2]int
	for _, p := range g.pairs {
		n[p[0]]++
	}
	return n
}

// fingerprint is the first 16 hex digits of the SHA-256 of the step's
// sorted (component, row) pairs: equal iff the global batches are.
func (g *globalStep) fingerprint() string {
	pairs := slices.Clone(g.pairs)
	slices.SortFunc(pairs, func(a, b [2]int64) int {
		if a[0] != b[0] {
			return int(a[0] - b[0])
		}
		return int(a[1] - b[1])
	})
	h := sha256.New()
	var buf [16]byte
	for _, p := range pairs {
		binary.BigEndian.PutUint64(buf[:8], uint64(p[0]))
		binary.BigEndian.PutUint64(buf[8:], uint64(p[1]))
		h.Write(buf[:])
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// readRanks reads steps [from, to) from every endpoint of info at once and
// assembles each step's global batch.
func (c *client) readRanks(ctx context.Context, info *arrowflight.FlightInfo, from, to int64) ([]*globalStep, error) {
	world := len(info.Endpoint)
	steps := make([]*globalStep, to-from)
	for i := range steps {
		steps[i] = &globalStep{perRank: make([][2]int, world)}
	}
	var mu sync.Mutex
	ctx, cancel := context.WithCancel(ctx) // stop the streams once `to` is read
	defer cancel()
	err := c.eachEndpoint(ctx, info, func(r int, rd *arrowflight.Reader) error {
		for s := from; s < to && rd.Next(); s++ {
			rec := rd.RecordBatch()
			var meta struct {
				Step int64 `json:"step"`
			}
			if err := json.Unmarshal(rd.LatestAppMetadata(), &meta); err != nil {
				return err
			}
			if meta.Step != s {
				return fmt.Errorf("rank %d: got step %d, want %d", r, meta.Step, s)
			}
			sc := rec.Schema()
			comps := rec.Column(sc.FieldIndices(mix.ComponentColumn)[0]).(*array.Int32)
			rows := rec.Column(sc.FieldIndices(mix.RowColumn)[0]).(*array.Int64)
			mu.Lock()
			st := steps[s-from]
			for i := range comps.Len() {
				st.pairs = append(st.pairs, [2]int64{int64(comps.Value(i)), rows.Value(i)})
				st.perRank[r][comps.Value(i)]++
			}
			mu.Unlock()
		}
		return nil
	})
	return steps, err
}

// drain reads every endpoint of info to the end at once, counting rows and
// the Arrow bytes received.
func (c *client) drain(ctx context.Context, info *arrowflight.FlightInfo) (int64, int64, error) {
	var rows, bytes int64
	var mu sync.Mutex
	err := c.eachEndpoint(ctx, info, func(_ int, rd *arrowflight.Reader) error {
		var n, b int64
		for rd.Next() {
			rec := rd.RecordBatch()
			n += rec.NumRows()
			b += tables.RecordBytes(rec)
		}
		mu.Lock()
		rows, bytes = rows+n, bytes+b
		mu.Unlock()
		return nil
	})
	return rows, bytes, err
}

// eachEndpoint reads every endpoint of info at once: read gets the
// endpoint's index and a record reader; a stream error after read returns
// is reported too.
func (c *client) eachEndpoint(ctx context.Context, info *arrowflight.FlightInfo, read func(r int, rd *arrowflight.Reader) error) error {
	g, ctx := errgroup.WithContext(ctx)
	for r, ep := range info.Endpoint {
		g.Go(func() error {
			stream, err := c.c.DoGet(ctx, ep.Ticket)
			if err != nil {
				return err
			}
			rd, err := arrowflight.NewRecordReader(stream, ipc.WithAllocator(c.mem))
			if err != nil {
				return err
			}
			defer rd.Release()
			if err := read(r, rd); err != nil {
				return err
			}
			return rd.Err()
		})
	}
	return g.Wait()
}
