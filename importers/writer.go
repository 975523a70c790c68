package importers

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/weftdata/weft/errdefs"
	"github.com/weftdata/weft/tables"
	"github.com/weftdata/weft/versions"
)

// Writer is the sink a Format writes into: tables of record batches and
// media objects, all committed together by the Importer at the end, or
// nothing. Its methods may be called from several goroutines, but each
// TableWriter from one at a time.
type Writer struct {
	ts        *tables.Store
	p         versions.ProjectName
	b         versions.BranchName
	base      versions.TableName
	fileBytes int64
	mem       memory.Allocator
	prog      *tracker
	check     func(ctx context.Context, p versions.ProjectName, t versions.TableName, schema *arrow.Schema) (tables.BatchCheck, error)

	mu struct {
		sync.Mutex
		tables        map[versions.TableName]*TableWriter
		order         []versions.TableName
		media         []versions.MediaObject
		sourceVersion string
	}
}

func newWriter(ts *tables.Store, p versions.ProjectName, b versions.BranchName, base versions.TableName, fileBytes int64, mem memory.Allocator, prog *tracker) *Writer {
	w := &Writer{ts: ts, p: p, b: b, base: base, fileBytes: fileBytes, mem: mem, prog: prog}
	w.mu.tables = map[versions.TableName]*TableWriter{}
	return w
}

// BaseTable is the table the user named: a format writing one table uses
// it; one writing several names them BaseTable, BaseTable.SUFFIX, ….
func (w *Writer) BaseTable() versions.TableName { return w.base }

// Allocator is the allocator for the batches a format builds.
func (w *Writer) Allocator() memory.Allocator { return w.mem }

// SetSourceVersion records the dataset's format version (e.g. the MDS
// index version) in the commit record.
func (w *Writer) SetSourceVersion(v string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.mu.sourceVersion = v
}

// Plan tells the progress display how many files and bytes the import
// will read (for the ETA); it may be called again to add more.
func (w *Writer) Plan(files, bytes int64) {
	w.prog.filesTotal.Add(files)
	w.prog.bytesTotal.Add(bytes)
}

// AddBytes counts n source bytes read.
func (w *Writer) AddBytes(n int64) { w.prog.bytes.Add(n) }

// FileDone counts one source file read to its end.
func (w *Writer) FileDone() { w.prog.files.Add(1) }

// CountingReader wraps r so that every byte read from it counts toward
// the progress (AddBytes).
func (w *Writer) CountingReader(r io.Reader) io.Reader { return &progressReader{r: r, w: w} }

type progressReader struct {
	r io.Reader
	w *Writer
}

func (p *progressReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	p.w.AddBytes(int64(n))
	return n, err
}

// PutMedia stores a media object (an MP4) in the project now; the commit
// names it (tables.Store.PutMedia). Rows of a video column name it by
// SHA256.
func (w *Writer) PutMedia(ctx context.Context, r io.Reader, info tables.MediaInfo) (versions.MediaObject, error) {
	res, err := w.ts.PutMedia(ctx, w.p, r, info)
	if err != nil {
		return versions.MediaObject{}, err
	}
	w.mu.Lock()
	w.mu.media = append(w.mu.media, res.Object)
	w.mu.Unlock()
	return res.Object, nil
}

// Table starts table t with schema: every batch written to the returned
// TableWriter must have that schema. A table may be started once per
// import. If the branch has the table already, the import appends to it
// and the schema must equal the table's.
func (w *Writer) Table(t versions.TableName, schema *arrow.Schema) (*TableWriter, error) {
	if _, err := versions.ParseTableName(string(t)); err != nil {
		return nil, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.mu.tables[t]; ok {
		return nil, fmt.Errorf("%w: the import writes table %s twice", errdefs.ErrInvalidArgument, t)
	}
	tw := &TableWriter{w: w, t: t, schema: schema}
	w.mu.tables[t] = tw
	w.mu.order = append(w.mu.order, t)
	return tw, nil
}

// finish ends every table's current file and returns all files written,
// table by table in the order they were started.
func (w *Writer) finish() ([]*tables.PendingFile, map[versions.TableName]int64, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var files []*tables.PendingFile
	rows := map[versions.TableName]int64{}
	var errs []error
	for _, t := range w.mu.order {
		tw := w.mu.tables[t]
		errs = append(errs, tw.flush())
		files = append(files, tw.files...)
		rows[t] = tw.rows
	}
	return files, rows, errors.Join(errs...)
}

// abort stops every table's file and deletes all files written.
func (w *Writer) abort(ctx context.Context) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, t := range w.mu.order {
		tw := w.mu.tables[t]
		tw.stop()
		w.ts.DiscardFiles(ctx, w.p, tw.files)
		tw.files = nil
	}
}

func (w *Writer) sourceVersion() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.mu.sourceVersion
}

// TableWriter streams one table's batches into data files.
type TableWriter struct {
	w       *Writer
	t       versions.TableName
	schema  *arrow.Schema
	rows    int64
	files   []*tables.PendingFile
	cur     *fileRun   // the data file being written; nil between files
	closing []*fileRun // ended files still finishing, oldest first
}

// Name is the table's name.
func (tw *TableWriter) Name() versions.TableName { return tw.t }

// Schema is the table's schema.
func (tw *TableWriter) Schema() *arrow.Schema { return tw.schema }

// Rows is how many rows were written so far.
func (tw *TableWriter) Rows() int64 { return tw.rows }

