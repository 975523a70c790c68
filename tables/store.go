package tables

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/weftdata/weft/bucket"
	"github.com/weftdata/weft/errdefs"
	"github.com/weftdata/weft/internal/cache"
	"github.com/weftdata/weft/internal/membudget"
	"github.com/weftdata/weft/internal/offheap"
	"github.com/weftdata/weft/versions"
)

// Options configure a Store.
type Options struct {
	// RowGroupRows and RowGroupBytes bound each row group of written files:
	// a row group ends when either is reached (bytes counted as the Arrow
	// in-memory size of its rows, before encoding and compression).
	RowGroupRows  int64
	RowGroupBytes int64
	// CompressionLevel for zstd; 0 is the library default.
	CompressionLevel int
	// FooterCacheBytes bounds the cache of data files' footers and page
	// indexes (parsed footers and raw tail bytes), shared by every read.
	FooterCacheBytes int64
	// MatchCacheBytes bounds the cache of filters' matching rows
	// (Store.Matches), per table version and filter.
	MatchCacheBytes int64
	// Allocator for Arrow memory; nil means memory.DefaultAllocator.
	Allocator memory.Allocator
	// Logger; nil discards. A panic of the Parquet reader on a data file
	// (recovered: the read fails as Corrupt) is logged here with its stack.
	Logger *slog.Logger
	// Budget, if set, is the process memory budget the footer cache leases
	// from (and gives back under pressure); nil: FooterCacheBytes only.
	// Block reads and scans lease from it what they decode beyond a small
	// allowance, before they allocate it (meter.go): a read that would
	// pass it fails with its ResourceExhausted error. Without it, reads
	// are not bounded.
	Budget *membudget.Budget
}

// DefaultOptions: row groups of at most 65,536 rows and 128 MiB, 64 MiB
// of cached footers.
func DefaultOptions() Options {
	return Options{RowGroupRows: 65536, RowGroupBytes: 128 << 20, FooterCacheBytes: 64 << 20, MatchCacheBytes: 64 << 20}
}

// Validate reports an unusable option.
func (o Options) Validate() error {
	if o.RowGroupRows < 1 || o.RowGroupBytes < 1 || o.FooterCacheBytes < 0 || o.MatchCacheBytes < 0 {
		return fmt.Errorf("%w: tables options need RowGroupRows >= 1, RowGroupBytes >= 1, FooterCacheBytes >= 0, MatchCacheBytes >= 0", versions.ErrInvalid)
	}
	return nil
}

// Store appends to and reads tables kept in a versions.Store.
type Store struct {
	v    *versions.Store
	b    bucket.Bucket
	opts Options
	mem  memory.Allocator
	// writeMem is the Parquet writer's: its buffered row group (a
	// RowGroupBytes buffer that grows by doubling) and pages are mapped
	// off the Go heap and unmapped when the row group is written, so that
	// a put leaves no garbage of its size (internal/offheap).
	writeMem *offheap.Allocator
	log      *slog.Logger

	footers *cache.Cache[string, *fileMeta] // by data file key
	matches *cache.Cache[string, *Matches]  // by version and filter text
}

// New returns a Store writing data files next to the project histories of v.
func New(v *versions.Store, opts Options) (*Store, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	s := &Store{v: v, b: v.Bucket(), opts: opts, mem: opts.Allocator, log: opts.Logger}
	if s.mem == nil {
		s.mem = memory.DefaultAllocator
	}
	s.writeMem = offheap.New(s.mem, 0)
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.footers = cache.New[string, *fileMeta](opts.FooterCacheBytes, nil)
	s.footers.UseBudget(opts.Budget)
	s.matches = cache.New[string, *Matches](opts.MatchCacheBytes, nil)
	s.matches.UseBudget(opts.Budget)
	return s, nil
}

