package episodes

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/weftdata/weft/errdefs"
	"github.com/weftdata/weft/internal/membudget"
	"github.com/weftdata/weft/mix"
	"github.com/weftdata/weft/video"
)

// firstStepErr resolves a recipe over table t with windows ws and returns
// the first error of its stream (or of resolving it).
func firstStepErr(t *testing.T, en *env, table string, ws map[string]mix.Window) error {
	t.Helper()
	r := &mix.Recipe{Seed: 1, BatchSize: 4, Components: []mix.Component{{Project: "p", Table: table, Weight: 1, Windows: ws, Columns: []string{"episode_index"}}}}
	run, err := en.e.Resolve(context.Background(), r)
	if err != nil {
		return err
	}
	for st, err := range en.e.Steps(context.Background(), run, 0, 1, 0, 0) {
		if err != nil {
			return err
		}
		st.Batch.Release()
	}
	return nil
}

func TestBadInputs(t *testing.T) {
	clips := renderClips(t)
	c := clips[0]
	media := newTestMedia(clips)
	en := newEnv(t, media)
	en.appendMoments("good", 0, clipRows(c), nil)

	// In the bucket (so the append takes it) but not served by the media
	// source: as if deleted after the commit.
	gone := []byte("a media object that went missing")
	goneSum := sha256.Sum256(gone)
	missing := hex.EncodeToString(goneSum[:])
	en.bucketOnly[missing] = gone
	en.appendMoments("missing", 0, []row{{1, c.sha, c.seconds(0)}, {1, missing, 0.2}}, nil)

	corrupt := append([]byte(nil), c.data[:len(c.data)/2]...) // moov at the end: cut off
	sum := sha256.Sum256(corrupt)
	corruptSHA := hex.EncodeToString(sum[:])
	media.add(corruptSHA, corrupt)
	en.appendMoments("corrupt", 0, []row{{1, corruptSHA, 0.2}}, nil)

	en.appendMoments("offtime", 0, []row{{1, c.sha, c.seconds(0)}, {1, c.sha, c.seconds(1) + 0.01}}, nil)

	for _, tc := range []struct {
		name  string
		table string
		ws    map[string]mix.Window
		kind  error
		msg   []string
	}{
		{"rows pad false", "good", map[string]mix.Window{"state": window(KindRows, `{"offsets":[0,1,2,3,4,5],"pad":false}`)}, ErrPadding, []string{"episode 101", "has 5 rows, fewer than the 6"}},
		{"video pad false", "good", map[string]mix.Window{"cam": window(KindVideo, `{"frames":[-3,0,2],"pad":false}`)}, ErrPadding, []string{"episode 101", "too short", "_is_pad"}},
		{"missing media", "missing", map[string]mix.Window{"cam": window(KindVideo, `{"frames":[0]}`)}, errdefs.ErrNotFound, []string{"row 1", missing, "upload it"}},
		{"corrupt media", "corrupt", map[string]mix.Window{"cam": window(KindVideo, `{"frames":[0]}`)}, ErrMediaUnreadable, []string{"row 0", corruptSHA[:12], "truncated"}},
		{"time without frame", "offtime", map[string]mix.Window{"cam": window(KindVideo, `{"frames":[0]}`)}, ErrBadMedia, []string{"row 1 (episode 1)", "has no frame in media " + c.sha[:12], "nearest is frame"}},
		{"frames and seconds", "good", map[string]mix.Window{"cam": window(KindVideo, `{"frames":[0],"seconds":[0]}`)}, ErrBadSpec, []string{"exactly one"}},
		{"no offsets", "good", map[string]mix.Window{"cam": window(KindVideo, `{}`)}, mix.ErrBadWindow, []string{"exactly one"}},
		{"unknown field", "good", map[string]mix.Window{"state": window(KindRows, `{"offsets":[1],"stride":2}`)}, ErrBadSpec, []string{"stride"}},
		{"fractional offset", "good", map[string]mix.Window{"state": window(KindRows, `{"offsets":[0.5]}`)}, ErrBadSpec, []string{"integer"}},
		{"bad size", "good", map[string]mix.Window{"cam": window(KindVideo, `{"frames":[0],"size":[0,4]}`)}, ErrBadSpec, []string{"size"}},
		{"tolerance on frames", "good", map[string]mix.Window{"cam": window(KindVideo, `{"frames":[0],"tolerance":0.1}`)}, ErrBadSpec, []string{"tolerance"}},
		{"not a video column", "good", map[string]mix.Window{"state": window(KindVideo, `{"frames":[0]}`)}, ErrBadSpec, []string{"not a video column"}},
		{"no such column", "good", map[string]mix.Window{"nope": window(KindRows, `{"offsets":[0]}`)}, ErrBadSpec, []string{"nope"}},
		{"normalize mean length", "good", map[string]mix.Window{"cam": window(KindVideo, `{"frames":[0],"normalize":{"mean":[0.5,0.5],"std":[1,1,1]}}`)}, ErrBadSpec, []string{`"normalize"."mean" needs 3 numbers`, "it has 2"}},
		{"normalize std missing", "good", map[string]mix.Window{"cam": window(KindVideo, `{"frames":[0],"normalize":{"mean":[0.5,0.5,0.5]}}`)}, ErrBadSpec, []string{`"normalize"."std" needs 3 numbers`}},
		{"normalize zero std", "good", map[string]mix.Window{"cam": window(KindVideo, `{"frames":[0],"normalize":{"mean":[0,0,0],"std":[1,0,1]}}`)}, ErrBadSpec, []string{`"normalize".std[1] is 0`, "above 0"}},
		{"normalize std underflows float32", "good", map[string]mix.Window{"cam": window(KindVideo, `{"frames":[0],"normalize":{"mean":[0,0,0],"std":[1,1,1e-50]}}`)}, ErrBadSpec, []string{`"normalize".std[2] is 1e-50`}},
		{"normalize negative std", "good", map[string]mix.Window{"cam": window(KindVideo, `{"frames":[0],"normalize":{"mean":[0,0,0],"std":[-1,1,1]}}`)}, ErrBadSpec, []string{`"normalize".std[0] is -1`}},
		{"normalize mean overflows float32", "good", map[string]mix.Window{"cam": window(KindVideo, `{"frames":[0],"normalize":{"mean":[1e39,0,0],"std":[1,1,1]}}`)}, ErrBadSpec, []string{`"normalize".mean[0] is 1e39`, "finite"}},
		{"normalize mean not finite", "good", map[string]mix.Window{"cam": window(KindVideo, `{"frames":[0],"normalize":{"mean":[0,1e999,0],"std":[1,1,1]}}`)}, ErrBadSpec, []string{`"normalize".mean[1]`, "finite"}},
		{"normalize unknown field", "good", map[string]mix.Window{"cam": window(KindVideo, `{"frames":[0],"normalize":{"mean":[0,0,0],"std":[1,1,1],"eps":1}}`)}, ErrBadSpec, []string{"eps"}},
		{"unknown dtype", "good", map[string]mix.Window{"cam": window(KindVideo, `{"frames":[0],"normalize":{"mean":[0,0,0],"std":[1,1,1]},"dtype":"float64"}`)}, ErrBadSpec, []string{`"dtype" is "float64"`}},
		{"dtype without normalize", "good", map[string]mix.Window{"cam": window(KindVideo, `{"frames":[0],"dtype":"float16"}`)}, ErrBadSpec, []string{`"dtype" applies to normalised frames`}},
		{"normalize on rows", "good", map[string]mix.Window{"state": window(KindRows, `{"offsets":[0],"normalize":{"mean":[0,0,0],"std":[1,1,1]}}`)}, ErrBadSpec, []string{"video window's"}},
		{"seconds out of tolerance", "good", map[string]mix.Window{"cam": window(KindVideo, `{"seconds":[0.02],"tolerance":0.001}`)}, ErrBadMedia, []string{"seconds offset 0.02", "no frame within"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := firstStepErr(t, en, tc.table, tc.ws)
			require.ErrorIs(t, err, tc.kind)
			for _, m := range tc.msg {
				require.ErrorContains(t, err, m)
			}
		})
	}

	// A table without an episode column serves no windows.
	schema := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64}}, nil)
	b := array.NewInt64Builder(memory.DefaultAllocator)
	b.AppendValues([]int64{1, 2, 3}, nil)
	xs := b.NewArray()
	b.Release()
	rec := array.NewRecordBatch(schema, []arrow.Array{xs}, 3)
	xs.Release()
	rr, err := array.NewRecordReader(schema, []arrow.RecordBatch{rec})
	require.NoError(t, err)
	_, err = en.tables.Append(context.Background(), "p", "main", "plain", rr, "")
	rr.Release()
	rec.Release()
	require.NoError(t, err)
	r := &mix.Recipe{Seed: 1, BatchSize: 2, Components: []mix.Component{{Project: "p", Table: "plain", Weight: 1, Windows: map[string]mix.Window{"x": window(KindRows, `{"offsets":[0,1]}`)}}}}
	_, err = en.e.Resolve(context.Background(), r)
	require.ErrorIs(t, err, ErrNoEpisodes)
	require.ErrorContains(t, err, "weft.episode")
}

