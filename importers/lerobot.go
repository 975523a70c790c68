package importers

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/weftdata/weft/errdefs"
	"github.com/weftdata/weft/tables"
	"github.com/weftdata/weft/video"
)

// LeRobot imports a LeRobot dataset ("lerobot"), codebase version v2.1 or
// v3.0 (meta/info.json decides). It writes three tables:
//
//   - BASE: the per-frame rows of data/…parquet, column for column and in
//     order, then "task" (the task_index's text from the tasks file), then
//     one video column per camera (a feature of dtype "video"), named as
//     the camera: {media: the MP4's sha256, time: the frame's presentation
//     time in that MP4} — v3.0 packs several episodes per MP4, so time is
//     the episode's videos/CAM/from_timestamp plus the row's timestamp, as
//     LeRobot's own loader computes it; in v2.1 it is the row's timestamp.
//     Every MP4 an episode names becomes a media object. Schema metadata:
//     weft.episode = episode_index, lerobot.info (meta/info.json as is),
//     lerobot.stats (meta/stats.json as is, when present) and
//     lerobot.codebase_version.
//   - BASE.episodes: the episode metadata — v3.0: meta/episodes/…parquet
//     column for column (the stats/… columns included); v2.1:
//     meta/episodes.jsonl (episode_index, tasks, length) plus "stats", the
//     episode's meta/episodes_stats.jsonl entry as JSON text.
//   - BASE.tasks: task_index, task.
//
// It takes no options. Every MP4 is indexed (package video) before it is
// stored: one that does not index is refused, naming the file.
type LeRobot struct{}

// Name is "lerobot".
func (LeRobot) Name() string { return "lerobot" }

// Schema metadata keys the LeRobot importer sets on the frames table.
const (
	MetaLeRobotInfo    = "lerobot.info"
	MetaLeRobotStats   = "lerobot.stats"
	MetaLeRobotVersion = "lerobot.codebase_version"
)

// lrMetaLimit bounds a JSON/JSONL metadata file read whole.
const lrMetaLimit = 256 << 20

type lrInfo struct {
	CodebaseVersion string  `json:"codebase_version"`
	FPS             float64 `json:"fps"`
	ChunksSize      int64   `json:"chunks_size"`
	DataPath        string  `json:"data_path"`
	VideoPath       *string `json:"video_path"`
	Features        map[string]struct {
		DType string `json:"dtype"`
	} `json:"features"`
}

// lrEpisode is what the import needs of one episode.
type lrEpisode struct {
	index    int64
	dataFile string
	videos   map[string]lrVideoRef // camera -> file and offset
}

type lrVideoRef struct {
	path string
	from float64
}

// lrImport is one run of the importer.
type lrImport struct {
	src       Source
	w         *Writer
	files     map[string]int64 // source path -> size
	info      lrInfo
	rawInfo   []byte
	cams      []string
	eps       map[int64]*lrEpisode
	order     []int64 // episode indexes, in metadata order
	tasks     map[int64]string
	media     map[string]string // source path -> sha256
	frames    int64             // video frames indexed
	statsJSON string            // meta/stats.json, "" when absent
}

