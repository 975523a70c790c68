package client_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/weftdata/weft/client"
	"github.com/weftdata/weft/errdefs"
	"github.com/weftdata/weft/tables"
)

// needFFmpeg skips (loudly) without ffmpeg, and fails under CI=true.
func needFFmpeg(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		msg := "ffmpeg not found: the episodes tests need it (apt-get install ffmpeg; .ci/run installs it)"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip("SKIP (loud): " + msg)
	}
}

// makeClips renders n H.264 clips of frames frames at 25 fps (GOP 5,
// B-frames), each with a different start pattern so their bytes differ.
func makeClips(t *testing.T, n, frames int) []string {
	t.Helper()
	needFFmpeg(t)
	dir := t.TempDir()
	var out []string
	for i := range n {
		p := filepath.Join(dir, fmt.Sprintf("ep_%04d.mp4", i))
		args := []string{"-v", "error", "-nostdin", "-y", "-f", "lavfi", "-i", fmt.Sprintf("testsrc2=size=64x64:rate=25,hue=h=%d", 40*i),
			"-frames:v", fmt.Sprint(frames), "-c:v", "libx264", "-g", "5", "-bf", "2", "-pix_fmt", "yuv420p", "-threads", "1", "-x264-params", "threads=1", p}
		b, err := exec.Command("ffmpeg", args...).CombinedOutput()
		require.NoError(t, err, "ffmpeg %s: %s", strings.Join(args, " "), b)
		out = append(out, p)
	}
	return out
}

