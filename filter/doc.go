// Package filter is Weft's row filter language: a small SQL-like boolean
// expression over a table's columns, parsed (Parse), checked against a
// table schema (Bind), evaluated on Arrow record batches (Filter.Eval) and
// tested against Parquet statistics (Filter.MayMatch) so that row groups
// that cannot hold a matching row are never read.
//
// # Grammar
//
// Keywords are case-insensitive; whitespace separates tokens.
//
//	filter    = or
//	or        = and { "OR" and }
//	and       = not { "AND" not }
//	not       = "NOT" not | predicate
//	predicate = "(" or ")"
//	          | column                                  (a bool column: column = TRUE)
//	          | column cmp literal | literal cmp column
//	          | column [ "NOT" ] "IN" "(" literal { "," literal } ")"
//	          | column "IS" [ "NOT" ] "NULL"
//	          | column [ "NOT" ] "BETWEEN" literal "AND" literal
//	          | column [ "NOT" ] "LIKE" string           (prefix only: 'abc%')
//	          | "starts_with" "(" column "," string ")"
//	cmp       = "=" | "==" | "!=" | "<>" | "<" | "<=" | ">" | ">="
//	column    = identifier | '"' any text, "" for a quote '"'
//	identifier= letter or "_", then letters, digits, "_" or "."
//	literal   = number | string | "TRUE" | "FALSE"
//	          | "DATE" string | "TIMESTAMP" string
//	number    = [ "-" ] digits [ "." digits ] [ ("e"|"E") [ "+"|"-" ] digits ]
//	string    = "'" any text, '' for a quote "'" "'"
//
// A comparison is between a column and a literal (columns are not compared
// with each other). LIKE takes only a prefix pattern: a string whose only
// wildcard is one trailing "%" ('abc%'; "_" and an inner "%" are refused),
// the same as starts_with(column, 'abc'). There is no NULL literal: write
// IS NULL.
//
// # Types
//
// Columns of these Arrow types can be filtered: bool; int8–int64 and
// uint8–uint64; float32 and float64; string, large_string, binary and
// large_binary (compared bytewise); date32; timestamp of any unit and time
// zone. A numeric literal compares with any numeric column (exactly for
// integers, as float64 when the literal or column is fractional). A date
// column takes DATE 'YYYY-MM-DD' or a string in that form; a timestamp
// column takes TIMESTAMP 'YYYY-MM-DD[ T]hh:mm:ss[.fraction][Z|±hh:mm]' (no
// zone: UTC), a DATE (midnight UTC) or a string in either form; a literal
// finer than the column's unit is refused. A bool column takes TRUE or
// FALSE. Anything else is ErrType, naming the column and its type.
//
// # Semantics
//
// SQL's three-valued logic, as pyarrow.compute and pyarrow.dataset
// evaluate it: a comparison, IN, BETWEEN or LIKE with a null value is
// unknown; AND and OR are Kleene's (false AND unknown = false, true OR
// unknown = true); NOT unknown is unknown; IS [NOT] NULL is never unknown.
// A row is kept when the filter is true; false and unknown rows are
// dropped. NaN is an ordinary non-null float compared as IEEE 754 does:
// every comparison with NaN is false except != (true), so NaN IN (…) and
// NaN BETWEEN … are false, NOT (x > 1) keeps a NaN row, and NaN IS NULL
// is false.
//
// # Limits
//
// Parse refuses, with ErrTooLarge, a filter longer than Limits.MaxBytes,
// nested deeper than Limits.MaxDepth or with an IN list longer than
// Limits.MaxInList. Errors wrap errdefs.ErrInvalidArgument and give the
// byte offset (from 0) of the problem and what was expected there.
package filter