// Import reads meta/info.json, the tasks and episodes, stores every MP4,
// then streams the per-frame Parquet files.
func (f LeRobot) Import(ctx context.Context, src Source, w *Writer, o FormatOptions) error {
	if err := o.Check("lerobot"); err != nil {
		return err
	}
	list, err := src.List(ctx, "")
	if err != nil {
		return err
	}
	im := &lrImport{src: src, w: w, files: map[string]int64{}, eps: map[int64]*lrEpisode{}, tasks: map[int64]string{}, media: map[string]string{}}
	for _, f := range list {
		im.files[f.Path] = f.Size
	}
	if err := im.readInfo(ctx); err != nil {
		return err
	}
	w.SetSourceVersion("lerobot " + im.info.CodebaseVersion)
	if _, ok := im.files["meta/stats.json"]; ok {
		data, err := im.readMeta(ctx, "meta/stats.json")
		if err != nil {
			return err
		}
		if !json.Valid(data) {
			return fmt.Errorf("%w: meta/stats.json is not valid JSON", ErrBadInput)
		}
		im.statsJSON = string(data)
	}
	v3 := im.info.CodebaseVersion == "v3.0"
	if v3 {
		err = im.readTasksV3(ctx)
	} else {
		err = im.readTasksV21(ctx)
	}
	if err != nil {
		return err
	}
	if v3 {
		err = im.readEpisodesV3(ctx)
	} else {
		err = im.readEpisodesV21(ctx)
	}
	if err != nil {
		return err
	}
	if len(im.order) == 0 {
		return fmt.Errorf("%w: %s: the dataset has no episodes", ErrBadInput, errdefs.Quote(src.URL()))
	}
	dataFiles, videoFiles := im.plan()
	var planBytes int64
	for _, p := range slices.Concat(dataFiles, videoFiles) {
		size, ok := im.files[p]
		if !ok {
			return fmt.Errorf("%w: %s is missing (named by the episode metadata)", ErrBadInput, errdefs.Quote(p))
		}
		planBytes += size
	}
	w.Plan(int64(len(dataFiles)+len(videoFiles)), planBytes)
	if err := im.writeTasks(ctx); err != nil {
		return err
	}
	for _, p := range videoFiles {
		if err := im.putVideo(ctx, p); err != nil {
			return err
		}
	}
	return im.writeFrames(ctx, dataFiles)
}

// readMeta reads a metadata file whole.
func (im *lrImport) readMeta(ctx context.Context, p string) ([]byte, error) {
	if _, ok := im.files[p]; !ok {
		return nil, fmt.Errorf("%w: %s: %s is missing", ErrBadInput, errdefs.Quote(im.src.URL()), p)
	}
	im.w.Plan(1, im.files[p])
	rc, err := im.src.Open(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrBadInput, errdefs.Quote(p), err)
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(im.w.CountingReader(rc), lrMetaLimit+1))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrBadInput, errdefs.Quote(p), err)
	}
	if len(data) > lrMetaLimit {
		return nil, fmt.Errorf("%w: %s is over %d bytes", ErrTooLarge, errdefs.Quote(p), lrMetaLimit)
	}
	im.w.FileDone()
	return data, nil
}

func (im *lrImport) readInfo(ctx context.Context) error {
	const p = "meta/info.json"
	data, err := im.readMeta(ctx, p)
	if err != nil {
		return fmt.Errorf("%w (a LeRobot dataset has meta/info.json)", err)
	}
	if err := json.Unmarshal(data, &im.info); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrBadInput, p, err)
	}
	im.rawInfo = data
	switch im.info.CodebaseVersion {
	case "v2.1", "v3.0":
	default:
		return fmt.Errorf("%w: %s: codebase_version %s is not supported; this importer reads LeRobot v2.1 and v3.0 (convert older datasets with LeRobot's converters)", ErrBadInput, p, errdefs.Quote(im.info.CodebaseVersion))
	}
	if im.info.DataPath == "" {
		return fmt.Errorf("%w: %s has no data_path", ErrBadInput, p)
	}
	for name, ft := range im.info.Features {
		if ft.DType == "video" {
			im.cams = append(im.cams, name)
		}
	}
	slices.Sort(im.cams)
	if len(im.cams) > 0 && (im.info.VideoPath == nil || *im.info.VideoPath == "") {
		return fmt.Errorf("%w: %s has video features %s but no video_path", ErrBadInput, p, strings.Join(im.cams, ", "))
	}
	if im.info.ChunksSize <= 0 {
		im.info.ChunksSize = 1000
	}
	return nil
}