// WriteAllocator is the allocator of the write path's large buffers, off
// the Go heap (internal/offheap): the Parquet writer's, and what a caller
// may allocate the batches it appends from when nothing keeps their
// values past their release (flight's DoPut, for its message bodies).
func (s *Store) WriteAllocator() *offheap.Allocator { return s.writeMem }

// Versions is the history store the tables live in.
func (s *Store) Versions() *versions.Store { return s.v }

// AppendResult describes a committed append.
type AppendResult struct {
	Commit *versions.Commit
	Rows   int64
	File   versions.DataFile // zero when Replayed
	// Replayed: the append's idempotency key had already committed; Commit
	// and Rows are that first commit's, and nothing was written.
	Replayed bool
}

// AppendOptions are the optional parts of an append.
type AppendOptions struct {
	// Message is the commit message; empty means "append N rows to TABLE".
	Message string
	// IdempotencyKey, if set, makes the append safe to retry: the first
	// append with the key that commits is the only one, and any other
	// append with it (a retry after a lost acknowledgement, or one running
	// concurrently) returns that commit and its row count with Replayed
	// set, without committing. A retry that finds the key committed before
	// it starts writes nothing at all. The key is scoped to the project and
	// bound to the branch and table of its first use (another use is
	// refused, versions.ErrIdempotencyKeyReused). See
	// versions.CommitIdempotent.
	IdempotencyKey versions.IdempotencyKey
	// Check, if set, is called for every batch, in order, before the batch
	// is written, with the table's schema and the batch's first row within
	// the put. An error fails the append; nothing is stored.
	Check BatchCheck
	// CheckFor, if set, makes a check (nil: none) from the schema the file
	// is written under: the table's when the branch has the table (its
	// field metadata, e.g. a video column's weft.kind, which an append's
	// schema may lack), else the append's. It runs after Check.
	CheckFor func(schema *arrow.Schema) (BatchCheck, error)
}

// Append is AppendWith with only a commit message.
func (s *Store) Append(ctx context.Context, p versions.ProjectName, b versions.BranchName, t versions.TableName, recs array.RecordReader, message string) (*AppendResult, error) {
	return s.AppendWith(ctx, p, b, t, recs, AppendOptions{Message: message})
}

// AppendWith writes every batch of recs to table t on branch b of project p as
// one new data file and commits it. The table is created on the first
// append, which defines its schema. It reads recs to the end but does not
// release it.
//
// Nothing is committed unless every batch was written and stored: an error
// or a cancelled ctx leaves the branch where it was. An append with no rows
// is rejected (ErrEmptyAppend), as is one whose schema differs from the
// table's (ErrSchemaMismatch, naming the first differing column).
//
// It is WriteFile followed by CommitFiles of that one file (with the
// idempotency check around them when opts has a key).
func (s *Store) AppendWith(ctx context.Context, p versions.ProjectName, b versions.BranchName, t versions.TableName, recs array.RecordReader, opts AppendOptions) (*AppendResult, error) {
	if _, err := versions.ParseTableName(string(t)); err != nil {
		return nil, err
	}
	idem := versions.Idempotency{Key: opts.IdempotencyKey, Table: t}
	if idem.Key != "" {
		if _, err := versions.ParseIdempotencyKey(string(idem.Key)); err != nil {
			return nil, err
		}
		// A retry whose first attempt committed writes nothing.
		prev, err := s.v.FindIdempotent(ctx, p, b, idem)
		if err != nil {
			return nil, err
		}
		if prev != nil {
			return &AppendResult{Commit: prev.Commit, Rows: prev.Rows, Replayed: true}, nil
		}
	}
	pf, err := s.WriteFile(ctx, p, b, t, recs, WriteOptions{Check: opts.Check, CheckFor: opts.CheckFor})
	if err != nil {
		return nil, err
	}
	file := pf.File
	message := opts.Message
	if message == "" {
		message = fmt.Sprintf("append %d rows to %s", file.Rows, t)
	}
	change := s.filesChange(p, []*PendingFile{pf})
	if idem.Key == "" {
		commit, err := s.v.Commit(ctx, p, b, message, change)
		if err != nil {
			return nil, err
		}
		return &AppendResult{Commit: commit, Rows: file.Rows, File: file}, nil
	}
	idem.Rows = file.Rows
	res, err := s.v.CommitIdempotent(ctx, p, b, message, change, idem)
	if err != nil {
		return nil, err
	}
	if res.Replayed {
		// A concurrent retry committed first: our file is named by no
		// commit. Best effort; gc removes it otherwise.
		s.DiscardFiles(ctx, p, []*PendingFile{pf})
		return &AppendResult{Commit: res.Commit, Rows: res.Rows, Replayed: true}, nil
	}
	return &AppendResult{Commit: res.Commit, Rows: file.Rows, File: file}, nil
}

