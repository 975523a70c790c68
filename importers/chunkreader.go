package importers

import (
	"context"
	"errors"
	"io"
)

// chunkReader streams a ReaderAt from its start in ranged reads of chunk
// bytes, one read ahead of the consumer (two in flight at most), so an S3
// object streams at about the rate of two parallel GETs.
type chunkReader struct {
	r      ReaderAt
	chunk  int64
	next   int64 // offset of the next chunk to request
	ahead  chan chunkResult
	cur    []byte
	err    error
	ctx    context.Context
	cancel context.CancelFunc
}

type chunkResult struct {
	buf []byte
	err error
}

func newChunkReader(ctx context.Context, r ReaderAt, chunk int64) *chunkReader {
	ctx, cancel := context.WithCancel(ctx)
	c := &chunkReader{r: r, chunk: chunk, ctx: ctx, cancel: cancel}
	c.ahead = c.fetch()
	return c
}

// fetch starts the read of the next chunk.
func (c *chunkReader) fetch() chan chunkResult {
	ch := make(chan chunkResult, 1)
	off := c.next
	size := c.r.Size()
	if off >= size {
		ch <- chunkResult{err: io.EOF}
		return ch
	}
	n := min(c.chunk, size-off)
	c.next = off + n
	go func() {
		buf := make([]byte, n)
		_, err := c.r.ReadAt(buf, off)
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF // the object shrank: it was listed larger
		}
		if err == nil {
			err = c.ctx.Err()
		}
		ch <- chunkResult{buf: buf, err: err}
	}()
	return ch
}

func (c *chunkReader) Read(p []byte) (int, error) {
	for len(c.cur) == 0 {
		if c.err != nil {
			return 0, c.err
		}
		res := <-c.ahead
		c.ahead = nil
		if res.err != nil {
			c.err = res.err
			return 0, c.err
		}
		c.cur = res.buf
		c.ahead = c.fetch()
	}
	n := copy(p, c.cur)
	c.cur = c.cur[n:]
	return n, nil
}

func (c *chunkReader) Close() error {
	c.cancel()
	if c.ahead != nil {
		<-c.ahead // let the read in flight finish before closing its reader
	}
	return c.r.Close()
}
