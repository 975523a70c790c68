package tables

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"golang.org/x/sync/errgroup"

	"github.com/weftdata/weft/bucket"
	"github.com/weftdata/weft/errdefs"
	"github.com/weftdata/weft/versions"
)

// MediaInfo is what a client declares about a media file it uploads.
type MediaInfo struct {
	// SHA256 is the lowercase hex SHA-256 of the whole file; required (the
	// object's key is built from it before the first byte is stored).
	SHA256 string
	// Size is the file's length in bytes; -1 when unknown. A known size is
	// checked.
	Size int64
	// Name is the client's file name, used only in messages.
	Name string
}

// MediaResult says what PutMedia stored.
type MediaResult struct {
	Object versions.MediaObject
	// Stored is false when the object existed already and nothing was
	// written (an identical re-upload).
	Stored bool
}

// mediaStatParallel bounds the concurrent existence checks of one append.
const mediaStatParallel = 16

// PutMedia stores the media file r (an MP4) in project p as the
// content-addressed object versions.MediaKey(p, want.SHA256). It streams r
// into the bucket while hashing it, holding at most the bucket's part
// buffers in memory, never the file whole.
//
// If the object exists already, it reads nothing of r and stores nothing
// (Stored false). If r's bytes hash to another digest than want.SHA256, or
// their count differs from a known want.Size, it fails with
// ErrMediaMismatch and leaves no object: the digest is checked when r
// ends, before the bucket completes the write, so the write fails as a
// whole (an fs temporary file is discarded, an S3 multipart upload
// aborted). The object is invisible until a commit's manifest names it;
// gc deletes it otherwise. Package tables does not look inside the file:
// the caller checks it is a usable MP4 (flight indexes it with video.Read)
// and deletes it with DeleteMedia if not.
func (s *Store) PutMedia(ctx context.Context, p versions.ProjectName, r io.Reader, want MediaInfo) (MediaResult, error) {
	if err := versions.ValidateSHA256(want.SHA256); err != nil {
		return MediaResult{}, fmt.Errorf("media %s: %w", mediaName(want), err)
	}
	if want.Size < -1 {
		return MediaResult{}, fmt.Errorf("%w: media %s: size %d; give the file's size in bytes, or -1 if unknown", errdefs.ErrInvalidArgument, mediaName(want), want.Size)
	}
	// The project must exist: media live inside it.
	if _, err := s.v.Head(ctx, p, versions.MainBranch); err != nil {
		return MediaResult{}, err
	}
	obj, err := s.StatMedia(ctx, p, want.SHA256)
	switch {
	case err == nil:
		if want.Size >= 0 && obj.Size != want.Size {
			return MediaResult{}, fmt.Errorf("%w: media %s: the stored object with sha256 %s has %d bytes, the upload says %d; check the file and its digest", ErrMediaMismatch, mediaName(want), want.SHA256, obj.Size, want.Size)
		}
		return MediaResult{Object: obj}, nil
	case !errors.Is(err, errdefs.ErrNotFound):
		return MediaResult{}, err
	}
	hr := &hashReader{r: r, h: sha256.New(), want: want}
	size := want.Size
	if size == 0 {
		size = -1 // a bucket need not read an empty body; the check needs its io.EOF
	}
	if _, err := s.b.Put(ctx, versions.MediaKey(p, want.SHA256), hr, size); err != nil {
		// No cleanup: a failed Put stores nothing, and a concurrent
		// upload of the same file may own the key by now.
		if hr.err != nil {
			return MediaResult{}, hr.err
		}
		return MediaResult{}, fmt.Errorf("store media %s: %w", mediaName(want), err)
	}
	return MediaResult{Object: versions.NewMediaObject(want.SHA256, hr.n), Stored: true}, nil
}

func mediaName(w MediaInfo) string {
	if w.Name != "" {
		return errdefs.Quote(w.Name)
	}
	return w.SHA256
}

