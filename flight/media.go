package flight

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	arrowflight "github.com/apache/arrow-go/v18/arrow/flight"

	"github.com/weftdata/weft/auth"
	"github.com/weftdata/weft/client"
	"github.com/weftdata/weft/errdefs"
	"github.com/weftdata/weft/tables"
	"github.com/weftdata/weft/versions"
	"github.com/weftdata/weft/video"
)

// putMedia serves a DoPut whose CMD descriptor is {"media": {…}}: it
// streams the chunks into the bucket (tables.PutMedia), indexes the
// object with video.Read, and deletes and refuses an object it cannot
// index. It answers one PutResult with client.MediaPutResult. The caller
// holds the put slot and lease; ctx is the put's (its timeout).
func (s *Service) putMedia(ctx context.Context, stream arrowflight.FlightService_DoPutServer, r *putStream, cmd []byte) error {
	var c client.MediaCommand
	if err := decode(ErrBadRequest, "DoPut media", cmd, &c); err != nil {
		return err
	}
	m := c.Media
	p, err := parseProject(m.Project)
	if err != nil {
		return err
	}
	if err := allow(ctx, string(p), auth.Write); err != nil {
		return err
	}
	if err := versions.ValidateSHA256(m.SHA256); err != nil {
		return fmt.Errorf("DoPut media: %w", err)
	}
	if err := checkChunkSchema(r.Schema()); err != nil {
		return err
	}
	name := m.Name
	if name == "" {
		name = m.SHA256
	}
	cr := &chunkReader{r: r}
	res, err := s.tables.PutMedia(ctx, p, cr, tables.MediaInfo{SHA256: m.SHA256, Size: *m.Size, Name: m.Name})
	if cr.err != nil {
		return cr.err // the stream's fault explains the failed put
	}
	if err != nil {
		return err
	}
	if !res.Stored {
		// The object exists: read (and drop) the rest of the client's
		// chunks before answering, as clients that write the whole file
		// before reading the result expect (pyarrow's do_put does).
		if _, err := io.Copy(io.Discard, cr); err != nil {
			return err
		}
		if cr.err != nil {
			return cr.err
		}
	}
	if m.Kind == client.MediaKindFile {
		// Any bytes: nothing to index. A file column names it in a commit.
		meta, err := json.Marshal(client.MediaPutResult{SHA256: m.SHA256, Size: res.Object.Size, Stored: res.Stored})
		if err != nil {
			return err
		}
		s.log.DebugContext(ctx, "file stored", "project", p, "sha256", m.SHA256, "size", res.Object.Size, "stored", res.Stored)
		return stream.Send(&arrowflight.PutResult{AppMetadata: meta})
	}
	idx, err := s.indexMedia(ctx, p, m.SHA256)
	if err != nil {
		if res.Stored {
			// Nothing else can name it yet: no append could check it
			// before this upload answers.
			if derr := s.tables.DeleteMedia(context.WithoutCancel(ctx), p, m.SHA256); derr != nil {
				s.log.WarnContext(ctx, "could not delete a refused media upload", "project", p, "sha256", m.SHA256, "err", derr)
			}
		}
		if errors.Is(err, errdefs.ErrInvalidArgument) {
			return fmt.Errorf("%w: media %s (sha256 %s) is not a video this server can index: %w; nothing was stored. Re-encode or remux it (e.g. ffmpeg -i in.mp4 -c:v libx264 out.mp4) and upload again", ErrBadMedia, errdefs.Quote(name), m.SHA256, err)
		}
		return fmt.Errorf("index media %s: %w", name, err)
	}
	out := client.MediaPutResult{SHA256: m.SHA256, Size: res.Object.Size, Stored: res.Stored,
		Codec: string(idx.Config.Codec), Width: idx.Config.Width, Height: idx.Config.Height, Frames: idx.Len(), Duration: duration(idx)}
	meta, err := json.Marshal(out)
	if err != nil {
		return err
	}
	s.log.DebugContext(ctx, "media stored", "project", p, "sha256", m.SHA256, "size", res.Object.Size, "stored", res.Stored)
	return stream.Send(&arrowflight.PutResult{AppMetadata: meta})
}

// indexMedia reads the MP4 index of a stored media object.
func (s *Service) indexMedia(ctx context.Context, p versions.ProjectName, sha string) (*video.Index, error) {
	r, size, err := s.tables.OpenMedia(ctx, p, sha)
	if err != nil {
		return nil, err
	}
	if c, ok := r.(io.Closer); ok {
		defer c.Close()
	}
	return video.Read(ctx, r, size)
}