// jsonLines calls fn for each non-empty line of a JSONL file.
func (im *lrImport) jsonLines(ctx context.Context, p string, fn func(line int, data []byte) error) error {
	data, err := im.readMeta(ctx, p)
	if err != nil {
		return err
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, lrMetaLimit)
	for n := 1; sc.Scan(); n++ {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		if err := fn(n, sc.Bytes()); err != nil {
			return fmt.Errorf("%w: %s line %d: %w", ErrBadInput, p, n, err)
		}
	}
	return sc.Err()
}

func (im *lrImport) addTask(i int64, t string, where string) error {
	if _, dup := im.tasks[i]; dup {
		return fmt.Errorf("%w: %s: task_index %d appears twice", ErrBadInput, where, i)
	}
	im.tasks[i] = t
	return nil
}

func (im *lrImport) readTasksV21(ctx context.Context) error {
	const p = "meta/tasks.jsonl"
	return im.jsonLines(ctx, p, func(_ int, data []byte) error {
		var t struct {
			TaskIndex *int64  `json:"task_index"`
			Task      *string `json:"task"`
		}
		if err := json.Unmarshal(data, &t); err != nil {
			return err
		}
		if t.TaskIndex == nil || t.Task == nil {
			return errors.New("want {\"task_index\": N, \"task\": TEXT}")
		}
		return im.addTask(*t.TaskIndex, *t.Task, p)
	})
}

func (im *lrImport) readTasksV3(ctx context.Context) error {
	const p = "meta/tasks.parquet"
	if _, ok := im.files[p]; !ok {
		return fmt.Errorf("%w: %s: %s is missing", ErrBadInput, errdefs.Quote(im.src.URL()), p)
	}
	im.w.Plan(1, im.files[p])
	return im.readParquet(ctx, p, func(rec arrow.RecordBatch, _ int64) error {
		sc := rec.Schema()
		ti := sc.FieldIndices("task_index")
		tc := sc.FieldIndices("task")
		if len(tc) == 0 {
			tc = sc.FieldIndices("__index_level_0__") // pandas writes the index (the task) so
		}
		if len(ti) == 0 || len(tc) == 0 {
			return fmt.Errorf("%w: %s: want columns task_index and task (or the pandas index); has %s", ErrBadInput, p, sc)
		}
		idx, ok := rec.Column(ti[0]).(*array.Int64)
		if !ok {
			return fmt.Errorf("%w: %s: task_index is %s, want int64", ErrBadInput, p, rec.Column(ti[0]).DataType())
		}
		text, ok := stringsOf(rec.Column(tc[0]))
		if !ok {
			return fmt.Errorf("%w: %s: the task column is %s, want a string", ErrBadInput, p, rec.Column(tc[0]).DataType())
		}
		for i := range int(rec.NumRows()) {
			if err := im.addTask(idx.Value(i), text(i), p); err != nil {
				return err
			}
		}
		return nil
	})
}

// stringsOf reads a string or large_string column.
func stringsOf(a arrow.Array) (func(int) string, bool) {
	switch c := a.(type) {
	case *array.String:
		return c.Value, true
	case *array.LargeString:
		return c.Value, true
	}
	return nil, false
}

func (im *lrImport) addEpisode(ep *lrEpisode, where string) error {
	if _, dup := im.eps[ep.index]; dup {
		return fmt.Errorf("%w: %s: episode_index %d appears twice", ErrBadInput, where, ep.index)
	}
	im.eps[ep.index] = ep
	im.order = append(im.order, ep.index)
	return nil
}

