package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	arrowflight "github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"

	"google.golang.org/grpc"

	"github.com/weftdata/weft/errdefs"
)

// ActionStatMedia is the DoAction type that describes a media object.
const ActionStatMedia = "stat_media"

// MediaChunkBytes is how many bytes of a media file PutMedia sends in one
// message (as the Python client does).
const MediaChunkBytes = 4 << 20

// MediaChunkSchema is the schema of a media upload's stream: one
// non-null binary column whose values, in order, are the file's bytes.
var MediaChunkSchema = arrow.NewSchema([]arrow.Field{{Name: "chunk", Type: arrow.BinaryTypes.Binary}}, nil)

// MediaCommand is the CMD descriptor of a media upload (DoPut):
// {"media": {…}}.
type MediaCommand struct {
	Media *MediaPut `json:"media"`
}

// Validate checks that the command holds an upload.
func (c *MediaCommand) Validate() error {
	if c.Media == nil {
		return fmt.Errorf(`%w: field "media" is missing; a DoPut command descriptor uploads a media file, {"media": {"project","sha256","size","name"?}}; to append rows, send a path descriptor [project, branch, table]`, errdefs.ErrInvalidArgument)
	}
	return c.Media.Validate()
}

// MediaPut describes a media file (an MP4) being uploaded.
type MediaPut struct {
	Project string `json:"project"`
	// SHA256 is the lowercase hex SHA-256 of the whole file.
	SHA256 string `json:"sha256"`
	// Size is the file's length in bytes.
	Size *int64 `json:"size"`
	// Name is the client's file name, used only in messages.
	Name string `json:"name,omitempty"`
	// Kind is MediaKindVideo (the default when empty: an MP4 the server
	// indexes) or MediaKindFile (any bytes, not looked into: a checkpoint's
	// weights, named by a file column).
	Kind string `json:"kind,omitempty"`
}

// Media kinds of an upload (MediaPut.Kind).
const (
	MediaKindVideo = "video"
	MediaKindFile  = "file"
)

// ActionReadMedia is the DoAction type that streams a range of a media
// object's bytes: body ReadMediaRequest, results the bytes in order, each
// at most MediaChunkBytes.
const ActionReadMedia = "read_media"

// MaxReadMediaBytes bounds one read_media call's range; read a larger
// object in several calls.
const MaxReadMediaBytes = 256 << 20

// ReadMediaRequest is the body of read_media: Length bytes (at most
// MaxReadMediaBytes, fewer at the object's end) from Offset.
type ReadMediaRequest struct {
	Project string `json:"project"`
	SHA256  string `json:"sha256"`
	Offset  int64  `json:"offset"`
	Length  int64  `json:"length"`
}

// Validate checks the required fields and the range.
func (r *ReadMediaRequest) Validate() error {
	if err := required("project", r.Project); err != nil {
		return err
	}
	if err := required("sha256", r.SHA256); err != nil {
		return err
	}
	if r.Offset < 0 || r.Length < 1 || r.Length > MaxReadMediaBytes {
		return fmt.Errorf("%w: read_media range offset %d length %d; give offset ≥ 0 and 1 ≤ length ≤ %d", errdefs.ErrInvalidArgument, r.Offset, r.Length, MaxReadMediaBytes)
	}
	return nil
}

// Validate checks the required fields.
func (m *MediaPut) Validate() error {
	if err := required("project", m.Project); err != nil {
		return err
	}
	if err := required("sha256", m.SHA256); err != nil {
		return err
	}
	if m.Size == nil {
		return fmt.Errorf("%w: field %q is missing; give the file's size in bytes", errdefs.ErrInvalidArgument, "size")
	}
	if *m.Size < 0 {
		return fmt.Errorf("%w: field %q is %d; give the file's size in bytes", errdefs.ErrInvalidArgument, "size", *m.Size)
	}
	if m.Kind != "" && m.Kind != MediaKindVideo && m.Kind != MediaKindFile {
		return fmt.Errorf("%w: field %q is %q; give %q (an MP4, the default) or %q (any file)", errdefs.ErrInvalidArgument, "kind", m.Kind, MediaKindVideo, MediaKindFile)
	}
	return nil
}

