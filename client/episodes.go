package client

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/weftdata/weft/errdefs"
)

// Video columns, as the server's tables package reads them (docs/format.md
// "Video column"): a video column is a field of type VideoType whose
// metadata has KindKey = KindVideo.
const (
	// KindKey is the field metadata key naming a column's kind.
	KindKey = "weft.kind"
	// KindVideo is KindKey's value for a video column.
	KindVideo = "video"
	// ToleranceKey is the field metadata of a video column saying how far,
	// in seconds (a decimal string), a row's time may be from its frame's.
	ToleranceKey = "weft.tolerance"
	// EpisodeKey is the schema metadata naming the episode column.
	EpisodeKey = "weft.episode"
	// DefaultTolerance is the tolerance AppendEpisodes writes when
	// EpisodeOptions.Tolerance is 0: 0.1 ms, LeRobot's default.
	DefaultTolerance = 1e-4
)

// VideoType is the Arrow type of a video column: media is the sha256
// (lowercase hex) of the row's media object, time the row's presentation
// time in seconds in that file.
var VideoType = arrow.StructOf(
	arrow.Field{Name: "media", Type: arrow.BinaryTypes.String},
	arrow.Field{Name: "time", Type: arrow.PrimitiveTypes.Float64},
)

// VideoField is the field of a video column named name whose rows match a
// frame within tolerance seconds: VideoType, nullable, with field metadata
// weft.kind = "video" and weft.tolerance. It is the field the Python
// client's video_field builds (the tolerance is written as Python's repr
// writes a float in (0, 1), e.g. "0.0001", "1e-05"), so tables written by
// either client have equal schemas.
func VideoField(name string, tolerance float64) arrow.Field {
	return arrow.Field{Name: name, Type: VideoType, Nullable: true,
		Metadata: arrow.NewMetadata([]string{KindKey, ToleranceKey}, []string{KindVideo, formatTolerance(tolerance)})}
}

// formatTolerance writes t as Python's repr does for the tolerances an
// append accepts (shortest round trip; exponent form below 1e-4).
func formatTolerance(t float64) string {
	s := strconv.FormatFloat(t, 'g', -1, 64)
	if !strings.ContainsAny(s, ".eEn") { // an integral value: repr writes "2.0"
		s += ".0"
	}
	return s
}

// VideoFiles maps each episode of one camera to its MP4 file. The key is
// the episode's value: for a string episode column the string, for an
// integer column its decimal form (EpisodeFiles converts a map keyed by
// integers).
type VideoFiles map[string]string

// EpisodeFiles is m as VideoFiles: keys in decimal for integers.
func EpisodeFiles[K ~int | ~int8 | ~int16 | ~int32 | ~int64 | ~uint | ~uint8 | ~uint16 | ~uint32 | ~uint64 | ~string](m map[K]string) VideoFiles {
	out := make(VideoFiles, len(m))
	for k, v := range m {
		out[fmt.Sprint(k)] = v
	}
	return out
}

// EpisodeOptions configure AppendEpisodes; the zero value takes the
// defaults of DefaultEpisodeOptions.
type EpisodeOptions struct {
	// Episode names the episode column (an integer or string column);
	// "" means "episode_index". It is written as the schema metadata
	// weft.episode.
	Episode string
	// Timestamp names the column of the moments' times: seconds (a float
	// or integer column) in the episode's video. "" means "timestamp".
	Timestamp string
	// Tolerance is how far in seconds a timestamp may be from a frame's
	// presentation time, in (0, 1); 0 means DefaultTolerance.
	Tolerance float64
}

// DefaultEpisodeOptions are the Python client's defaults:
// episode_index, timestamp, 0.1 ms.
func DefaultEpisodeOptions() EpisodeOptions {
	return EpisodeOptions{Episode: "episode_index", Timestamp: "timestamp", Tolerance: DefaultTolerance}
}

// withDefaults fills the zero fields.
func (o EpisodeOptions) withDefaults() EpisodeOptions {
	d := DefaultEpisodeOptions()
	if o.Episode == "" {
		o.Episode = d.Episode
	}
	if o.Timestamp == "" {
		o.Timestamp = d.Timestamp
	}
	if o.Tolerance == 0 {
		o.Tolerance = d.Tolerance
	}
	return o
}