// readEpisodesV21 reads meta/episodes.jsonl (and episodes_stats.jsonl
// when present) and writes BASE.episodes.
func (im *lrImport) readEpisodesV21(ctx context.Context) error {
	const p = "meta/episodes.jsonl"
	type row struct {
		EpisodeIndex *int64   `json:"episode_index"`
		Tasks        []string `json:"tasks"`
		Length       int64    `json:"length"`
	}
	var rows []row
	err := im.jsonLines(ctx, p, func(_ int, data []byte) error {
		var r row
		if err := json.Unmarshal(data, &r); err != nil {
			return err
		}
		if r.EpisodeIndex == nil {
			return errors.New("no episode_index")
		}
		rows = append(rows, r)
		chunk := *r.EpisodeIndex / im.info.ChunksSize
		vals := map[string]any{"episode_chunk": chunk, "episode_index": *r.EpisodeIndex, "chunk_index": chunk}
		ep := &lrEpisode{index: *r.EpisodeIndex, videos: map[string]lrVideoRef{}}
		var err error
		if ep.dataFile, err = formatPath(im.info.DataPath, vals); err != nil {
			return err
		}
		for _, cam := range im.cams {
			vals["video_key"] = cam
			vp, err := formatPath(*im.info.VideoPath, vals)
			if err != nil {
				return err
			}
			ep.videos[cam] = lrVideoRef{path: vp}
		}
		return im.addEpisode(ep, p)
	})
	if err != nil {
		return err
	}
	stats := map[int64]string{}
	const sp = "meta/episodes_stats.jsonl"
	if _, ok := im.files[sp]; ok {
		err := im.jsonLines(ctx, sp, func(_ int, data []byte) error {
			var s struct {
				EpisodeIndex *int64          `json:"episode_index"`
				Stats        json.RawMessage `json:"stats"`
			}
			if err := json.Unmarshal(data, &s); err != nil {
				return err
			}
			if s.EpisodeIndex == nil {
				return errors.New("no episode_index")
			}
			stats[*s.EpisodeIndex] = string(s.Stats)
			return nil
		})
		if err != nil {
			return err
		}
	}
	mem := im.w.Allocator()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "episode_index", Type: arrow.PrimitiveTypes.Int64},
		{Name: "tasks", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
		{Name: "length", Type: arrow.PrimitiveTypes.Int64},
		{Name: "stats", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	for _, r := range rows {
		b.Field(0).(*array.Int64Builder).Append(*r.EpisodeIndex)
		lb := b.Field(1).(*array.ListBuilder)
		lb.Append(true)
		for _, t := range r.Tasks {
			lb.ValueBuilder().(*array.StringBuilder).Append(t)
		}
		b.Field(2).(*array.Int64Builder).Append(r.Length)
		if s, ok := stats[*r.EpisodeIndex]; ok {
			b.Field(3).(*array.StringBuilder).Append(s)
		} else {
			b.Field(3).AppendNull()
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	tw, err := im.w.Table(im.w.BaseTable()+".episodes", schema)
	if err != nil {
		return err
	}
	return tw.Write(ctx, rec)
}

// readEpisodesV3 reads meta/episodes/…parquet, writing its rows to
// BASE.episodes and keeping each episode's data file and videos.
func (im *lrImport) readEpisodesV3(ctx context.Context) error {
	var paths []string
	for p := range im.files {
		if strings.HasPrefix(p, "meta/episodes/") && strings.HasSuffix(p, ".parquet") {
			paths = append(paths, p)
		}
	}
	slices.Sort(paths)
	if len(paths) == 0 {
		return fmt.Errorf("%w: %s: meta/episodes/ holds no Parquet files", ErrBadInput, errdefs.Quote(im.src.URL()))
	}
	var tw *TableWriter
	for _, p := range paths {
		im.w.Plan(1, im.files[p])
		err := im.readParquet(ctx, p, func(rec arrow.RecordBatch, first int64) error {
			if tw == nil {
				var err error
				if tw, err = im.w.Table(im.w.BaseTable()+".episodes", rec.Schema()); err != nil {
					return err
				}
			}
			col := func(name string) (*array.Int64, error) {
				i := rec.Schema().FieldIndices(name)
				if len(i) == 0 {
					return nil, fmt.Errorf("%w: %s has no column %s", ErrBadInput, p, errdefs.Quote(name))
				}
				c, ok := rec.Column(i[0]).(*array.Int64)
				if !ok {
					return nil, fmt.Errorf("%w: %s: column %s is %s, want int64", ErrBadInput, p, errdefs.Quote(name), rec.Column(i[0]).DataType())
				}
				return c, nil
			}
			epc, err := col("episode_index")
			if err != nil {
				return err
			}
			dc, err := col("data/chunk_index")
			if err != nil {
				return err
			}
			df, err := col("data/file_index")
			if err != nil {
				return err
			}
			type camCols struct {
				chunk, file *array.Int64
				from        *array.Float64
			}
			cc := make([]camCols, len(im.cams))
			for i, cam := range im.cams {
				if cc[i].chunk, err = col("videos/" + cam + "/chunk_index"); err != nil {
					return err
				}
				if cc[i].file, err = col("videos/" + cam + "/file_index"); err != nil {
					return err
				}
				fi := rec.Schema().FieldIndices("videos/" + cam + "/from_timestamp")
				if len(fi) == 0 {
					return fmt.Errorf("%w: %s has no column videos/%s/from_timestamp", ErrBadInput, p, cam)
				}
				var ok bool
				if cc[i].from, ok = rec.Column(fi[0]).(*array.Float64); !ok {
					return fmt.Errorf("%w: %s: videos/%s/from_timestamp is %s, want double", ErrBadInput, p, cam, rec.Column(fi[0]).DataType())
				}
			}
			for r := range int(rec.NumRows()) {
				where := fmt.Sprintf("%s row %d", p, first+int64(r))
				ep := &lrEpisode{index: epc.Value(r), videos: map[string]lrVideoRef{}}
				if ep.dataFile, err = formatPath(im.info.DataPath, map[string]any{"chunk_index": dc.Value(r), "file_index": df.Value(r)}); err != nil {
					return fmt.Errorf("%w: %s: %w", ErrBadInput, where, err)
				}
				for i, cam := range im.cams {
					vp, err := formatPath(*im.info.VideoPath, map[string]any{"video_key": cam, "chunk_index": cc[i].chunk.Value(r), "file_index": cc[i].file.Value(r)})
					if err != nil {
						return fmt.Errorf("%w: %s: %w", ErrBadInput, where, err)
					}
					ep.videos[cam] = lrVideoRef{path: vp, from: cc[i].from.Value(r)}
				}
				if err := im.addEpisode(ep, where); err != nil {
					return err
				}
			}
			return tw.Write(ctx, rec)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// plan lists the data files and the MP4s the episodes name, each once, in
// episode order (videos camera by camera).
func (im *lrImport) plan() (data, videos []string) {
	seen := map[string]bool{}
	for _, e := range im.order {
		ep := im.eps[e]
		if !seen[ep.dataFile] {
			seen[ep.dataFile] = true
			data = append(data, ep.dataFile)
		}
	}
	for _, cam := range im.cams {
		for _, e := range im.order {
			p := im.eps[e].videos[cam].path
			if !seen[p] {
				seen[p] = true
				videos = append(videos, p)
			}
		}
	}
	return data, videos
}

func (im *lrImport) writeTasks(ctx context.Context) error {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "task_index", Type: arrow.PrimitiveTypes.Int64},
		{Name: "task", Type: arrow.BinaryTypes.String},
	}, nil)
	b := array.NewRecordBuilder(im.w.Allocator(), schema)
	defer b.Release()
	idx := make([]int64, 0, len(im.tasks))
	for i := range im.tasks {
		idx = append(idx, i)
	}
	slices.Sort(idx)
	for _, i := range idx {
		b.Field(0).(*array.Int64Builder).Append(i)
		b.Field(1).(*array.StringBuilder).Append(im.tasks[i])
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	tw, err := im.w.Table(im.w.BaseTable()+".tasks", schema)
	if err != nil {
		return err
	}
	return tw.Write(ctx, rec)
}

// putVideo indexes one MP4 (refusing one that does not index) and stores
// it as a media object.
func (im *lrImport) putVideo(ctx context.Context, p string) error {
	r, err := im.src.OpenAt(ctx, p)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrBadInput, errdefs.Quote(p), err)
	}
	x, err := video.Read(ctx, r, r.Size())
	r.Close()
	if err != nil {
		return fmt.Errorf("%w: %s is not a readable MP4 video: %w", ErrBadInput, errdefs.Quote(p), err)
	}
	im.frames += int64(x.Len())
	// PutMedia wants the digest up front (it skips objects stored
	// already): one pass hashes, a second stores.
	rc, err := im.src.Open(ctx, p)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrBadInput, errdefs.Quote(p), err)
	}
	h := sha256.New()
	n, err := io.Copy(h, im.w.CountingReader(rc))
	rc.Close()
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrBadInput, errdefs.Quote(p), err)
	}
	if rc, err = im.src.Open(ctx, p); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrBadInput, errdefs.Quote(p), err)
	}
	defer rc.Close()
	obj, err := im.w.PutMedia(ctx, rc, tables.MediaInfo{SHA256: hex.EncodeToString(h.Sum(nil)), Size: n, Name: p})
	if err != nil {
		return fmt.Errorf("%s: %w", errdefs.Quote(p), err)
	}
	im.media[p] = obj.SHA256
	im.w.FileDone()
	return nil
}

