package importers

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/weftdata/weft/errdefs"
	"github.com/weftdata/weft/internal/ipcguard"
	"github.com/weftdata/weft/versions"
)

// HF imports Hugging Face datasets ("hf"): a save_to_disk directory (a
// Dataset: state.json, dataset_info.json and Arrow IPC stream files
// data-*.arrow; or a DatasetDict: dataset_dict.json and one such
// directory per split), or a Hub-style Parquet layout (data/train-*.parquet,
// default/train/*.parquet, CONFIG/SPLIT/*.parquet, CONFIG/SPLIT-*.parquet).
// Columns are kept as Arrow gives them (ClassLabel as its int64 index,
// Image and Audio as struct<bytes, path>, nested features as structs and
// lists); every column's feature is in its field metadata (MetaHFFeature,
// and MetaHFClassNames for a ClassLabel), the dataset's "huggingface"
// schema metadata is kept.
//
// Options:
//
//	split=NAME            import only this split, into BaseTable
//	splits=table|column   several splits: a table per split, BaseTable.SPLIT
//	                      (default), or one table with a "split" column
//	config=NAME           the Hub config to import when there are several
//	batch_rows=N          rows per batch read from Parquet (default 1024)
type HF struct{}

// Name is "hf".
func (HF) Name() string { return "hf" }

// Field metadata on the columns HF writes.
const (
	// MetaHFFeature is the column's datasets feature, as JSON
	// ({"_type": "Image"}, {"dtype": "string", "_type": "Value"}, …).
	MetaHFFeature = "weft.hf.feature"
	// MetaHFClassNames is a ClassLabel column's names, a JSON array: the
	// column holds the index into it.
	MetaHFClassNames = "weft.hf.class_names"
	// MetaHFSplit marks the "split" column of splits=column.
	MetaHFSplit = "weft.hf.split"
	// hfSchemaMeta is the schema metadata key datasets writes its info under.
	hfSchemaMeta = "huggingface"
)

// hfSplit is one split of the dataset: its data files, in order.
type hfSplit struct {
	name     string
	files    []File
	parquet  bool
	features json.RawMessage // from dataset_info.json; nil: from the files' schema metadata
}

type hfLayout struct {
	kind    string // "save_to_disk" or "parquet"
	version string // the dataset's own version, when dataset_info.json has one
	splits  []*hfSplit
}

type hfOptions struct {
	split, mode, config string
	batchRows           int64
}

// Import finds the layout and its splits, then writes every split's files
// in order.
func (HF) Import(ctx context.Context, src Source, w *Writer, o FormatOptions) error {
	if err := o.Check("hf", "split", "splits", "config", "batch_rows"); err != nil {
		return err
	}
	opts := hfOptions{split: o["split"], mode: o["splits"], config: o["config"]}
	if opts.mode == "" {
		opts.mode = "table"
	}
	if opts.mode != "table" && opts.mode != "column" {
		return fmt.Errorf("%w: splits=%s: want table (a table per split) or column (one table with a split column)", ErrBadOption, errdefs.Quote(opts.mode))
	}
	var err error
	if opts.batchRows, err = o.Int("batch_rows", 1024); err != nil {
		return err
	}
	if opts.batchRows < 1 {
		return fmt.Errorf("%w: batch_rows must be at least 1", ErrBadOption)
	}
	files, err := Select(ctx, src)
	if err != nil {
		return err
	}
	lay, err := hfDetect(ctx, src, files, opts.config)
	if err != nil {
		return err
	}
	if opts.split != "" {
		i := slices.IndexFunc(lay.splits, func(s *hfSplit) bool { return s.name == opts.split })
		if i < 0 {
			return fmt.Errorf("%w: %s has no split %s; its splits are %s", ErrBadOption, errdefs.Quote(src.URL()), errdefs.Quote(opts.split), strings.Join(hfSplitNames(lay.splits), ", "))
		}
		lay.splits = []*hfSplit{lay.splits[i]}
	}
	v := "hf " + lay.kind
	if lay.version != "" {
		v += ", dataset version " + lay.version
	}
	w.SetSourceVersion(v)
	for _, s := range lay.splits {
		var b int64
		for _, f := range s.files {
			b += f.Size
		}
		w.Plan(int64(len(s.files)), b)
	}
	if opts.mode == "column" && len(lay.splits) > 1 {
		return hfImportColumn(ctx, src, w, lay.splits, opts)
	}
	for _, s := range lay.splits {
		t := w.BaseTable()
		if len(lay.splits) > 1 {
			t += versions.TableName("." + sanitizeTableSuffix(s.name))
		}
		st := &hfTable{name: string(t)}
		if err := st.importSplit(ctx, src, w, s, opts); err != nil {
			return err
		}
		if st.tw == nil {
			return fmt.Errorf("%w: split %s of %s has no data files", ErrBadInput, errdefs.Quote(s.name), errdefs.Quote(src.URL()))
		}
	}
	return nil
}