// WriteOptions are the optional parts of WriteFile.
type WriteOptions struct {
	// Check, if set, is called for every batch, in order, before the batch
	// is written (see AppendOptions.Check).
	Check BatchCheck
	// CheckFor, if set, makes a second check from the schema the file is
	// written under (see AppendOptions.CheckFor).
	CheckFor func(schema *arrow.Schema) (BatchCheck, error)
	// SkipIncompressible stores uncompressed each binary column (top
	// level or in a struct) whose values in the first batch zstd does not
	// shrink by 10 % (JPEG, PNG, MP4, random bytes): compressing them
	// again costs a core per ~150 MB/s for nothing. Readers see the codec
	// per column chunk, as Parquet allows; nothing else changes.
	SkipIncompressible bool
}

// PendingFile is a data file that WriteFile stored and no commit names
// yet: invisible to every reader until CommitFiles commits it, and
// deleted by gc (after its grace period) if that never happens.
type PendingFile struct {
	// Table is the table the file belongs to; File its path, rows and
	// row groups.
	Table versions.TableName
	File  versions.DataFile

	schema      *arrow.Schema // the table's schema (the branch's, if it had the table)
	schemaBytes []byte
	media       *appendMedia // the media objects the file's video columns name
}

// Schema is the table schema the file was written under.
func (f *PendingFile) Schema() *arrow.Schema { return f.schema }

// WriteFile writes every batch of recs as one new data file of table t in
// project p and returns it without committing it. The schema is checked
// against table t at the head of branch b now (a new table takes recs'
// schema) and again by CommitFiles. It reads recs to the end but does not
// release it. On error nothing is left behind but, at worst, an orphan
// data file for gc. An empty recs fails with ErrEmptyAppend.
func (s *Store) WriteFile(ctx context.Context, p versions.ProjectName, b versions.BranchName, t versions.TableName, recs array.RecordReader, opts WriteOptions) (*PendingFile, error) {
	if _, err := versions.ParseTableName(string(t)); err != nil {
		return nil, err
	}
	schema := recs.Schema()
	if err := checkSchema(schema); err != nil {
		return nil, err
	}
	headID, err := s.v.Head(ctx, p, b)
	if err != nil {
		return nil, err
	}
	head, err := s.v.GetCommit(ctx, p, headID)
	if err != nil {
		return nil, err
	}
	// Fail fast, before writing data, on a schema the table cannot take.
	var known *versions.Manifest
	if mid, ok := head.Tables[t]; ok {
		m, err := s.v.GetManifest(ctx, p, mid)
		if err != nil {
			return nil, err
		}
		known = m
		tableSchema, err := DecodeSchema(m.Schema)
		if err != nil {
			return nil, err
		}
		if err := compareSchemas(tableSchema, schema); err != nil {
			return nil, fmt.Errorf("append to %s/%s: %w", p, t, err)
		}
		schema = tableSchema
	}
	schemaBytes, err := EncodeSchema(schema)
	if err != nil {
		return nil, err
	}
	media, err := newAppendMedia(s, p, schema, known)
	if err != nil {
		return nil, fmt.Errorf("append to %s/%s: %w", p, t, err)
	}
	var checkFor BatchCheck
	if opts.CheckFor != nil {
		if checkFor, err = opts.CheckFor(schema); err != nil {
			return nil, fmt.Errorf("append to %s/%s: %w", p, t, err)
		}
	}
	check := func(ctx context.Context, rec arrow.RecordBatch, firstRow int64) error {
		if err := media.check(ctx, rec, firstRow); err != nil {
			return err
		}
		if opts.Check != nil {
			if err := opts.Check(ctx, schema, rec, firstRow); err != nil {
				return err
			}
		}
		if checkFor != nil {
			return checkFor(ctx, schema, rec, firstRow)
		}
		return nil
	}
	file, err := s.writeFile(ctx, p, t, schema, recs, check, opts.SkipIncompressible)
	if err != nil {
		return nil, err
	}
	return &PendingFile{Table: t, File: file, schema: schema, schemaBytes: schemaBytes, media: media}, nil
}