func sha(t *testing.T, path string) string {
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// frameMoments: per episode, frames moments at k/25 s; episode column
// of type epType ("int64" or "string"); time of row bad shifted by 0.01 s
// when bad >= 0.
func frameMoments(t *testing.T, episodes, frames int, epType string, bad int) array.RecordReader {
	ep := arrow.Field{Name: "episode_index", Type: arrow.PrimitiveTypes.Int64}
	if epType == "string" {
		ep = arrow.Field{Name: "episode_index", Type: arrow.BinaryTypes.String}
	}
	md := arrow.NewMetadata([]string{"source"}, []string{"go test"})
	schema := arrow.NewSchema([]arrow.Field{ep,
		{Name: "timestamp", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
		{Name: "action", Type: arrow.FixedSizeListOf(2, arrow.PrimitiveTypes.Float32), Nullable: true},
	}, &md)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	row := 0
	for e := range episodes {
		for k := range frames {
			switch eb := b.Field(0).(type) {
			case *array.Int64Builder:
				eb.Append(int64(e))
			case *array.StringBuilder:
				eb.Append(fmt.Sprintf("ep-%d", e))
			}
			ts := float32(k) / 25
			if row == bad {
				ts += 0.01
			}
			b.Field(1).(*array.Float32Builder).Append(ts)
			lb := b.Field(2).(*array.FixedSizeListBuilder)
			lb.Append(true)
			lb.ValueBuilder().(*array.Float32Builder).AppendValues([]float32{float32(row), -float32(row)}, nil)
			row++
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	r, err := array.NewRecordReader(schema, []arrow.RecordBatch{rec})
	require.NoError(t, err)
	return r
}

type videoEnv struct {
	c   *client.Client
	mem *memory.CheckedAllocator
}

func newVideoEnv(t *testing.T) *videoEnv {
	t.Helper()
	addr, stop, err := serveVideo(t.TempDir())
	require.NoError(t, err)
	t.Cleanup(stop)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	c, err := client.Dial(addr, client.Options{Allocator: mem})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, c.Close()); mem.AssertSize(t, 0) })
	_, err = c.CreateProject(context.Background(), "p")
	require.NoError(t, err)
	return &videoEnv{c: c, mem: mem}
}

// readTable reads a whole table at main as one record batch per scan batch.
func (e *videoEnv) readTable(t *testing.T, table string) (*arrow.Schema, []arrow.RecordBatch) {
	t.Helper()
	ctx := context.Background()
	plan, err := e.c.Scan(ctx, client.ScanRequest{Project: "p", Ref: "main", Table: table})
	require.NoError(t, err)
	var out []arrow.RecordBatch
	for _, ep := range plan.Endpoints {
		for rec, err := range e.c.Read(ctx, ep) {
			require.NoError(t, err)
			rec.Retain()
			out = append(out, rec)
		}
	}
	t.Cleanup(func() {
		for _, r := range out {
			r.Release()
		}
	})
	return plan.Schema, out
}

// expectedSchema is the table Python's episode_table and
// with_video_columns define for frameMoments' columns, written out by
// hand from the contract (not with client.VideoField).
func expectedSchema(epType arrow.DataType, cams ...string) *arrow.Schema {
	fields := []arrow.Field{{Name: "episode_index", Type: epType},
		{Name: "timestamp", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
		{Name: "action", Type: arrow.FixedSizeListOf(2, arrow.PrimitiveTypes.Float32), Nullable: true}}
	for _, c := range cams {
		fields = append(fields, arrow.Field{Name: c, Nullable: true, Type: arrow.StructOf(
			arrow.Field{Name: "media", Type: arrow.BinaryTypes.String, Nullable: false},
			arrow.Field{Name: "time", Type: arrow.PrimitiveTypes.Float64, Nullable: false}),
			Metadata: arrow.NewMetadata([]string{"weft.kind", "weft.tolerance"}, []string{"video", "0.0001"})})
	}
	md := arrow.NewMetadata([]string{"source", "weft.episode"}, []string{"go test", "episode_index"})
	return arrow.NewSchema(fields, &md)
}

func requireSchema(t *testing.T, want, got *arrow.Schema) {
	t.Helper()
	require.True(t, want.Equal(got), "want\n%s\ngot\n%s", want, got)
	require.Equal(t, want.Metadata().ToMap(), got.Metadata().ToMap())
	for i, f := range want.Fields() {
		require.Equal(t, f.Metadata.ToMap(), got.Field(i).Metadata.ToMap(), "field %s", f.Name)
		require.Equal(t, f.Nullable, got.Field(i).Nullable, "field %s", f.Name)
	}
}

func TestAppendEpisodes(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: e2e with ffmpeg clips")
	}
	clips := makeClips(t, 3, 20)
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		epType arrow.DataType
		key    func(e int) string
	}{
		{"int64 episodes", arrow.PrimitiveTypes.Int64, func(e int) string { return fmt.Sprint(e) }},
		{"string episodes", arrow.BinaryTypes.String, func(e int) string { return fmt.Sprintf("ep-%d", e) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newVideoEnv(t)
			typ := "int64"
			if tc.epType.ID() == arrow.STRING {
				typ = "string"
			}
			wrist, top := client.VideoFiles{}, client.VideoFiles{}
			for i := range 2 {
				wrist[tc.key(i)] = clips[i]
				top[tc.key(i)] = clips[2-i] // episode 0's top camera is clip 2
			}
			top[tc.key(7)] = "/nonexistent/ignored.mp4" // an episode the rows lack
			videos := map[string]client.VideoFiles{"wrist_camera": wrist, "top_camera": top}
			d := client.PutDescriptor{Project: "p", Branch: "main", Table: "grasps"}
			rows := frameMoments(t, 2, 20, typ, -1)
			res, err := e.c.AppendEpisodes(ctx, d, rows, videos, client.EpisodeOptions{})
			rows.Release()
			require.NoError(t, err)
			require.EqualValues(t, 40, res.Rows)
			require.Len(t, res.Media, 3)
			for _, m := range res.Media {
				require.True(t, m.Uploaded, m.Path)
				require.Equal(t, sha(t, m.Path), m.SHA256)
			}

			t.Run("the table Python's rules define", func(t *testing.T) {
				schema, recs := e.readTable(t, "grasps")
				requireSchema(t, expectedSchema(tc.epType, "top_camera", "wrist_camera"), schema)
				_, err := tables.VideoColumns(schema)
				require.NoError(t, err)
				col, err := tables.EpisodeColumn(schema)
				require.NoError(t, err)
				require.Equal(t, "episode_index", col)
				row := 0
				for _, rec := range recs {
					for i := range int(rec.NumRows()) {
						ep, k := row/20, row%20
						for _, cam := range []struct {
							col  int
							clip string
						}{{3, clips[2-ep]}, {4, clips[ep]}} {
							st := rec.Column(cam.col).(*array.Struct)
							require.Equal(t, sha(t, cam.clip), st.Field(0).(*array.String).Value(i), "row %d", row)
							require.Equal(t, float64(float32(k)/25), st.Field(1).(*array.Float64).Value(i), "row %d", row)
						}
						row++
					}
				}
				require.Equal(t, 40, row)
				pythonTable(t, recs, schema, clips, typ)
			})

			t.Run("re-append uploads nothing", func(t *testing.T) {
				for _, p := range clips {
					st, err := e.c.StatMedia(ctx, "p", sha(t, p))
					require.NoError(t, err)
					require.True(t, st.Exists, p)
				}
				rows := frameMoments(t, 2, 20, typ, -1)
				defer rows.Release()
				res, err := e.c.AppendEpisodes(ctx, d, rows, videos, client.EpisodeOptions{})
				require.NoError(t, err)
				require.EqualValues(t, 40, res.Rows)
				for _, m := range res.Media {
					require.False(t, m.Uploaded, m.Path)
				}
			})

			t.Run("a bad timestamp names row and file", func(t *testing.T) {
				rows := frameMoments(t, 2, 20, typ, 23) // episode 1, frame 3
				defer rows.Release()
				_, err := e.c.AppendEpisodes(ctx, d, rows, videos, client.EpisodeOptions{})
				require.ErrorIs(t, err, errdefs.ErrInvalidArgument)
				msg := err.Error()
				require.Contains(t, msg, "row 23")
				require.Contains(t, msg, "nearest is frame")
				require.Contains(t, msg, clips[1]+")") // both cameras of episode 1 use clip 1
				t.Log(msg)
				_, recs := e.readTable(t, "grasps")
				n := 0
				for _, r := range recs {
					n += int(r.NumRows())
				}
				require.Equal(t, 80, n, "a failed append stores nothing")
			})
		})
	}
}

