package importers

import (
	"bytes"
	"compress/bzip2"
	"compress/gzip"
	"context"
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha3"
	"crypto/sha512"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"math"
	"path"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/andybalholm/brotli"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/float16"
	"github.com/cespare/xxhash/v2"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/zeebo/xxh3"
	"golang.org/x/crypto/blake2b"
	"golang.org/x/crypto/blake2s"

	"github.com/weftdata/weft/errdefs"
	"github.com/weftdata/weft/versions"
)

// MDS imports MosaicML Streaming datasets ("mds"): index.json (version 2)
// and its shards, raw or compressed (zstd, gz, bz2, br, snappy), hashes
// verified. The source's root index.json is one table (BaseTable); a
// source without one imports every index.json below it, each a table
// named BaseTable.DIR (the directory's path with "/" as "."). Column
// types per encoding are in the README; pkl columns are refused (never
// unpickled).
//
// Options:
//
//	max_shard_bytes=N  largest shard, compressed or not (default 1 GiB; at most 2 GiB - 1)
//	batch_rows=N       rows per written batch (default 1024)
type MDS struct{}

// Name is "mds".
func (MDS) Name() string { return "mds" }

// MetaMDSEncoding is the field metadata key holding a column's MDS
// encoding as index.json names it ("int32", "ndarray:float32:2,3", …).
const MetaMDSEncoding = "weft.mds.encoding"

type mdsIndex struct {
	Version int        `json:"version"`
	Shards  []mdsShard `json:"shards"`
}

type mdsFileInfo struct {
	Basename string            `json:"basename"`
	Bytes    int64             `json:"bytes"`
	Hashes   map[string]string `json:"hashes"`
}

type mdsShard struct {
	Format          string       `json:"format"`
	Version         int          `json:"version"`
	Compression     *string      `json:"compression"`
	Samples         int64        `json:"samples"`
	ColumnNames     []string     `json:"column_names"`
	ColumnEncodings []string     `json:"column_encodings"`
	ColumnSizes     []*int64     `json:"column_sizes"`
	RawData         mdsFileInfo  `json:"raw_data"`
	ZipData         *mdsFileInfo `json:"zip_data"`
}

// Import reads the index files, checks every shard's columns agree, and
// writes the samples shard by shard.
func (MDS) Import(ctx context.Context, src Source, w *Writer, o FormatOptions) error {
	if err := o.Check("mds", "max_shard_bytes", "batch_rows"); err != nil {
		return err
	}
	maxShard, err := o.Int("max_shard_bytes", 1<<30)
	if err != nil {
		return err
	}
	batchRows, err := o.Int("batch_rows", 1024)
	if err != nil {
		return err
	}
	if maxShard < 1 || maxShard > math.MaxInt32 || batchRows < 1 || batchRows > 1<<20 {
		// A shard is held whole (decompressed) while its samples are read.
		return fmt.Errorf("%w: max_shard_bytes=%d and batch_rows=%d: want 1 to 2147483647 and 1 to 1048576", ErrBadOption, maxShard, batchRows)
	}
	all, err := src.List(ctx, "")
	if err != nil {
		return err
	}
	var indexes []string
	for _, f := range all {
		if path.Base(f.Path) == "index.json" {
			if f.Path == "index.json" {
				indexes = []string{"index.json"}
				break
			}
			indexes = append(indexes, f.Path)
		}
	}
	if len(indexes) == 0 {
		return fmt.Errorf("%w: %s has no index.json (an MDS dataset's index, written by MDSWriter)", ErrSourceNotFound, errdefs.Quote(src.URL()))
	}
	w.SetSourceVersion("mds index v2")
	type stream struct {
		dir   string
		index *mdsIndex
		table string
	}
	var streams []stream
	for _, ip := range indexes {
		idx, err := readMDSIndex(ctx, src, ip, maxShard)
		if err != nil {
			return err
		}
		dir := path.Dir(ip)
		table := string(w.BaseTable())
		if dir != "." {
			table += "." + sanitizeTableSuffix(dir)
		}
		streams = append(streams, stream{dir: dir, index: idx, table: table})
		var n, b int64
		for _, s := range idx.Shards {
			n++
			if s.ZipData != nil {
				b += s.ZipData.Bytes
			} else {
				b += s.RawData.Bytes
			}
		}
		w.Plan(n, b)
	}
	for _, st := range streams {
		if err := importMDSStream(ctx, src, w, st.dir, st.index, st.table, maxShard, batchRows); err != nil {
			return err
		}
	}
	return nil
}

