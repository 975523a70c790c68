package tables

import (
	"context"
	"fmt"
	"slices"
	"sort"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/weftdata/weft/errdefs"
	"github.com/weftdata/weft/versions"
)

// Block is the unit of reading: rows [Offset, Offset+Rows) of row group
// RowGroup of data file File, a page-aligned piece of a row group (a whole
// row group being the common case: Version.Blocks). Reading a block
// decodes only its own pages.
type Block struct {
	File     int   // index into the manifest's files
	RowGroup int   // row group within that file
	Offset   int64 // first row within the row group
	Rows     int64
	FirstRow int64 // ordinal of its first row in the version
}

// Version is a table pinned at a commit. It is immutable and safe for
// concurrent use.
type Version struct {
	Project  versions.ProjectName
	Commit   versions.CommitID
	Table    versions.TableName
	Manifest *versions.Manifest
	Schema   *arrow.Schema
	blocks   []Block
}

// Rows is the number of rows in the version.
func (v *Version) Rows() int64 { return v.Manifest.Rows() }

// fileKey is the bucket key of data file fi of v.
func (v *Version) fileKey(fi int) string {
	return versions.DataFileKey(v.Project, v.Manifest.Files[fi].Path)
}

// Blocks lists the version's row groups, each as one block, in ordinal
// order. Version.Split cuts them into smaller blocks.
func (v *Version) Blocks() []Block { return v.blocks }

// BlockOf returns the index in Blocks of the row group holding row ordinal
// row.
func (v *Version) BlockOf(row int64) (int, error) {
	if row < 0 || row >= v.Rows() {
		return 0, fmt.Errorf("%w: row %d of %s@%s, which has %d rows", ErrRowOutOfRange, row, v.Table, v.Commit.Short(), v.Rows())
	}
	i := sort.Search(len(v.blocks), func(i int) bool { return v.blocks[i].FirstRow+v.blocks[i].Rows > row })
	return i, nil
}

// Projection returns the schema of the named columns, in the order given;
// nil or empty means every column. Unknown or repeated names are an error
// that lists the table's columns.
func (v *Version) Projection(columns []string) (*arrow.Schema, error) {
	if len(columns) == 0 {
		return v.Schema, nil
	}
	fields := make([]arrow.Field, 0, len(columns))
	seen := make(map[string]bool, len(columns))
	for _, c := range columns {
		idx := v.Schema.FieldIndices(c)
		if len(idx) == 0 {
			return nil, fmt.Errorf("%w: %s is not a column of %s; columns are: %s", ErrColumnNotFound, errdefs.Quote(c), v.Table, fieldList(v.Schema))
		}
		if seen[c] {
			return nil, fmt.Errorf("%w: column %s is requested twice", ErrBadColumns, errdefs.Quote(c))
		}
		seen[c] = true
		fields = append(fields, v.Schema.Field(idx[0]))
	}
	return arrow.NewSchema(fields, nil), nil
}

// Table resolves table t of project p at ref.
func (s *Store) Table(ctx context.Context, p versions.ProjectName, ref string, t versions.TableName) (*Version, error) {
	if _, err := versions.ParseTableName(string(t)); err != nil {
		return nil, err
	}
	id, err := s.v.Resolve(ctx, p, ref)
	if err != nil {
		return nil, err
	}
	return s.TableAt(ctx, p, id, t)
}

// TableAt returns table t as of commit id.
func (s *Store) TableAt(ctx context.Context, p versions.ProjectName, id versions.CommitID, t versions.TableName) (*Version, error) {
	c, err := s.v.GetCommit(ctx, p, id)
	if err != nil {
		return nil, err
	}
	mid, ok := c.Tables[t]
	if !ok {
		names := make([]string, 0, len(c.Tables))
		for n := range c.Tables {
			names = append(names, string(n))
		}
		slices.Sort(names)
		return nil, fmt.Errorf("%w: %q in project %q at commit %s; tables there: %s", ErrTableNotFound, t, p, id.Short(), errdefs.List(names))
	}
	m, err := s.v.GetManifest(ctx, p, mid)
	if err != nil {
		return nil, err
	}
	schema, err := DecodeSchema(m.Schema)
	if err != nil {
		return nil, err
	}
	if err := checkTypes(schema); err != nil {
		return nil, s.unreadable(ctx, p, id, t, err)
	}
	v := &Version{Project: p, Commit: id, Table: t, Manifest: m, Schema: schema}
	var first int64
	for fi, f := range m.Files {
		for gi, n := range f.RowGroups {
			v.blocks = append(v.blocks, Block{File: fi, RowGroup: gi, FirstRow: first, Rows: n})
			first += n
		}
	}
	return v, nil
}