// TestAppendEpisodesRefusesBeforeSending: every local check fails before
// anything is uploaded (the fresh clip stays unknown to the server).
func TestAppendEpisodesRefusesBeforeSending(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: e2e with ffmpeg clips")
	}
	clips := makeClips(t, 2, 10)
	ctx := context.Background()
	e := newVideoEnv(t)
	d := client.PutDescriptor{Project: "p", Branch: "main", Table: "grasps"}
	both := client.VideoFiles{"0": clips[0], "1": clips[1]}
	nullTS := func() array.RecordReader {
		schema := arrow.NewSchema([]arrow.Field{{Name: "episode_index", Type: arrow.PrimitiveTypes.Int64}, {Name: "timestamp", Type: arrow.PrimitiveTypes.Float64, Nullable: true}}, nil)
		b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
		defer b.Release()
		b.Field(0).(*array.Int64Builder).AppendValues([]int64{0, 1}, nil)
		b.Field(1).(*array.Float64Builder).AppendValues([]float64{0, 0}, []bool{true, false})
		rec := b.NewRecordBatch()
		defer rec.Release()
		r, _ := array.NewRecordReader(schema, []arrow.RecordBatch{rec})
		return r
	}
	for _, tc := range []struct {
		name   string
		rows   func() array.RecordReader
		videos map[string]client.VideoFiles
		opts   client.EpisodeOptions
		want   string
	}{
		{"no videos", func() array.RecordReader { return frameMoments(t, 2, 10, "int64", -1) }, nil, client.EpisodeOptions{}, "videos must map a camera key"},
		{"missing episode file", func() array.RecordReader { return frameMoments(t, 2, 10, "int64", -1) },
			map[string]client.VideoFiles{"cam": {"0": clips[0]}}, client.EpisodeOptions{}, `videos["cam"] has no file for episode(s) 1 (1 of 2)`},
		{"not a file", func() array.RecordReader { return frameMoments(t, 2, 10, "int64", -1) },
			map[string]client.VideoFiles{"cam": {"0": clips[0], "1": filepath.Dir(clips[0])}}, client.EpisodeOptions{}, "is not a file"},
		{"no episode column", func() array.RecordReader { return frameMoments(t, 2, 10, "int64", -1) },
			map[string]client.VideoFiles{"cam": both}, client.EpisodeOptions{Episode: "episode"}, `no episode column "episode"`},
		{"no timestamp column", func() array.RecordReader { return frameMoments(t, 2, 10, "int64", -1) },
			map[string]client.VideoFiles{"cam": both}, client.EpisodeOptions{Timestamp: "t"}, `no timestamp column "t"`},
		{"episode column of the wrong type", func() array.RecordReader { return frameMoments(t, 2, 10, "int64", -1) },
			map[string]client.VideoFiles{"cam": both}, client.EpisodeOptions{Episode: "timestamp"}, "give integers or strings"},
		{"camera clashes with a column", func() array.RecordReader { return frameMoments(t, 2, 10, "int64", -1) },
			map[string]client.VideoFiles{"action": both}, client.EpisodeOptions{}, `camera key "action" is already a column`},
		{"null timestamps", nullTS, map[string]client.VideoFiles{"cam": both}, client.EpisodeOptions{}, `column "timestamp" has 1 nulls`},
		{"tolerance out of range", func() array.RecordReader { return frameMoments(t, 2, 10, "int64", -1) },
			map[string]client.VideoFiles{"cam": both}, client.EpisodeOptions{Tolerance: 2}, "tolerance 2 must be"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rows := tc.rows()
			defer rows.Release()
			_, err := e.c.AppendEpisodes(ctx, d, rows, tc.videos, tc.opts)
			require.ErrorIs(t, err, errdefs.ErrInvalidArgument)
			require.Contains(t, err.Error(), tc.want)
			for _, p := range clips {
				st, err := e.c.StatMedia(ctx, "p", sha(t, p))
				require.NoError(t, err)
				require.False(t, st.Exists, "nothing is uploaded before the checks pass")
			}
		})
	}
	var ce *client.Error
	_, err := e.c.Scan(ctx, client.ScanRequest{Project: "p", Ref: "main", Table: "grasps"})
	require.True(t, errors.As(err, &ce) && errors.Is(err, errdefs.ErrNotFound), "no table was created: %v", err)
}

