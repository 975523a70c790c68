package importers

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weftdata/weft/bucket"
	"github.com/weftdata/weft/internal/s3test"
	"github.com/weftdata/weft/tables"
	"github.com/weftdata/weft/versions"
)

// BenchmarkImportThroughput imports the datasets under
// $WEFT_IMPORT_BENCH (bench/import.sh writes them with the formats' own
// writers: DIR/FORMAT or DIR/FORMAT-LABEL, e.g. wds, mds, hf, hf-parquet),
// from the local directory and from MinIO, into a fresh fs store, and
// prints for each the rate of just reading the source's bytes (the same
// Source the import reads through, every file streamed to its end), the
// rate of copying them into a store's bucket unparsed (read + fsync'd
// write: the ceiling for any import into that store), the import's MB/s
// and rows/s, and import/read and import/copy. One pass per b.N.
func BenchmarkImportThroughput(b *testing.B) {
	root := os.Getenv("WEFT_IMPORT_BENCH")
	if root == "" {
		b.Skip("set WEFT_IMPORT_BENCH to a directory of datasets (bench/import.sh does)")
	}
	ents, err := os.ReadDir(root)
	if err != nil {
		b.Fatal(err)
	}
	srv := s3test.StartMinIO(b)
	ctx := context.Background()
	fmt.Printf("%-12s %-5s %6s %10s %10s %9s %7s %10s %10s %6s\n", "dataset", "src", "MB", "read MB/s", "copy MB/s", "imp MB/s", "rows/s", "imp/read", "imp/copy", "rows")
	for range b.N {
		for _, e := range ents {
			if !e.IsDir() {
				continue
			}
			format, _, _ := strings.Cut(e.Name(), "-")
			local := filepath.Join(root, e.Name())
			bkt := srv.MakeBucket(b, e.Name())
			uploadDir(b, srv, bkt, local)
			for _, kind := range []string{"fs", "minio"} {
				url, so := local, SourceOptions{LocalAllowed: true}
				if kind == "minio" {
					url, so = "s3://"+bkt, SourceOptions{S3: srv.Config(bkt)}
				}
				n, readDur := readSource(ctx, b, url, so, nil)
				fsb, err := bucket.NewFS(b.TempDir())
				if err != nil {
					b.Fatal(err)
				}
				_, copyDur := readSource(ctx, b, url, so, fsb)
				rows, impDur := importOnce(ctx, b, format, url, so)
				mbs := func(d time.Duration) float64 { return float64(n) / 1e6 / d.Seconds() }
				read, cp, imp := mbs(readDur), mbs(copyDur), mbs(impDur)
				fmt.Printf("%-12s %-5s %6.0f %10.0f %10.0f %9.0f %7.0f %9.0f%% %9.0f%% %6d\n", e.Name(), kind, float64(n)/1e6, read, cp, imp,
					float64(rows)/impDur.Seconds(), 100*imp/read, 100*imp/cp, rows)
			}
		}
	}
}

func uploadDir(b *testing.B, srv *s3test.Server, bkt, dir string) {
	ctx := context.Background()
	s3, err := bucket.NewS3(ctx, srv.Config(bkt))
	if err != nil {
		b.Fatal(err)
	}
	defer s3.Close()
	err = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		st, _ := f.Stat()
		_, err = s3.Put(ctx, filepath.ToSlash(rel), f, st.Size())
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
}

// readSource streams every file of the source to its end, into io.Discard
// or, with to set, into files of that bucket.
func readSource(ctx context.Context, b *testing.B, url string, so SourceOptions, to bucket.Bucket) (int64, time.Duration) {
	start := time.Now()
	src, err := OpenSource(ctx, url, so)
	if err != nil {
		b.Fatal(err)
	}
	defer src.Close()
	files, err := src.List(ctx, "")
	if err != nil {
		b.Fatal(err)
	}
	var n int64
	for _, f := range files {
		rc, err := src.Open(ctx, f.Path)
		if err != nil {
			b.Fatal(err)
		}
		var m int64
		if to == nil {
			m, err = io.Copy(io.Discard, rc)
		} else {
			cr := &countReader{r: rc}
			_, err = to.Put(ctx, f.Path, cr, -1)
			m = cr.n
		}
		rc.Close()
		if err != nil {
			b.Fatal(err)
		}
		n += m
	}
	return n, time.Since(start)
}

// importOnce imports the source into a new fs store.
func importOnce(ctx context.Context, b *testing.B, format, url string, so SourceOptions) (int64, time.Duration) {
	fsb, err := bucket.NewFS(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	v, err := versions.New(fsb, versions.DefaultOptions())
	if err != nil {
		b.Fatal(err)
	}
	ts, err := tables.New(v, tables.DefaultOptions())
	if err != nil {
		b.Fatal(err)
	}
	if _, err := v.CreateProject(ctx, "p"); err != nil {
		b.Fatal(err)
	}
	opts := DefaultOptions()
	opts.Source = so
	im, err := New(ts, opts)
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	res, err := im.Import(ctx, Request{Format: format, Source: url, Project: "p", Table: "t"}, nil)
	if err != nil {
		b.Fatal(err)
	}
	return res.Record.Rows, time.Since(start)
}

type countReader struct {
	r io.Reader
	n int64
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