func hfImportColumn(ctx context.Context, src Source, w *Writer, splits []*hfSplit, opts hfOptions) error {
	st := &hfTable{name: string(w.BaseTable()), splitColumn: true}
	for _, s := range splits {
		if err := st.importSplit(ctx, src, w, s, opts); err != nil {
			return err
		}
	}
	return nil
}

func hfSplitNames(ss []*hfSplit) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = s.name
	}
	return out
}

// hfDetect finds the layout of files: dataset_dict.json or state.json
// (save_to_disk, at the source's root) or Parquet files.
func hfDetect(ctx context.Context, src Source, files []File, config string) (*hfLayout, error) {
	byPath := make(map[string]File, len(files))
	for _, f := range files {
		byPath[f.Path] = f
	}
	if _, ok := byPath["dataset_dict.json"]; ok {
		var dd struct {
			Splits []string `json:"splits"`
		}
		if err := hfReadJSON(ctx, src, "dataset_dict.json", &dd); err != nil {
			return nil, err
		}
		if len(dd.Splits) == 0 {
			return nil, fmt.Errorf("%w: %s lists no splits", ErrBadInput, errdefs.Quote("dataset_dict.json"))
		}
		lay := &hfLayout{kind: "save_to_disk"}
		for _, name := range dd.Splits {
			if checkRelPath(name) != nil || strings.Contains(name, "/") {
				return nil, fmt.Errorf("%w: %s names split %s, which is not a directory name", ErrBadInput, errdefs.Quote("dataset_dict.json"), errdefs.Quote(name))
			}
			s, ver, err := hfDiskSplit(ctx, src, byPath, name+"/", name)
			if err != nil {
				return nil, err
			}
			lay.splits = append(lay.splits, s)
			lay.version = cmp.Or(lay.version, ver)
		}
		return lay, nil
	}
	if _, ok := byPath["state.json"]; ok {
		s, ver, err := hfDiskSplit(ctx, src, byPath, "", "")
		if err != nil {
			return nil, err
		}
		return &hfLayout{kind: "save_to_disk", version: ver, splits: []*hfSplit{s}}, nil
	}
	return hfParquetLayout(files, config, src.URL())
}

// jsonFileLimit bounds a JSON file that an importer reads whole (a
// dataset's state.json, dataset_info.json, an MDS index.json).
const jsonFileLimit = 64 << 20

// readJSONFile reads the JSON file p of src whole: ErrTooLarge past
// jsonFileLimit (cut there, it could only fail as bad JSON).
func readJSONFile(ctx context.Context, src Source, p string) ([]byte, error) {
	rc, err := src.Open(ctx, p)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, jsonFileLimit+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", errdefs.Quote(p), err)
	}
	if len(data) > jsonFileLimit {
		return nil, fmt.Errorf("%w: %s is too large (limit %d MiB) for a JSON file read whole", ErrTooLarge, errdefs.Quote(p), jsonFileLimit>>20)
	}
	return data, nil
}

