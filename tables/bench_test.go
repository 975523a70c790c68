package tables_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/weftdata/weft/bucket"
	"github.com/weftdata/weft/internal/benchdata"
	"github.com/weftdata/weft/tables"
	"github.com/weftdata/weft/versions"
)

// benchBatches builds the benchmark table in memory.
func benchBatches(rows int64) ([]arrow.RecordBatch, int64) {
	rng := benchdata.NewRNG()
	var recs []arrow.RecordBatch
	var size int64
	for start := int64(0); start < rows; start += benchdata.BatchRows {
		rec := benchdata.Batch(rng, start, min(benchdata.BatchRows, rows-start))
		size += tables.RecordBytes(rec)
		recs = append(recs, rec)
	}
	return recs, size
}

// BenchmarkTables measures append and scan throughput (MB/s of Arrow data)
// on fs and MinIO, and arrow-go's own pqarrow read of the same Parquet file
// with no Weft code in between. Run: make bench (or go test -run '^$'
// -bench Tables -benchtime 1x ./tables/).
func BenchmarkTables(b *testing.B) {
	rows := benchdata.Rows()
	recs, size := benchBatches(rows)
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	b.Logf("table: %d rows, %.1f MiB of Arrow data, %d batches", rows, float64(size)/(1<<20), len(recs))
	ctx := context.Background()

	for _, backend := range []string{"fs", "minio"} {
		var bk bucket.Bucket
		var fsDir string
		switch backend {
		case "fs":
			fsDir = b.TempDir()
			fsb, err := bucket.NewFS(fsDir)
			if err != nil {
				b.Fatal(err)
			}
			bk = fsb
		case "minio":
			bk = newMinIOBucket(b)
		}
		v, err := versions.New(bk, versions.DefaultOptions())
		if err != nil {
			b.Fatal(err)
		}
		s, err := tables.New(v, tables.DefaultOptions())
		if err != nil {
			b.Fatal(err)
		}
		if _, err := v.CreateProject(ctx, "bench"); err != nil {
			b.Fatal(err)
		}
		var (
			last      *tables.AppendResult
			lastTable versions.TableName
			appends   int // -count runs this sub-benchmark more than once
		)
		b.Run(backend+"/append", func(b *testing.B) {
			b.SetBytes(size)
			for i := 0; i < b.N; i++ {
				for _, r := range recs {
					r.Retain()
				}
				rr, err := array.NewRecordReader(benchdata.Schema, recs)
				if err != nil {
					b.Fatal(err)
				}
				for _, r := range recs {
					r.Release()
				}
				lastTable = versions.TableName(fmt.Sprintf("t%d", appends))
				appends++
				last, err = s.Append(ctx, "bench", "main", lastTable, rr, "")
				rr.Release()
				if err != nil {
					b.Fatal(err)
				}
			}
		})
		if last == nil {
			continue
		}
		b.Logf("%s: data file %.1f MiB, %d row groups", backend, float64(last.File.Size)/(1<<20), len(last.File.RowGroups))
		ver, err := s.TableAt(ctx, "bench", last.Commit.ID, lastTable)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(backend+"/scan", func(b *testing.B) {
			b.SetBytes(size)
			for i := 0; i < b.N; i++ {
				var n int64
				for rec, err := range s.Scan(ctx, ver, nil, 0, len(ver.Blocks()), 1<<30) {
					if err != nil {
						b.Fatal(err)
					}
					n += rec.NumRows()
					rec.Release()
				}
				if n != rows {
					b.Fatalf("scanned %d rows, want %d", n, rows)
				}
			}
		})
		// Flight's default batch size (flight.Options.BatchBytes): what
		// a DoGet of a scan reads with.
		b.Run(backend+"/scan-3MiB", func(b *testing.B) {
			b.SetBytes(size)
			for i := 0; i < b.N; i++ {
				var n int64
				for rec, err := range s.Scan(ctx, ver, nil, 0, len(ver.Blocks()), 3<<20) {
					if err != nil {
						b.Fatal(err)
					}
					n += rec.NumRows()
					rec.Release()
				}
				if n != rows {
					b.Fatalf("scanned %d rows, want %d", n, rows)
				}
			}
		})
		if backend == "fs" {
			path := filepath.Join(fsDir, "projects", "bench", ver.Manifest.Files[0].Path)
			b.Run("fs/raw-pqarrow", func(b *testing.B) {
				b.SetBytes(size)
				for i := 0; i < b.N; i++ {
					rawRead(b, path, rows)
				}
			})
		}
	}
}

// rawRead reads every row group of a Parquet file with pqarrow directly,
// the way Weft does (all columns, Parallel on), but from os.File.
func rawRead(b *testing.B, path string, rows int64) {
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	pf, err := file.NewParquetReader(f)
	if err != nil {
		b.Fatal(err)
	}
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{Parallel: true}, memory.DefaultAllocator)
	if err != nil {
		b.Fatal(err)
	}
	cols := make([]int, pf.MetaData().Schema.NumColumns())
	for i := range cols {
		cols[i] = i
	}
	var n int64
	for g := range pf.NumRowGroups() {
		tbl, err := fr.ReadRowGroups(context.Background(), cols, []int{g})
		if err != nil {
			b.Fatal(err)
		}
		n += tbl.NumRows()
		tbl.Release()
	}
	if n != rows {
		b.Fatalf("raw read %d rows, want %d", n, rows)
	}
}