// MediaPutResult is the app_metadata of the one PutResult of a media
// upload: the stored object and what the server's MP4 index found.
type MediaPutResult struct {
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
	// Stored is false when the object existed already: nothing new was
	// stored.
	Stored bool   `json:"stored"`
	Codec  string `json:"codec"`
	Width  int    `json:"width"`
	Height int    `json:"height"`
	// Frames is the video track's frame count; Duration its length in
	// seconds (the last frame's presentation time plus its duration).
	Frames   int     `json:"frames"`
	Duration float64 `json:"duration"`
}

// StatMediaRequest is the body of stat_media.
type StatMediaRequest struct {
	Project string `json:"project"`
	SHA256  string `json:"sha256"`
}

// Validate checks the required fields.
func (r *StatMediaRequest) Validate() error {
	if err := required("project", r.Project); err != nil {
		return err
	}
	return required("sha256", r.SHA256)
}

// StatMediaResult is the result of stat_media. Size is 0 when the object
// does not exist.
type StatMediaResult struct {
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
	Exists bool   `json:"exists"`
}

// StatMedia says whether project holds the media object with digest sha.
func (c *Client) StatMedia(ctx context.Context, project, sha string) (StatMediaResult, error) {
	var res StatMediaResult
	err := c.action(ctx, ActionStatMedia, StatMediaRequest{Project: project, SHA256: sha}, &res)
	return res, err
}

// PutMedia uploads the media file r (an MP4 of size bytes whose SHA-256 is
// sha, lowercase hex) to project, streaming it in MediaChunkBytes
// messages; name is the file's name, for messages. The server stores the
// file content-addressed, indexes it, and refuses (storing nothing) a
// file whose bytes do not match sha and size or that is not an MP4 it can
// index. An identical file uploaded before is not stored again
// (Stored false); the server may then answer before reading the stream.
// The object is invisible until an append names it in a video column.
func (c *Client) PutMedia(ctx context.Context, project, name string, r io.Reader, size int64, sha string) (MediaPutResult, error) {
	return c.putMedia(ctx, MediaPut{Project: project, SHA256: sha, Size: &size, Name: name, Kind: MediaKindVideo}, r)
}

// PutFile uploads any file r (size bytes whose SHA-256 is sha, lowercase
// hex) to project as a media object of kind MediaKindFile: streamed in
// MediaChunkBytes messages, stored content-addressed, not looked into
// (the result's video fields are zero). It is invisible until an append
// names it in a file column (tables.KindFile, e.g. a checkpoint's
// weights), and gc deletes it after its grace period if no commit does.
// Read it back with ReadMedia.
func (c *Client) PutFile(ctx context.Context, project, name string, r io.Reader, size int64, sha string) (MediaPutResult, error) {
	return c.putMedia(ctx, MediaPut{Project: project, SHA256: sha, Size: &size, Name: name, Kind: MediaKindFile}, r)
}

