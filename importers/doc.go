// Package importers turns datasets in other formats (WebDataset tar
// shards, MosaicML Streaming MDS, Hugging Face datasets, LeRobot v2.1 and
// v3.0) into Weft tables: each import is ONE commit on a branch, covering
// every table it writes, or nothing at all.
//
// # Parts
//
//   - A Source is the files of a dataset: a local directory or an
//     s3://BUCKET/PREFIX URL (OpenSource). Paths inside it are relative,
//     "/"-separated; List is sorted by path. Local sources resolve
//     symlinks and refuse any that leave the source directory; with
//     SourceOptions.Roots set (the server, flightd --import-root), a local
//     source must lie under one of the roots, else ErrSourceDenied before
//     anything is read.
//   - A Writer is the sink a format writes into: Table(name, schema) gives
//     a TableWriter to which the format pushes record batches; they are
//     streamed into Parquet data files as they come (a file at most
//     Options.FileBytes of Arrow data; never the dataset in memory: a
//     table holds the row group being written and that of the file
//     before, which finishes in the background).
//     PutMedia stores media objects. Nothing is visible until the Importer
//     commits every table's files in one commit (tables.Store.CommitFiles).
//     A failure, a cancelled context or a killed process leaves the branch
//     unchanged; the data files written so far are deleted on failure,
//     and, after a kill, by gc (package gc) once its grace period has
//     passed, like those of any interrupted put.
//   - A Format reads a Source and writes a Writer; a Registry finds formats
//     by name (DefaultRegistry: "wds", "mds", "hf", "lerobot").
//   - An Importer runs one Request: open the source, look up the format,
//     import, commit. Progress (files, rows, bytes, rate, ETA) is reported
//     to Options.Progress every Options.ProgressEvery.
//
// # Commit record
//
// The commit message is one line ("import wds s3://b/shards into
// project/table: 1000 rows") then a blank line and "weft-import: " with a
// JSON object (ImportRecord): source URL, format, the source's format
// version, options and counts per table.
//
// # Contract for formats
//
// Import reads only through src, writes only through w, and returns an
// error wrapping ErrBadInput (or ErrPickle, ErrTooLarge) that names the
// file and the member or row for any malformed input. It calls
// w.SetSourceVersion once it knows the dataset's format version, w.Plan
// with the number of files and bytes it will read (for the ETA), and
// w.FileDone / w.AddBytes as it reads. It never unpickles anything.
//
// # Time limit
//
// An import must finish within Options.MaxDuration (default 12 h): gc's
// grace period (24 h by convention) assumes no writer holds uncommitted
// data files longer than that.
package importers