// hfReadJSON reads a small JSON file of the source into v.
func hfReadJSON(ctx context.Context, src Source, p string, v any) error {
	data, err := readJSONFile(ctx, src, p)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrBadInput, errdefs.Quote(p), err)
	}
	return nil
}

// hfDiskSplit reads one save_to_disk Dataset directory (dir is "" or
// "SPLIT/"): state.json lists its data files, dataset_info.json has its
// features.
func hfDiskSplit(ctx context.Context, src Source, byPath map[string]File, dir, name string) (*hfSplit, string, error) {
	for _, need := range []string{"state.json", "dataset_info.json"} {
		if _, ok := byPath[dir+need]; !ok {
			return nil, "", fmt.Errorf("%w: %s is missing (save_to_disk writes it next to the data files)", ErrBadInput, errdefs.Quote(dir+need))
		}
	}
	var state struct {
		DataFiles []struct {
			Filename string `json:"filename"`
		} `json:"_data_files"`
		Split *string `json:"_split"`
	}
	if err := hfReadJSON(ctx, src, dir+"state.json", &state); err != nil {
		return nil, "", err
	}
	var info struct {
		Features json.RawMessage `json:"features"`
		Version  *struct {
			VersionStr string `json:"version_str"`
		} `json:"version"`
	}
	if err := hfReadJSON(ctx, src, dir+"dataset_info.json", &info); err != nil {
		return nil, "", err
	}
	if name == "" {
		name = "train"
		if state.Split != nil && *state.Split != "" {
			name = *state.Split
		}
	}
	if len(state.DataFiles) == 0 {
		return nil, "", fmt.Errorf("%w: %s lists no data files (_data_files)", ErrBadInput, errdefs.Quote(dir+"state.json"))
	}
	s := &hfSplit{name: name, features: info.Features}
	for _, df := range state.DataFiles {
		p := dir + df.Filename
		if checkRelPath(df.Filename) != nil || strings.Contains(df.Filename, "/") {
			return nil, "", fmt.Errorf("%w: %s names data file %s, which is not a file name in its directory", ErrBadInput, errdefs.Quote(dir+"state.json"), errdefs.Quote(df.Filename))
		}
		f, ok := byPath[p]
		if !ok {
			return nil, "", fmt.Errorf("%w: %s names %s, which is missing", ErrBadInput, errdefs.Quote(dir+"state.json"), errdefs.Quote(p))
		}
		s.files = append(s.files, f)
	}
	var ver string
	if info.Version != nil {
		ver = info.Version.VersionStr
	}
	return s, ver, nil
}

// hfShardName is a Hub data file's name: SPLIT-00000-of-00004.
var hfShardName = regexp.MustCompile(`^([A-Za-z0-9_][A-Za-z0-9_.]*?)-\d+-of-\d+$`)

// hfParquetPlace is the config and split of a Hub Parquet file's path:
//
//	data/train-00000-of-00001.parquet  → default, train
//	CONFIG/train-00000-of-00001.parquet → CONFIG, train
//	default/train/0000.parquet         → default, train
//	CONFIG/SPLIT/….parquet             → CONFIG, SPLIT
//	train.parquet, train-0.parquet     → default, train
func hfParquetPlace(p string) (config, split string) {
	dir, base := path.Split(p)
	dir = strings.TrimSuffix(dir, "/")
	base = strings.TrimSuffix(base, ".parquet")
	parent := func(d string) string {
		if d == "" || d == "data" {
			return "default"
		}
		return strings.TrimSuffix(d, "/data")
	}
	if m := hfShardName.FindStringSubmatch(base); m != nil {
		return parent(dir), m[1]
	}
	last := path.Base(dir)
	if dir == "" || last == "data" {
		name, _, _ := strings.Cut(base, "-")
		return parent(dir), name
	}
	return parent(path.Dir(dir)), last
}

