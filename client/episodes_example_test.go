package client_test

import (
	"context"
	"fmt"
	"os"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/weftdata/weft/client"
)

// Writing robot episodes with video from Go: two episodes of 90 moments,
// each with its wrist-camera MP4 (30 fps); the files are uploaded, the
// rows get a "wrist_camera" video column, all in one commit. Appending
// more moments of the same files uploads nothing.
func ExampleClient_AppendEpisodes() {
	ctx := context.Background()
	dir := must(os.MkdirTemp("", "weft-example-"))
	defer os.RemoveAll(dir)
	addr, stop := must2(serveVideo(dir)) // a flightd over an fs store
	defer stop()

	c := must(client.Dial(addr, client.Options{}))
	defer c.Close()
	must(c.CreateProject(ctx, "robotics"))
	grasps := client.PutDescriptor{Project: "robotics", Branch: "main", Table: "grasps"}
	videos := map[string]client.VideoFiles{"wrist_camera": client.EpisodeFiles(map[int64]string{
		0: "../testdata/video/nominal_0.mp4",
		1: "../testdata/video/nominal_1.mp4",
	})}
	res := must(c.AppendEpisodes(ctx, grasps, moments(2, 90), videos, client.EpisodeOptions{}))
	fmt.Println("rows:", res.Rows)
	for _, m := range res.Media {
		fmt.Println(m.Path, "uploaded:", m.Uploaded)
	}
	res = must(c.AppendEpisodes(ctx, grasps, moments(2, 90), videos, client.EpisodeOptions{}))
	fmt.Println("again, uploaded:", res.Media[0].Uploaded, res.Media[1].Uploaded)

	plan := must(c.Scan(ctx, client.ScanRequest{Project: "robotics", Ref: "main", Table: "grasps"}))
	f, _ := plan.Schema.FieldsByName("wrist_camera")
	fmt.Println(plan.Rows, "rows;", f[0].Name, f[0].Type, f[0].Metadata)
	// Unordered output:
	// rows: 180
	// ../testdata/video/nominal_0.mp4 uploaded: true
	// ../testdata/video/nominal_1.mp4 uploaded: true
	// again, uploaded: false false
	// 360 rows; wrist_camera struct<media: utf8, time: float64> ["weft.kind": "video", "weft.tolerance": "0.0001"]
}

func must2[A, B any](a A, b B, err error) (A, B) {
	if err != nil {
		panic(err)
	}
	return a, b
}

// moments is episodes × per moments: episode_index, frame_index and
// timestamp (frame/30 s), state.
func moments(episodes, per int64) array.RecordReader {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "episode_index", Type: arrow.PrimitiveTypes.Int64},
		{Name: "frame_index", Type: arrow.PrimitiveTypes.Int64},
		{Name: "timestamp", Type: arrow.PrimitiveTypes.Float64},
		{Name: "state", Type: arrow.PrimitiveTypes.Float32},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for e := range episodes {
		for k := range per {
			b.Field(0).(*array.Int64Builder).Append(e)
			b.Field(1).(*array.Int64Builder).Append(k)
			b.Field(2).(*array.Float64Builder).Append(float64(k) / 30)
			b.Field(3).(*array.Float32Builder).Append(float32(e*per + k))
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	r, _ := array.NewRecordReader(schema, []arrow.RecordBatch{rec})
	return r
}
