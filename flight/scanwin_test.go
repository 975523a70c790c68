package flight_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	arrowflight "github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"

	"github.com/weftdata/weft/bucket"
	"github.com/weftdata/weft/client"
	"github.com/weftdata/weft/flight"
)

// episodeLens are the episodes of the windowed scan tests' table: row i
// is frame i of one clip (one media object holding every episode).
var episodeLens = []int64{7, 12, 3, 9, 11}

var scanWinSchema = arrow.NewSchema([]arrow.Field{
	{Name: "episode_index", Type: arrow.PrimitiveTypes.Int64},
	{Name: "x", Type: arrow.PrimitiveTypes.Int64},
	videoField,
}, nil)

// putEpisodes uploads clip and appends the episodes, one put per episode
// (so the table has several row groups), and returns the row count.
func putEpisodes(t *testing.T, e *env, clip []byte) int64 {
	t.Helper()
	return putEpisodesIn(t, e, "t", "clip.mp4", clip)
}

// putEpisodesIn is putEpisodes into table (of project p), clip uploaded as name.
func putEpisodesIn(t *testing.T, e *env, table, name string, clip []byte) int64 {
	t.Helper()
	ctx := ctxT(t)
	sha := digest(clip)
	_, err := e.c.PutMedia(ctx, "p", name, bytes.NewReader(clip), int64(len(clip)), sha)
	require.NoError(t, err)
	var row int64
	for ep, n := range episodeLens {
		b := array.NewRecordBuilder(e.cmem, scanWinSchema)
		v := b.Field(2).(*array.StructBuilder)
		for range n {
			b.Field(0).(*array.Int64Builder).Append(int64(ep))
			b.Field(1).(*array.Int64Builder).Append(row * 3)
			v.Append(true)
			v.FieldBuilder(0).(*array.StringBuilder).Append(sha)
			v.FieldBuilder(1).(*array.Float64Builder).Append(float64(row) / 25)
			row++
		}
		rec := b.NewRecordBatch()
		b.Release()
		rr, err := array.NewRecordReader(scanWinSchema, []arrow.RecordBatch{rec})
		require.NoError(t, err)
		rec.Release()
		_, err = e.c.Put(ctx, client.PutDescriptor{Project: "p", Branch: "main", Table: table}, rr)
		rr.Release()
		require.NoError(t, err)
	}
	return row
}

var scanWindows = map[string]client.Window{
	"x":            {Kind: "rows", Spec: json.RawMessage(`{"offsets":[-1,0,2]}`)},
	"wrist_camera": {Kind: "video", Spec: json.RawMessage(`{"frames":[-2,0,1],"pad":true}`)},
}

// rowViews describes each row of a batch of a run or a windowed scan,
// by _row: its episode, its rows window (values and pads) and, per frame
// of its video window, the frame's PTS, pad flag, and the segment that
// holds it (media, codec, configuration, size, timescale, and that its
// access units include that PTS). Segment indexes and merging depend on
// the step, so they are not compared; what a decoder makes of them is.
func rowViews(t *testing.T, batch arrow.RecordBatch) map[int64]string {
	t.Helper()
	sc := batch.Schema()
	col := func(name string) arrow.Array {
		idx := sc.FieldIndices(name)
		require.Len(t, idx, 1, "column %q", name)
		return batch.Column(idx[0])
	}
	rows := col("_row").(*array.Int64)
	eps := col("episode_index").(*array.Int64)
	xs := col("x").(*array.FixedSizeList)
	xv := xs.ListValues().(*array.Int64)
	xp := col("x_is_pad").(*array.FixedSizeList).ListValues().(*array.Boolean)
	cam := col("wrist_camera").(*array.Struct)
	segIdx := cam.Field(0).(*array.FixedSizeList).ListValues().(*array.Int32)
	pts := cam.Field(1).(*array.FixedSizeList).ListValues().(*array.Int64)
	segs := cam.Field(2).(*array.List)
	segv := segs.ListValues().(*array.Struct)
	cp := col("wrist_camera_is_pad").(*array.FixedSizeList).ListValues().(*array.Boolean)
	unitPTS := segv.Field(8).(*array.List)
	upv := unitPTS.ListValues().(*array.Int64)
	out := make(map[int64]string, batch.NumRows())
	for i := range int(batch.NumRows()) {
		var sb strings.Builder
		fmt.Fprintf(&sb, "ep=%d x=", eps.Value(i))
		for k := range 3 {
			fmt.Fprintf(&sb, "%d/%v,", xv.Value(i*3+k), xp.Value(i*3+k))
		}
		sb.WriteString(" cam=")
		for k := range 3 {
			s := int(segIdx.Value(i*3 + k)) // step-global: the s-th segment of the batch
			p := pts.Value(i*3 + k)
			s0, e0 := unitPTS.ValueOffsets(s)
			has := slices.Contains(upv.Int64Values()[s0:e0], p)
			fmt.Fprintf(&sb, "[%d %v %s %s %x %d %d %d %v]",
				p, cp.Value(i*3+k),
				segv.Field(0).(*array.String).Value(s), segv.Field(1).(*array.String).Value(s),
				segv.Field(2).(*array.Binary).Value(s),
				segv.Field(3).(*array.Int32).Value(s), segv.Field(4).(*array.Int32).Value(s), segv.Field(5).(*array.Int32).Value(s), has)
		}
		out[rows.Value(i)] = sb.String()
	}
	return out
}