// CommitFiles commits files (from WriteFile, any number of tables, several
// files per table allowed) as ONE commit on branch b: each table's files
// are appended, in the order given, after the rows it has at the head the
// commit lands on (a table is created by its first file), together with
// the media objects their rows name. All or nothing: on error the branch
// is where it was and the files stay uncommitted (DiscardFiles deletes
// them). Files of one table must share a schema (ErrSchemaMismatch).
func (s *Store) CommitFiles(ctx context.Context, p versions.ProjectName, b versions.BranchName, message string, files []*PendingFile) (*versions.Commit, error) {
	if len(files) == 0 {
		return nil, fmt.Errorf("%w: commit of no data files; write at least one", ErrEmptyAppend)
	}
	return s.v.Commit(ctx, p, b, message, s.filesChange(p, files))
}

// DiscardFiles deletes files that will not be committed, best effort (gc
// removes what remains).
func (s *Store) DiscardFiles(ctx context.Context, p versions.ProjectName, files []*PendingFile) {
	for _, f := range files {
		if err := s.b.Delete(context.WithoutCancel(ctx), versions.DataFileKey(p, f.File.Path)); err != nil {
			s.log.Warn("could not delete an uncommitted data file", "path", f.File.Path, "err", err)
		}
	}
}

// filesChange is the versions.Change that appends files to their tables.
func (s *Store) filesChange(p versions.ProjectName, files []*PendingFile) versions.Change {
	return func(ctx context.Context, head *versions.Commit) (map[versions.TableName]versions.ManifestID, error) {
		var order []versions.TableName
		byTable := map[versions.TableName][]*PendingFile{}
		for _, f := range files {
			if _, ok := byTable[f.Table]; !ok {
				order = append(order, f.Table)
			}
			byTable[f.Table] = append(byTable[f.Table], f)
		}
		out := make(map[versions.TableName]versions.ManifestID, len(order))
		for _, t := range order {
			id, err := s.tableChange(ctx, p, head, t, byTable[t])
			if err != nil {
				return nil, err
			}
			out[t] = id
		}
		return out, nil
	}
}