func sanitizeTableSuffix(dir string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '/':
			return '.'
		case r < 128 && (r == '_' || r == '.' || r == '-' || (r >= '0' && r <= '9') || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z')):
			return r
		}
		return '_'
	}, dir)
}

func readMDSIndex(ctx context.Context, src Source, p string, maxBytes int64) (*mdsIndex, error) {
	data, err := readJSONFile(ctx, src, p)
	if err != nil {
		return nil, err
	}
	var idx mdsIndex
	if err := json.Unmarshal(data, &idx); err != nil {
		return nil, fmt.Errorf("%w: %s is not an MDS index: %w", ErrBadInput, errdefs.Quote(p), err)
	}
	if idx.Version != 2 {
		return nil, fmt.Errorf("%w: %s has index version %d; this importer reads version 2", ErrBadInput, errdefs.Quote(p), idx.Version)
	}
	if len(idx.Shards) == 0 {
		return nil, fmt.Errorf("%w: %s lists no shards", ErrBadInput, errdefs.Quote(p))
	}
	for i, s := range idx.Shards {
		where := fmt.Sprintf("%s: shard %d (%s)", errdefs.Quote(p), i, errdefs.Quote(s.RawData.Basename))
		if s.Format != "mds" {
			return nil, fmt.Errorf("%w: %s has format %s; only mds shards are read (not json or csv)", ErrBadInput, where, errdefs.Quote(s.Format))
		}
		if len(s.ColumnNames) == 0 || len(s.ColumnNames) != len(s.ColumnEncodings) || len(s.ColumnNames) != len(s.ColumnSizes) {
			return nil, fmt.Errorf("%w: %s: column_names, column_encodings and column_sizes differ in length or are empty", ErrBadInput, where)
		}
		if i > 0 && (!slices.Equal(s.ColumnNames, idx.Shards[0].ColumnNames) || !slices.Equal(s.ColumnEncodings, idx.Shards[0].ColumnEncodings)) {
			return nil, fmt.Errorf("%w: %s has other columns than shard 0", ErrBadInput, where)
		}
		if s.RawData.Bytes > maxBytes || (s.ZipData != nil && s.ZipData.Bytes > maxBytes) {
			return nil, fmt.Errorf("%w: %s is larger than max_shard_bytes=%d", ErrTooLarge, where, maxBytes)
		}
		for _, f := range []*mdsFileInfo{&s.RawData, s.ZipData} {
			if f != nil && (f.Basename == "" || checkRelPath(f.Basename) != nil) {
				return nil, fmt.Errorf("%w: %s names the file %s, which is not a path inside the dataset", ErrBadInput, where, errdefs.Quote(f.Basename))
			}
		}
		if s.Samples < 0 || s.Samples > math.MaxUint32 {
			return nil, fmt.Errorf("%w: %s has %d samples", ErrBadInput, where, s.Samples)
		}
	}
	return &idx, nil
}

// mdsCol is one column: its decoder into a builder.
type mdsCol struct {
	name, enc string
	size      int64 // fixed size; -1 variable
	field     arrow.Field
	// append decodes one value into the column's builder.
	append func(b array.Builder, data []byte) error
}

