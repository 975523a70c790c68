package tables

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/extensions"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/weftdata/weft/errdefs"
	"github.com/weftdata/weft/internal/ipcguard"
	"github.com/weftdata/weft/versions"
)

// EncodeSchema is the manifest form of a schema: an Arrow IPC stream that
// holds the schema message and end-of-stream, nothing else.
func EncodeSchema(s *arrow.Schema) ([]byte, error) {
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(s), ipc.WithAllocator(memory.DefaultAllocator))
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("encode schema: %w", err)
	}
	return buf.Bytes(), nil
}

// DecodeSchema reverses EncodeSchema. The bytes are a stored manifest's,
// so what they fail on is the store's damage: ErrCorrupt. They pass
// through ipcguard first (arrow-go's IPC reader allocates by the sizes
// they declare) and a panic of the reader is recovered.
func DecodeSchema(data []byte) (_ *arrow.Schema, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%w: decode schema: not a readable Arrow IPC schema (%v)", versions.ErrCorrupt, p)
		}
	}()
	r, err := ipc.NewReader(ipcguard.New(bytes.NewReader(data), int64(len(data))))
	if err != nil {
		return nil, fmt.Errorf("%w: decode schema: %w", versions.ErrCorrupt, err)
	}
	defer r.Release()
	return r.Schema(), nil
}

// checkSchema rejects schemas a table cannot hold: no columns, unnamed or
// repeated columns, and column types that the store's Parquet files do not
// give back exactly (see checkType).
func checkSchema(s *arrow.Schema) error {
	if s == nil || s.NumFields() == 0 {
		return fmt.Errorf("%w: a table needs at least one column", ErrBadSchema)
	}
	seen := make(map[string]bool, s.NumFields())
	for _, f := range s.Fields() {
		switch {
		case f.Name == "":
			return fmt.Errorf("%w: a column has an empty name; name every column", ErrBadSchema)
		case seen[f.Name]:
			return fmt.Errorf("%w: column %s appears twice; column names must be unique", ErrBadSchema, errdefs.Quote(f.Name))
		}
		seen[f.Name] = true
	}
	return checkTypes(s)
}

// checkTypes returns ErrUnsupportedType for the first column (in schema
// order, depth first) whose type checkType refuses.
func checkTypes(s *arrow.Schema) error {
	for _, f := range s.Fields() {
		if err := checkType(f.Name, f.Type); err != nil {
			return err
		}
	}
	return nil
}

// maxTypeString caps a type's text in messages (a struct of 1,000 fields
// prints as a very long line).
const maxTypeString = 160

func typeString(dt arrow.DataType) string { return errdefs.Truncate(dt.String(), maxTypeString) }