// readParquet streams a Parquet file's batches (schema metadata dropped)
// to fn with the batch's first row in the file.
func (im *lrImport) readParquet(ctx context.Context, p string, fn func(rec arrow.RecordBatch, first int64) error) error {
	r, err := im.src.OpenAt(ctx, p)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrBadInput, errdefs.Quote(p), err)
	}
	defer r.Close()
	pf, err := file.NewParquetReader(io.NewSectionReader(r, 0, r.Size()))
	if err != nil {
		return fmt.Errorf("%w: %s is not a readable Parquet file: %w", ErrBadInput, errdefs.Quote(p), err)
	}
	defer pf.Close()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 4096}, im.w.Allocator())
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrBadInput, errdefs.Quote(p), err)
	}
	rr, err := fr.GetRecordReader(ctx, nil, nil)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrBadInput, errdefs.Quote(p), err)
	}
	defer rr.Release()
	var first int64
	for rr.Next() {
		rec := stripMetadata(rr.RecordBatch())
		err := fn(rec, first)
		first += rec.NumRows()
		rec.Release()
		if err != nil {
			return err
		}
	}
	if err := rr.Err(); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("%w: %s: %w", ErrBadInput, errdefs.Quote(p), err)
	}
	im.w.AddBytes(r.Size())
	im.w.FileDone()
	return nil
}

