// Package tables stores Arrow record batches as Parquet data files in a
// bucket and reads them back, by version.
//
// An append writes its batches as one Parquet file (zstd, row groups bounded
// by rows and by bytes) and then commits, through package versions, a new
// manifest that lists the table's files in order with their row counts and
// row-group sizes. The first append to a table defines its schema; a later
// append with another schema is rejected before anything is stored.
//
// Reads name a table at a ref (branch, commit id or id prefix). Row i of a
// table version is the i-th row across its manifest's files in order; it
// never changes for that version.
//
// This package is the only reader of Parquet. A Block is the unit of
// reading: a page-aligned piece of a row group, (file, row group, first row
// within it, rows), a whole row group being the common case
// (Version.Blocks). Store.Layout cuts row groups into blocks of a target
// size at page boundaries (the sizes a training run records), and
// Version.Split maps recorded sizes back to blocks. A Reader reads a block
// with a column projection (Reader.ReadBlock: only the block's pages,
// fetched with one ranged read per coalesced byte range; wide binary and
// string columns copied straight from their pages), gathers rows of
// decoded blocks into new arrays (Reader.Gather, and Reader.GatherRows by
// ordinal), and recycles its buffers. Store.Scan streams row groups in
// batches of a target size. Footers and page indexes of data files are kept
// in one byte-bounded cache per Store (Options.FooterCacheBytes).
//
// Data files that an interrupted append wrote but never committed are
// invisible: no manifest names them.
//
// Data files are the bucket's, so any of them can be damaged, cut short or
// replaced by another tool. A read of one fails with an error of kind
// Corrupt naming it (corrupt.go), never a panic: footers are checked
// against the file's size before the Parquet reader sizes anything by
// them; the Arrow schema a file's footer carries is replaced by its
// manifest's (which TableAt has decoded, through internal/ipcguard);
// pqarrow's own parallel reads, whose goroutines nothing recovers, are
// not used; and panics of the reader on our goroutines are recovered
// (and logged with their stack: one may be a bug). Errors of the bucket
// itself keep their kinds. Row counts and page sizes cannot be checked
// against a file's bytes (constant values compress to nothing), so what
// a read allocates is counted against the memory budget before it is
// allocated (Options.Budget, meter.go): a read whose rows or pages would
// pass it fails with ResourceExhausted instead; a page larger than its
// whole column chunk is Corrupt.
package tables