// hashReader hashes what it reads and, at the end of r (the declared size,
// or io.EOF when the size is unknown), fails when the bytes do not match
// want: the bucket's Put sees a read error and stores nothing.
type hashReader struct {
	r       io.Reader
	h       hash.Hash
	want    MediaInfo
	n       int64
	checked bool  // the digest was compared
	err     error // the mismatch, once found
}

func (h *hashReader) Read(p []byte) (int, error) {
	if h.err != nil {
		return 0, h.err
	}
	n, err := h.r.Read(p)
	h.h.Write(p[:n])
	h.n += int64(n)
	switch {
	case h.want.Size >= 0 && h.n > h.want.Size:
		h.err = fmt.Errorf("%w: media %s has more than the %d bytes its upload declared; nothing was stored", ErrMediaMismatch, mediaName(h.want), h.want.Size)
	case !h.checked && (h.want.Size >= 0 && h.n == h.want.Size && (n > 0 || err == io.EOF) || h.want.Size < 0 && err == io.EOF):
		h.checked = true
		// The last bytes: a bucket given the size may stop reading here,
		// without waiting for io.EOF, so the digest is checked now.
		if got := hex.EncodeToString(h.h.Sum(nil)); got != h.want.SHA256 {
			h.err = fmt.Errorf("%w: media %s hashes to sha256 %s, its upload declared %s; nothing was stored (was the file changed while uploading?)", ErrMediaMismatch, mediaName(h.want), got, h.want.SHA256)
		}
	case h.want.Size >= 0 && err == io.EOF && h.n < h.want.Size:
		h.err = fmt.Errorf("%w: media %s has %d bytes, its upload declared %d; nothing was stored", ErrMediaMismatch, mediaName(h.want), h.n, h.want.Size)
	}
	if h.err != nil {
		// Withhold the bytes: a reader filling a buffer (io.ReadFull)
		// drops an error that comes with the bytes that fill it.
		return 0, h.err
	}
	return n, err
}

// StatMedia describes the media object with digest sha in p; an error
// wrapping ErrMediaNotFound (NotFound) when there is none.
func (s *Store) StatMedia(ctx context.Context, p versions.ProjectName, sha string) (versions.MediaObject, error) {
	if err := versions.ValidateSHA256(sha); err != nil {
		return versions.MediaObject{}, err
	}
	info, err := s.b.Stat(ctx, versions.MediaKey(p, sha))
	if errors.Is(err, bucket.ErrNotFound) {
		return versions.MediaObject{}, fmt.Errorf("%w: media %s in project %q; upload it first (DoPut media)", ErrMediaNotFound, sha, p)
	}
	if err != nil {
		return versions.MediaObject{}, fmt.Errorf("stat media %s: %w", sha, err)
	}
	return versions.NewMediaObject(sha, info.Size), nil
}

// OpenMedia opens the media object with digest sha in p for ranged reads,
// the way data files are read (bucket.Open: a ranged, version-pinned GET
// per ReadAt on S3, pread on fs), and returns its size. ReadAt may be
// called concurrently; the reads use ctx. The reader is also an io.Closer
// (a bucket.Reader): close it when done. (On S3 it holds nothing; on fs an
// open file, which the garbage collector closes if the caller cannot.)
func (s *Store) OpenMedia(ctx context.Context, p versions.ProjectName, sha string) (io.ReaderAt, int64, error) {
	if err := versions.ValidateSHA256(sha); err != nil {
		return nil, 0, err
	}
	r, err := s.b.Open(ctx, versions.MediaKey(p, sha))
	if errors.Is(err, bucket.ErrNotFound) {
		return nil, 0, fmt.Errorf("%w: media %s in project %q", ErrMediaNotFound, sha, p)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("open media %s: %w", sha, err)
	}
	return r, r.Size(), nil
}

// DeleteMedia removes the media object with digest sha from p: for an
// upload the caller refuses after PutMedia stored it (an MP4 it cannot
// index). It must not be called for an object a commit names; a media
// object that existed before the refused upload was not Stored by it.
func (s *Store) DeleteMedia(ctx context.Context, p versions.ProjectName, sha string) error {
	if err := versions.ValidateSHA256(sha); err != nil {
		return err
	}
	if err := s.b.Delete(ctx, versions.MediaKey(p, sha)); err != nil {
		return fmt.Errorf("delete media %s: %w", sha, err)
	}
	return nil
}