// duration is the presentation time of the last frame plus the gap before
// it (one frame at a constant rate), in seconds.
func duration(x *video.Index) float64 {
	n := x.Len()
	if n == 0 {
		return 0
	}
	last := x.FrameTime(n - 1)
	if n > 1 {
		last += last - x.FrameTime(n-2)
	}
	return last.Seconds()
}

// checkChunkSchema accepts the media upload schema {chunk: binary}.
func checkChunkSchema(schema *arrow.Schema) error {
	if schema.NumFields() != 1 || schema.Field(0).Name != "chunk" || !arrow.TypeEqual(schema.Field(0).Type, arrow.BinaryTypes.Binary) {
		return fmt.Errorf("%w: a media upload's batches have the schema {chunk: binary not null} (the file's bytes in order), not %s", ErrBadRequest, schema)
	}
	return nil
}

// chunkReader is the bytes of a media upload's chunk column, in order. A
// batch is released (by the Flight reader) when the next one is read.
type chunkReader struct {
	r   *putStream
	col *array.Binary
	row int
	buf []byte
	err error // a stream fault, kept to report it rather than the bucket's wrap
}

func (c *chunkReader) Read(p []byte) (int, error) {
	for len(c.buf) == 0 {
		if c.col != nil && c.row < c.col.Len() {
			if c.col.IsNull(c.row) {
				c.err = fmt.Errorf("%w: a media upload's chunk is null; send the file's bytes", ErrBadRequest)
				return 0, c.err
			}
			c.buf = c.col.Value(c.row)
			c.row++
			continue
		}
		c.col = nil
		if !c.r.Next() {
			if err := c.r.Err(); err != nil {
				c.err = putStreamError(err)
				return 0, c.err
			}
			return 0, io.EOF
		}
		c.col, _ = c.r.RecordBatch().Column(0).(*array.Binary)
		c.row = 0
	}
	n := copy(p, c.buf)
	c.buf = c.buf[n:]
	return n, nil
}

func (s *Service) statMedia(ctx context.Context, body []byte) (any, error) {
	var req client.StatMediaRequest
	if err := decode(ErrBadRequest, client.ActionStatMedia, body, &req); err != nil {
		return nil, err
	}
	p, err := parseProject(req.Project)
	if err != nil {
		return nil, err
	}
	if err := allow(ctx, string(p), auth.Read); err != nil {
		return nil, err
	}
	if err := versions.ValidateSHA256(req.SHA256); err != nil {
		return nil, fmt.Errorf("%s: %w", client.ActionStatMedia, err)
	}
	if _, err := s.v.Head(ctx, p, versions.MainBranch); err != nil {
		return nil, err
	}
	o, err := s.tables.StatMedia(ctx, p, req.SHA256)
	if errors.Is(err, errdefs.ErrNotFound) {
		return client.StatMediaResult{SHA256: req.SHA256}, nil
	}
	if err != nil {
		return nil, err
	}
	return client.StatMediaResult{SHA256: o.SHA256, Size: o.Size, Exists: true}, nil
}

// readMediaAction is the read_media action: readMedia's results sent on
// the action's stream.
func (s *Service) readMediaAction(ctx context.Context, body []byte, stream arrowflight.FlightService_DoActionServer) error {
	return s.readMedia(ctx, body, func(b []byte) error { return stream.Send(&arrowflight.Result{Body: b}) })
}

// readMedia serves read_media: the bytes of [offset, offset+length) of a
// media object (fewer at its end), read with ranged reads and sent in
// results of at most client.MediaChunkBytes, so neither side holds the
// range whole. Needs read on the project.
func (s *Service) readMedia(ctx context.Context, body []byte, send func([]byte) error) error {
	var req client.ReadMediaRequest
	if err := decode(ErrBadRequest, client.ActionReadMedia, body, &req); err != nil {
		return err
	}
	p, err := parseProject(req.Project)
	if err != nil {
		return err
	}
	if err := allow(ctx, string(p), auth.Read); err != nil {
		return err
	}
	r, size, err := s.tables.OpenMedia(ctx, p, req.SHA256)
	if err != nil {
		return err
	}
	if c, ok := r.(io.Closer); ok {
		defer c.Close()
	}
	end := min(req.Offset+req.Length, size)
	buf := make([]byte, min(int64(client.MediaChunkBytes), max(end-req.Offset, 0)))
	for off := req.Offset; off < end; {
		n := min(int64(len(buf)), end-off)
		if _, err := r.ReadAt(buf[:n], off); err != nil && !(errors.Is(err, io.EOF) && off+n == end) {
			return fmt.Errorf("read media %s at %d: %w", req.SHA256, off, err)
		}
		if err := send(buf[:n]); err != nil {
			return err
		}
		off += n
	}
	return nil
}
