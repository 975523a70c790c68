package tables

import (
	"bytes"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
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

// DecodeSchema reverses EncodeSchema.
func DecodeSchema(data []byte) (*arrow.Schema, error) {
	r, err := ipc.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("decode schema: %w", err)
	}
	defer r.Release()
	return r.Schema(), nil
}

// checkSchema rejects schemas a table cannot hold.
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
			return fmt.Errorf("%w: column %q appears twice; column names must be unique", ErrBadSchema, f.Name)
		}
		seen[f.Name] = true
	}
	return nil
}

// compareSchemas returns nil if an append with schema got fits a table with
// schema want: same column names, order and types. Nullability and metadata
// may differ (pandas and pyarrow mark every column nullable); nulls in a
// non-nullable column are caught when writing.
func compareSchemas(want, got *arrow.Schema) error {
	n := max(want.NumFields(), got.NumFields())
	for i := range n {
		switch {
		case i >= got.NumFields():
			f := want.Field(i)
			return fmt.Errorf("%w: column %d %q (%s) is missing from the append; the table has %d columns: %s", ErrSchemaMismatch, i, f.Name, f.Type, want.NumFields(), fieldList(want))
		case i >= want.NumFields():
			f := got.Field(i)
			return fmt.Errorf("%w: column %d %q (%s) is not in the table; the table has %d columns: %s", ErrSchemaMismatch, i, f.Name, f.Type, want.NumFields(), fieldList(want))
		}
		w, g := want.Field(i), got.Field(i)
		if w.Name != g.Name || !arrow.TypeEqual(w.Type, g.Type) {
			return fmt.Errorf("%w: column %d is %q %s in the table but %q %s in the append; send the table's schema: %s", ErrSchemaMismatch, i, w.Name, w.Type, g.Name, g.Type, fieldList(want))
		}
	}
	return nil
}

func fieldList(s *arrow.Schema) string {
	var b bytes.Buffer
	for i, f := range s.Fields() {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %s", f.Name, f.Type)
	}
	return b.String()
}