// TestCanonical: equivalent specs, as Go and Python spell them, make one
// canonical spec and one run id; other specs make other runs.
func TestCanonical(t *testing.T) {
	for _, tc := range []struct{ kind, in, want string }{
		{KindRows, `{"offsets":[0,1,2]}`, `{"offsets":[0,1,2]}`},
		{KindRows, `{"pad":true,"offsets":[0,1.0,2e0]}`, `{"offsets":[0,1,2]}`},
		{KindRows, `{"offsets":[-1],"pad":false}`, `{"offsets":[-1],"pad":false}`},
		{KindVideo, `{"frames":[0,1,2]}`, `{"frames":[0,1,2]}`},
		{KindVideo, `{"size":[224,224.0],"pad":true,"frames":[-1.0,0]}`, `{"frames":[-1,0],"size":[224,224]}`},
		{KindVideo, `{"seconds":[-0.2,-0.1,0.0,1e-1,-0.0],"tolerance":0.010}`, `{"seconds":[-0.2,-0.1,0,0.1,0],"tolerance":0.01}`},
		{KindVideo, `{"seconds":[0.30000000000000004],"pad":false}`, `{"seconds":[0.30000000000000004],"pad":false}`},
		{KindVideo, `{"dtype":"bfloat16","normalize":{"std":[0.229,0.224,0.225],"mean":[0.485,0.456,0.406]},"frames":[0],"size":[8,8]}`,
			`{"frames":[0],"size":[8,8],"normalize":{"mean":[0.485,0.456,0.406],"std":[0.229,0.224,0.225]},"dtype":"bfloat16"}`},
		{KindVideo, `{"frames":[0],"normalize":{"mean":[0.5,-0.0,5e-1],"std":[1,1.0,2e0]}}`, `{"frames":[0],"normalize":{"mean":[0.5,0,0.5],"std":[1,1,2]},"dtype":"float32"}`},
	} {
		t.Run(tc.in, func(t *testing.T) {
			var got []byte
			var err error
			if tc.kind == KindRows {
				got, err = (&rowsKind{}).Canonical([]byte(tc.in))
			} else {
				got, err = (&videoKind{}).Canonical([]byte(tc.in))
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, string(got))
		})
	}

	clips := renderClips(t)
	en := newEnv(t, newTestMedia(clips))
	en.appendMoments("good", 0, clipRows(clips[0]), nil)
	id := func(ws map[string]mix.Window) (mix.RunID, string) {
		r := &mix.Recipe{Seed: 3, BatchSize: 4, Components: []mix.Component{{Project: "p", Table: "good", Weight: 1, Windows: ws, Columns: []string{"episode_index"}}}}
		run, err := en.e.Prepare(context.Background(), r)
		require.NoError(t, err)
		return run.ID(), mustJSON(t, run.Record().Components[0].Windows)
	}
	goID, goWin := id(map[string]mix.Window{
		"cam":   window(KindVideo, `{"seconds":[-0.1,0],"size":[96,96]}`),
		"state": window(KindRows, `{"offsets":[0,1,2]}`)})
	pyID, pyWin := id(map[string]mix.Window{
		"cam":   window(KindVideo, `{"pad": true, "seconds": [-0.1, 0.0], "size": [96, 96]}`),
		"state": window(KindRows, `{"offsets": [0, 1, 2], "pad": true}`)})
	require.Equal(t, goID, pyID)
	require.Equal(t, goWin, pyWin)
	require.Equal(t, `{"cam":{"kind":"video","seconds":[-0.1,0],"size":[96,96]},"state":{"kind":"rows","offsets":[0,1,2]}}`, goWin)
	otherID, _ := id(map[string]mix.Window{
		"cam":   window(KindVideo, `{"seconds":[-0.1,0],"size":[96,96],"pad":false}`),
		"state": window(KindRows, `{"offsets":[0,1,2]}`)})
	require.NotEqual(t, goID, otherID)
	// The normalisation is part of the run id; float32 is its default dtype.
	norm := func(extra string) mix.RunID {
		id, _ := id(map[string]mix.Window{"cam": window(KindVideo, `{"seconds":[-0.1,0],"size":[96,96],"normalize":{"mean":[0.5,0.5,0.5],"std":[0.25,0.25,0.25]}`+extra+`}`)})
		return id
	}
	require.NotEqual(t, goID, norm(""))
	require.Equal(t, norm(""), norm(`,"dtype":"float32"`))
	require.NotEqual(t, norm(""), norm(`,"dtype":"float16"`))
	require.NotEqual(t, norm(`,"dtype":"float16"`), norm(`,"dtype":"bfloat16"`))
}

