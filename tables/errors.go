package tables

import (
	"errors"
	"fmt"

	"github.com/weftdata/weft/errdefs"
)

// Errors. Each wraps an errdefs kind so the gRPC boundary maps it to a
// status code with errors.Is, and each returned message names the offending
// table, column or value (bounded: long names are cut, long lists name the
// first few and how many more).
var (
	// ErrTableNotFound: no such table at that commit (the message lists the tables there).
	ErrTableNotFound = fmt.Errorf("table %w", errdefs.ErrNotFound)
	// ErrColumnNotFound: a projection names a column the table lacks (the
	// message lists its first columns). The column list is the caller's
	// input, so this is an invalid argument, not a missing object.
	ErrColumnNotFound = fmt.Errorf("%w: column not found", errdefs.ErrInvalidArgument)
	// ErrSchemaMismatch: an append's schema differs from the table's; the
	// message names the first differing columns. Nothing is stored.
	ErrSchemaMismatch = fmt.Errorf("%w: schema mismatch", errdefs.ErrInvalidArgument)
	// ErrKindsChanged: an append written while its table did not exist,
	// whose columns' kinds (weft.* field metadata: a video or file column)
	// differ from those of the table another append created meanwhile:
	// its rows were checked as the wrong kind. Nothing is stored; sending
	// the append again checks it as the table's columns.
	ErrKindsChanged = fmt.Errorf("%w: the table was created meanwhile with other column kinds", errdefs.ErrConflict)
	// ErrEmptyAppend: an append with no rows. Nothing is stored.
	ErrEmptyAppend = fmt.Errorf("%w: empty append", errdefs.ErrInvalidArgument)
	// ErrBadSchema: a schema no table can hold (no columns, unnamed or repeated columns).
	ErrBadSchema = fmt.Errorf("%w: unusable schema", errdefs.ErrInvalidArgument)
	// ErrUnsupportedType: a column whose Arrow type does not come back
	// exactly from the store's Parquet files (date64, time32[s], an
	// extension type, ...). The message names the column, the type and a
	// type to use instead where there is one. Nothing is stored.
	ErrUnsupportedType = fmt.Errorf("%w: unsupported column type", ErrBadSchema)
	// ErrBadData: an appended batch whose arrays are malformed (a
	// dictionary index out of range, bad offsets). Nothing is stored.
	ErrBadData = fmt.Errorf("%w: malformed batch", errdefs.ErrInvalidArgument)
	// ErrBadColumns: a projection names a column twice.
	ErrBadColumns = fmt.Errorf("%w: bad column list", errdefs.ErrInvalidArgument)
	// ErrRowOutOfRange and ErrBlockOutOfRange: an ordinal or block index past the version's end.
	ErrRowOutOfRange   = fmt.Errorf("%w: row ordinal out of range", errdefs.ErrInvalidArgument)
	ErrBlockOutOfRange = fmt.Errorf("%w: block out of range", errdefs.ErrInvalidArgument)
	// ErrUnreadableSchema: a table whose manifest holds a column type this
	// server refuses (written by an older server). The message names the
	// column and the last commit whose schema is readable, to branch from.
	// The store is not damaged and the request is fine, so the kind is
	// failed precondition (its message reaches the client), not corrupt.
	ErrUnreadableSchema = fmt.Errorf("%w: table schema holds an unsupported type", errdefs.ErrFailedPrecondition)
)

// ErrTooLarge: rows that do not fit one Arrow array (a binary column of
// over 2 GiB in one block or one gathered batch).
var ErrTooLarge = fmt.Errorf("%w: too large for one Arrow array", errdefs.ErrInvalidArgument)

// Media objects and video columns (media.go).
var (
	// ErrMediaNotFound: no media object with that digest in the project.
	ErrMediaNotFound = fmt.Errorf("media %w", errdefs.ErrNotFound)
	// ErrMediaMismatch: an upload whose bytes do not match the digest or
	// size it declared. Nothing is stored.
	ErrMediaMismatch = fmt.Errorf("%w: media does not match its declared sha256 or size", errdefs.ErrInvalidArgument)
	// ErrMediaNotUploaded: an append whose video column names a media
	// object the project lacks. Nothing is stored.
	ErrMediaNotUploaded = fmt.Errorf("%w: media not uploaded", errdefs.ErrInvalidArgument)
	// ErrBadVideoColumn: a video column of the wrong type, or a row of it
	// without media or time, or an unusable episode column. Nothing is stored.
	ErrBadVideoColumn = fmt.Errorf("%w: bad video column", errdefs.ErrInvalidArgument)
)

// errNotDirect: a block of a fixed-size list or number column has a null
// value, so it is read through pqarrow instead (readFixedColumn). It never
// leaves the package, so it wraps no kind.
var errNotDirect = errors.New("block not readable directly")