// BatchCheck checks one batch of an append before it is written: schema is
// the table's, firstRow the batch's first row within the put. An error
// fails the append; nothing is stored.
type BatchCheck func(ctx context.Context, schema *arrow.Schema, rec arrow.RecordBatch, firstRow int64) error

// Video columns (docs/format.md "Video column").
const (
	// KindKey is the field metadata key naming a column's kind.
	KindKey = "weft.kind"
	// KindVideo is KindKey's value for a video column.
	KindVideo = "video"
	// KindFile is KindKey's value for a file column: utf8, each value the
	// sha256 of an uploaded media object (any bytes; null: no file). The
	// commit names the objects in the manifest, as for video columns.
	KindFile = "file"
	// ToleranceKey is the optional field metadata of a video column: how
	// far, in seconds (a decimal string), a row's time may be from its
	// frame's presentation time.
	ToleranceKey = "weft.tolerance"
	// DefaultTolerance is the tolerance of a video column without
	// ToleranceKey (LeRobot's default).
	DefaultTolerance = "0.0001"
	// EpisodeKey is the schema metadata naming the episode column.
	EpisodeKey = "weft.episode"
)

// VideoType is the Arrow type of a video column.
var VideoType = arrow.StructOf(
	arrow.Field{Name: "media", Type: arrow.BinaryTypes.String},
	arrow.Field{Name: "time", Type: arrow.PrimitiveTypes.Float64},
)

// VideoColumns returns the indexes of the fields of schema whose metadata
// has weft.kind = "video", in schema order. It fails with ErrBadVideoColumn
// when such a field's type is not VideoType (struct<media: utf8 not null,
// time: float64 not null>) or its weft.tolerance is not a non-negative
// decimal, and when a field has an unknown weft.kind.
func VideoColumns(schema *arrow.Schema) ([]int, error) {
	var out []int
	for i, f := range schema.Fields() {
		kind, ok := f.Metadata.GetValue(KindKey)
		if !ok {
			continue
		}
		if kind == KindFile {
			continue
		}
		if kind != KindVideo {
			return nil, fmt.Errorf("%w: column %s has %s = %q; the kinds are %q and %q", ErrBadVideoColumn, errdefs.Quote(f.Name), KindKey, kind, KindVideo, KindFile)
		}
		if !arrow.TypeEqual(f.Type, VideoType) {
			return nil, fmt.Errorf("%w: video column %s has type %s; a video column is %s (media: the file's sha256, time: the moment's presentation time in seconds, neither null)", ErrBadVideoColumn, errdefs.Quote(f.Name), typeString(f.Type), "struct<media: utf8 not null, time: float64 not null>")
		}
		if st := f.Type.(*arrow.StructType); st.Field(0).Nullable || st.Field(1).Nullable {
			return nil, fmt.Errorf("%w: video column %s has nullable fields; a video column is struct<media: utf8 not null, time: float64 not null>", ErrBadVideoColumn, errdefs.Quote(f.Name))
		}
		if tol, ok := f.Metadata.GetValue(ToleranceKey); ok {
			if v, err := strconv.ParseFloat(tol, 64); err != nil || v < 0 || v != v {
				return nil, fmt.Errorf("%w: video column %s has %s = %q; give a non-negative number of seconds such as %q", ErrBadVideoColumn, errdefs.Quote(f.Name), ToleranceKey, tol, DefaultTolerance)
			}
		}
		out = append(out, i)
	}
	return out, nil
}