// stripMetadata is rec with no schema or field metadata (a new reference).
func stripMetadata(rec arrow.RecordBatch) arrow.RecordBatch {
	fields := slices.Clone(rec.Schema().Fields())
	for i := range fields {
		fields[i].Metadata = arrow.Metadata{}
	}
	return array.NewRecordBatch(arrow.NewSchema(fields, nil), rec.Columns(), rec.NumRows())
}

// writeFrames streams the data files into BASE with the task and video
// columns added.
func (im *lrImport) writeFrames(ctx context.Context, dataFiles []string) error {
	var (
		tw     *TableWriter
		schema *arrow.Schema
		in     *arrow.Schema
	)
	mem := im.w.Allocator()
	for _, p := range dataFiles {
		err := im.readParquet(ctx, p, func(rec arrow.RecordBatch, first int64) error {
			if in == nil {
				in = rec.Schema()
				var err error
				if schema, err = im.frameSchema(p, in); err != nil {
					return err
				}
				if tw, err = im.w.Table(im.w.BaseTable(), schema); err != nil {
					return err
				}
			} else if !rec.Schema().Equal(in) {
				return fmt.Errorf("%w: %s has columns %s; the first data file has %s", ErrBadInput, errdefs.Quote(p), rec.Schema(), in)
			}
			out, err := im.frameBatch(p, rec, first, schema, mem)
			if err != nil {
				return err
			}
			defer out.Release()
			return tw.Write(ctx, out)
		})
		if err != nil {
			return err
		}
	}
	if tw == nil {
		return fmt.Errorf("%w: %s: the data files hold no rows", ErrBadInput, errdefs.Quote(im.src.URL()))
	}
	return nil
}