// tableChange stores the manifest of table t at head with files appended.
func (s *Store) tableChange(ctx context.Context, p versions.ProjectName, head *versions.Commit, t versions.TableName, files []*PendingFile) (versions.ManifestID, error) {
	first := files[0]
	for _, f := range files[1:] {
		if err := compareSchemas(first.schema, f.schema); err != nil {
			return "", fmt.Errorf("commit to %s/%s: the data files differ in schema: %w", p, t, err)
		}
	}
	m := &versions.Manifest{Table: t, Schema: first.schemaBytes}
	var old *versions.Manifest
	if mid, ok := head.Tables[t]; ok {
		var err error
		old, err = s.v.GetManifest(ctx, p, mid)
		if err != nil {
			return "", err
		}
		oldSchema, err := DecodeSchema(old.Schema)
		if err != nil {
			return "", err
		}
		// A concurrent writer may have created the table meanwhile.
		if err := compareSchemas(oldSchema, first.schema); err != nil {
			return "", fmt.Errorf("append to %s/%s (table created concurrently): %w", p, t, err)
		}
		// Written under its own schema (the table did not exist then):
		// its rows were checked as its columns' kinds, not the table's.
		if err := compareKinds(oldSchema, first.schema); err != nil {
			return "", fmt.Errorf("append to %s/%s: %w", p, t, err)
		}
		m.Schema = old.Schema
		m.Files = append(m.Files, old.Files...)
		m.Media = old.Media
	}
	for _, f := range files {
		m.Files = append(m.Files, f.File)
		// The media the rows name, in the same commit: those the table
		// had (carried forward) and those this file adds.
		added, err := f.media.added(ctx, old)
		if err != nil {
			return "", err
		}
		m.Media = versions.MergeMedia(m.Media, added)
	}
	return s.v.PutManifest(ctx, p, m)
}

// dataPath is a new data file's path relative to the project.
func dataPath(t versions.TableName) string {
	var id [16]byte
	_, _ = rand.Read(id[:])
	return versions.DataPath(t, hex.EncodeToString(id[:]))
}

// pageBytes is the target size of a data page. Small pages let a reader
// decode only the rows it needs: the training-mix engine reads blocks of
// about 1 MiB (mix/files.go), and with arrow-go's default 1 MiB pages each
// block re-decoded whole pages of the narrow columns around it (a resumed
// run's first batch took 4-8x longer, and an epoch 20 % longer, than with
// 128 KiB pages; see bench/README.md).
const pageBytes = 128 << 10

// writerProps are the Parquet settings of a data file whose rows are about
// bytesPerRow wide in Arrow. pqarrow checks a page's size only every write
// batch (1,024 values by default), so wide rows get a smaller batch: pages
// stay near the pageBytes target (at least one value), and readers can
// fetch a few rows of 100 KiB images without reading ~100 MB pages.
// Columns named in uncompressed (Parquet paths) are not compressed;
// columns named in nostats get no statistics (wideColumns).
func (s *Store) writerProps(bytesPerRow int64, uncompressed, nostats []string) *parquet.WriterProperties {
	batch := min(parquet.DefaultWriteBatchSize, max(1, pageBytes/bytesPerRow))
	opts := []parquet.WriterProperty{
		parquet.WithBatchSize(batch),
		parquet.WithDataPageSize(pageBytes),
		parquet.WithCompression(compress.Codecs.Zstd),
		parquet.WithMaxRowGroupLength(s.opts.RowGroupRows),
		parquet.WithDictionaryDefault(false),
		parquet.WithStats(true),
		parquet.WithPageIndexEnabled(true),
		parquet.WithAllocator(s.writeMem),
	}
	if s.opts.CompressionLevel != 0 {
		opts = append(opts, parquet.WithCompressionLevel(s.opts.CompressionLevel))
	}
	for _, c := range uncompressed {
		opts = append(opts, parquet.WithCompressionFor(c, compress.Codecs.Uncompressed))
	}
	for _, c := range nostats {
		opts = append(opts, parquet.WithStatsFor(c, false))
	}
	return parquet.NewWriterProperties(opts...)
}