func importMDSStream(ctx context.Context, src Source, w *Writer, dir string, idx *mdsIndex, table string, maxShard, batchRows int64) error {
	first := idx.Shards[0]
	indexPath := path.Join(dir, "index.json")
	cols := make([]*mdsCol, len(first.ColumnNames))
	fields := make([]arrow.Field, len(cols))
	for i, name := range first.ColumnNames {
		c, err := mdsColumn(name, first.ColumnEncodings[i])
		if err != nil {
			return fmt.Errorf("%s: %w", errdefs.Quote(indexPath), err)
		}
		c.size = -1
		if s := first.ColumnSizes[i]; s != nil {
			c.size = *s
		}
		cols[i] = c
		fields[i] = c.field
	}
	schema := arrow.NewSchema(fields, nil)
	tw, err := w.Table(versions.TableName(table), schema)
	if err != nil {
		return err
	}
	b := array.NewRecordBuilder(w.Allocator(), schema)
	defer b.Release()
	var rows int64
	for si, sh := range idx.Shards {
		data, file, err := readMDSShard(ctx, src, w, dir, sh)
		if err != nil {
			return err
		}
		n, err := decodeMDSShard(data, cols, b, func() error {
			rows++
			if rows >= batchRows {
				rec := b.NewRecordBatch()
				defer rec.Release()
				rows = 0
				return tw.Write(ctx, rec)
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("%w: shard %s (%d of %s): %w", ErrBadInput, errdefs.Quote(file), si, errdefs.Quote(indexPath), err)
		}
		if n != sh.Samples {
			return fmt.Errorf("%w: shard %s holds %d samples; %s says %d", ErrBadInput, errdefs.Quote(file), n, errdefs.Quote(indexPath), sh.Samples)
		}
		w.FileDone()
	}
	if rows > 0 {
		rec := b.NewRecordBatch()
		defer rec.Release()
		return tw.Write(ctx, rec)
	}
	return nil
}

// readMDSShard reads one shard whole (shards are bounded by
// max_shard_bytes), checks its hashes and size, and decompresses it.
func readMDSShard(ctx context.Context, src Source, w *Writer, dir string, sh mdsShard) ([]byte, string, error) {
	info := &sh.RawData
	if sh.ZipData != nil {
		info = sh.ZipData
	}
	p := path.Join(dir, info.Basename)
	if dir == "." {
		p = info.Basename
	}
	rc, err := src.Open(ctx, p)
	if err != nil {
		return nil, p, fmt.Errorf("shard %s: %w", errdefs.Quote(p), err)
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(w.CountingReader(rc), info.Bytes+1))
	if err != nil {
		return nil, p, fmt.Errorf("read shard %s: %w", errdefs.Quote(p), err)
	}
	if int64(len(data)) != info.Bytes {
		return nil, p, fmt.Errorf("%w: shard %s has %d bytes; the index says %d (truncated or replaced)", ErrBadInput, errdefs.Quote(p), len(data), info.Bytes)
	}
	if err := checkMDSHashes(data, info.Hashes, p); err != nil {
		return nil, p, err
	}
	if sh.ZipData == nil {
		return data, p, nil
	}
	algo := ""
	if sh.Compression != nil {
		algo, _, _ = strings.Cut(*sh.Compression, ":")
	}
	raw, err := mdsDecompress(algo, data, sh.RawData.Bytes)
	if err != nil {
		return nil, p, fmt.Errorf("%w: shard %s: %w", ErrBadInput, errdefs.Quote(p), err)
	}
	if int64(len(raw)) != sh.RawData.Bytes {
		return nil, p, fmt.Errorf("%w: shard %s decompresses to %d bytes; the index says %d", ErrBadInput, errdefs.Quote(p), len(raw), sh.RawData.Bytes)
	}
	if err := checkMDSHashes(raw, sh.RawData.Hashes, p+" (decompressed)"); err != nil {
		return nil, p, err
	}
	return raw, p, nil
}

func mdsDecompress(algo string, data []byte, rawBytes int64) ([]byte, error) {
	limit := func(r io.Reader) ([]byte, error) {
		out, err := io.ReadAll(io.LimitReader(r, rawBytes+1))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", algo, err)
		}
		return out, nil
	}
	switch algo {
	case "zstd":
		d, err := zstd.NewReader(bytes.NewReader(data), zstd.WithDecoderMaxMemory(uint64(rawBytes)+1<<20), zstd.WithDecoderConcurrency(1))
		if err != nil {
			return nil, fmt.Errorf("zstd: %w", err)
		}
		defer d.Close()
		return limit(d)
	case "gz":
		r, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			return nil, fmt.Errorf("gz: %w", err)
		}
		return limit(r)
	case "bz2":
		return limit(bzip2.NewReader(bytes.NewReader(data)))
	case "br":
		return limit(brotli.NewReader(bytes.NewReader(data)))
	case "snappy":
		n, err := s2.DecodedLen(data)
		if err != nil || int64(n) != rawBytes {
			return nil, fmt.Errorf("snappy: bad block header (length %d, want %d): %v", n, rawBytes, err)
		}
		return s2.Decode(nil, data)
	}
	return nil, fmt.Errorf("unknown compression %s; known: br, bz2, gz, snappy, zstd", errdefs.Quote(algo))
}