// checkType allows exactly the Arrow types that come back unchanged, in type
// and values, from a data file written by Append and read by ReadBlock, Scan
// and ScanBatches (arrow-go v18.8.0's pqarrow with the Arrow schema stored in
// the file). types_test.go proves the list over every type arrow-go builds;
// change both together. path names the column, with ".field" steps into
// nested types.
//
// Allowed: null, bool, every int and uint, float16/32/64, date32,
// time32[ms], time64[us|ns], timestamp[ms|us|ns] with any time zone,
// decimal128, decimal256, string, large_string, binary, large_binary,
// fixed_size_binary, list and fixed_size_list of an allowed type, struct of
// one or more allowed fields, map of allowed key and item types, dictionary
// of string or binary values with any integer index type, and the extension
// types arrow.uuid and parquet.variant (unshredded).
func checkType(path string, dt arrow.DataType) error {
	refuse := func(why, use string) error {
		if use != "" {
			use = "; send it as " + use
		}
		return fmt.Errorf("%w: column %s has type %s, %s%s", ErrUnsupportedType, errdefs.Quote(path), typeString(dt), why, use)
	}
	switch t := dt.(type) {
	case *arrow.NullType, *arrow.BooleanType,
		*arrow.Int8Type, *arrow.Int16Type, *arrow.Int32Type, *arrow.Int64Type,
		*arrow.Uint8Type, *arrow.Uint16Type, *arrow.Uint32Type, *arrow.Uint64Type,
		*arrow.Float16Type, *arrow.Float32Type, *arrow.Float64Type,
		*arrow.Date32Type, *arrow.Time64Type,
		*arrow.Decimal128Type, *arrow.Decimal256Type,
		*arrow.StringType, *arrow.LargeStringType, *arrow.BinaryType, *arrow.LargeBinaryType,
		*arrow.FixedSizeBinaryType:
		return nil
	case *arrow.Date64Type:
		return refuse("which Parquet stores as date32 (days)", "date32, or timestamp[ms] to keep the time of day")
	case *arrow.Time32Type:
		if t.Unit == arrow.Second {
			return refuse("which Parquet stores as time32[ms]", "time32[ms]")
		}
		return nil
	case *arrow.TimestampType:
		if t.Unit == arrow.Second {
			return refuse("which Parquet stores in milliseconds", (&arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: t.TimeZone}).String())
		}
		return nil
	case *arrow.DurationType:
		return refuse("which has no Parquet form", "int64 (a count of "+t.Unit.String()+")")
	case *arrow.MonthIntervalType:
		return refuse("which has no Parquet form", "int32 (months)")
	case *arrow.DayTimeIntervalType:
		return refuse("which has no Parquet form", "struct<days: int32, milliseconds: int32>")
	case *arrow.MonthDayNanoIntervalType:
		return refuse("which has no Parquet form", "struct<months: int32, days: int32, nanoseconds: int64>")
	case *arrow.Decimal32Type:
		return refuse("which this server cannot write", fmt.Sprintf("decimal128(%d, %d)", t.Precision, t.Scale))
	case *arrow.Decimal64Type:
		return refuse("which this server cannot write", fmt.Sprintf("decimal128(%d, %d)", t.Precision, t.Scale))
	case *arrow.StringViewType:
		return refuse("which this server cannot write", "string (or large_string)")
	case *arrow.BinaryViewType:
		return refuse("which this server cannot write", "binary (or large_binary)")
	case *arrow.ListType:
		return checkType(path+"."+t.ElemField().Name, t.Elem())
	case *arrow.FixedSizeListType:
		return checkType(path+"."+t.ElemField().Name, t.Elem())
	case *arrow.LargeListType:
		return refuse("which Parquet gives back with another element field", "list<"+errdefs.Truncate(t.Elem().String(), maxTypeString)+">")
	case *arrow.ListViewType, *arrow.LargeListViewType:
		return refuse("which this server cannot write", "list<"+errdefs.Truncate(t.(arrow.ListLikeType).Elem().String(), maxTypeString)+">")
	case *arrow.MapType:
		if err := checkType(path+".key", t.KeyType()); err != nil {
			return err
		}
		return checkType(path+".value", t.ItemType())
	case *arrow.StructType:
		if t.NumFields() == 0 {
			return refuse("a struct with no fields, which Parquet cannot hold", "a struct with at least one field")
		}
		for _, f := range t.Fields() {
			if err := checkType(path+"."+f.Name, f.Type); err != nil {
				return err
			}
		}
		return nil
	case *arrow.DictionaryType:
		switch t.ValueType.(type) {
		case *arrow.StringType, *arrow.BinaryType:
			return nil
		case *arrow.LargeStringType:
			return refuse("which Parquet gives back with string values", (&arrow.DictionaryType{IndexType: t.IndexType, ValueType: arrow.BinaryTypes.String}).String())
		case *arrow.LargeBinaryType:
			return refuse("which Parquet gives back with binary values", (&arrow.DictionaryType{IndexType: t.IndexType, ValueType: arrow.BinaryTypes.Binary}).String())
		}
		return refuse("which Parquet gives back decoded (only string and binary dictionaries are kept)", typeString(t.ValueType))
	case arrow.UnionType:
		return refuse("which has no Parquet form", "a struct with one nullable field per member")
	case *arrow.RunEndEncodedType:
		return refuse("which this server cannot write", typeString(t.Encoded()))
	case arrow.ExtensionType:
		switch t.ExtensionName() {
		case "arrow.uuid":
			return nil
		case extensions.VariantExtensionName:
			if arrow.TypeEqual(t, extensions.NewDefaultVariantType()) {
				return nil
			}
			return refuse("a shredded variant, which this server does not store", extensions.NewDefaultVariantType().String())
		case "arrow.bool8":
			return refuse("which Parquet gives back as int8", "bool")
		}
		return refuse("an extension type that Parquet gives back as its storage type", typeString(t.StorageType()))
	}
	return refuse("which this server does not store", "")
}

// compareSchemas returns nil if an append with schema got fits a table with
// schema want: same column names, order and types. Nullability and metadata
// may differ (pandas and pyarrow mark every column nullable); nulls in a
// non-nullable column are caught when writing. The message names the first
// few differences and how many more there are, so it stays short for a
// table of any width.
func compareSchemas(want, got *arrow.Schema) error {
	const show = 3
	var diffs []string
	total := 0
	n := max(want.NumFields(), got.NumFields())
	for i := range n {
		var d string
		switch {
		case i >= got.NumFields():
			f := want.Field(i)
			d = fmt.Sprintf("column %d %s (%s) is missing from the append", i, errdefs.Quote(f.Name), typeString(f.Type))
		case i >= want.NumFields():
			f := got.Field(i)
			d = fmt.Sprintf("column %d %s (%s) is not in the table", i, errdefs.Quote(f.Name), typeString(f.Type))
		default:
			w, g := want.Field(i), got.Field(i)
			if w.Name == g.Name && arrow.TypeEqual(w.Type, g.Type) {
				continue
			}
			d = fmt.Sprintf("column %d is %s %s in the table but %s %s in the append", i, errdefs.Quote(w.Name), typeString(w.Type), errdefs.Quote(g.Name), typeString(g.Type))
		}
		total++
		if len(diffs) < show {
			diffs = append(diffs, d)
		}
	}
	if total == 0 {
		return nil
	}
	more := ""
	if total > len(diffs) {
		more = fmt.Sprintf(" and %d more differences", total-len(diffs))
	}
	return fmt.Errorf("%w: %s%s; send the table's schema (%d columns: %s)", ErrSchemaMismatch, strings.Join(diffs, "; "), more, want.NumFields(), fieldList(want))
}

