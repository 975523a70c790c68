package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/weftdata/weft/client"
	"github.com/weftdata/weft/internal/s3test"
)

// crashIterations is how many times each store's flightd is killed.
const crashIterations = 30

// putSize is the row count of put i (1..8 rows, so that a commit's row
// count names the put it came from when checked with its ids).
func putSize(i int) int64 { return int64(i%8 + 1) }

// crashBatch is put i's rows: ids i*100 .. i*100+size-1, in 2 batches
// where it has 2 rows or more, so that a kill can fall between them.
func crashBatch(i int) array.RecordReader {
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)
	n := putSize(i)
	var recs []arrow.RecordBatch
	for _, r := range [][2]int64{{0, n / 2}, {n / 2, n}} {
		if r[1] == r[0] {
			continue
		}
		b := array.NewInt64Builder(memory.DefaultAllocator)
		for k := r[0]; k < r[1]; k++ {
			b.Append(int64(i)*100 + k)
		}
		col := b.NewArray()
		b.Release()
		recs = append(recs, array.NewRecordBatch(schema, []arrow.Array{col}, r[1]-r[0]))
		col.Release()
	}
	rr, err := array.NewRecordReader(schema, recs)
	if err != nil {
		panic(err)
	}
	for _, r := range recs {
		r.Release()
	}
	return rr
}

// TestKillDuringPuts kills flightd with SIGKILL at random moments while a
// client puts batches with idempotency keys, restarts it over the same
// store, and retries every unacknowledged put with its key. Then: no
// acknowledged put lost, no partial commit (each commit holds exactly one
// whole put), no row twice.
func TestKillDuringPuts(t *testing.T) {
	if testing.Short() {
		t.Skip("kill -9 during puts: skipped with -short")
	}
	stores := map[string]func(t *testing.T) ([]string, []string){
		"fs": func(t *testing.T) ([]string, []string) { return []string{"--store", t.TempDir()}, nil },
		"minio": func(t *testing.T) ([]string, []string) {
			m := s3test.SharedMinIO(t)
			b := m.MakeBucket(t, "crash")
			return []string{"--store", "s3://" + b, "--s3-endpoint", m.Endpoint, "--s3-region", m.Region},
				[]string{"AWS_ACCESS_KEY_ID=" + m.AccessKey, "AWS_SECRET_ACCESS_KEY=" + m.SecretKey}
		},
	}
	for name, store := range stores {
		t.Run(name, func(t *testing.T) {
			args, env := store(t)
			rng := rand.New(rand.NewPCG(1, uint64(len(name))))
			ctx := context.Background()
			next := 0        // the first put not acknowledged yet
			retried := 0     // puts sent again after a kill
			replayed := 0    // retries the server answered as replays
			killedMid := 0   // kills that interrupted a put
			created := false // the project exists
			for it := 0; it <= crashIterations; it++ {
				srv := startFlightd(t, env, args...)
				c, err := client.Dial(srv.addr, client.Options{})
				require.NoError(t, err)
				if !created {
					_, err := c.CreateProject(ctx, "robotics")
					require.NoError(t, err)
					created = true
				}
				stopped := make(chan struct{})
				first := next
				go func() {
					defer close(stopped)
					for {
						i := next
						r := crashBatch(i)
						res, err := c.Put(ctx, client.PutDescriptor{Project: "robotics", Branch: "main", Table: "t", IdempotencyKey: fmt.Sprintf("put-%d", i)}, r)
						r.Release()
						if err != nil {
							return // killed: put i is unacknowledged; retried next time
						}
						if res.Rows != putSize(i) {
							panic(fmt.Sprintf("put %d acknowledged %d rows, sent %d", i, res.Rows, putSize(i)))
						}
						if i == first && it > 0 {
							retried++
							if res.Replayed {
								replayed++
							}
						}
						next = i + 1
						if it == crashIterations {
							return // the last round only finishes what was cut
						}
					}
				}()
				if it < crashIterations {
					time.Sleep(time.Duration(rng.IntN(300)) * time.Millisecond)
					srv.kill()
					killedMid++
				}
				<-stopped
				c.Close()
				if it == crashIterations {
					srv.kill()
				}
			}

			// Verify on a fresh server.
			srv := startFlightd(t, env, args...)
			c := dial(t, srv.addr)
			plan, err := c.Scan(ctx, client.ScanRequest{Project: "robotics", Ref: "main", Table: "t"})
			require.NoError(t, err)
			seen := map[int64]int{}
			for _, ep := range plan.Endpoints {
				for rec, err := range c.Read(ctx, ep) {
					require.NoError(t, err)
					ids := rec.Column(0).(*array.Int64)
					for k := range ids.Len() {
						seen[ids.Value(k)]++
					}
				}
			}
			var want, lost, dup int64
			for i := range next {
				for k := range putSize(i) {
					want++
					switch seen[int64(i)*100+k] {
					case 0:
						lost++
					case 1:
					default:
						dup++
					}
				}
			}
			require.EqualValues(t, want, len(seen), "rows that no acknowledged put sent")
			// Each commit is one whole put: its message names its rows, and
			// there is one commit per put.
			log, err := c.Log(ctx, "robotics", "main", 0)
			require.NoError(t, err)
			re := regexp.MustCompile(`^append (\d+) rows to t$`)
			commits, partial := 0, 0
			for _, e := range log {
				m := re.FindStringSubmatch(e.Message)
				if m == nil {
					continue // the root commit
				}
				commits++
				n, _ := strconv.Atoi(m[1])
				if n < 1 || n > 8 {
					partial++
				}
			}
			t.Logf("%s: %d kills (%d restarts), %d puts acknowledged, %d retried after a kill (%d answered as replays), %d rows; lost %d, duplicated %d, commits %d, partial commits %d",
				name, killedMid, crashIterations+1, next, retried, replayed, want, lost, dup, commits, partial)
			require.Zero(t, lost, "acknowledged rows lost")
			require.Zero(t, dup, "rows duplicated")
			require.Zero(t, partial, "partial commits")
			require.Equal(t, next, commits, "one commit per put")
		})
	}
}
