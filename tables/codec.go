package tables

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
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
// incompressibleSample bytes of a's values (true when a has none).
func compresses(enc *zstd.Encoder, a binaryValues) bool {
	var sample []byte
	for i := 0; i < a.Len() && len(sample) < incompressibleSample; i++ {
		if a.IsValid(i) {
			v := a.Value(i)
			sample = append(sample, v[:min(len(v), incompressibleSample-len(sample))]...)
		}
	}
	if len(sample) == 0 {
		return true
	}
	z := enc.EncodeAll(sample, make([]byte, 0, len(sample)))
	return float64(len(z)) <= (1-incompressibleGain)*float64(len(sample))
}

type binaryValues interface {
	arrow.Array
	Value(int) []byte
}