// FileColumns returns the indexes of the fields of schema whose metadata
// has weft.kind = "file", in schema order; ErrBadVideoColumn when such a
// field is not utf8.
func FileColumns(schema *arrow.Schema) ([]int, error) {
	var out []int
	for i, f := range schema.Fields() {
		if kind, ok := f.Metadata.GetValue(KindKey); !ok || kind != KindFile {
			continue
		}
		if !arrow.TypeEqual(f.Type, arrow.BinaryTypes.String) {
			return nil, fmt.Errorf("%w: file column %s has type %s; a file column is utf8 (the sha256 of an uploaded object)", ErrBadVideoColumn, errdefs.Quote(f.Name), typeString(f.Type))
		}
		out = append(out, i)
	}
	return out, nil
}

// EpisodeColumn names the episode column of schema: the column its
// weft.episode metadata names, else a column named "episode_index", else
// one named "episode"; "" when there is none. The column must be an
// integer or string column (ErrBadVideoColumn otherwise, and when
// weft.episode names a column the schema lacks).
func EpisodeColumn(schema *arrow.Schema) (string, error) {
	name, named := schema.Metadata().GetValue(EpisodeKey)
	if !named {
		for _, c := range []string{"episode_index", "episode"} {
			if schema.HasField(c) {
				name = c
				break
			}
		}
		if name == "" {
			return "", nil
		}
	}
	idx := schema.FieldIndices(name)
	if len(idx) == 0 {
		return "", fmt.Errorf("%w: schema metadata %s names column %s, which the schema lacks; columns are: %s", ErrBadVideoColumn, EpisodeKey, errdefs.Quote(name), fieldList(schema))
	}
	switch t := schema.Field(idx[0]).Type; t.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64, arrow.STRING, arrow.LARGE_STRING:
		return name, nil
	default:
		return "", fmt.Errorf("%w: episode column %s has type %s; an episode column is an integer or string column", ErrBadVideoColumn, errdefs.Quote(name), typeString(t))
	}
}

// appendMedia tracks the media objects the video columns of one append
// name: each batch's new digests are checked to exist before the batch is
// written, and the commit's manifest gets those the table lacked.
type appendMedia struct {
	s      *Store
	p      versions.ProjectName
	schema *arrow.Schema
	cols   []int
	files  []int                           // file columns
	known  *versions.Manifest              // the table's manifest when the append started; nil for a new table
	found  map[string]versions.MediaObject // checked to exist, not in known
	named  map[string]bool                 // every digest the put names
}

func newAppendMedia(s *Store, p versions.ProjectName, schema *arrow.Schema, known *versions.Manifest) (*appendMedia, error) {
	cols, err := VideoColumns(schema)
	if err != nil {
		return nil, err
	}
	files, err := FileColumns(schema)
	if err != nil {
		return nil, err
	}
	return &appendMedia{s: s, p: p, schema: schema, cols: cols, files: files, known: known, found: map[string]versions.MediaObject{}, named: map[string]bool{}}, nil
}