func (im *lrImport) frameSchema(p string, in *arrow.Schema) (*arrow.Schema, error) {
	for _, c := range []string{"episode_index", "timestamp", "task_index"} {
		if !in.HasField(c) {
			return nil, fmt.Errorf("%w: %s has no column %s; LeRobot data files have episode_index, timestamp and task_index", ErrBadInput, errdefs.Quote(p), c)
		}
	}
	fields := slices.Clone(in.Fields())
	for _, c := range append([]string{"task"}, im.cams...) {
		if in.HasField(c) {
			return nil, fmt.Errorf("%w: %s has a column %s, which the import adds", ErrBadInput, errdefs.Quote(p), errdefs.Quote(c))
		}
	}
	fields = append(fields, arrow.Field{Name: "task", Type: arrow.BinaryTypes.String})
	for _, cam := range im.cams {
		fields = append(fields, arrow.Field{Name: cam, Type: tables.VideoType,
			Metadata: arrow.NewMetadata([]string{tables.KindKey}, []string{tables.KindVideo})})
	}
	keys := []string{tables.EpisodeKey, MetaLeRobotVersion, MetaLeRobotInfo}
	vals := []string{"episode_index", im.info.CodebaseVersion, string(im.rawInfo)}
	if stats, ok := im.stats(); ok {
		keys, vals = append(keys, MetaLeRobotStats), append(vals, stats)
	}
	md := arrow.NewMetadata(keys, vals)
	return arrow.NewSchema(fields, &md), nil
}

// stats is meta/stats.json, when the dataset has it (read by Import
// before the frames).
func (im *lrImport) stats() (string, bool) {
	return im.statsJSON, im.statsJSON != ""
}