// mdsHashes are the algorithms streaming's get_hash offers that this
// importer checks (hashlib's and xxhash's hexdigest).
var mdsHashes = map[string]func() hash.Hash{
	"md5": md5.New, "sha1": sha1.New, "sha224": sha256.New224, "sha256": sha256.New,
	"sha384": sha512.New384, "sha512": sha512.New,
	"sha3_224": func() hash.Hash { return sha3.New224() }, "sha3_256": func() hash.Hash { return sha3.New256() },
	"sha3_384": func() hash.Hash { return sha3.New384() }, "sha3_512": func() hash.Hash { return sha3.New512() },
	"blake2b": func() hash.Hash { h, _ := blake2b.New512(nil); return h },
	"blake2s": func() hash.Hash { h, _ := blake2s.New256(nil); return h },
	"xxh64":   func() hash.Hash { return xxhash.New() },
}

func checkMDSHashes(data []byte, hashes map[string]string, file string) error {
	for _, algo := range slices.Sorted(func(yield func(string) bool) {
		for k := range hashes {
			if !yield(k) {
				return
			}
		}
	}) {
		want := strings.ToLower(hashes[algo])
		var got string
		switch algo {
		case "xxh3_64":
			var b [8]byte
			binary.BigEndian.PutUint64(b[:], xxh3.Hash(data))
			got = hex.EncodeToString(b[:])
		case "xxh3_128", "xxh128":
			b := xxh3.Hash128(data).Bytes()
			got = hex.EncodeToString(b[:])
		default:
			newHash, ok := mdsHashes[algo]
			if !ok {
				return fmt.Errorf("%w: %s: hash %s is not one this importer checks (md5, sha1, sha224-512, sha3_*, blake2b, blake2s, xxh64, xxh3_64, xxh3_128, xxh128)", ErrBadInput, errdefs.Quote(file), errdefs.Quote(algo))
			}
			h := newHash()
			h.Write(data)
			got = hex.EncodeToString(h.Sum(nil))
		}
		if got != want {
			return fmt.Errorf("%w: %s: %s hash mismatch: the index says %s, the file hashes to %s (corrupt or replaced)", ErrBadInput, errdefs.Quote(file), algo, want, got)
		}
	}
	return nil
}

// decodeMDSShard decodes every sample of a raw shard into b, calling
// each after every sample; it returns the sample count.
func decodeMDSShard(data []byte, cols []*mdsCol, b *array.RecordBuilder, each func() error) (int64, error) {
	if len(data) < 4 {
		return 0, fmt.Errorf("shorter than its header (%d bytes)", len(data))
	}
	n := int64(binary.LittleEndian.Uint32(data))
	if 4+4*(n+1) > int64(len(data)) {
		return 0, fmt.Errorf("says it holds %d samples, but its %d bytes cannot hold their offsets", n, len(data))
	}
	var variable int
	for _, c := range cols {
		if c.size < 0 {
			variable++
		}
	}
	off := func(i int64) int64 { return int64(binary.LittleEndian.Uint32(data[4+4*i:])) }
	for i := range n {
		lo, hi := off(i), off(i+1)
		if lo > hi || hi > int64(len(data)) || lo < 4+4*(n+1) {
			return i, fmt.Errorf("sample %d: offsets %d..%d outside the shard's %d bytes", i, lo, hi, len(data))
		}
		s := data[lo:hi]
		if int64(len(s)) < 4*int64(variable) {
			return i, fmt.Errorf("sample %d: %d bytes, too short for its %d column sizes", i, len(s), variable)
		}
		sizes := s[:4*variable]
		body := s[4*variable:]
		vi := 0
		for ci, c := range cols {
			size := c.size
			if size < 0 {
				size = int64(binary.LittleEndian.Uint32(sizes[4*vi:]))
				vi++
			}
			if size > int64(len(body)) {
				return i, fmt.Errorf("sample %d, column %s: %d bytes declared, %d left", i, errdefs.Quote(c.name), size, len(body))
			}
			if err := c.append(b.Field(ci), body[:size]); err != nil {
				return i, fmt.Errorf("sample %d, column %s (%s): %w", i, errdefs.Quote(c.name), c.enc, err)
			}
			body = body[size:]
		}
		if len(body) != 0 {
			return i, fmt.Errorf("sample %d: %d bytes left over after its columns", i, len(body))
		}
		if err := each(); err != nil {
			return i + 1, err
		}
	}
	return n, nil
}

