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
// never changes for that version. A Version reads whole row groups
// ("blocks") with a column projection, scans ranges of blocks in order, and
// gathers rows by ordinal.
//
// Data files that an interrupted append wrote but never committed are
// invisible: no manifest names them.
package tables