// check reads the video columns of rec (rows firstRow… of the put): every
// row needs a media digest and a time, and every digest the table lacks
// must be uploaded.
func (a *appendMedia) check(ctx context.Context, rec arrow.RecordBatch, firstRow int64) error {
	var missing []string
	firstOf := map[string]int64{}
	// note records the digest sha that row names (where says which
	// column): checked once, and to be stat'ed unless the table has it.
	note := func(sha string, row int64, where string) error {
		if a.named[sha] {
			return nil
		}
		if err := versions.ValidateSHA256(sha); err != nil {
			return fmt.Errorf("%w: row %d: %s %s is not a sha256 digest (64 lowercase hex digits)", ErrBadVideoColumn, row, where, errdefs.Quote(sha))
		}
		// sha aliases rec's memory, which its release frees (a put's
		// body is unmapped then: internal/offheap); a.named and a.found
		// keep their digests until the commit, so they keep copies.
		sha = strings.Clone(sha)
		a.named[sha] = true
		if a.known == nil || !a.known.HasMedia(sha) {
			missing = append(missing, sha)
			firstOf[sha] = row
		}
		return nil
	}
	for _, c := range a.cols {
		name := a.schema.Field(c).Name
		col, ok := rec.Column(c).(*array.Struct)
		if !ok {
			return fmt.Errorf("%w: video column %s holds %s", ErrBadVideoColumn, errdefs.Quote(name), rec.Column(c).DataType())
		}
		media, ok1 := col.Field(0).(*array.String)
		times, ok2 := col.Field(1).(*array.Float64)
		if !ok1 || !ok2 {
			return fmt.Errorf("%w: video column %s holds %s", ErrBadVideoColumn, errdefs.Quote(name), col.DataType())
		}
		where := "video column " + errdefs.Quote(name) + ": media"
		for i := range col.Len() {
			row := firstRow + int64(i)
			switch {
			case col.IsNull(i):
				return fmt.Errorf("%w: row %d: video column %s is null; every row of a video column names its media and time", ErrBadVideoColumn, row, errdefs.Quote(name))
			case media.IsNull(i):
				return fmt.Errorf("%w: row %d: video column %s has no media; give the sha256 of an uploaded file", ErrBadVideoColumn, row, errdefs.Quote(name))
			case times.IsNull(i):
				return fmt.Errorf("%w: row %d: video column %s has no time; give the moment's presentation time in seconds", ErrBadVideoColumn, row, errdefs.Quote(name))
			}
			if err := note(media.Value(i), row, where); err != nil {
				return err
			}
		}
	}
	for _, c := range a.files {
		name := a.schema.Field(c).Name
		col, ok := rec.Column(c).(*array.String)
		if !ok {
			return fmt.Errorf("%w: file column %s holds %s", ErrBadVideoColumn, errdefs.Quote(name), rec.Column(c).DataType())
		}
		where := "file column " + errdefs.Quote(name) + ":"
		for i := range col.Len() {
			if col.IsNull(i) {
				continue // no file in this row
			}
			if err := note(col.Value(i), firstRow+int64(i), where); err != nil {
				return err
			}
		}
	}
	found, err := a.s.statAll(ctx, a.p, missing, firstOf)
	for _, o := range found {
		a.found[o.SHA256] = o
	}
	return err
}

// added lists the media objects of the put that old (the table's manifest
// at the head a commit attempt sits on; nil for a new table) lacks,
// checking those not checked yet (a concurrent commit may have changed
// the manifest since the append began).
func (a *appendMedia) added(ctx context.Context, old *versions.Manifest) ([]versions.MediaObject, error) {
	var out []versions.MediaObject
	var unchecked []string
	for sha := range a.named {
		if old != nil && old.HasMedia(sha) {
			continue
		}
		if o, ok := a.found[sha]; ok {
			out = append(out, o)
			continue
		}
		unchecked = append(unchecked, sha)
	}
	found, err := a.s.statAll(ctx, a.p, unchecked, nil)
	if err != nil {
		return nil, err
	}
	for _, o := range found {
		a.found[o.SHA256] = o
	}
	return append(out, found...), nil
}

// statAll checks that the media objects shas exist, a few at a time. An
// absent one fails with ErrMediaNotUploaded naming its first row (from
// firstOf, when known).
func (s *Store) statAll(ctx context.Context, p versions.ProjectName, shas []string, firstOf map[string]int64) ([]versions.MediaObject, error) {
	out := make([]versions.MediaObject, len(shas))
	errs := make([]error, len(shas))
	var g errgroup.Group
	g.SetLimit(mediaStatParallel)
	for i, sha := range shas {
		g.Go(func() error {
			o, err := s.StatMedia(ctx, p, sha)
			if errors.Is(err, errdefs.ErrNotFound) {
				if row, ok := firstOf[sha]; ok {
					err = fmt.Errorf("%w: row %d: media %s is not uploaded; upload it first (DoPut media)", ErrMediaNotUploaded, row, sha)
				} else {
					err = fmt.Errorf("%w: media %s is not uploaded; upload it first (DoPut media)", ErrMediaNotUploaded, sha)
				}
			}
			out[i], errs[i] = o, err
			return nil
		})
	}
	_ = g.Wait()
	// The first failure in row order, so the message does not depend on
	// which check finished first.
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}