// ndarray value dtypes by MDS code, and their Arrow types.
var mdsDTypes = map[string]arrow.DataType{
	"uint8": arrow.PrimitiveTypes.Uint8, "int8": arrow.PrimitiveTypes.Int8,
	"uint16": arrow.PrimitiveTypes.Uint16, "int16": arrow.PrimitiveTypes.Int16, "float16": arrow.FixedWidthTypes.Float16,
	"uint32": arrow.PrimitiveTypes.Uint32, "int32": arrow.PrimitiveTypes.Int32, "float32": arrow.PrimitiveTypes.Float32,
	"uint64": arrow.PrimitiveTypes.Uint64, "int64": arrow.PrimitiveTypes.Int64, "float64": arrow.PrimitiveTypes.Float64,
}

var mdsDTypeCodes = map[byte]string{8: "uint8", 9: "int8", 16: "uint16", 17: "int16", 18: "float16", 32: "uint32", 33: "int32", 34: "float32", 64: "uint64", 65: "int64", 66: "float64"}

func mdsColumn(name, enc string) (*mdsCol, error) {
	meta := arrow.NewMetadata([]string{MetaMDSEncoding}, []string{enc})
	c := &mdsCol{name: name, enc: enc}
	field := func(dt arrow.DataType) { c.field = arrow.Field{Name: name, Type: dt, Nullable: true, Metadata: meta} }
	fixed := func(n int, dt arrow.DataType, put func(b array.Builder, d []byte)) {
		field(dt)
		c.append = func(b array.Builder, d []byte) error {
			if len(d) != n {
				return fmt.Errorf("%d bytes, want %d", len(d), n)
			}
			put(b, d)
			return nil
		}
	}
	le := binary.LittleEndian
	switch base, _, _ := strings.Cut(enc, ":"); base {
	case "bytes", "jpeg", "png", "pil":
		field(arrow.BinaryTypes.Binary)
		c.append = func(b array.Builder, d []byte) error { b.(*array.BinaryBuilder).Append(d); return nil }
	case "str", "json", "str_decimal":
		field(arrow.BinaryTypes.String)
		c.append = func(b array.Builder, d []byte) error {
			if !utf8.Valid(d) {
				return errors.New("not valid UTF-8")
			}
			if base == "json" && !json.Valid(d) {
				return errors.New("not valid JSON")
			}
			b.(*array.StringBuilder).BinaryBuilder.Append(d)
			return nil
		}
	case "int", "int64":
		fixed(8, arrow.PrimitiveTypes.Int64, func(b array.Builder, d []byte) { b.(*array.Int64Builder).Append(int64(le.Uint64(d))) })
	case "int8":
		fixed(1, arrow.PrimitiveTypes.Int8, func(b array.Builder, d []byte) { b.(*array.Int8Builder).Append(int8(d[0])) })
	case "int16":
		fixed(2, arrow.PrimitiveTypes.Int16, func(b array.Builder, d []byte) { b.(*array.Int16Builder).Append(int16(le.Uint16(d))) })
	case "int32":
		fixed(4, arrow.PrimitiveTypes.Int32, func(b array.Builder, d []byte) { b.(*array.Int32Builder).Append(int32(le.Uint32(d))) })
	case "uint8":
		fixed(1, arrow.PrimitiveTypes.Uint8, func(b array.Builder, d []byte) { b.(*array.Uint8Builder).Append(d[0]) })
	case "uint16":
		fixed(2, arrow.PrimitiveTypes.Uint16, func(b array.Builder, d []byte) { b.(*array.Uint16Builder).Append(le.Uint16(d)) })
	case "uint32":
		fixed(4, arrow.PrimitiveTypes.Uint32, func(b array.Builder, d []byte) { b.(*array.Uint32Builder).Append(le.Uint32(d)) })
	case "uint64":
		fixed(8, arrow.PrimitiveTypes.Uint64, func(b array.Builder, d []byte) { b.(*array.Uint64Builder).Append(le.Uint64(d)) })
	case "float16":
		fixed(2, arrow.FixedWidthTypes.Float16, func(b array.Builder, d []byte) {
			b.(*array.Float16Builder).Append(float16.FromBits(le.Uint16(d)))
		})
	case "float32":
		fixed(4, arrow.PrimitiveTypes.Float32, func(b array.Builder, d []byte) { b.(*array.Float32Builder).Append(math.Float32frombits(le.Uint32(d))) })
	case "float64":
		fixed(8, arrow.PrimitiveTypes.Float64, func(b array.Builder, d []byte) { b.(*array.Float64Builder).Append(math.Float64frombits(le.Uint64(d))) })
	case "str_int":
		field(arrow.PrimitiveTypes.Int64)
		c.append = func(b array.Builder, d []byte) error {
			v, err := strconv.ParseInt(string(d), 10, 64)
			if err != nil {
				return fmt.Errorf("%s is not an int64 (str_int beyond 64 bits is not supported)", errdefs.Quote(string(d)))
			}
			b.(*array.Int64Builder).Append(v)
			return nil
		}
	case "str_float":
		field(arrow.PrimitiveTypes.Float64)
		c.append = func(b array.Builder, d []byte) error {
			v, err := strconv.ParseFloat(string(d), 64)
			if err != nil {
				return fmt.Errorf("%s is not a float", errdefs.Quote(string(d)))
			}
			b.(*array.Float64Builder).Append(v)
			return nil
		}
	case "jpeg_array", "jpegarray", "list[pil]", "list[jpeg]", "list[png]":
		field(arrow.ListOf(arrow.BinaryTypes.Binary))
		listHeader := base != "jpeg_array" && base != "jpegarray" // List: a placeholder uint32 first
		c.append = func(b array.Builder, d []byte) error { return appendMDSList(b.(*array.ListBuilder), d, listHeader) }
	case "ndarray":
		return mdsNDArray(c, enc, meta)
	case "pkl":
		return nil, fmt.Errorf("%w: column %s has encoding pkl (pickle); Weft never unpickles. Rewrite the column with another encoding (bytes, json, ndarray)", ErrPickle, errdefs.Quote(name))
	default:
		return nil, fmt.Errorf("%w: column %s has encoding %s, which this importer does not know", ErrBadInput, errdefs.Quote(name), errdefs.Quote(enc))
	}
	return c, nil
}