// Validate checks the options (after defaults).
func (o EpisodeOptions) Validate() error {
	o = o.withDefaults()
	if !(o.Tolerance > 0 && o.Tolerance < 1) {
		return fmt.Errorf("%w: append: tolerance %v must be a number of seconds in (0, 1)", errdefs.ErrInvalidArgument, o.Tolerance)
	}
	return nil
}

// MediaFile is a local media file of an AppendEpisodes and what became of
// it.
type MediaFile struct {
	Path   string
	SHA256 string
	Size   int64
	// Uploaded: the server lacked the file and it was sent (PutMedia). A
	// file the project held already is not sent again.
	Uploaded bool
}

// EpisodesResult is the result of AppendEpisodes: the put's, and the media
// files by sha256.
type EpisodesResult struct {
	PutResult
	// Media are the distinct files the rows name, sorted by SHA256.
	Media []MediaFile
}

// AppendEpisodes writes episodes with video to the table d names, in ONE
// commit: the rows of r (read to its end, not released) plus one video
// column per camera of videos (camera -> episode -> MP4 path), whose row
// values are the sha256 of the row's episode's file and the row's
// timestamp, with schema metadata weft.episode naming the episode column.
// It is the Go form of the Python client's Table.append(data, videos=...)
// and writes the same table.
//
// Before anything is sent it checks that the episode and timestamp
// columns exist, have an episode (integer or string) and a time (float or
// integer) type and no nulls, that no camera is named like a column, and
// that every camera has a regular file for every episode of the rows
// (files of other episodes are ignored). Then it hashes every file
// (sha256, streamed), uploads the files the project lacks (StatMedia, then
// PutMedia streaming from the file: a file is never whole in memory), and
// puts the rows. The video columns follow the data's columns in the order
// of their camera names.
//
// The server refuses rows whose timestamp has no frame within the
// tolerance (InvalidArgument naming the row, the episode and the nearest
// frame); an error naming a media object's sha256 (or its 12-digit
// prefix) gets the file's path added. A failed append stores no rows; the
// files it uploaded stay invisible until an append names them.
func (c *Client) AppendEpisodes(ctx context.Context, d PutDescriptor, r array.RecordReader, videos map[string]VideoFiles, o EpisodeOptions) (EpisodesResult, error) {
	if err := o.Validate(); err != nil {
		return EpisodesResult{}, err
	}
	o = o.withDefaults()
	ep, err := readEpisodes(r, videos, o)
	if err != nil {
		return EpisodesResult{}, err
	}
	defer ep.release()

	// Hash every file once (a file may serve several cameras or episodes).
	byPath := map[string]*MediaFile{}
	for _, cam := range ep.cameras {
		for _, path := range ep.files[cam] {
			if byPath[path] != nil {
				continue
			}
			sum, size, err := hashFile(path)
			if err != nil {
				return EpisodesResult{}, err
			}
			byPath[path] = &MediaFile{Path: path, SHA256: sum, Size: size}
		}
	}
	bySHA := map[string]*MediaFile{}
	for _, f := range byPath {
		if bySHA[f.SHA256] == nil {
			bySHA[f.SHA256] = f
		}
	}
	shas := make([]string, 0, len(bySHA))
	for s := range bySHA {
		shas = append(shas, s)
	}
	sort.Strings(shas)
	for _, s := range shas {
		f := bySHA[s]
		st, err := c.StatMedia(ctx, d.Project, s)
		if err != nil {
			return EpisodesResult{}, withFiles(fmt.Errorf("append episodes: stat media of %s: %w", f.Path, err), bySHA)
		}
		if st.Exists {
			continue
		}
		if err := c.putMediaFile(ctx, d.Project, f); err != nil {
			return EpisodesResult{}, withFiles(err, bySHA)
		}
		f.Uploaded = true
	}

	rows, err := ep.withVideoColumns(c.mem, o, byPath)
	if err != nil {
		return EpisodesResult{}, err
	}
	defer rows.Release()
	res, err := c.Put(ctx, d, rows)
	if err != nil {
		return EpisodesResult{}, withFiles(err, bySHA)
	}
	out := EpisodesResult{PutResult: res}
	for _, s := range shas {
		out.Media = append(out.Media, *bySHA[s])
	}
	return out, nil
}

