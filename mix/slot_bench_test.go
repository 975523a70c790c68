package mix

import (
	"context"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/weftdata/weft/bucket"
	"github.com/weftdata/weft/slots"
	"github.com/weftdata/weft/tables"
	"github.com/weftdata/weft/versions"
)

// arenaMemory gathers each step into an arena in a slot of ring (as
// flight's host-slot sink does).
type arenaMemory struct {
	ring *slots.Ring
	room int64
	mu   sync.Mutex
	step map[int64]*slots.Arena
}

func (m *arenaMemory) StepAllocator(ctx context.Context, step int64) (memory.Allocator, error) {
	s, err := m.ring.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	a, err := slots.NewArena(s, m.room, nil)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	m.step[step] = a
	m.mu.Unlock()
	return a, nil
}

func (m *arenaMemory) take(step int64) *slots.Arena {
	m.mu.Lock()
	defer m.mu.Unlock()
	a := m.step[step]
	delete(m.step, step)
	return a
}

// BenchmarkSlotStep is the server's cost of putting a rank's steps into
// host slots (issue 14's leftover copy), steps already decoded (the
// blocks in the engine's cache): "copy" gathers each step into the
// engine's memory and then writes its IPC message into a slot (two
// copies of the body); "gather" gathers it straight into the slot and
// writes only the header; "memcpy" copies the step's body bytes once, the
// physical limit. Shapes: large rows (32 rows × 1 MiB binary, an id and a
// label) and small rows (256 rows: id, 32 float32, label). It reports
// ns/step and the body bytes copied per step (MB/step).
func BenchmarkSlotStep(b *testing.B) {
	ctx := context.Background()
	fsb, err := bucket.NewFS(b.TempDir())
	require.NoError(b, err)
	v, err := versions.New(fsb, versions.DefaultOptions())
	require.NoError(b, err)
	_, err = v.CreateProject(ctx, "bench")
	require.NoError(b, err)
	ts, err := tables.New(v, tables.DefaultOptions())
	require.NoError(b, err)
	large := largeRows(b, 96, 1<<20)
	_, err = ts.Append(ctx, "bench", "main", "large", large, "")
	require.NoError(b, err)
	_, err = ts.Append(ctx, "bench", "main", "small", &smallRows{n: 8192, rng: rand.New(rand.NewPCG(1, 7))}, "")
	require.NoError(b, err)
	e, err := New(ts, DefaultOptions())
	require.NoError(b, err)
	defer e.Close()

	for _, shape := range []struct {
		name  string
		table string
		batch int
	}{{"large", "large", 32}, {"small", "small", 256}} {
		run, err := e.Resolve(ctx, &Recipe{Seed: 1, BatchSize: shape.batch, Components: []Component{{Project: "bench", Table: shape.table, Weight: 1}}})
		require.NoError(b, err)
		// One epoch to warm the cache; the first step sizes the ring.
		var first arrow.RecordBatch
		for st, err := range e.Steps(ctx, run, 0, 1, 0, 0) {
			require.NoError(b, err)
			if first == nil {
				first = st.Batch
			} else {
				st.Batch.Release()
			}
		}
		need, err := slots.MessageBytes(first)
		require.NoError(b, err)
		room, err := slots.HeaderRoom(first)
		require.NoError(b, err)
		body := need - room
		first.Release()
		ring, err := slots.NewRing(ctx, slots.Options{Slots: 6, SlotBytes: (need + need/8 + 64<<10 + slots.SlotAlign - 1) / slots.SlotAlign * slots.SlotAlign})
		require.NoError(b, err)

		b.Run(shape.name+"/copy", func(b *testing.B) {
			var steps, copied int64
			start := time.Now()
			for range b.N {
				for st, err := range e.Steps(ctx, run, 0, 1, 0, 0) {
					require.NoError(b, err)
					s, err := ring.Acquire(ctx)
					require.NoError(b, err)
					_, n, err := slots.WriteRecordBatch(s, st.Batch)
					require.NoError(b, err)
					copied += 2 * (n - 64) // the gather, then the IPC write (less the header)
					st.Batch.Release()
					require.NoError(b, s.Release())
					steps++
				}
			}
			b.ReportMetric(float64(time.Since(start).Nanoseconds())/float64(steps), "ns/step")
			b.ReportMetric(float64(copied)/float64(steps)/1e6, "MB/step")
		})
		b.Run(shape.name+"/gather", func(b *testing.B) {
			var steps, copied int64
			sm := &arenaMemory{ring: ring, room: room, step: map[int64]*slots.Arena{}}
			start := time.Now()
			for range b.N {
				for st, err := range e.StepsInto(ctx, run, 0, 1, 0, 0, sm) {
					require.NoError(b, err)
					a := sm.take(st.Step)
					_, n, c, err := a.WriteRecordBatch(st.Batch)
					require.NoError(b, err)
					copied += n - room + c // gathered once, plus what the write copied
					st.Batch.Release()
					require.NoError(b, a.Slot().Release())
					steps++
				}
			}
			b.ReportMetric(float64(time.Since(start).Nanoseconds())/float64(steps), "ns/step")
			b.ReportMetric(float64(copied)/float64(steps)/1e6, "MB/step")
		})
		b.Run(shape.name+"/memcpy", func(b *testing.B) {
			src, dst := make([]byte, body), make([]byte, body)
			for i := range src {
				src[i] = byte(i)
			}
			start := time.Now()
			for range b.N {
				copy(dst, src)
			}
			b.ReportMetric(float64(time.Since(start).Nanoseconds())/float64(b.N), "ns/step")
			b.ReportMetric(float64(body)/1e6, "MB/step")
		})
		require.NoError(b, ring.Close())
	}
}

// largeRows is a table of n rows of an id, a label and a blob of size
// random bytes.
func largeRows(b *testing.B, n, size int) array.RecordReader {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "label", Type: arrow.PrimitiveTypes.Float32},
		{Name: "blob", Type: arrow.BinaryTypes.Binary},
	}, nil)
	rng := rand.New(rand.NewPCG(3, 4))
	bld := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer bld.Release()
	blob := make([]byte, size)
	for i := range n {
		for k := range blob {
			blob[k] = byte(rng.Uint32())
		}
		bld.Field(0).(*array.Int64Builder).Append(int64(i))
		bld.Field(1).(*array.Float32Builder).Append(float32(i) / 2)
		bld.Field(2).(*array.BinaryBuilder).Append(blob)
	}
	rec := bld.NewRecordBatch()
	defer rec.Release()
	rr, err := array.NewRecordReader(schema, []arrow.RecordBatch{rec})
	require.NoError(b, err)
	return rr
}