// appendMDSList splits an MDS list of encoded images into list<binary>.
func appendMDSList(b *array.ListBuilder, d []byte, placeholder bool) error {
	le := binary.LittleEndian
	if placeholder {
		if len(d) < 4 {
			return errors.New("too short for a list")
		}
		d = d[4:]
	}
	if len(d) < 4 {
		return errors.New("too short for a list")
	}
	n := int64(le.Uint32(d))
	if 4+4*n > int64(len(d)) {
		return fmt.Errorf("list of %d elements in %d bytes", n, len(d))
	}
	sizes := d[4 : 4+4*n]
	body := d[4+4*n:]
	b.Append(true)
	vb := b.ValueBuilder().(*array.BinaryBuilder)
	for i := range n {
		sz := int64(le.Uint32(sizes[4*i:]))
		if sz > int64(len(body)) {
			return fmt.Errorf("list element %d: %d bytes declared, %d left", i, sz, len(body))
		}
		vb.Append(body[:sz])
		body = body[sz:]
	}
	if len(body) != 0 {
		return fmt.Errorf("%d bytes left after the list's elements", len(body))
	}
	return nil
}

// mdsNDArray maps ndarray[:DTYPE[:SHAPE]]: a fixed dtype and shape is a
// fixed_size_list<DTYPE>[prod(SHAPE)] (the shape in MetaMDSEncoding); a
// fixed dtype only, struct<shape: list<int64>, data: list<DTYPE>>; no
// dtype, struct<dtype: string, shape: list<int64>, data: binary> with the
// raw little-endian values.
func mdsNDArray(c *mdsCol, enc string, meta arrow.Metadata) (*mdsCol, error) {
	parts := strings.Split(enc, ":")
	var dtype string
	var shape []int64
	if len(parts) > 3 {
		return nil, fmt.Errorf("%w: column %s: bad encoding %s", ErrBadInput, errdefs.Quote(c.name), errdefs.Quote(enc))
	}
	if len(parts) >= 2 && parts[1] != "" {
		dtype = parts[1]
		if _, ok := mdsDTypes[dtype]; !ok {
			return nil, fmt.Errorf("%w: column %s: unknown ndarray dtype %s", ErrBadInput, errdefs.Quote(c.name), errdefs.Quote(dtype))
		}
	}
	if len(parts) == 3 {
		if dtype == "" {
			return nil, fmt.Errorf("%w: column %s: ndarray shape without a dtype", ErrBadInput, errdefs.Quote(c.name))
		}
		for _, s := range strings.Split(parts[2], ",") {
			v, err := strconv.ParseInt(s, 10, 64)
			if err != nil || v < 1 || v > 1<<31 {
				return nil, fmt.Errorf("%w: column %s: bad ndarray shape %s", ErrBadInput, errdefs.Quote(c.name), errdefs.Quote(parts[2]))
			}
			shape = append(shape, v)
		}
	}
	shapeList := arrow.ListOf(arrow.PrimitiveTypes.Int64)
	switch {
	case shape != nil:
		n := int64(1)
		for _, s := range shape {
			n *= s
			if n > 1<<31 {
				return nil, fmt.Errorf("%w: column %s: ndarray shape %s too large", ErrBadInput, errdefs.Quote(c.name), parts[2])
			}
		}
		dt := mdsDTypes[dtype]
		c.field = arrow.Field{Name: c.name, Type: arrow.FixedSizeListOf(int32(n), dt), Nullable: true, Metadata: meta}
		width := int64(dt.(arrow.FixedWidthDataType).Bytes())
		c.append = func(b array.Builder, d []byte) error {
			if int64(len(d)) != n*width {
				return fmt.Errorf("%d bytes, want %d", len(d), n*width)
			}
			lb := b.(*array.FixedSizeListBuilder)
			lb.Append(true)
			return appendLE(lb.ValueBuilder(), d)
		}
	case dtype != "":
		dt := mdsDTypes[dtype]
		c.field = arrow.Field{Name: c.name, Type: arrow.StructOf(
			arrow.Field{Name: "shape", Type: shapeList},
			arrow.Field{Name: "data", Type: arrow.ListOf(dt)}), Nullable: true, Metadata: meta}
		width := int64(dt.(arrow.FixedWidthDataType).Bytes())
		c.append = func(b array.Builder, d []byte) error {
			shp, rest, err := mdsShape(d)
			if err != nil {
				return err
			}
			if err := checkShape(shp, int64(len(rest)), width); err != nil {
				return err
			}
			sb := b.(*array.StructBuilder)
			sb.Append(true)
			appendShape(sb.FieldBuilder(0).(*array.ListBuilder), shp)
			lb := sb.FieldBuilder(1).(*array.ListBuilder)
			lb.Append(true)
			return appendLE(lb.ValueBuilder(), rest)
		}
	default:
		c.field = arrow.Field{Name: c.name, Type: arrow.StructOf(
			arrow.Field{Name: "dtype", Type: arrow.BinaryTypes.String},
			arrow.Field{Name: "shape", Type: shapeList},
			arrow.Field{Name: "data", Type: arrow.BinaryTypes.Binary}), Nullable: true, Metadata: meta}
		c.append = func(b array.Builder, d []byte) error {
			if len(d) < 1 {
				return errors.New("empty ndarray")
			}
			dtype, ok := mdsDTypeCodes[d[0]]
			if !ok {
				return fmt.Errorf("unknown ndarray dtype code %d", d[0])
			}
			shp, rest, err := mdsShape(d[1:])
			if err != nil {
				return err
			}
			if err := checkShape(shp, int64(len(rest)), int64(mdsDTypes[dtype].(arrow.FixedWidthDataType).Bytes())); err != nil {
				return err
			}
			sb := b.(*array.StructBuilder)
			sb.Append(true)
			sb.FieldBuilder(0).(*array.StringBuilder).Append(dtype)
			appendShape(sb.FieldBuilder(1).(*array.ListBuilder), shp)
			sb.FieldBuilder(2).(*array.BinaryBuilder).Append(rest)
			return nil
		}
	}
	return c, nil
}