// pythonTable builds the table with the Python client's own functions
// (episode_table, with_video_columns) from the same input and compares it
// with what the Go client stored. It needs a Python with pyarrow:
// $WEFT_PYTHON, else the repository's .venv (make venv); without one it
// skips, loudly.
func pythonTable(t *testing.T, stored []arrow.RecordBatch, storedSchema *arrow.Schema, clips []string, epType string) {
	t.Helper()
	py := os.Getenv("WEFT_PYTHON")
	if py == "" {
		py, _ = filepath.Abs("../.venv/bin/python")
	}
	if err := exec.Command(py, "-c", "import pyarrow").Run(); err != nil {
		t.Logf("SKIP (loud): no Python with pyarrow at %s (set WEFT_PYTHON or run make venv): the Go table is checked against the contract's schema only", py)
		return
	}
	dir := t.TempDir()
	in := filepath.Join(dir, "in.arrow")
	rows := frameMoments(t, 2, 20, epType, -1)
	defer rows.Release()
	f, err := os.Create(in)
	require.NoError(t, err)
	w, err := ipc.NewFileWriter(f, ipc.WithSchema(rows.Schema()))
	require.NoError(t, err)
	for rows.Next() {
		require.NoError(t, w.Write(rows.RecordBatch()))
	}
	require.NoError(t, w.Close())
	require.NoError(t, f.Close())
	key := func(e int) any { return e }
	if epType == "string" {
		key = func(e int) any { return fmt.Sprintf("ep-%d", e) }
	}
	// Python keeps the cameras in the mapping's order: give them sorted,
	// as Go writes them.
	args := map[string]any{
		"videos": []any{
			[]any{"top_camera", [][]any{{key(0), clips[2]}, {key(1), clips[1]}}},
			[]any{"wrist_camera", [][]any{{key(0), clips[0]}, {key(1), clips[1]}}},
		},
		"shas": map[string]string{clips[0]: sha(t, clips[0]), clips[1]: sha(t, clips[1]), clips[2]: sha(t, clips[2])},
	}
	js, err := json.Marshal(args)
	require.NoError(t, err)
	out := filepath.Join(dir, "out.arrow")
	script := `
import json, sys
import pyarrow as pa
from weft._client import episode_table, with_video_columns
a = json.loads(sys.argv[3])
videos = {cam: {k: p for k, p in eps} for cam, eps in a["videos"]}
data = pa.ipc.open_file(sys.argv[1]).read_all()
table, files = episode_table(data, videos, "episode_index", "timestamp", 1e-4)
rows = with_video_columns(table, files, a["shas"], "episode_index", "timestamp", 1e-4)
with pa.ipc.new_file(sys.argv[2], rows.schema) as w:
    w.write_table(rows)
`
	cmd := exec.Command(py, "-c", script, in, out, string(js))
	cmd.Env = append(os.Environ(), "PYTHONPATH="+mustAbs(t, "../python"))
	b, err := cmd.CombinedOutput()
	require.NoError(t, err, "python: %s", b)
	pf, err := os.Open(out)
	require.NoError(t, err)
	defer pf.Close()
	r, err := ipc.NewFileReader(pf)
	require.NoError(t, err)
	defer r.Close()
	requireSchema(t, r.Schema(), storedSchema)
	var pyRows []arrow.RecordBatch
	for i := range r.NumRecords() {
		rec, err := r.Record(i)
		require.NoError(t, err)
		pyRows = append(pyRows, rec)
	}
	pyTable := array.NewTableFromRecords(r.Schema(), pyRows)
	defer pyTable.Release()
	goTable := array.NewTableFromRecords(storedSchema, stored)
	defer goTable.Release()
	require.True(t, array.TableEqual(pyTable, goTable), "python:\n%v\ngo:\n%v", pyTable, goTable)
}

func mustAbs(t *testing.T, p string) string {
	a, err := filepath.Abs(p)
	require.NoError(t, err)
	return a
}