// Write appends rec to the table: it blocks until the data file's
// encoder has taken it (so a slow bucket slows the format down, and at
// most a batch or two per table is in memory). It does not take rec's
// reference; the caller still releases it. An empty batch is ignored.
func (tw *TableWriter) Write(ctx context.Context, rec arrow.RecordBatch) error {
	if rec.NumRows() == 0 {
		return nil
	}
	if !rec.Schema().Equal(tw.schema) {
		return fmt.Errorf("%w: table %s: a batch's schema %s differs from the table's %s", errdefs.ErrInvalidArgument, tw.t, rec.Schema(), tw.schema)
	}
	if tw.cur == nil {
		tw.cur = tw.startFile(ctx)
	}
	run := tw.cur
	rec.Retain()
	select {
	case run.ch <- rec:
	case <-run.done:
		rec.Release()
		tw.cur = nil
		if run.err != nil {
			return run.err
		}
		return fmt.Errorf("table %s: the data file writer stopped early", tw.t)
	case <-ctx.Done():
		rec.Release()
		return ctx.Err()
	}
	tw.rows += rec.NumRows()
	tw.w.prog.rows.Add(rec.NumRows())
	run.bytes += tables.RecordBytes(rec)
	if run.bytes >= tw.w.fileBytes {
		return tw.endFile()
	}
	return nil
}

// fileRun is one data file being written by tables.Store.WriteFile in
// its own goroutine, fed batch by batch through ch.
type fileRun struct {
	ch     chan arrow.RecordBatch
	done   chan struct{}
	cancel context.CancelFunc
	bytes  int64
	res    *tables.PendingFile
	err    error
}

func (tw *TableWriter) startFile(ctx context.Context) *fileRun {
	ctx, cancel := context.WithCancel(ctx)
	run := &fileRun{ch: make(chan arrow.RecordBatch), done: make(chan struct{}), cancel: cancel}
	rr := &chanReader{ctx: ctx, schema: tw.schema, ch: run.ch}
	go func() {
		defer close(run.done)
		defer func() {
			// A panic on imported data (arrow-go's encoder) fails this
			// import, not the server (flight recovers only the handler's
			// own goroutine).
			if r := recover(); r != nil {
				run.err = fmt.Errorf("%w: writing a data file of %s panicked: %v", ErrBadInput, tw.t, r)
			}
		}()
		defer rr.release()
		// Imported media (JPEG, PNG, audio) is compressed already.
		wo := tables.WriteOptions{SkipIncompressible: true}
		if tw.w.check != nil {
			wo.Check, run.err = tw.w.check(ctx, tw.w.p, tw.t, tw.schema)
		}
		if run.err == nil {
			run.res, run.err = tw.w.ts.WriteFile(ctx, tw.w.p, tw.w.b, tw.t, rr, wo)
		}
	}()
	return run
}

// maxClosing bounds the data files of a table that finish (their
// buffered row group encoded, their upload or fsync completed) in the
// background while the next file is written.
const maxClosing = 1

// endFile closes the current data file. It finishes in the background
// while the format goes on into the next file; once more than maxClosing
// are finishing, endFile waits for the oldest.
func (tw *TableWriter) endFile() error {
	if run := tw.cur; run != nil {
		tw.cur = nil
		close(run.ch)
		tw.closing = append(tw.closing, run)
	}
	for len(tw.closing) > maxClosing {
		if err := tw.collect(); err != nil {
			return err
		}
	}
	return nil
}

// collect waits for the oldest closing file and keeps it for the commit
// (files stay in the order they were started).
func (tw *TableWriter) collect() error {
	run := tw.closing[0]
	tw.closing = tw.closing[1:]
	<-run.done
	run.cancel()
	if run.err != nil {
		return fmt.Errorf("table %s: %w", tw.t, run.err)
	}
	tw.files = append(tw.files, run.res)
	return nil
}

// flush ends the current file and waits for every closing one.
func (tw *TableWriter) flush() error {
	err := tw.endFile()
	for err == nil && len(tw.closing) > 0 {
		err = tw.collect()
	}
	return err
}

// stop cancels the current data file and every closing one, and keeps
// those that were stored anyway (for the caller to discard).
func (tw *TableWriter) stop() {
	runs := tw.closing
	if tw.cur != nil {
		runs = append(runs, tw.cur)
	}
	tw.cur, tw.closing = nil, nil
	for _, run := range runs {
		run.cancel()
		<-run.done
		if run.res != nil {
			tw.files = append(tw.files, run.res)
		}
	}
}

// chanReader is an array.RecordReader over the batches sent on ch, ending
// when ch is closed or ctx ends.
type chanReader struct {
	ctx    context.Context
	schema *arrow.Schema
	ch     chan arrow.RecordBatch
	cur    arrow.RecordBatch
	err    error
}

func (r *chanReader) Retain()               {}
func (r *chanReader) Release()              {}
func (r *chanReader) Schema() *arrow.Schema { return r.schema }
func (r *chanReader) Err() error            { return r.err }

func (r *chanReader) RecordBatch() arrow.RecordBatch { return r.cur }

// Record is RecordBatch (array.RecordReader's deprecated name).
func (r *chanReader) Record() arrow.RecordBatch { return r.cur }

func (r *chanReader) Next() bool {
	r.release()
	if r.err != nil {
		return false
	}
	select {
	case rec, ok := <-r.ch:
		if !ok {
			return false
		}
		r.cur = rec
		return true
	case <-r.ctx.Done():
		r.err = r.ctx.Err()
		return false
	}
}

func (r *chanReader) release() {
	if r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
}

// tableNames lists the tables written, sorted.
func tableNames(rows map[versions.TableName]int64) []string {
	out := make([]string, 0, len(rows))
	for t := range rows {
		out = append(out, string(t))
	}
	slices.Sort(out)
	return out
}