func hfParquetLayout(files []File, config, url string) (*hfLayout, error) {
	type cfg struct {
		splits []*hfSplit
	}
	configs := map[string]*cfg{}
	var order []string
	for _, f := range files {
		if !strings.HasSuffix(f.Path, ".parquet") {
			continue
		}
		c, s := hfParquetPlace(f.Path)
		if c == "." {
			c = "default"
		}
		cf, ok := configs[c]
		if !ok {
			cf = &cfg{}
			configs[c] = cf
			order = append(order, c)
		}
		i := slices.IndexFunc(cf.splits, func(x *hfSplit) bool { return x.name == s })
		if i < 0 {
			cf.splits = append(cf.splits, &hfSplit{name: s, parquet: true})
			i = len(cf.splits) - 1
		}
		cf.splits[i].files = append(cf.splits[i].files, f)
	}
	if len(order) == 0 {
		return nil, fmt.Errorf("%w: %s is not a Hugging Face dataset: it has no dataset_dict.json or state.json (save_to_disk) and no .parquet files (Hub layout)", ErrSourceNotFound, errdefs.Quote(url))
	}
	if config == "" {
		if len(order) > 1 {
			slices.Sort(order)
			return nil, fmt.Errorf("%w: %s has several configs (%s); choose one with config=NAME", ErrBadOption, errdefs.Quote(url), strings.Join(order, ", "))
		}
		config = order[0]
	}
	cf, ok := configs[config]
	if !ok {
		slices.Sort(order)
		return nil, fmt.Errorf("%w: %s has no config %s; its configs are %s", ErrBadOption, errdefs.Quote(url), errdefs.Quote(config), strings.Join(order, ", "))
	}
	// Splits in the usual order (train, validation, test), then the
	// others as listed: the order of the tables, and of the rows with
	// splits=column.
	rank := func(name string) int {
		if i := slices.Index(hfSplitOrder, name); i >= 0 {
			return i
		}
		return len(hfSplitOrder)
	}
	slices.SortStableFunc(cf.splits, func(a, b *hfSplit) int { return rank(a.name) - rank(b.name) })
	return &hfLayout{kind: "parquet", splits: cf.splits}, nil
}

// hfSplitOrder is the order of the usual split names in a Parquet layout.
var hfSplitOrder = []string{"train", "validation", "valid", "dev", "test"}

// hfTable is one table being written: from one split, or from every split
// with a split column.
type hfTable struct {
	name        string
	splitColumn bool
	tw          *TableWriter
	dataSchema  *arrow.Schema // the data files' schema (no metadata), as the first file had it
	firstFile   string
	convert     []bool // columns whose type the table stores otherwise (hfStoreType)
}

// importSplit writes every data file of s.
func (st *hfTable) importSplit(ctx context.Context, src Source, w *Writer, s *hfSplit, opts hfOptions) error {
	for _, f := range s.files {
		var err error
		if s.parquet {
			err = st.readParquet(ctx, src, w, s, f, opts.batchRows)
		} else {
			err = st.readIPC(ctx, src, w, s, f)
		}
		if err != nil {
			return err
		}
		w.FileDone()
	}
	return nil
}

// start checks a data file's schema against the table's (the first file
// sets it) and starts the table at the first file.
func (st *hfTable) start(w *Writer, s *hfSplit, p string, schema *arrow.Schema) error {
	if st.dataSchema != nil {
		if !hfSameColumns(st.dataSchema, schema) {
			return fmt.Errorf("%w: %s has columns %s, but %s has %s; every data file of a table must have the same columns", ErrBadInput,
				errdefs.Quote(p), errdefs.Truncate(hfColumns(schema), 300), errdefs.Quote(st.firstFile), errdefs.Truncate(hfColumns(st.dataSchema), 300))
		}
		return nil
	}
	ts, err := hfTableSchema(schema, s.features, p)
	if err != nil {
		return err
	}
	fields := ts.Fields()
	st.convert = make([]bool, len(fields))
	for i, f := range fields {
		if t, ch := hfStoreType(f.Type); ch {
			st.convert[i] = true
			fields[i].Type = t
			fields[i].Metadata = arrow.NewMetadata(append(f.Metadata.Keys(), MetaHFArrowType), append(f.Metadata.Values(), schema.Field(i).Type.String()))
		}
	}
	meta := ts.Metadata()
	ts = arrow.NewSchema(fields, &meta)
	if st.splitColumn {
		if ts.HasField("split") {
			return fmt.Errorf("%w: %s has a column named split already; use splits=table", ErrBadOption, errdefs.Quote(p))
		}
		md := arrow.NewMetadata([]string{MetaHFSplit}, []string{"true"})
		meta := ts.Metadata()
		ts = arrow.NewSchema(append(ts.Fields(), arrow.Field{Name: "split", Type: arrow.BinaryTypes.String, Metadata: md}), &meta)
	}
	tw, err := w.Table(versions.TableName(st.name), ts)
	if err != nil {
		return err
	}
	st.tw, st.dataSchema, st.firstFile = tw, schema, p
	return nil
}

