package importers

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/weftdata/weft/errdefs"
)

// WebDataset imports WebDataset tar shards ("wds"): see the package doc
// and README. One table: __key__ (the sample's key), __url__ (its shard's
// path in the source), then one column per member extension, sorted.
//
// Options:
//
//	decode=true|false   typed columns for .cls/.txt/.json-like members (default true)
//	pickle=refuse|bytes .pyd/.pth/.pickle/.pkl members: refuse the import (default) or keep as bytes, never unpickled
//	survey=all|first    read every shard (default) or only the first to fix the columns before writing
//	max_member_bytes=N  largest member (default 1 GiB; at most 2 GiB - 1)
//	max_sample_bytes=N  largest sample, its members together: what the import holds whole (default 1 GiB; at most 2 GiB - 1)
//	batch_rows=N        rows per written batch (default 1024; at most 2^20)
//
// A dataset of more than wdsMaxColumns member extensions is refused.
type WebDataset struct{}

// Name is "wds".
func (WebDataset) Name() string { return "wds" }

// Extensions whose members decode to typed columns (as webdataset's
// default decoders), when every value converts losslessly.
var (
	wdsIntExts  = []string{"cls", "cls2", "class", "count", "index", "inx", "id"}
	wdsTextExts = []string{"txt", "text", "transcript"}
	wdsJSONExts = []string{"json", "jsn"}
	// Pickled members: never unpickled.
	wdsPickleExts = []string{"pyd", "pth", "pickle", "pkl"}
)

// Field metadata on the columns WebDataset writes.
const (
	// MetaWDSEncoding says how a column holds its members: "bytes"
	// (binary, as stored), "int" (canonical decimal text as int64),
	// "text" (UTF-8 as string) or "json" (JSON text as string). Every
	// encoding gives back the member's exact bytes.
	MetaWDSEncoding = "weft.wds.encoding"
)

type wdsOptions struct {
	decode     bool
	pickle     bool // keep pickled members as bytes
	surveyAll  bool
	maxMember  int64
	maxSample  int64
	batchRows  int64
	batchBytes int64
}

func parseWDSOptions(o FormatOptions) (wdsOptions, error) {
	opts := wdsOptions{surveyAll: true, batchBytes: 64 << 20}
	if err := o.Check("wds", "decode", "pickle", "survey", "max_member_bytes", "max_sample_bytes", "batch_rows"); err != nil {
		return opts, err
	}
	var err error
	if opts.decode, err = o.Bool("decode", true); err != nil {
		return opts, err
	}
	switch o["pickle"] {
	case "", "refuse":
	case "bytes":
		opts.pickle = true
	default:
		return opts, fmt.Errorf("%w: option pickle=%s: want refuse or bytes (never unpickled)", ErrBadOption, errdefs.Quote(o["pickle"]))
	}
	switch o["survey"] {
	case "", "all":
	case "first":
		opts.surveyAll = false
	default:
		return opts, fmt.Errorf("%w: option survey=%s: want all or first", ErrBadOption, errdefs.Quote(o["survey"]))
	}
	if opts.maxMember, err = o.Int("max_member_bytes", 1<<30); err != nil {
		return opts, err
	}
	if opts.maxMember < 1 || opts.maxMember >= 1<<31 {
		return opts, fmt.Errorf("%w: option max_member_bytes=%d: want 1 to 2147483647", ErrBadOption, opts.maxMember)
	}
	if opts.maxSample, err = o.Int("max_sample_bytes", 1<<30); err != nil {
		return opts, err
	}
	if opts.maxSample < 1 || opts.maxSample >= 1<<31 {
		return opts, fmt.Errorf("%w: option max_sample_bytes=%d: want 1 to 2147483647", ErrBadOption, opts.maxSample)
	}
	if opts.batchRows, err = o.Int("batch_rows", 1024); err != nil {
		return opts, err
	}
	if opts.batchRows < 1 || opts.batchRows > 1<<20 {
		return opts, fmt.Errorf("%w: option batch_rows=%d: want 1 to 1048576", ErrBadOption, opts.batchRows)
	}
	return opts, nil
}

// wdsMaxColumns bounds the member extensions of a dataset (its table's
// columns): each is a builder held for the whole import.
const wdsMaxColumns = 4096

// wdsColumn is what the survey learnt about one extension.
type wdsColumn struct {
	ext                    string
	intOK, textOK, jsonOK  bool
	decodable, seen, isPkl bool
}

func (c *wdsColumn) observe(data []byte) {
	c.seen = true
	if !c.decodable {
		return
	}
	if c.intOK {
		v, err := strconv.ParseInt(string(data), 10, 64)
		c.intOK = err == nil && strconv.FormatInt(v, 10) == string(data)
	}
	if c.textOK || c.jsonOK {
		valid := utf8.Valid(data)
		c.textOK = c.textOK && valid
		c.jsonOK = c.jsonOK && valid && json.Valid(data)
	}
}