// fieldList names the first columns of s with their types, and how many
// more there are.
func fieldList(s *arrow.Schema) string {
	items := make([]string, 0, min(s.NumFields(), errdefs.MaxListed))
	for i, f := range s.Fields() {
		if i == errdefs.MaxListed {
			break
		}
		items = append(items, errdefs.Truncate(f.Name, errdefs.MaxQuoted)+" "+typeString(f.Type))
	}
	if more := s.NumFields() - len(items); more > 0 {
		items = append(items, fmt.Sprintf("and %d more", more))
	}
	return strings.Join(items, ", ")
}

// MaxHistoryWalk bounds how many commits unreadable walks back.
const MaxHistoryWalk = 10000

// unreadable explains why table t at commit id cannot be read: its schema
// holds a type checkType refuses (cause), written by an older server. It
// walks the first parents of id (at most MaxHistoryWalk) for the newest
// commit where t is readable or absent, and names it as the commit to branch
// from.
func (s *Store) unreadable(ctx context.Context, p versions.ProjectName, id versions.CommitID, t versions.TableName, cause error) error {
	fail := func(advice string) error {
		return fmt.Errorf("%w: table %q at commit %s: %s; %s", ErrUnreadableSchema, t, id.Short(), strings.TrimPrefix(cause.Error(), ErrUnsupportedType.Error()+": "), advice)
	}
	c, err := s.v.GetCommit(ctx, p, id)
	if err != nil {
		return fail("its history could not be read: " + err.Error())
	}
	var lastBad versions.ManifestID
	for range MaxHistoryWalk {
		if c.Parent == "" {
			return fail("no earlier commit exists; this table cannot be read by this server: append its data again, with a supported type, to a new table")
		}
		parent := c.Parent
		if c, err = s.v.GetCommit(ctx, p, parent); err != nil {
			return fail("its history could not be read: " + err.Error())
		}
		mid, ok := c.Tables[t]
		if !ok {
			return fail(fmt.Sprintf("the table did not exist before; commit %s is the last one without it: branch from %s (create_branch with from=%q) and append the table's data again with a supported type", c.ID.Short(), c.ID, string(c.ID)))
		}
		if mid == lastBad {
			continue
		}
		m, err := s.v.GetManifest(ctx, p, mid)
		if err != nil {
			return fail("its history could not be read: " + err.Error())
		}
		schema, err := DecodeSchema(m.Schema)
		if err == nil && checkTypes(schema) == nil {
			return fail(fmt.Sprintf("commit %s is the last whose schema of the table is readable: branch from %s (create_branch with from=%q) to read the table as it was", c.ID.Short(), c.ID, string(c.ID)))
		}
		lastBad = mid
	}
	return fail(fmt.Sprintf("none of the %d commits before it has a readable schema for the table", MaxHistoryWalk))
}

// compareKinds returns ErrKindsChanged, naming the first column, when a
// column's weft.* field metadata (its kind: video, file; a video column's
// tolerance) or the schema's weft.* metadata (the episode column) differ
// between the table's schema and the one a file was written under.
func compareKinds(table, file *arrow.Schema) error {
	if a, b := weftMeta(table.Metadata()), weftMeta(file.Metadata()); a != b {
		return fmt.Errorf("%w: the table's schema metadata is {%s}, this append's {%s}; send the append again", ErrKindsChanged, a, b)
	}
	for i := range min(table.NumFields(), file.NumFields()) {
		if a, b := weftMeta(table.Field(i).Metadata), weftMeta(file.Field(i).Metadata); a != b {
			return fmt.Errorf("%w: column %s is {%s} in the table, {%s} in this append; send the append again", ErrKindsChanged, errdefs.Quote(table.Field(i).Name), a, b)
		}
	}
	return nil
}

// weftMeta is m's weft.* keys and values, sorted, as one string.
func weftMeta(m arrow.Metadata) string {
	var kv []string
	for i, k := range m.Keys() {
		if strings.HasPrefix(k, "weft.") {
			kv = append(kv, k+"="+m.Values()[i])
		}
	}
	slices.Sort(kv)
	return strings.Join(kv, ", ")
}
