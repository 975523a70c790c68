package tables

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/klauspost/compress/zstd"
)

// Incompressible columns (WriteOptions.SkipIncompressible): a binary
// column whose sampled values zstd shrinks by less than
// incompressibleGain is stored uncompressed. Compressing JPEG, PNG, MP4
// or random bytes again costs about a core per 150 MB/s and saves nothing.
const (
	incompressibleSample = 1 << 20 // bytes of values sampled per column
	incompressibleGain   = 0.10    // keep zstd if it saves at least this
)

// incompressibleColumns returns the Parquet paths ("img", "image.bytes")
// of rec's binary columns, top level or in structs, whose first values do
// not compress. Lists are not looked into.
func incompressibleColumns(schema *arrow.Schema, rec arrow.RecordBatch) []string {
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))
	if err != nil {
		return nil
	}
	defer enc.Close()
	var out []string
	var walk func(path string, arr arrow.Array)
	walk = func(path string, arr arrow.Array) {
		switch a := arr.(type) {
		case *array.Struct:
			st := a.DataType().(*arrow.StructType)
			for i, f := range st.Fields() {
				walk(path+"."+f.Name, a.Field(i))
			}
		case *array.Binary, *array.LargeBinary:
			if !compresses(enc, a.(binaryValues)) {
				out = append(out, path)
			}
		}
	}
	for i, f := range schema.Fields() {
		walk(f.Name, rec.Column(i))
	}
	return out
}

// compresses reports whether zstd saves incompressibleGain on the first
// incompressibleSample bytes of a's values (true when a has none),
// compressed as the writer would: in pieces of at most a data page, so
// that repeats across rows further apart than a page do not count.
func compresses(enc *zstd.Encoder, a binaryValues) bool {
	var in, out int
	page := make([]byte, 0, pageBytes)
	var z []byte
	flush := func() {
		if len(page) > 0 {
			z = enc.EncodeAll(page, z[:0])
			in, out = in+len(page), out+len(z)
			page = page[:0]
		}
	}
	for i := 0; i < a.Len() && in < incompressibleSample; i++ {
		if !a.IsValid(i) {
			continue
		}
		for v := a.Value(i); len(v) > 0 && in < incompressibleSample; {
			n := min(len(v), pageBytes-len(page))
			page, v = append(page, v[:n]...), v[n:]
			if len(page) == pageBytes {
				flush()
			}
		}
	}
	flush()
	if in == 0 {
		return true
	}
	return float64(out) <= (1-incompressibleGain)*float64(in)
}

type binaryValues interface {
	arrow.Array
	Value(int) []byte
}

// wideColumns returns the top-level binary columns of rec
// whose every value (and at least one) is longer than Parquet's limit for
// a statistic (parquet.DefaultMaxStatsSize): the writer would compute
// each page's min and max, copy them (a page's size of garbage per page:
// the put's size again, for 64 KiB images) and then drop them as too
// long. Such a column is written without statistics: its pages and chunks
// lose their null counts, nothing else.
func wideColumns(schema *arrow.Schema, rec arrow.RecordBatch) []string {
	var out []string
	for i, f := range schema.Fields() {
		a, ok := rec.Column(i).(binaryValues)
		if !ok || a.Len() == a.NullN() {
			continue
		}
		wide := true
		for j := 0; j < a.Len() && wide; j++ {
			wide = !a.IsValid(j) || len(a.Value(j)) > int(parquet.DefaultMaxStatsSize)
		}
		if wide {
			out = append(out, f.Name)
		}
	}
	return out
}