// TestWindowedScan: a scan with a rows window and a video window over a
// table of episodes gives every row once, in order, across endpoints
// (one per row group) and steps (several messages each), and for every
// row what a run with the same windows gives for it; the rows window
// equals a direct computation. Bad windows are refused; an edited ticket
// is refused.
func TestWindowedScan(t *testing.T) {
	clip := makeMP4(t, 50)
	b, err := bucket.NewFS(t.TempDir())
	require.NoError(t, err)
	e := newEnv(t, b, envOpts{flight: func(o *flight.Options) {
		o.EndpointBytes = 1          // one endpoint per row group
		o.BatchBytes = 200 << 10     // a few rows per step
		o.StepMessageBytes = 2 << 10 // steps in several messages
	}})
	ctx := ctxT(t)
	e.createProject("p")
	n := putEpisodes(t, e, clip)

	req := client.ScanRequest{Project: "p", Ref: "main", Table: "t", Columns: []string{"episode_index"}, Windows: scanWindows}
	plan, err := e.c.Scan(ctx, req)
	require.NoError(t, err)
	require.Equal(t, n, plan.Rows)
	require.Len(t, plan.Endpoints, len(episodeLens), "one endpoint per row group")
	require.Positive(t, plan.StepRows)
	require.Less(t, plan.StepRows, 10, "BatchBytes makes small steps")
	raw, err := json.Marshal(plan.Windows)
	require.NoError(t, err)
	require.JSONEq(t, `{"x":{"kind":"rows","offsets":[-1,0,2]},"wrist_camera":{"kind":"video","frames":[-2,0,1]}}`, string(raw), "canonical windows")
	require.Equal(t, []string{"episode_index", "wrist_camera", "wrist_camera_is_pad", "x", "x_is_pad", "_row"}, fieldNames(plan.Schema))

	schema, err := e.client.GetSchema(ctx, cmdDesc(mustJSON(t, client.Command{Scan: &req})))
	require.NoError(t, err)
	got, err := arrowflight.DeserializeSchema(schema.GetSchema(), e.cmem)
	require.NoError(t, err)
	require.True(t, got.Equal(plan.Schema), "GetSchema answers the FlightInfo's schema")

	scanned := map[int64]string{}
	var order []int64
	multi := 0
	for _, ep := range plan.Endpoints {
		var step int64
		for st, err := range e.c.ReadScanSteps(ctx, ep) {
			require.NoError(t, err)
			require.Equal(t, step, st.Step)
			require.Empty(t, st.Run)
			require.LessOrEqual(t, st.Batch.NumRows(), int64(plan.StepRows))
			if st.Messages > 1 {
				multi++
			}
			require.True(t, st.Batch.Schema().Equal(plan.Schema))
			for r, v := range rowViews(t, st.Batch) {
				scanned[r] = v
			}
			rows := st.Batch.Column(st.Batch.Schema().FieldIndices("_row")[0]).(*array.Int64)
			order = append(order, rows.Int64Values()...)
			step++
		}
	}
	require.Equal(t, seq(0, n), order, "every row once, in order")
	require.Positive(t, multi, "some steps came in several messages")

	// The rows window, computed directly; frames are in order of rows.
	var first int64
	for ep, l := range episodeLens {
		for r := first; r < first+l; r++ {
			var want strings.Builder
			fmt.Fprintf(&want, "ep=%d x=", ep)
			for _, off := range []int64{-1, 0, 2} {
				w := min(max(r+off, first), first+l-1)
				fmt.Fprintf(&want, "%d/%v,", w*3, w != r+off)
			}
			require.True(t, strings.HasPrefix(scanned[r], want.String()), "row %d: %s, want %s…", r, scanned[r], want.String())
			require.NotContains(t, scanned[r], " false]", "row %d: every frame is in its segment's units", r)
		}
		first += l
	}

	// A run with the same windows gives every row the same.
	run, err := e.c.Resolve(ctx, client.Recipe{Seed: 7, BatchSize: 6, Components: []client.Component{{
		Project: "p", Table: "t", Weight: 1, Columns: []string{"episode_index"}, Windows: scanWindows}}}, 1)
	require.NoError(t, err)
	fromRun := map[int64]string{}
	for st, err := range e.c.ReadRank(ctx, run.Ranks[0]) {
		require.NoError(t, err)
		maps := rowViews(t, st.Batch)
		for r, v := range maps {
			fromRun[r] = v
		}
	}
	require.Greater(t, len(fromRun), int(n)/2)
	for r, v := range fromRun {
		require.Equal(t, v, scanned[r], "row %d", r)
	}

	t.Run("plain scan unchanged", func(t *testing.T) {
		info := e.info(cmdDesc(mustJSON(t, client.Command{Scan: &client.ScanRequest{Project: "p", Ref: "main", Table: "t"}})))
		require.Equal(t, fmt.Sprintf(`{"commit":%q}`, plan.Commit), string(info.AppMetadata), "byte for byte")
		require.Equal(t, seq(0, n), e.scanX(info))
	})

	t.Run("bad windows", func(t *testing.T) {
		for name, tc := range map[string]struct {
			cols    []string
			windows map[string]client.Window
			want    string
		}{
			"unknown kind":       {windows: map[string]client.Window{"x": {Kind: "nope"}}, want: "nope"},
			"rows of no column":  {windows: map[string]client.Window{"y": {Kind: "rows", Spec: json.RawMessage(`{"offsets":[0]}`)}}, want: "y"},
			"video of non-video": {windows: map[string]client.Window{"x": {Kind: "video", Spec: json.RawMessage(`{"frames":[0]}`)}}, want: "video column"},
			"bad spec":           {windows: map[string]client.Window{"x": {Kind: "rows", Spec: json.RawMessage(`{"offsets":"a"}`)}}, want: "offsets"},
			"no offsets":         {windows: map[string]client.Window{"x": {Kind: "rows", Spec: json.RawMessage(`{}`)}}, want: "offsets"},
			"both column":        {cols: []string{"x"}, windows: map[string]client.Window{"x": {Kind: "rows", Spec: json.RawMessage(`{"offsets":[0]}`)}}, want: "both a column and a window"},
			"reserved key":       {windows: map[string]client.Window{"_row": {Kind: "rows", Spec: json.RawMessage(`{"offsets":[0]}`)}}, want: "reserved"},
			"reserved column":    {cols: []string{"_row"}, windows: scanWindows, want: "reserved"},
			"no kind":            {windows: map[string]client.Window{"x": {}}, want: "kind"},
			"no pad, too long":   {windows: map[string]client.Window{"x": {Kind: "rows", Spec: json.RawMessage(`{"offsets":[0,1,2,3,4],"pad":false}`)}}, want: "episode"},
		} {
			t.Run(name, func(t *testing.T) {
				cmd := mustJSON(t, client.Command{Scan: &client.ScanRequest{Project: "p", Ref: "main", Table: "t", Columns: tc.cols, Windows: tc.windows}})
				_, err := e.client.GetFlightInfo(ctx, cmdDesc(cmd))
				requireCode(t, err, codes.InvalidArgument, tc.want)
				_, err = e.client.GetSchema(ctx, cmdDesc(cmd))
				requireCode(t, err, codes.InvalidArgument, tc.want)
			})
		}
	})

	t.Run("edited ticket", func(t *testing.T) {
		tkt := slices.Clone(plan.Endpoints[1].Ticket)
		i := bytes.Index(tkt, []byte(`"r0":`))
		require.Positive(t, i)
		tkt[i+5] = '0' // start the range at row 0…
		for _, err := range e.c.ReadScanSteps(ctx, client.Endpoint{Ticket: tkt}) {
			requireCode(t, err, codes.InvalidArgument, "ticket")
			break
		}
		tkt = slices.Clone(plan.Endpoints[0].Ticket)
		i = bytes.Index(tkt, []byte(`"k":`))
		tkt[i+4]++ // …or change the step size
		for _, err := range e.c.ReadScanSteps(ctx, client.Endpoint{Ticket: tkt}) {
			requireCode(t, err, codes.InvalidArgument, "ticket")
			break
		}
	})
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

// scanX is the x column of a plain scan, divided by 3: the row ordinals
// of putEpisodes' table.
func (e *env) scanX(info *arrowflight.FlightInfo) []int64 {
	var out []int64
	for _, ep := range info.Endpoint {
		_, _, err := e.read(ctxT(e.t), ep.Ticket, func(rec arrow.RecordBatch) {
			require.Equal(e.t, []string{"episode_index", "x", "wrist_camera"}, fieldNames(rec.Schema()))
			for _, x := range rec.Column(1).(*array.Int64).Int64Values() {
				out = append(out, x/3)
			}
		})
		require.NoError(e.t, err)
	}
	return out
}