// write writes one batch of a data file, under the table's schema.
func (st *hfTable) write(ctx context.Context, w *Writer, s *hfSplit, rec arrow.RecordBatch) error {
	cols := slices.Clone(rec.Columns())
	for i, conv := range st.convert {
		if !conv {
			continue
		}
		d, err := hfConvertData(cols[i].Data(), st.tw.Schema().Field(i).Type)
		if err != nil {
			return fmt.Errorf("%w: column %s: %w", ErrBadInput, errdefs.Quote(rec.Schema().Field(i).Name), err)
		}
		cols[i] = array.MakeFromData(d)
		d.Release()
		defer cols[i].Release()
	}
	if st.splitColumn {
		b := array.NewStringBuilder(w.Allocator())
		defer b.Release()
		b.Reserve(int(rec.NumRows()))
		b.ReserveData(int(rec.NumRows()) * len(s.name))
		for range rec.NumRows() {
			b.Append(s.name)
		}
		col := b.NewArray()
		defer col.Release()
		cols = append(cols, col)
	}
	out := array.NewRecordBatch(st.tw.Schema(), cols, rec.NumRows())
	defer out.Release()
	return st.tw.Write(ctx, out)
}

func (st *hfTable) readIPC(ctx context.Context, src Source, w *Writer, s *hfSplit, f File) error {
	rc, err := src.Open(ctx, f.Path)
	if err != nil {
		return err
	}
	defer rc.Close()
	err = hfEachBatch(w.CountingReader(rc), f.Size, w.Allocator(), f.Path,
		func(schema *arrow.Schema) error { return st.start(w, s, f.Path, schema) },
		func(rec arrow.RecordBatch) error { return st.write(ctx, w, s, rec) })
	if err != nil && ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

// hfEachBatch reads an Arrow IPC stream of size bytes (file p, for
// messages): start gets its schema, each every batch, validated (offsets
// and lengths within their buffers). The stream passes through an
// ipcguard first. A malformed stream is ErrBadInput naming p and the batch.
func hfEachBatch(r io.Reader, size int64, mem memory.Allocator, p string, start func(*arrow.Schema) error, each func(arrow.RecordBatch) error) (err error) {
	// A corrupt stream may make the IPC reader panic (arrow-go trusts
	// some lengths); that is bad input, not a crash.
	batch := 0
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %s: batch %d: not a readable Arrow IPC stream: %v", ErrBadInput, errdefs.Quote(p), batch, r)
		}
	}()
	br := &hfPeekReader{r: r}
	rd, err := ipc.NewReader(ipcguard.New(br, size), ipc.WithAllocator(mem), ipc.WithEnsureNativeEndian(true))
	if err != nil {
		if bytes.HasPrefix(br.head, []byte("ARRO")) { // ARROW1, the IPC file magic
			return fmt.Errorf("%w: %s is an Arrow IPC file, not a stream; save_to_disk writes streams", ErrBadInput, errdefs.Quote(p))
		}
		return fmt.Errorf("%w: %s: not an Arrow IPC stream: %w", ErrBadInput, errdefs.Quote(p), err)
	}
	defer rd.Release()
	if err := start(rd.Schema()); err != nil {
		return err
	}
	for rd.Next() {
		rec := rd.RecordBatch()
		if err := hfValidate(rec); err != nil {
			return fmt.Errorf("%w: %s: batch %d: %w", ErrBadInput, errdefs.Quote(p), batch, err)
		}
		if err := each(rec); err != nil {
			return fmt.Errorf("%s: batch %d: %w", errdefs.Quote(p), batch, err)
		}
		batch++
	}
	if err := rd.Err(); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("%w: %s: batch %d: %w", ErrBadInput, errdefs.Quote(p), batch, err)
	}
	return nil
}