// writeFile streams recs as one Parquet file into the bucket.
// check runs on every batch before it is written.
func (s *Store) writeFile(ctx context.Context, p versions.ProjectName, t versions.TableName, schema *arrow.Schema, recs array.RecordReader, check batchCheck, skipIncompressible bool) (versions.DataFile, error) {
	path := dataPath(t)
	key := versions.DataFileKey(p, path)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	pr, pw := io.Pipe()
	counter := &countingWriter{w: pw}
	putErr := make(chan error, 1)
	go func() {
		_, err := s.b.Put(ctx, key, pr, -1)
		pr.CloseWithError(err) // unblock the writer if Put stopped early
		putErr <- err
	}()

	rows, groups, err := s.encode(ctx, schema, recs, counter, check, skipIncompressible)
	pw.CloseWithError(err) // nil: EOF, so Put completes; else Put aborts
	if perr := <-putErr; err == nil && perr != nil {
		err = fmt.Errorf("store data file %s: %w", key, perr)
	}
	if err == nil && rows == 0 {
		err = fmt.Errorf("%w: the append to %s/%s has no rows; send at least one row", ErrEmptyAppend, p, t)
	}
	if err != nil {
		// Best effort: the file is invisible anyway, as no manifest names it.
		if derr := s.b.Delete(context.WithoutCancel(ctx), key); derr != nil {
			s.log.Warn("could not delete the data file of a failed append", "key", key, "err", derr)
		}
		return versions.DataFile{}, err
	}
	return versions.DataFile{Path: path, Rows: rows, Size: counter.n, RowGroups: groups}, nil
}

// batchCheck is a BatchCheck with the schema bound.
type batchCheck func(ctx context.Context, rec arrow.RecordBatch, firstRow int64) error

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// encode writes recs as Parquet to w and returns the row count and the row
// groups' sizes. Row groups end at RowGroupRows rows or RowGroupBytes bytes.
// check, if not nil, runs on every non-empty batch before it is written.
// With skipIncompressible, the first batch decides which binary columns
// are stored uncompressed (incompressibleColumns).
func (s *Store) encode(ctx context.Context, schema *arrow.Schema, recs array.RecordReader, w io.Writer, check batchCheck, skipIncompressible bool) (int64, []int64, error) {
	sink := &switchWriter{w: w}
	// The writer is made at the first rows, whose width sets how many
	// values pqarrow writes between page-size checks.
	var (
		fw                          *pqarrow.FileWriter
		rows, groupRows, groupBytes int64
		failed                      error
	)
	for recs.Next() {
		if failed = ctx.Err(); failed != nil {
			break
		}
		rec := recs.RecordBatch()
		if err := compareSchemas(schema, rec.Schema()); err != nil {
			failed = fmt.Errorf("batch after the first has another schema: %w", err)
			break
		}
		if failed = checkNulls(schema, rec); failed != nil {
			break
		}
		if failed = validateBatch(schema, rec); failed != nil {
			break
		}
		n := rec.NumRows()
		if n == 0 {
			continue
		}
		if check != nil {
			if failed = check(ctx, rec, rows); failed != nil {
				break
			}
		}
		bytesPerRow := max(1, RecordBytes(rec)/n)
		if fw == nil {
			var uncompressed []string
			if skipIncompressible {
				uncompressed = incompressibleColumns(schema, rec)
			}
			fw, failed = pqarrow.NewFileWriter(schema, sink, s.writerProps(bytesPerRow, uncompressed, wideColumns(schema, rec)), pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema(), pqarrow.WithAllocator(s.mem)))
			if failed != nil {
				failed = fmt.Errorf("%w: %w", ErrBadSchema, failed)
				break
			}
		}
		for off := int64(0); off < n; {
			take := min(n-off, s.opts.RowGroupRows-groupRows, max(1, (s.opts.RowGroupBytes-groupBytes)/bytesPerRow))
			failed = writeSlice(fw, schema, rec, off, off+take)
			if failed != nil {
				break
			}
			off += take
			rows += take
			groupRows += take
			groupBytes += take * bytesPerRow
			if groupRows >= s.opts.RowGroupRows || groupBytes >= s.opts.RowGroupBytes {
				if failed = fw.NewBufferedRowGroupChecked(); failed != nil {
					break
				}
				groupRows, groupBytes = 0, 0
			}
		}
		if failed != nil {
			break
		}
	}
	if failed == nil {
		failed = recs.Err()
	}
	if fw == nil {
		return 0, nil, failed // no rows: the caller rejects the empty append
	}
	if failed != nil {
		// Finish into io.Discard: when the sink fails (a cancelled upload),
		// pqarrow's Close returns at the first write error without
		// releasing its column buffers.
		sink.w = io.Discard
		_ = fw.Close()
		return 0, nil, failed
	}
	if err := fw.Close(); err != nil {
		return 0, nil, fmt.Errorf("finish parquet file: %w", err)
	}
	md, err := fw.FileMetadata()
	if err != nil {
		return 0, nil, fmt.Errorf("parquet metadata: %w", err)
	}
	var groups []int64
	for i := range md.NumRowGroups() {
		if n := md.RowGroup(i).NumRows(); n > 0 {
			groups = append(groups, n)
		}
	}
	if md.NumRows != rows {
		return 0, nil, fmt.Errorf("parquet writer counted %d rows, expected %d", md.NumRows, rows)
	}
	return rows, groups, nil
}