// TestStepLimits: a step's media bytes are checked against MaxStepBytes
// and leased from the memory budget before any read starts.
func TestStepLimits(t *testing.T) {
	clips := renderClips(t)
	media := newTestMedia(clips)
	en := newEnv(t, media)
	en.appendMoments("good", 0, clipRows(clips[0]), nil)
	// What indexing the clip reads: all a refused step may read.
	r, size, err := media.OpenMedia(context.Background(), "p", clips[0].sha)
	require.NoError(t, err)
	n0 := media.read.Load()
	_, err = video.Read(context.Background(), r, size)
	require.NoError(t, err)
	indexBytes := media.read.Load() - n0
	for _, tc := range []struct {
		name string
		opts func(*Options)
		kind error
		msg  string
	}{
		{"step limit", func(o *Options) { o.MaxStepBytes = 100 }, ErrTooLarge, "--max-step-size"},
		{"memory budget", func(o *Options) {
			b, err := membudget.New(membudget.Options{Total: 100, MaxWait: time.Millisecond})
			require.NoError(t, err)
			o.Budget = b
		}, membudget.ErrExhausted, "the video window cam of a step"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ko := DefaultOptions()
			ko.Media = media
			tc.opts(&ko)
			kinds, err := New(ko)
			require.NoError(t, err)
			t.Cleanup(kinds.Close)
			mo := mix.DefaultOptions()
			mo.Allocator = en.mem
			mo.Kinds = kinds.Map()
			e, err := mix.New(en.tables, mo)
			require.NoError(t, err)
			t.Cleanup(e.Close)
			r := &mix.Recipe{Seed: 1, BatchSize: 4, Components: []mix.Component{{Project: "p", Table: "good", Weight: 1,
				Windows: map[string]mix.Window{"cam": window(KindVideo, `{"frames":[0,1,2]}`)}, Columns: []string{"episode_index"}}}}
			run, err := e.Resolve(context.Background(), r)
			require.NoError(t, err)
			before := media.read.Load()
			var got error
			for st, err := range e.Steps(context.Background(), run, 0, 1, 0, 1) {
				if err != nil {
					got = err
					break
				}
				st.Batch.Release()
			}
			require.ErrorIs(t, got, tc.kind)
			require.ErrorContains(t, got, tc.msg)
			require.Equal(t, indexBytes, media.read.Load()-before, "only the index is read")
		})
	}
}