// hfValidate checks a batch read from an untrusted stream (offsets and
// lengths within their buffers), so that the error names the file; the
// table's writer checks again before encoding.
func hfValidate(rec arrow.RecordBatch) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("an array is malformed (%v)", r)
		}
	}()
	for i, c := range rec.Columns() {
		if v, ok := c.(interface{ ValidateFull() error }); ok {
			if err := v.ValidateFull(); err != nil {
				return fmt.Errorf("column %s: %w", errdefs.Quote(rec.Schema().Field(i).Name), err)
			}
		}
	}
	return nil
}

// hfPeekReader keeps the first bytes read, to say what a file is when it
// is not a stream.
type hfPeekReader struct {
	r    io.Reader
	head []byte
}

func (p *hfPeekReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	if len(p.head) < 8 {
		p.head = append(p.head, b[:min(n, 8-len(p.head))]...)
	}
	return n, err
}

// hfCountingReaderAt counts the bytes read at random offsets.
type hfCountingReaderAt struct {
	r ReaderAt
	w *Writer
}

func (c *hfCountingReaderAt) ReadAt(b []byte, off int64) (int, error) {
	n, err := c.r.ReadAt(b, off)
	c.w.AddBytes(int64(n))
	return n, err
}

func (st *hfTable) readParquet(ctx context.Context, src Source, w *Writer, s *hfSplit, f File, batchRows int64) error {
	ra, err := src.OpenAt(ctx, f.Path)
	if err != nil {
		return err
	}
	defer ra.Close()
	err = hfEachParquetBatch(ctx, io.NewSectionReader(&hfCountingReaderAt{r: ra, w: w}, 0, ra.Size()), batchRows, w.Allocator(), f.Path,
		func(schema *arrow.Schema) error { return st.start(w, s, f.Path, schema) },
		func(rec arrow.RecordBatch) error { return st.write(ctx, w, s, rec) })
	if err != nil && ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

// hfEachParquetBatch reads a Parquet file (p, for messages) in batches of
// batchRows: start gets its Arrow schema, each every batch. A malformed
// file is ErrBadInput naming p and the first row of the batch.
func hfEachParquetBatch(ctx context.Context, r *io.SectionReader, batchRows int64, mem memory.Allocator, p string, start func(*arrow.Schema) error, each func(arrow.RecordBatch) error) (err error) {
	var row int64
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %s: rows from %d: not a readable Parquet file: %v", ErrBadInput, errdefs.Quote(p), row, r)
		}
	}()
	pf, err := file.NewParquetReader(r)
	if err != nil {
		return fmt.Errorf("%w: %s: not a Parquet file: %w", ErrBadInput, errdefs.Quote(p), err)
	}
	defer pf.Close()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: batchRows}, mem)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrBadInput, errdefs.Quote(p), err)
	}
	schema, err := fr.Schema()
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrBadInput, errdefs.Quote(p), err)
	}
	if err := start(schema); err != nil {
		return err
	}
	rr, err := fr.GetRecordReader(ctx, nil, nil)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrBadInput, errdefs.Quote(p), err)
	}
	defer rr.Release()
	for rr.Next() {
		rec := rr.RecordBatch()
		if err := each(rec); err != nil {
			return fmt.Errorf("%s: rows from %d: %w", errdefs.Quote(p), row, err)
		}
		row += rec.NumRows()
	}
	if err := rr.Err(); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("%w: %s: rows from %d: %w", ErrBadInput, errdefs.Quote(p), row, err)
	}
	return nil
}