// switchWriter writes to w, which encode may switch to io.Discard.
type switchWriter struct{ w io.Writer }

func (s *switchWriter) Write(p []byte) (int, error) { return s.w.Write(p) }

// writeSlice writes rows [i, j) of rec, under the table's schema, into the
// current buffered row group of fw.
func writeSlice(fw *pqarrow.FileWriter, schema *arrow.Schema, rec arrow.RecordBatch, i, j int64) error {
	cols := make([]arrow.Array, rec.NumCols())
	for c, col := range rec.Columns() {
		cols[c] = array.NewSlice(col, i, j)
		if cols[c].Data().Offset() != 0 && hasFixedSizeList(col.DataType()) {
			// arrow-go v18.8.0's Parquet writer ignores the offset of a
			// sliced FixedSizeList and writes the parent's first rows.
			// Write an unsliced copy instead.
			cp, err := array.Concatenate([]arrow.Array{cols[c]}, memory.DefaultAllocator)
			cols[c].Release()
			if err != nil {
				for _, prev := range cols[:c] {
					prev.Release()
				}
				return fmt.Errorf("copy sliced column %q: %w", schema.Field(c).Name, err)
			}
			cols[c] = cp
		}
	}
	slice := array.NewRecordBatch(schema, cols, j-i)
	for _, c := range cols {
		c.Release()
	}
	defer slice.Release()
	return fw.WriteBuffered(slice)
}

func hasFixedSizeList(dt arrow.DataType) bool {
	switch t := dt.(type) {
	case *arrow.FixedSizeListType:
		return true
	case arrow.NestedType:
		for _, f := range t.Fields() {
			if hasFixedSizeList(f.Type) {
				return true
			}
		}
	}
	return false
}

// RecordBytes is the Arrow in-memory size of a batch: the lengths of all
// its buffers, children included (whole buffers, even for a slice).
func RecordBytes(rec arrow.RecordBatch) int64 {
	var n int64
	for _, col := range rec.Columns() {
		n += dataBytes(col.Data())
	}
	return n
}

func dataBytes(d arrow.ArrayData) int64 {
	var n int64
	for _, b := range d.Buffers() {
		if b != nil {
			n += int64(b.Len())
		}
	}
	for _, c := range d.Children() {
		n += dataBytes(c)
	}
	if d.DataType().ID() == arrow.DICTIONARY && d.Dictionary() != nil {
		n += dataBytes(d.Dictionary())
	}
	return n
}

func checkNulls(schema *arrow.Schema, rec arrow.RecordBatch) error {
	for i, f := range schema.Fields() {
		if !f.Nullable && rec.Column(i).NullN() > 0 {
			return fmt.Errorf("%w: column %s is not nullable but the append has %d nulls in it", ErrSchemaMismatch, errdefs.Quote(f.Name), rec.Column(i).NullN())
		}
	}
	return nil
}