// mdsShape reads [ndim<<2 | shape dtype] [shape] and returns the rest.
func mdsShape(d []byte) ([]int64, []byte, error) {
	if len(d) < 1 {
		return nil, nil, errors.New("no ndarray shape")
	}
	ndim := int(d[0] >> 2)
	w := 1 << (d[0] & 3)
	if len(d) < 1+ndim*w {
		return nil, nil, errors.New("ndarray shape truncated")
	}
	shape := make([]int64, ndim)
	for i := range ndim {
		p := d[1+i*w:]
		switch w {
		case 1:
			shape[i] = int64(p[0])
		case 2:
			shape[i] = int64(binary.LittleEndian.Uint16(p))
		case 4:
			shape[i] = int64(binary.LittleEndian.Uint32(p))
		default:
			shape[i] = int64(binary.LittleEndian.Uint64(p))
		}
	}
	return shape, d[1+ndim*w:], nil
}

func checkShape(shape []int64, n, width int64) error {
	count := int64(1)
	for _, s := range shape {
		if s < 0 || (s > 0 && count > math.MaxInt64/s) {
			return fmt.Errorf("bad ndarray shape %v", shape)
		}
		count *= s
	}
	if count > math.MaxInt64/width || count*width != n {
		return fmt.Errorf("ndarray of shape %v needs %d bytes, has %d", shape, count*width, n)
	}
	return nil
}