func (im *lrImport) frameBatch(p string, rec arrow.RecordBatch, first int64, schema *arrow.Schema, mem memory.Allocator) (arrow.RecordBatch, error) {
	sc := rec.Schema()
	col := func(name string) arrow.Array { return rec.Column(sc.FieldIndices(name)[0]) }
	epc, ok := col("episode_index").(*array.Int64)
	if !ok {
		return nil, fmt.Errorf("%w: %s: episode_index is %s, want int64", ErrBadInput, errdefs.Quote(p), col("episode_index").DataType())
	}
	tic, ok := col("task_index").(*array.Int64)
	if !ok {
		return nil, fmt.Errorf("%w: %s: task_index is %s, want int64", ErrBadInput, errdefs.Quote(p), col("task_index").DataType())
	}
	var ts func(int) float64
	switch c := col("timestamp").(type) {
	case *array.Float32:
		ts = func(i int) float64 { return float64(c.Value(i)) }
	case *array.Float64:
		ts = c.Value
	default:
		return nil, fmt.Errorf("%w: %s: timestamp is %s, want float", ErrBadInput, errdefs.Quote(p), c.DataType())
	}
	n := int(rec.NumRows())
	tb := array.NewStringBuilder(mem)
	defer tb.Release()
	vbs := make([]*array.StructBuilder, len(im.cams))
	for i := range vbs {
		vbs[i] = array.NewStructBuilder(mem, tables.VideoType)
		defer vbs[i].Release()
	}
	for r := range n {
		row := first + int64(r)
		if epc.IsNull(r) || tic.IsNull(r) || col("timestamp").IsNull(r) {
			return nil, fmt.Errorf("%w: %s row %d: episode_index, task_index or timestamp is null", ErrBadInput, errdefs.Quote(p), row)
		}
		ep, ok := im.eps[epc.Value(r)]
		if !ok {
			return nil, fmt.Errorf("%w: %s row %d: episode %d is not in the episode metadata", ErrBadInput, errdefs.Quote(p), row, epc.Value(r))
		}
		task, ok := im.tasks[tic.Value(r)]
		if !ok {
			return nil, fmt.Errorf("%w: %s row %d: task_index %d is not in the tasks file", ErrBadInput, errdefs.Quote(p), row, tic.Value(r))
		}
		tb.Append(task)
		t := ts(r)
		for i, cam := range im.cams {
			v := ep.videos[cam]
			vbs[i].Append(true)
			vbs[i].FieldBuilder(0).(*array.StringBuilder).Append(im.media[v.path])
			// As LeRobot's loader: the episode's offset in the file plus
			// the row's timestamp (float32 widened to float64).
			vbs[i].FieldBuilder(1).(*array.Float64Builder).Append(v.from + t)
		}
	}
	cols := slices.Clone(rec.Columns())
	ta := tb.NewArray()
	defer ta.Release()
	cols = append(cols, ta)
	for _, vb := range vbs {
		a := vb.NewArray()
		defer a.Release()
		cols = append(cols, a)
	}
	return array.NewRecordBatch(schema, cols, int64(n)), nil
}

// formatPath fills a LeRobot path template (Python str.format: {name} and
// {name:0Nd}) with vals.
func formatPath(orig string, vals map[string]any) (string, error) {
	tmpl := orig
	var b strings.Builder
	for {
		i := strings.IndexByte(tmpl, '{')
		if i < 0 {
			b.WriteString(tmpl)
			break
		}
		j := strings.IndexByte(tmpl[i:], '}')
		if j < 0 {
			return "", fmt.Errorf("path template %s: unclosed {", errdefs.Quote(tmpl))
		}
		b.WriteString(tmpl[:i])
		field := tmpl[i+1 : i+j]
		name, spec, _ := strings.Cut(field, ":")
		v, ok := vals[name]
		if !ok {
			return "", fmt.Errorf("path template %s: unknown field %s", errdefs.Quote(tmpl), errdefs.Quote(name))
		}
		switch x := v.(type) {
		case string:
			if spec != "" {
				return "", fmt.Errorf("path template %s: field %s takes no format", errdefs.Quote(tmpl), name)
			}
			b.WriteString(x)
		case int64:
			s := strconv.FormatInt(x, 10)
			if spec != "" {
				if !strings.HasSuffix(spec, "d") {
					return "", fmt.Errorf("path template %s: format %s: want {%s:0Nd}", errdefs.Quote(tmpl), spec, name)
				}
				width, err := strconv.Atoi(strings.TrimPrefix(strings.TrimSuffix(spec, "d"), "0"))
				if spec == "d" {
					width, err = 0, nil
				}
				if err != nil {
					return "", fmt.Errorf("path template %s: format %s: want {%s:0Nd}", errdefs.Quote(tmpl), spec, name)
				}
				neg := x < 0
				s = strings.TrimPrefix(s, "-")
				for len(s) < width-boolInt(neg) {
					s = "0" + s
				}
				if neg {
					s = "-" + s
				}
			}
			b.WriteString(s)
		}
		tmpl = tmpl[i+j+1:]
	}
	out := b.String()
	if err := checkRelPath(out); err != nil || path.Clean(out) != out {
		return "", fmt.Errorf("path %s (from template %s) is not a clean relative path", errdefs.Quote(out), errdefs.Quote(orig))
	}
	return out, nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
