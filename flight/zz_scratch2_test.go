package flight_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/stretchr/testify/require"
)

func BenchmarkScratch2(b *testing.B) {
	matches, _ := filepath.Glob("/tmp/scanbench/projects/bench/data/t/*.parquet")
	f, err := os.Open(matches[0])
	require.NoError(b, err)
	defer f.Close()
	st, _ := f.Stat()
	for _, bs := range []int64{0, 2978, 8192, 32768} {
		for _, pre := range []bool{false, true} {
			pf, err := file.NewParquetReader(io.NewSectionReader(f, 0, st.Size()), file.WithReadProps(parquet.NewReaderProperties(memory.DefaultAllocator)))
			require.NoError(b, err)
			fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{Parallel: true, BatchSize: bs, PreAllocBinaryData: pre}, memory.DefaultAllocator)
			require.NoError(b, err)
			start := time.Now()
			var rows int64
			if bs == 0 {
				for rg := range pf.NumRowGroups() {
					tbl, err := fr.ReadRowGroups(context.Background(), []int{0, 1, 2, 3, 4}, []int{rg})
					require.NoError(b, err)
					rows += tbl.NumRows()
					tbl.Release()
				}
			} else {
				rr, err := fr.GetRecordReader(context.Background(), nil, nil)
				require.NoError(b, err)
				for rr.Next() {
					rows += rr.RecordBatch().NumRows()
				}
				rr.Release()
			}
			d := time.Since(start)
			b.Logf("batch %6d prealloc %v: %d rows in %v = %.0f MB/s", bs, pre, rows, d, float64(rows*1056)/1e6/d.Seconds())
		}
	}
}
