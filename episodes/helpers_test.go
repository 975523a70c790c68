package episodes

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/weftdata/weft/bucket"
	"github.com/weftdata/weft/mix"
	"github.com/weftdata/weft/tables"
	"github.com/weftdata/weft/versions"
)

// env is an engine with the episodes kinds over an fs bucket.
type env struct {
	t      testing.TB
	v      *versions.Store
	tables *tables.Store
	kinds  *Kinds
	e      *mix.Engine
	mem    *memory.CheckedAllocator
	media  *testMedia
	// bucketOnly are media objects uploaded to the bucket that the test
	// media source does not serve, by sha.
	bucketOnly map[string][]byte
}

func newEnv(t testing.TB, media *testMedia) *env {
	t.Helper()
	b, err := bucket.NewFS(t.TempDir())
	require.NoError(t, err)
	v, err := versions.New(b, versions.DefaultOptions())
	require.NoError(t, err)
	to := tables.DefaultOptions()
	to.RowGroupRows = 16
	ts, err := tables.New(v, to)
	require.NoError(t, err)
	ko := DefaultOptions()
	ko.Media = media
	kinds, err := New(ko)
	require.NoError(t, err)
	en := &env{t: t, v: v, tables: ts, kinds: kinds, media: media, bucketOnly: map[string][]byte{}, mem: memory.NewCheckedAllocator(memory.NewGoAllocator())}
	t.Cleanup(func() { en.mem.AssertSize(t, 0) }) // after every engine's Close
	t.Cleanup(kinds.Close)
	en.e = en.engine()
	_, err = v.CreateProject(context.Background(), "p")
	require.NoError(t, err)
	return en
}

// engine is another engine over the same store, with the same kinds.
func (en *env) engine() *mix.Engine {
	mo := mix.DefaultOptions()
	mo.Allocator = en.mem
	mo.Prefetch = 2
	mo.Kinds = en.kinds.Map()
	e, err := mix.New(en.tables, mo)
	require.NoError(en.t, err)
	en.t.Cleanup(e.Close)
	return e
}

// videoField is a video column named name.
func videoField(name string, meta map[string]string) arrow.Field {
	md := map[string]string{tables.KindKey: tables.KindVideo}
	for k, v := range meta {
		md[k] = v
	}
	return arrow.Field{Name: name, Type: arrow.StructOf(
		arrow.Field{Name: "media", Type: arrow.BinaryTypes.String},
		arrow.Field{Name: "time", Type: arrow.PrimitiveTypes.Float64},
	), Metadata: arrow.MetadataFrom(md)}
}

// momentsSchema: episode_index, state (row*10 + tag), cam.
func momentsSchema(meta map[string]string) *arrow.Schema {
	return arrow.NewSchema([]arrow.Field{
		{Name: "episode_index", Type: arrow.PrimitiveTypes.Int64},
		{Name: "state", Type: arrow.PrimitiveTypes.Int64},
		videoField("cam", meta),
	}, nil)
}

// row is one moment to append.
type row struct {
	episode int64
	media   string
	time    float64
}

func momentsBatch(schema *arrow.Schema, tag int64, rows []row) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	st := b.Field(2).(*array.StructBuilder)
	for i, r := range rows {
		b.Field(0).(*array.Int64Builder).Append(r.episode)
		b.Field(1).(*array.Int64Builder).Append(int64(i)*10 + tag)
		st.Append(true)
		st.FieldBuilder(0).(*array.StringBuilder).Append(r.media)
		st.FieldBuilder(1).(*array.Float64Builder).Append(r.time)
	}
	return b.NewRecordBatch()
}

// appendMoments appends rows to table t of project p.
func (en *env) appendMoments(t string, tag int64, rows []row, meta map[string]string) {
	en.t.Helper()
	schema := momentsSchema(meta)
	rec := momentsBatch(schema, tag, rows)
	defer rec.Release()
	rr, err := array.NewRecordReader(schema, []arrow.RecordBatch{rec})
	require.NoError(en.t, err)
	defer rr.Release()
	en.upload(rows)
	_, err = en.tables.Append(context.Background(), "p", "main", versions.TableName(t), rr, "")
	require.NoError(en.t, err)
}

// upload stores in the bucket the media objects rows name, as a client
// does before appending them: the bytes the test media source serves, or
// those of en.bucketOnly (objects the bucket has and the source does not).
func (en *env) upload(rows []row) {
	en.t.Helper()
	for _, r := range rows {
		en.media.mu.Lock()
		data, ok := en.media.files[r.media]
		en.media.mu.Unlock()
		if !ok {
			data, ok = en.bucketOnly[r.media]
		}
		require.True(en.t, ok, "test media %s has no bytes", r.media)
		_, err := en.tables.PutMedia(context.Background(), "p", bytes.NewReader(data), tables.MediaInfo{SHA256: r.media, Size: int64(len(data))})
		require.NoError(en.t, err)
	}
}

// episodeBounds splits n frames into three episodes, the middle one of 5
// frames: the first row of each.
func episodeBounds(n int) []int { a := n/2 - 2; return []int{0, a, a + 5, n} }

// clipRows is one row per frame of c, in display order, in the episodes
// of episodeBounds.
func clipRows(c *clip) []row {
	bounds := episodeBounds(c.frames)
	var rows []row
	for e := 0; e+1 < len(bounds); e++ {
		for i := bounds[e]; i < bounds[e+1]; i++ {
			rows = append(rows, row{episode: int64(100 + e), media: c.sha, time: c.seconds(i)})
		}
	}
	return rows
}

// episodeOf returns the first and last display frames of frame i's episode.
func episodeOf(n, i int) (int, int) {
	b := episodeBounds(n)
	for e := 0; e+1 < len(b); e++ {
		if i < b[e+1] {
			return b[e], b[e+1] - 1
		}
	}
	panic("frame out of range")
}

func window(kind string, spec string) mix.Window {
	return mix.Window{Kind: kind, Spec: json.RawMessage(spec)}
}

func tableName(c *clip) string { return "t_" + c.name }

func mustJSON(t testing.TB, v any) string {
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

var _ = fmt.Sprintf
