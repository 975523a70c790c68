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
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"golang.org/x/sync/errgroup"

	"github.com/weftdata/weft/bucket"
	"github.com/weftdata/weft/client"
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
	mo := mix.DefaultOptions()
	mo.Logger = slog.New(slog.DiscardHandler)
	engine, err := mix.New(ts, mo)
	if err != nil {
		return err
	}
	defer engine.Close()
	fo := flight.DefaultOptions()
	fo.Logger = slog.New(slog.DiscardHandler)
	svc, err := flight.New(flight.Parts{Tables: ts, Mix: engine}, fo)
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
	c, err := client.Dial(lis.Addr().String(), client.Options{})
	if err != nil {
		return err
	}
	defer c.Close()
	cl := &demoClient{c: c, mem: memory.DefaultAllocator}

	p("Weft demo: a Flight server at grpc://%s over the local-directory store %s", lis.Addr(), cfg.Dir)
	p("")
	p("1. Store two tables of synthetic grasp episodes (episode_id, frame, action float32[7], success, wrist_camera %d B)", imageBytes)
	if _, err := c.CreateProject(ctx, project); err != nil {
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
	recipe := client.Recipe{Seed: seed, BatchSize: batchSize, Components: []client.Component{
		{Project: project, Table: "failed_grasps", Weight: 0.3},
		{Project: project, Table: "nominal_grasps", Weight: 0.7},
	}}
	info, err := c.Resolve(ctx, recipe, firstWorld)
	if err != nil {
		return err
	}
	rec := info.Record
	p("   run %s: %d steps, %d endpoints (one per rank), every table pinned:", rec.Run[:16], rec.Steps, len(info.Ranks))
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
	again, err := c.Resolve(ctx, recipe, firstWorld)
	if err != nil {
		return err
	}
	p("   the same recipe resolved now is a new run (%s…); the running one is pinned and does not change", again.Record.Run[:12])

	p("")
	p("4. The job restarts on %d ranks from the saved step: {\"run\": \"%s…\", \"world_size\": %d, \"start_step\": %d}", secondWorld, rec.Run[:12], secondWorld, savedStep)
	info8, err := c.Resume(ctx, rec.Run[:16], secondWorld, savedStep)
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

// demoClient reads and writes the demo's data through the Weft client.
type demoClient struct {
	c   *client.Client
	mem memory.Allocator
}

// put appends rows [first, first+n) of synthetic episodes as one commit.
func (c *demoClient) put(ctx context.Context, table string, first, n int64, success bool) (string, error) {
	rng := rand.New(rand.NewPCG(uint64(first), uint64(len(table))))
	var recs []arrow.RecordBatch
	for off := first; off < first+n; off += 8192 {
		recs = append(recs, episodes(c.mem, rng, off, min(8192, first+n-off), success))
	}
	r, err := array.NewRecordReader(Schema, recs)
	for _, rec := range recs {
		rec.Release()
	}
	if err != nil {
		return "", err
	}
	defer r.Release()
	res, err := c.c.Put(ctx, client.PutDescriptor{Project: project, Branch: "main", Table: table}, r)
	if err != nil {
		return "", fmt.Errorf("put %s: %w", table, err)
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
func (c *demoClient) readRanks(ctx context.Context, info *client.RunPlan, from, to int64) ([]*globalStep, error) {
	world := len(info.Ranks)
	steps := make([]*globalStep, to-from)
	for i := range steps {
		steps[i] = &globalStep{perRank: make([][2]int, world)}
	}
	var mu sync.Mutex
	ctx, cancel := context.WithCancel(ctx) // stop the streams once `to` is read
	defer cancel()
	err := c.eachRank(ctx, info, func(r int, st *client.Step) (bool, error) {
		s := st.Step
		if s >= to {
			return false, nil
		}
		rec := st.Batch
		sc := rec.Schema()
		comps := rec.Column(sc.FieldIndices(mix.ComponentColumn)[0]).(*array.Int32)
		rows := rec.Column(sc.FieldIndices(mix.RowColumn)[0]).(*array.Int64)
		mu.Lock()
		defer mu.Unlock()
		g := steps[s-from]
		for i := range comps.Len() {
			g.pairs = append(g.pairs, [2]int64{int64(comps.Value(i)), rows.Value(i)})
			g.perRank[r][comps.Value(i)]++
		}
		return s+1 < to, nil
	})
	return steps, err
}

// drain reads every endpoint of info to the end at once, counting rows and
// the Arrow bytes received.
func (c *demoClient) drain(ctx context.Context, info *client.RunPlan) (int64, int64, error) {
	var rows, bytes atomic.Int64
	err := c.eachRank(ctx, info, func(_ int, st *client.Step) (bool, error) {
		rows.Add(st.Batch.NumRows())
		bytes.Add(tables.RecordBytes(st.Batch))
		return true, nil
	})
	return rows.Load(), bytes.Load(), err
}

// eachRank reads every rank of info at once, step by step, while read
// returns true.
func (c *demoClient) eachRank(ctx context.Context, info *client.RunPlan, read func(r int, st *client.Step) (bool, error)) error {
	g, ctx := errgroup.WithContext(ctx)
	for r, ep := range info.Ranks {
		g.Go(func() error {
			for st, err := range c.c.ReadRank(ctx, ep) {
				if err != nil {
					return err
				}
				more, err := read(r, st)
				if err != nil || !more {
					return err
				}
			}
			return nil
		})
	}
	return g.Wait()
}
