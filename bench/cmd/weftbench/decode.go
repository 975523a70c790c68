package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/weftdata/weft/tables"
)

type decodeResult struct {
	Kind       string   `json:"kind"`
	Files      []string `json:"files"`
	FileBytes  int64    `json:"file_bytes"` // Parquet bytes on disk
	Rows       int64    `json:"rows"`
	Bytes      int64    `json:"bytes"` // Arrow buffer bytes decoded
	Secs       float64  `json:"secs"`
	RowsPerSec float64  `json:"rows_per_s"`
	MBPerSec   float64  `json:"mb_per_s"`
}

// decode reads every row group of each file in order with pqarrow, on one
// goroutine per file (sequentially, file after file): arrow-go's own
// decode rate of the data, with no Weft code in between.
func decode(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("decode", flag.ContinueOnError)
	fs.SetOutput(stderr)
	parallel := fs.Bool("parallel-columns", false, "decode the columns of a row group in parallel (pqarrow Parallel)")
	batch := fs.Int64("batch-rows", 65536, "rows per record batch read")
	if err := fs.Parse(args); err != nil {
		return errUsage
	}
	if fs.NArg() == 0 {
		fmt.Fprintln(stderr, "decode: name one or more Parquet files")
		return errUsage
	}
	res := decodeResult{Kind: "decode", Files: fs.Args()}
	start := time.Now()
	for _, path := range fs.Args() {
		rows, bytes, size, err := decodeFile(ctx, path, *parallel, *batch)
		if err != nil {
			return fmt.Errorf("decode %s: %w", path, err)
		}
		res.Rows += rows
		res.Bytes += bytes
		res.FileBytes += size
	}
	res.Secs = time.Since(start).Seconds()
	res.RowsPerSec = float64(res.Rows) / res.Secs
	res.MBPerSec = float64(res.Bytes) / 1e6 / res.Secs
	return printJSON(stdout, res)
}

func decodeFile(ctx context.Context, path string, parallel bool, batch int64) (rows, bytes, size int64, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, 0, 0, err
	}
	pf, err := file.NewParquetReader(f)
	if err != nil {
		return 0, 0, 0, err
	}
	defer pf.Close()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{Parallel: parallel, BatchSize: batch}, memory.DefaultAllocator)
	if err != nil {
		return 0, 0, 0, err
	}
	rr, err := fr.GetRecordReader(ctx, nil, nil)
	if err != nil {
		return 0, 0, 0, err
	}
	defer rr.Release()
	for rr.Next() {
		rec := rr.RecordBatch()
		rows += rec.NumRows()
		bytes += tables.RecordBytes(rec)
	}
	if err := rr.Err(); err != nil && !errors.Is(err, io.EOF) {
		return rows, bytes, st.Size(), err
	}
	return rows, bytes, st.Size(), nil
}