// encoding is the column's MetaWDSEncoding.
func (c *wdsColumn) encoding() string {
	switch {
	case c.decodable && c.intOK && slices.Contains(wdsIntExts, c.ext):
		return "int"
	case c.decodable && c.jsonOK && slices.Contains(wdsJSONExts, c.ext):
		return "json"
	case c.decodable && c.textOK && slices.Contains(wdsTextExts, c.ext):
		return "text"
	}
	return "bytes"
}

func newWDSColumn(ext string, opts wdsOptions) *wdsColumn {
	c := &wdsColumn{ext: ext, intOK: true, textOK: true, jsonOK: true}
	c.decodable = opts.decode && (slices.Contains(wdsIntExts, ext) || slices.Contains(wdsTextExts, ext) || slices.Contains(wdsJSONExts, ext))
	return c
}

// Import reads the shards (the source's pattern, else every .tar, .tgz
// and .tar.gz file) twice: a survey that fixes the columns, then the
// write. A local uncompressed shard's survey seeks over the members it
// does not decode.
func (f WebDataset) Import(ctx context.Context, src Source, w *Writer, o FormatOptions) error {
	opts, err := parseWDSOptions(o)
	if err != nil {
		return err
	}
	shards, err := Select(ctx, src)
	if err != nil {
		return err
	}
	if src.Pattern() == "" {
		shards = slices.DeleteFunc(shards, func(f File) bool {
			return !(strings.HasSuffix(f.Path, ".tar") || strings.HasSuffix(f.Path, ".tgz") || strings.HasSuffix(f.Path, ".tar.gz"))
		})
		if len(shards) == 0 {
			return fmt.Errorf("%w: %s holds no .tar, .tgz or .tar.gz shards", ErrSourceNotFound, errdefs.Quote(src.URL()))
		}
	}
	w.SetSourceVersion("webdataset tar")
	var total int64
	for _, s := range shards {
		total += s.Size
	}
	w.Plan(int64(len(shards)), total)

	// Survey.
	cols := map[string]*wdsColumn{}
	surveyed := shards
	if !opts.surveyAll {
		surveyed = shards[:1]
	}
	for _, s := range surveyed {
		err := walkShard(ctx, src, s.Path, opts, true, nil, func(key string, members []wdsMember) error {
			for _, m := range members {
				c, ok := cols[m.ext]
				if !ok {
					if len(cols) == wdsMaxColumns {
						return fmt.Errorf("%w: shard %s: key %s: member extension %s would be column %d; a WebDataset import takes at most %d", ErrTooLarge, errdefs.Quote(s.Path), errdefs.Quote(key), errdefs.Quote(m.ext), wdsMaxColumns+1, wdsMaxColumns)
					}
					c = newWDSColumn(m.ext, opts)
					cols[m.ext] = c
				}
				c.observe(m.data)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	if len(cols) == 0 {
		return fmt.Errorf("%w: the shards of %s hold no samples (members named KEY.EXT)", ErrBadInput, errdefs.Quote(src.URL()))
	}
	exts := slices.Sorted(func(yield func(string) bool) {
		for e := range cols {
			if !yield(e) {
				return
			}
		}
	})
	fields := []arrow.Field{
		{Name: "__key__", Type: arrow.BinaryTypes.String},
		{Name: "__url__", Type: arrow.BinaryTypes.String},
	}
	encs := make([]string, len(exts))
	for i, e := range exts {
		encs[i] = cols[e].encoding()
		var dt arrow.DataType
		switch encs[i] {
		case "int":
			dt = arrow.PrimitiveTypes.Int64
		case "text", "json":
			dt = arrow.BinaryTypes.String
		default:
			dt = arrow.BinaryTypes.Binary
		}
		fields = append(fields, arrow.Field{Name: e, Type: dt, Nullable: true,
			Metadata: arrow.NewMetadata([]string{MetaWDSEncoding}, []string{encs[i]})})
	}
	schema := arrow.NewSchema(fields, nil)
	tw, err := w.Table(w.BaseTable(), schema)
	if err != nil {
		return err
	}

	// Write.
	b := array.NewRecordBuilder(w.Allocator(), schema)
	defer b.Release()
	index := map[string]int{}
	for i, e := range exts {
		index[e] = i + 2
	}
	var rows, bytes int64
	flush := func() error {
		if rows == 0 {
			return nil
		}
		rec := b.NewRecordBatch()
		defer rec.Release()
		rows, bytes = 0, 0
		return tw.Write(ctx, rec)
	}
	keys := map[[16]byte]int32{} // sha256 prefix of every key seen → its shard
	for si, s := range shards {
		err := walkShard(ctx, src, s.Path, opts, false, w, func(key string, members []wdsMember) error {
			h := sha256.Sum256([]byte(key))
			var k [16]byte
			copy(k[:], h[:16])
			if prev, dup := keys[k]; dup {
				return fmt.Errorf("%w: shard %s: key %s appears again (first in shard %s); keys must be unique", ErrBadInput, errdefs.Quote(s.Path), errdefs.Quote(key), errdefs.Quote(shards[prev].Path))
			}
			keys[k] = int32(si)
			b.Field(0).(*array.StringBuilder).Append(key)
			b.Field(1).(*array.StringBuilder).Append(s.Path)
			set := make([]bool, len(fields))
			for _, m := range members {
				i, ok := index[m.ext]
				if !ok {
					return fmt.Errorf("%w: shard %s: member %s has extension %s, which the surveyed shards lack; import with survey=all", ErrBadInput, errdefs.Quote(s.Path), errdefs.Quote(m.name), errdefs.Quote(m.ext))
				}
				set[i] = true
				switch fb := b.Field(i).(type) {
				case *array.Int64Builder:
					v, err := strconv.ParseInt(string(m.data), 10, 64)
					if err != nil || strconv.FormatInt(v, 10) != string(m.data) {
						return fmt.Errorf("%w: shard %s: member %s is not a canonical integer, unlike the surveyed shards; import with survey=all or decode=false", ErrBadInput, errdefs.Quote(s.Path), errdefs.Quote(m.name))
					}
					fb.Append(v)
				case *array.StringBuilder:
					if !utf8.Valid(m.data) || (encs[i-2] == "json" && !json.Valid(m.data)) {
						return fmt.Errorf("%w: shard %s: member %s is not valid %s, unlike the surveyed shards; import with survey=all or decode=false", ErrBadInput, errdefs.Quote(s.Path), errdefs.Quote(m.name), encs[i-2])
					}
					fb.BinaryBuilder.Append(m.data)
				case *array.BinaryBuilder:
					fb.Append(m.data)
				}
				bytes += int64(len(m.data))
			}
			for i := 2; i < len(fields); i++ {
				if !set[i] {
					b.Field(i).AppendNull()
				}
			}
			rows++
			if rows >= opts.batchRows || bytes >= opts.batchBytes {
				return flush()
			}
			return nil
		})
		if err != nil {
			return err
		}
		w.FileDone()
	}
	return flush()
}

// wdsMember is one tar member of a sample.
type wdsMember struct {
	name, ext string
	data      []byte // nil in a survey for members it does not decode
}

// splitMember is webdataset's base_plus_ext: the key is the path up to
// the first dot of the file name, the extension the rest. ok is false for
// names it skips (no dot, or a name starting with one).
func splitMember(name string) (key, ext string, ok bool) {
	dir, base := path.Split(name)
	i := strings.IndexByte(base, '.')
	if i <= 0 || i == len(base)-1 {
		return "", "", false
	}
	return dir + base[:i], base[i+1:], true
}

// openShard opens a shard, gunzipping it when it starts with gzip's
// magic bytes. seekable is true when the result is a plain local file
// that archive/tar can skip members of by seeking.
func openShard(ctx context.Context, src Source, p string, counter *Writer) (r io.Reader, closer func(), seekable bool, err error) {
	rc, err := src.Open(ctx, p)
	if err != nil {
		return nil, nil, false, err
	}
	var magic [2]byte
	n, err := io.ReadFull(rc, magic[:])
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		rc.Close()
		return nil, nil, false, fmt.Errorf("read shard %s: %w", errdefs.Quote(p), err)
	}
	if n == 0 {
		rc.Close()
		return nil, nil, false, fmt.Errorf("%w: shard %s is empty", ErrBadInput, errdefs.Quote(p))
	}
	var base io.Reader
	if sk, ok := rc.(io.ReadSeeker); ok && counter == nil {
		if _, err := sk.Seek(0, io.SeekStart); err != nil {
			rc.Close()
			return nil, nil, false, fmt.Errorf("read shard %s: %w", errdefs.Quote(p), err)
		}
		base = sk
		seekable = true
	} else {
		base = io.MultiReader(strings.NewReader(string(magic[:n])), rc)
		if counter != nil {
			base = counter.CountingReader(base)
		}
	}
	if n == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		if seekable {
			base = bufio.NewReaderSize(base, 1<<20)
		}
		zr, err := gzip.NewReader(base)
		if err != nil {
			rc.Close()
			return nil, nil, false, fmt.Errorf("%w: shard %s: gzip: %w", ErrBadInput, errdefs.Quote(p), err)
		}
		return zr, func() { rc.Close() }, false, nil
	}
	if !seekable {
		base = bufio.NewReaderSize(base, 1<<20)
	}
	return base, func() { rc.Close() }, seekable, nil
}

// walkShard reads one tar shard and calls fn with every sample, members
// in tar order. In a survey only the members of decodable columns carry
// data (and a seekable shard skips the others). Malformed shards fail
// with ErrBadInput naming the shard and member.
func walkShard(ctx context.Context, src Source, p string, opts wdsOptions, survey bool, counter *Writer, fn func(key string, members []wdsMember) error) error {
	var cw *Writer
	if !survey {
		cw = counter
	}
	r, closeShard, _, err := openShard(ctx, src, p, cw)
	if err != nil {
		return err
	}
	defer closeShard()
	tr := tar.NewReader(r)
	var (
		key     string
		members []wdsMember
		size    int64               // the members' bytes, together
		seen    = map[string]bool{} // keys of this shard, to name repeats at once
		last    string              // the last member's name, for messages
	)
	emit := func() error {
		if len(members) == 0 {
			return nil
		}
		err := fn(key, members)
		members, size = members[:0], 0
		return err
	}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			where := "at its start"
			if last != "" {
				where = "after member " + errdefs.Quote(last)
			}
			return fmt.Errorf("%w: shard %s: truncated or corrupt tar %s: %w", ErrBadInput, errdefs.Quote(p), where, err)
		}
		last = hdr.Name
		if hdr.Typeflag != tar.TypeReg && hdr.Typeflag != tar.TypeRegA {
			continue // directories, links, …: webdataset skips them too
		}
		name := hdr.Name
		if strings.HasPrefix(name, "/") || slices.Contains(strings.Split(name, "/"), "..") || strings.ContainsRune(name, 0) {
			return fmt.Errorf("%w: shard %s: member %s has an absolute path or a .. segment", ErrBadInput, errdefs.Quote(p), errdefs.Quote(name))
		}
		k, ext, ok := splitMember(strings.TrimPrefix(name, "./"))
		if !ok {
			continue
		}
		if ext == "__key__" || ext == "__url__" {
			return fmt.Errorf("%w: shard %s: member %s: extension %s is reserved", ErrBadInput, errdefs.Quote(p), errdefs.Quote(name), ext)
		}
		if isPickle(ext) && !opts.pickle {
			return fmt.Errorf("%w: shard %s: member %s is a pickle (.%s); Weft never unpickles. Import with pickle=bytes to keep such members as bytes, or convert them first", ErrPickle, errdefs.Quote(p), errdefs.Quote(name), ext)
		}
		if hdr.Size > opts.maxMember {
			return fmt.Errorf("%w: shard %s: member %s has %d bytes, over max_member_bytes=%d", ErrTooLarge, errdefs.Quote(p), errdefs.Quote(name), hdr.Size, opts.maxMember)
		}
		if k != key {
			if err := emit(); err != nil {
				return err
			}
			if seen[k] {
				return fmt.Errorf("%w: shard %s: key %s appears again at member %s, after other keys; keys must be unique", ErrBadInput, errdefs.Quote(p), errdefs.Quote(k), errdefs.Quote(name))
			}
			seen[k] = true
			key = k
		}
		if size += hdr.Size; size > opts.maxSample {
			return fmt.Errorf("%w: shard %s: key %s: its members reach %d bytes at member %s, over max_sample_bytes=%d", ErrTooLarge, errdefs.Quote(p), errdefs.Quote(k), size, errdefs.Quote(name), opts.maxSample)
		}
		for _, m := range members {
			if m.ext == ext {
				return fmt.Errorf("%w: shard %s: key %s has two members with extension %s (%s)", ErrBadInput, errdefs.Quote(p), errdefs.Quote(k), errdefs.Quote(ext), errdefs.Quote(name))
			}
		}
		m := wdsMember{name: name, ext: ext}
		if !survey || (opts.decode && isDecodable(ext)) {
			m.data = make([]byte, hdr.Size)
			if _, err := io.ReadFull(tr, m.data); err != nil {
				return fmt.Errorf("%w: shard %s: member %s is truncated (%d bytes declared): %w", ErrBadInput, errdefs.Quote(p), errdefs.Quote(name), hdr.Size, err)
			}
		}
		members = append(members, m)
	}
	return emit()
}

func isPickle(ext string) bool {
	last := ext[strings.LastIndexByte(ext, '.')+1:]
	return slices.Contains(wdsPickleExts, strings.ToLower(last))
}

func isDecodable(ext string) bool {
	return slices.Contains(wdsIntExts, ext) || slices.Contains(wdsTextExts, ext) || slices.Contains(wdsJSONExts, ext)
}