// hfSameColumns compares names and types, not metadata or nullability.
func hfSameColumns(a, b *arrow.Schema) bool {
	if a.NumFields() != b.NumFields() {
		return false
	}
	for i := range a.NumFields() {
		fa, fb := a.Field(i), b.Field(i)
		if fa.Name != fb.Name || !arrow.TypeEqual(fa.Type, fb.Type) {
			return false
		}
	}
	return true
}

func hfColumns(s *arrow.Schema) string {
	parts := make([]string, s.NumFields())
	for i, f := range s.Fields() {
		parts[i] = f.Name + ": " + f.Type.String()
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// hfTableSchema is the table's schema for a data file's schema: the same
// columns, every column's feature in its field metadata, the
// "huggingface" schema metadata kept. The features come from
// dataset_info.json (save_to_disk), else from the file's "huggingface"
// metadata; a file without either keeps its columns without features.
func hfTableSchema(schema *arrow.Schema, features json.RawMessage, p string) (*arrow.Schema, error) {
	var keys, vals []string
	hfMeta, hasMeta := schema.Metadata().GetValue(hfSchemaMeta)
	if hasMeta {
		keys, vals = append(keys, hfSchemaMeta), append(vals, hfMeta)
	}
	if features == nil && hasMeta {
		var m struct {
			Info struct {
				Features json.RawMessage `json:"features"`
			} `json:"info"`
		}
		if err := json.Unmarshal([]byte(hfMeta), &m); err != nil {
			return nil, fmt.Errorf("%w: %s: its huggingface schema metadata is not JSON: %w", ErrBadInput, errdefs.Quote(p), err)
		}
		features = m.Info.Features
	}
	var feats map[string]json.RawMessage
	if len(features) > 0 && !bytes.Equal(bytes.TrimSpace(features), []byte("null")) {
		if err := json.Unmarshal(features, &feats); err != nil {
			return nil, fmt.Errorf("%w: %s: features are not a JSON object: %w", ErrBadInput, errdefs.Quote(p), err)
		}
	}
	fields := make([]arrow.Field, schema.NumFields())
	for i, f := range schema.Fields() {
		f.Metadata = arrow.Metadata{}
		if ft, ok := feats[f.Name]; ok {
			var err error
			if f, err = hfAnnotate(f, ft); err != nil {
				return nil, fmt.Errorf("%w: %s: column %s: %w", ErrBadInput, errdefs.Quote(p), errdefs.Quote(f.Name), err)
			}
		}
		fields[i] = f
	}
	md := arrow.NewMetadata(keys, vals)
	return arrow.NewSchema(fields, &md), nil
}

// hfAnnotate puts feature ft in field f's metadata, and the features of a
// dict feature's keys in the struct's child fields.
func hfAnnotate(f arrow.Field, ft json.RawMessage) (arrow.Field, error) {
	var compact bytes.Buffer
	if err := json.Compact(&compact, ft); err != nil {
		return f, err
	}
	keys, vals := []string{MetaHFFeature}, []string{compact.String()}
	var head struct {
		Type  string   `json:"_type"`
		Names []string `json:"names"`
	}
	if err := json.Unmarshal(ft, &head); err == nil && head.Type == "ClassLabel" {
		names, err := json.Marshal(head.Names)
		if err != nil {
			return f, err
		}
		keys, vals = append(keys, MetaHFClassNames), append(vals, string(names))
	}
	// A dict feature (no _type) is a struct: annotate its fields too.
	if st, ok := f.Type.(*arrow.StructType); ok && head.Type == "" {
		var sub map[string]json.RawMessage
		if json.Unmarshal(ft, &sub) == nil {
			children := st.Fields()
			for i, c := range children {
				if cft, ok := sub[c.Name]; ok {
					c.Metadata = arrow.Metadata{}
					var err error
					if children[i], err = hfAnnotate(c, cft); err != nil {
						return f, err
					}
				}
			}
			f.Type = arrow.StructOf(children...)
		}
	}
	f.Metadata = arrow.NewMetadata(keys, vals)
	return f, nil
}