// putMediaFile uploads f, streaming from the file.
func (c *Client) putMediaFile(ctx context.Context, project string, f *MediaFile) error {
	fh, err := os.Open(f.Path)
	if err != nil {
		return fmt.Errorf("%w: append episodes: open %s: %w", errdefs.ErrInvalidArgument, f.Path, err)
	}
	defer fh.Close()
	_, err = c.PutMedia(ctx, project, filepath.Base(f.Path), &sizedReader{r: fh, path: f.Path, want: f.Size}, f.Size, f.SHA256)
	if err != nil {
		return fmt.Errorf("upload of %s: %w", f.Path, err)
	}
	return nil
}

// sizedReader fails when the file is not the size it had when hashed.
type sizedReader struct {
	r    io.Reader
	path string
	want int64
	n    int64
}

func (s *sizedReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	s.n += int64(n)
	if s.n > s.want || (err == io.EOF && s.n != s.want) {
		return n, fmt.Errorf("%w: media file %s changed while it was uploaded (%d bytes when hashed, %d or more now); upload it again once nothing writes to it", errdefs.ErrInvalidArgument, s.path, s.want, s.n)
	}
	return n, err
}

// hashFile is the sha256 (lowercase hex) and size of the file at path,
// read in MediaChunkBytes pieces.
func hashFile(path string) (string, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", 0, fmt.Errorf("%w: append episodes: %w", errdefs.ErrInvalidArgument, err)
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.CopyBuffer(h, f, make([]byte, MediaChunkBytes))
	if err != nil {
		return "", 0, fmt.Errorf("append episodes: hash %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}

// withFiles adds to err the path of every file whose sha256 (or the
// 12-digit prefix the server writes) err's message names.
func withFiles(err error, files map[string]*MediaFile) error {
	msg := err.Error()
	var named []string
	for s, f := range files {
		if strings.Contains(msg, s[:12]) {
			named = append(named, fmt.Sprintf("media %s is file %s", s[:12], f.Path))
		}
	}
	if len(named) == 0 {
		return err
	}
	sort.Strings(named)
	return fmt.Errorf("%w (%s)", err, strings.Join(named, "; "))
}

// episodeRows are the checked rows of an AppendEpisodes.
type episodeRows struct {
	schema  *arrow.Schema
	batches []arrow.RecordBatch
	epCol   int
	tsCol   int
	cameras []string                     // sorted
	files   map[string]map[string]string // camera -> episode key -> path, the rows' episodes only
}

func (e *episodeRows) release() {
	for _, b := range e.batches {
		b.Release()
	}
}

// readEpisodes reads r and runs every check that needs no file read.
func readEpisodes(r array.RecordReader, videos map[string]VideoFiles, o EpisodeOptions) (*episodeRows, error) {
	if len(videos) == 0 {
		return nil, fmt.Errorf("%w: append: videos must map a camera key to {episode: file}, e.g. {\"wrist_camera\": {\"0\": \"ep_0000.mp4\"}}", errdefs.ErrInvalidArgument)
	}
	e := &episodeRows{schema: r.Schema()}
	for r.Next() {
		b := r.RecordBatch()
		b.Retain()
		e.batches = append(e.batches, b)
	}
	if err := r.Err(); err != nil {
		e.release()
		return nil, fmt.Errorf("append episodes: read the batches: %w", err)
	}
	if err := e.check(videos, o); err != nil {
		e.release()
		return nil, err
	}
	return e, nil
}

func (e *episodeRows) check(videos map[string]VideoFiles, o EpisodeOptions) error {
	var rows int64
	for _, b := range e.batches {
		rows += b.NumRows()
	}
	if rows == 0 {
		return fmt.Errorf("%w: append: no rows; give at least one row", errdefs.ErrInvalidArgument)
	}
	names := make([]string, 0, e.schema.NumFields())
	for _, f := range e.schema.Fields() {
		names = append(names, f.Name)
	}
	for _, c := range []struct{ what, col string }{{"episode", o.Episode}, {"timestamp", o.Timestamp}} {
		if !e.schema.HasField(c.col) {
			return fmt.Errorf("%w: append with videos: no %s column %s (columns: %s); name it with EpisodeOptions.%s",
				errdefs.ErrInvalidArgument, c.what, errdefs.Quote(c.col), strings.Join(names, ", "), strings.ToUpper(c.what[:1])+c.what[1:])
		}
	}
	e.epCol = e.schema.FieldIndices(o.Episode)[0]
	e.tsCol = e.schema.FieldIndices(o.Timestamp)[0]
	if t := e.schema.Field(e.epCol).Type; !isEpisodeType(t) {
		return fmt.Errorf("%w: append with videos: episode column %s is %s; give integers or strings", errdefs.ErrInvalidArgument, errdefs.Quote(o.Episode), t)
	}
	if t := e.schema.Field(e.tsCol).Type; !isTimeType(t) {
		return fmt.Errorf("%w: append with videos: timestamp column %s is %s; give seconds (float) in the episode's video", errdefs.ErrInvalidArgument, errdefs.Quote(o.Timestamp), t)
	}
	for _, c := range []struct {
		name string
		i    int
	}{{o.Episode, e.epCol}, {o.Timestamp, e.tsCol}} {
		nulls := 0
		for _, b := range e.batches {
			nulls += b.Column(c.i).NullN()
		}
		if nulls > 0 {
			return fmt.Errorf("%w: append with videos: column %s has %d nulls", errdefs.ErrInvalidArgument, errdefs.Quote(c.name), nulls)
		}
	}
	present := map[string]bool{}
	for _, b := range e.batches {
		key := episodeKeys(b.Column(e.epCol))
		for i := range int(b.NumRows()) {
			present[key(i)] = true
		}
	}
	order := make([]string, 0, len(present))
	for k := range present {
		order = append(order, k)
	}
	sort.Strings(order)
	e.files = map[string]map[string]string{}
	for cam, files := range videos {
		e.cameras = append(e.cameras, cam)
		if cam == "" {
			return fmt.Errorf("%w: append: a camera key is empty; it is the video column's name", errdefs.ErrInvalidArgument)
		}
		if e.schema.HasField(cam) {
			return fmt.Errorf("%w: append: camera key %s is already a column of the data; pick another name", errdefs.ErrInvalidArgument, errdefs.Quote(cam))
		}
		var missing []string
		for _, k := range order {
			if _, ok := files[k]; !ok {
				missing = append(missing, k)
			}
		}
		if len(missing) > 0 {
			more := ""
			if len(missing) > 10 {
				missing, more = missing[:10], " …"
			}
			return fmt.Errorf("%w: append: videos[%s] has no file for episode(s) %s%s (%d of %d); give a file for every episode of the data",
				errdefs.ErrInvalidArgument, errdefs.Quote(cam), strings.Join(missing, ", "), more, len(missing), len(order))
		}
		e.files[cam] = make(map[string]string, len(order))
		for _, k := range order {
			path := files[k]
			if st, err := os.Stat(path); err != nil || !st.Mode().IsRegular() {
				return fmt.Errorf("%w: append: videos[%s][%s] = %s is not a file", errdefs.ErrInvalidArgument, errdefs.Quote(cam), k, errdefs.Quote(path))
			}
			e.files[cam][k] = path
		}
	}
	sort.Strings(e.cameras)
	return nil
}

// withVideoColumns is the rows plus one video column per camera (media:
// the sha256 of the row's episode's file; time: the row's timestamp in
// seconds), with schema metadata weft.episode, as one reader.
func (e *episodeRows) withVideoColumns(mem memory.Allocator, o EpisodeOptions, byPath map[string]*MediaFile) (array.RecordReader, error) {
	fields := append([]arrow.Field(nil), e.schema.Fields()...)
	for _, cam := range e.cameras {
		fields = append(fields, VideoField(cam, o.Tolerance))
	}
	meta := e.schema.Metadata()
	keys := append([]string(nil), meta.Keys()...)
	vals := append([]string(nil), meta.Values()...)
	if i := meta.FindKey(EpisodeKey); i >= 0 {
		vals[i] = o.Episode
	} else {
		keys, vals = append(keys, EpisodeKey), append(vals, o.Episode)
	}
	md := arrow.NewMetadata(keys, vals)
	schema := arrow.NewSchema(fields, &md)
	var out []arrow.RecordBatch
	defer func() {
		for _, b := range out {
			b.Release()
		}
	}()
	videoFields := VideoType.Fields()
	for _, b := range e.batches {
		if b.NumRows() == 0 {
			continue
		}
		n := int(b.NumRows())
		times := toSeconds(mem, b.Column(e.tsCol))
		key := episodeKeys(b.Column(e.epCol))
		cols := append([]arrow.Array(nil), b.Columns()...)
		var made []arrow.Array
		for _, cam := range e.cameras {
			sb := array.NewStringBuilder(mem)
			sb.Reserve(n)
			for i := range n {
				sb.Append(byPath[e.files[cam][key(i)]].SHA256)
			}
			media := sb.NewArray()
			sb.Release()
			col, err := array.NewStructArrayWithFields([]arrow.Array{media, times}, videoFields)
			media.Release()
			if err != nil {
				times.Release()
				for _, a := range made {
					a.Release()
				}
				return nil, fmt.Errorf("append episodes: video column %s: %w", cam, err)
			}
			made = append(made, col)
		}
		times.Release()
		out = append(out, array.NewRecordBatch(schema, append(cols, made...), b.NumRows()))
		for _, a := range made {
			a.Release()
		}
	}
	rr, err := array.NewRecordReader(schema, out)
	if err != nil {
		return nil, fmt.Errorf("append episodes: %w", err)
	}
	return rr, nil
}

func isEpisodeType(t arrow.DataType) bool {
	switch t.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64, arrow.STRING, arrow.LARGE_STRING:
		return true
	}
	return false
}

func isTimeType(t arrow.DataType) bool {
	switch t.ID() {
	case arrow.FLOAT16, arrow.FLOAT32, arrow.FLOAT64, arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64:
		return true
	}
	return false
}

// episodeKeys reads an episode column (isEpisodeType, no nulls) as
// VideoFiles keys.
func episodeKeys(a arrow.Array) func(i int) string {
	switch a := a.(type) {
	case *array.String:
		return a.Value
	case *array.LargeString:
		return a.Value
	case *array.Int8:
		return func(i int) string { return strconv.FormatInt(int64(a.Value(i)), 10) }
	case *array.Int16:
		return func(i int) string { return strconv.FormatInt(int64(a.Value(i)), 10) }
	case *array.Int32:
		return func(i int) string { return strconv.FormatInt(int64(a.Value(i)), 10) }
	case *array.Int64:
		return func(i int) string { return strconv.FormatInt(a.Value(i), 10) }
	case *array.Uint8:
		return func(i int) string { return strconv.FormatUint(uint64(a.Value(i)), 10) }
	case *array.Uint16:
		return func(i int) string { return strconv.FormatUint(uint64(a.Value(i)), 10) }
	case *array.Uint32:
		return func(i int) string { return strconv.FormatUint(uint64(a.Value(i)), 10) }
	case *array.Uint64:
		return func(i int) string { return strconv.FormatUint(a.Value(i), 10) }
	}
	panic(fmt.Sprintf("client: episode column of type %s", a.DataType())) // isEpisodeType checked it
}

// toSeconds casts a time column (isTimeType, no nulls) to float64, as
// pyarrow's cast does.
func toSeconds(mem memory.Allocator, a arrow.Array) arrow.Array {
	if a.DataType().ID() == arrow.FLOAT64 {
		a.Retain()
		return a
	}
	var at func(i int) float64
	switch a := a.(type) {
	case *array.Float16:
		at = func(i int) float64 { return float64(a.Value(i).Float32()) }
	case *array.Float32:
		at = func(i int) float64 { return float64(a.Value(i)) }
	case *array.Int8:
		at = func(i int) float64 { return float64(a.Value(i)) }
	case *array.Int16:
		at = func(i int) float64 { return float64(a.Value(i)) }
	case *array.Int32:
		at = func(i int) float64 { return float64(a.Value(i)) }
	case *array.Int64:
		at = func(i int) float64 { return float64(a.Value(i)) }
	case *array.Uint8:
		at = func(i int) float64 { return float64(a.Value(i)) }
	case *array.Uint16:
		at = func(i int) float64 { return float64(a.Value(i)) }
	case *array.Uint32:
		at = func(i int) float64 { return float64(a.Value(i)) }
	case *array.Uint64:
		at = func(i int) float64 { return float64(a.Value(i)) }
	default:
		panic(fmt.Sprintf("client: time column of type %s", a.DataType())) // isTimeType checked it
	}
	b := array.NewFloat64Builder(mem)
	defer b.Release()
	b.Reserve(a.Len())
	for i := range a.Len() {
		b.UnsafeAppend(at(i))
	}
	return b.NewArray()
}
