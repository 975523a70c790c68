package versions

import (
	"encoding/json"
	"fmt"
	"sort"
	"time"
)

// Format versions of the stored objects. Bump on any change to their fields
// or to what their ids hash; readers reject versions they do not know.
const (
	CommitFormat   = 1
	ManifestFormat = 1
)

// Commit is one immutable point in a project's history.
type Commit struct {
	ID      CommitID                 `json:"-"`
	Format  int                      `json:"format"`
	Project ProjectName              `json:"project"`
	Parent  CommitID                 `json:"parent,omitempty"` // empty for a project's root commit
	Time    time.Time                `json:"time"`             // UTC, nanosecond precision
	Message string                   `json:"message"`
	Tables  map[TableName]ManifestID `json:"tables"`
}

func (c *Commit) identity() string {
	id := newIdentity("commit", CommitFormat)
	id.str("message", c.Message)
	id.str("parent", string(c.Parent))
	id.str("project", string(c.Project))
	names := make([]string, 0, len(c.Tables))
	for t := range c.Tables {
		names = append(names, string(t))
	}
	sort.Strings(names)
	tables := newIdentity("tables", CommitFormat)
	for _, t := range names {
		tables.str(t, string(c.Tables[TableName(t)]))
	}
	id.sub("tables", tables)
	id.int("time", c.Time.UnixNano())
	return id.sum()
}

// seal normalizes the commit and sets its id.
func (c *Commit) seal() {
	c.Format = CommitFormat
	c.Time = time.Unix(0, c.Time.UnixNano()).UTC()
	if c.Tables == nil {
		c.Tables = map[TableName]ManifestID{}
	}
	c.ID = CommitID(c.identity())
}

// DataFile is one Parquet file of a table version.
type DataFile struct {
	// Path is the file's key relative to the project, e.g. "data/TABLE/UUID.parquet".
	Path string `json:"path"`
	// Rows is the file's row count; RowGroups are its row groups' row counts, in order.
	Rows      int64   `json:"rows"`
	Size      int64   `json:"size"`
	RowGroups []int64 `json:"row_groups"`
}

// Manifest names one version of a table: its schema and its ordered files.
// Row i of the version is the i-th row across Files in order.
type Manifest struct {
	ID     ManifestID `json:"-"`
	Format int        `json:"format"`
	Table  TableName  `json:"table"`
	// Schema is the table's Arrow schema as an Arrow IPC stream holding only
	// the schema message (base64 in JSON). Package tables interprets it.
	Schema []byte     `json:"schema"`
	Files  []DataFile `json:"files"`
}

// Rows is the table version's row count.
func (m *Manifest) Rows() int64 {
	var n int64
	for _, f := range m.Files {
		n += f.Rows
	}
	return n
}

func (m *Manifest) identity() string {
	id := newIdentity("manifest", ManifestFormat)
	files := newIdentity("files", ManifestFormat)
	for i, f := range m.Files {
		e := newIdentity("file", ManifestFormat)
		e.str("path", f.Path)
		groups := newIdentity("row_groups", ManifestFormat)
		for j, n := range f.RowGroups {
			groups.int(fmt.Sprintf("%010d", j), n)
		}
		e.sub("row_groups", groups)
		e.int("rows", f.Rows)
		e.int("size", f.Size)
		files.sub(fmt.Sprintf("%010d", i), e)
	}
	id.sub("files", files)
	id.field("schema", m.Schema)
	id.str("table", string(m.Table))
	return id.sum()
}

func (m *Manifest) seal() {
	m.Format = ManifestFormat
	if m.Files == nil {
		m.Files = []DataFile{}
	}
	m.ID = ManifestID(m.identity())
}

// validate checks a manifest's internal consistency.
func (m *Manifest) validate() error {
	for _, f := range m.Files {
		var sum int64
		for _, n := range f.RowGroups {
			if n < 0 {
				return fmt.Errorf("%w: file %s has a negative row group size", ErrInvalid, f.Path)
			}
			sum += n
		}
		if sum != f.Rows || f.Rows < 0 || f.Size < 0 {
			return fmt.Errorf("%w: file %s: row groups sum to %d, rows say %d", ErrInvalid, f.Path, sum, f.Rows)
		}
	}
	return nil
}

func decodeCommit(data []byte, want CommitID) (*Commit, error) {
	var c Commit
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, fmt.Errorf("%w: commit %s: %w", ErrCorrupt, want, err)
	}
	if c.Format != CommitFormat {
		return nil, fmt.Errorf("%w: commit %s has format %d; this Weft reads format %d (upgrade Weft)", ErrCorrupt, want, c.Format, CommitFormat)
	}
	c.seal()
	if c.ID != want {
		return nil, fmt.Errorf("%w: commit %s hashes to %s", ErrCorrupt, want, c.ID)
	}
	return &c, nil
}

func decodeManifest(data []byte, want ManifestID) (*Manifest, error) {
	var m Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("%w: manifest %s: %w", ErrCorrupt, want, err)
	}
	if m.Format != ManifestFormat {
		return nil, fmt.Errorf("%w: manifest %s has format %d; this Weft reads format %d (upgrade Weft)", ErrCorrupt, want, m.Format, ManifestFormat)
	}
	m.seal()
	if m.ID != want {
		return nil, fmt.Errorf("%w: manifest %s hashes to %s", ErrCorrupt, want, m.ID)
	}
	return &m, nil
}