func (c *Client) putMedia(ctx context.Context, m MediaPut, r io.Reader) (MediaPutResult, error) {
	name := m.Name
	cmd, err := json.Marshal(MediaCommand{Media: &m})
	if err != nil {
		return MediaPutResult{}, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := c.fc.DoPut(ctx)
	if err != nil {
		return MediaPutResult{}, fromWire(err)
	}
	w := arrowflight.NewRecordWriter(stream, ipc.WithSchema(MediaChunkSchema), ipc.WithAllocator(c.mem))
	w.SetFlightDescriptor(&arrowflight.FlightDescriptor{Type: arrowflight.DescriptorCMD, Cmd: cmd})
	buf := make([]byte, MediaChunkBytes)
	b := array.NewBinaryBuilder(c.mem, arrow.BinaryTypes.Binary)
	defer b.Release()
	var werr, rerr error
	for werr == nil {
		n, err := io.ReadFull(r, buf)
		if n > 0 {
			b.Append(buf[:n])
			col := b.NewArray()
			rec := array.NewRecordBatch(MediaChunkSchema, []arrow.Array{col}, 1)
			col.Release()
			werr = w.Write(rec)
			rec.Release()
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			break
		}
		if err != nil {
			rerr = err
			break
		}
	}
	if rerr != nil {
		cancel() // an abandoned upload stores nothing
		_ = w.Close()
		return MediaPutResult{}, fmt.Errorf("put media %s: read the file: %w", name, rerr)
	}
	var res MediaPutResult
	if err := finishPut(stream, w, werr, "media put", &res); err != nil {
		return MediaPutResult{}, err
	}
	return res, nil
}

// ReadMedia returns the bytes [offset, offset+length) of the media object
// with digest sha in project (fewer at the object's end; length < 0 reads
// to the end), as a reader that streams them: it calls read_media for at
// most MaxReadMediaBytes at a time as it is read, and holds one result
// (at most MediaChunkBytes) in memory. Close it to stop early. A missing
// object fails the first Read with an error wrapping errdefs.ErrNotFound.
func (c *Client) ReadMedia(ctx context.Context, project, sha string, offset, length int64) (io.ReadCloser, error) {
	if offset < 0 {
		return nil, fmt.Errorf("%w: read media %s: offset %d; give offset ≥ 0", errdefs.ErrInvalidArgument, sha, offset)
	}
	if err := required("project", project); err != nil {
		return nil, err
	}
	if err := required("sha256", sha); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	return &mediaReader{c: c, ctx: ctx, cancel: cancel, project: project, sha: sha, off: offset, left: length, step: MaxReadMediaBytes}, nil
}

// readMediaSlack is the room a read_media result message needs beyond
// its bytes (protobuf framing).
const readMediaSlack = 64 << 10

// mediaReader is ReadMedia's reader: one read_media call at a time.
type mediaReader struct {
	c       *Client
	ctx     context.Context
	cancel  context.CancelFunc
	project string
	sha     string
	off     int64 // the object offset of the next byte to request
	left    int64 // bytes still to request; < 0: to the end
	step    int64 // bytes per call (MaxReadMediaBytes)
	stream  arrowflight.FlightService_DoActionClient
	asked   int64 // bytes the current call asked for
	got     int64 // bytes the current call returned so far
	buf     []byte
	err     error
}

func (m *mediaReader) Read(p []byte) (int, error) {
	for len(m.buf) == 0 {
		if m.err != nil {
			return 0, m.err
		}
		m.next()
	}
	n := copy(p, m.buf)
	m.buf = m.buf[n:]
	return n, nil
}

// next fills buf with the next result, starting a call when none is open,
// or sets err (io.EOF at the range's or the object's end).
func (m *mediaReader) next() {
	if m.stream == nil {
		if m.left == 0 {
			m.err = io.EOF
			return
		}
		n := m.step
		if m.left > 0 {
			n = min(n, m.left)
		}
		body, err := json.Marshal(ReadMediaRequest{Project: m.project, SHA256: m.sha, Offset: m.off, Length: n})
		if err != nil {
			m.err = err
			return
		}
		// A result is MediaChunkBytes of bytes plus its framing: more than
		// gRPC's default 4 MiB receive limit.
		s, err := m.c.fc.DoAction(m.ctx, &arrowflight.Action{Type: ActionReadMedia, Body: body},
			grpc.MaxCallRecvMsgSize(MediaChunkBytes+readMediaSlack))
		if err != nil {
			m.err = fromWire(err)
			return
		}
		m.stream, m.asked, m.got = s, n, 0
	}
	r, err := m.stream.Recv()
	switch {
	case errors.Is(err, io.EOF):
		m.stream = nil
		m.off += m.got
		if m.left > 0 {
			m.left -= m.got
		}
		if m.got < m.asked {
			m.left = 0 // the object ended inside this call's range
		}
	case err != nil:
		m.err = fromWire(err)
	default:
		if m.got+int64(len(r.Body)) > m.asked {
			m.err = fmt.Errorf("%w: read_media answered more than the %d bytes asked", ErrBadResponse, m.asked)
			return
		}
		m.got += int64(len(r.Body))
		m.buf = r.Body
	}
}

// Close stops the read; it always returns nil.
func (m *mediaReader) Close() error {
	m.cancel()
	if m.err == nil {
		m.err = fmt.Errorf("read media %s: %w", m.sha, ErrReaderClosed)
	}
	m.buf = nil
	return nil
}