func appendShape(b *array.ListBuilder, shape []int64) {
	b.Append(true)
	b.ValueBuilder().(*array.Int64Builder).AppendValues(shape, nil)
}

// appendLE appends little-endian values to a primitive builder.
func appendLE(b array.Builder, d []byte) error {
	le := binary.LittleEndian
	switch vb := b.(type) {
	case *array.Uint8Builder:
		vb.AppendValues(d, nil)
	case *array.Int8Builder:
		for _, v := range d {
			vb.Append(int8(v))
		}
	case *array.Uint16Builder:
		for i := 0; i+2 <= len(d); i += 2 {
			vb.Append(le.Uint16(d[i:]))
		}
	case *array.Int16Builder:
		for i := 0; i+2 <= len(d); i += 2 {
			vb.Append(int16(le.Uint16(d[i:])))
		}
	case *array.Float16Builder:
		for i := 0; i+2 <= len(d); i += 2 {
			vb.Append(float16.FromBits(le.Uint16(d[i:])))
		}
	case *array.Uint32Builder:
		for i := 0; i+4 <= len(d); i += 4 {
			vb.Append(le.Uint32(d[i:]))
		}
	case *array.Int32Builder:
		for i := 0; i+4 <= len(d); i += 4 {
			vb.Append(int32(le.Uint32(d[i:])))
		}
	case *array.Float32Builder:
		for i := 0; i+4 <= len(d); i += 4 {
			vb.Append(math.Float32frombits(le.Uint32(d[i:])))
		}
	case *array.Uint64Builder:
		for i := 0; i+8 <= len(d); i += 8 {
			vb.Append(le.Uint64(d[i:]))
		}
	case *array.Int64Builder:
		for i := 0; i+8 <= len(d); i += 8 {
			vb.Append(int64(le.Uint64(d[i:])))
		}
	case *array.Float64Builder:
		for i := 0; i+8 <= len(d); i += 8 {
			vb.Append(math.Float64frombits(le.Uint64(d[i:])))
		}
	default:
		return fmt.Errorf("no builder for %s", b.Type())
	}
	return nil
}
