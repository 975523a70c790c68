package versions

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/weftdata/weft/bucket"
	"github.com/weftdata/weft/errdefs"
)

// Format versions of the stored objects. Bump on any change to their fields
// or to what their ids hash; readers reject versions they do not know.
//
// A manifest is written as ManifestFormat unless it names media objects;
// then it is ManifestMediaFormat, whose identity hashes the media list too.
// Manifests without media keep format 1 and its identity, so every id
// written before media existed is unchanged. Readers accept both.
const (
	CommitFormat        = 1
	ManifestFormat      = 1
	ManifestMediaFormat = 2
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
	// Media are the media objects rows of this version may name (video
	// columns), sorted by SHA256, each once. A manifest with media has
	// format ManifestMediaFormat.
	Media []MediaObject `json:"media,omitempty"`
}

// MediaObject is one content-addressed media file (an MP4) of a project,
// stored at MediaPath(SHA256) relative to the project.
type MediaObject struct {
	// Path is the object's key relative to the project: "media/SHA256.mp4".
	Path string `json:"path"`
	// SHA256 is the lowercase hex SHA-256 of the whole file.
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
}

// NewMediaObject is the MediaObject of the file with digest sha (64
// lowercase hex digits) and size bytes.
func NewMediaObject(sha string, size int64) MediaObject {
	return MediaObject{Path: MediaPath(sha), SHA256: sha, Size: size}
}

// Validate checks that o is well formed: sha is 64 lowercase hex digits,
// the path is MediaPath(sha) and the size is not negative.
func (o MediaObject) Validate() error {
	if err := ValidateSHA256(o.SHA256); err != nil {
		return err
	}
	if o.Path != MediaPath(o.SHA256) {
		return fmt.Errorf("%w: media object %s has path %q; want %q", ErrInvalid, o.SHA256, o.Path, MediaPath(o.SHA256))
	}
	if o.Size < 0 {
		return fmt.Errorf("%w: media object %s has a negative size %d", ErrInvalid, o.SHA256, o.Size)
	}
	return nil
}

// ValidateSHA256 checks that sha is a SHA-256 digest in 64 lowercase hex
// digits, the form media objects are named by.
func ValidateSHA256(sha string) error {
	if len(sha) != 64 {
		return fmt.Errorf("%w: %q is not a sha256 digest (64 lowercase hex digits)", ErrInvalidSHA256, sha)
	}
	for _, c := range []byte(sha) {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return fmt.Errorf("%w: %q is not a sha256 digest (64 lowercase hex digits)", ErrInvalidSHA256, sha)
		}
	}
	return nil
}

// MergeMedia returns the media objects of a and b, sorted by SHA256, each
// once (a's entry wins when both name a digest).
func MergeMedia(a, b []MediaObject) []MediaObject {
	out := make([]MediaObject, 0, len(a)+len(b))
	out = append(out, a...)
	for _, o := range b {
		if !slices.ContainsFunc(a, func(x MediaObject) bool { return x.SHA256 == o.SHA256 }) {
			out = append(out, o)
		}
	}
	slices.SortFunc(out, func(x, y MediaObject) int { return strings.Compare(x.SHA256, y.SHA256) })
	return slices.CompactFunc(out, func(x, y MediaObject) bool { return x.SHA256 == y.SHA256 })
}

// HasMedia reports whether m names the media object with digest sha.
func (m *Manifest) HasMedia(sha string) bool {
	_, ok := slices.BinarySearchFunc(m.Media, sha, func(o MediaObject, sha string) int { return strings.Compare(o.SHA256, sha) })
	return ok
}

// Rows is the table version's row count.
func (m *Manifest) Rows() int64 {
	var n int64
	for _, f := range m.Files {
		n += f.Rows
	}
	return n
}

// format is the format m is written in: ManifestMediaFormat when it names
// media, else ManifestFormat.
func (m *Manifest) format() int {
	if len(m.Media) > 0 {
		return ManifestMediaFormat
	}
	return ManifestFormat
}

func (m *Manifest) identity() string {
	v := uint64(m.format())
	id := newIdentity("manifest", v)
	files := newIdentity("files", v)
	for i, f := range m.Files {
		e := newIdentity("file", v)
		e.str("path", f.Path)
		groups := newIdentity("row_groups", v)
		for j, n := range f.RowGroups {
			groups.int(fmt.Sprintf("%010d", j), n)
		}
		e.sub("row_groups", groups)
		e.int("rows", f.Rows)
		e.int("size", f.Size)
		files.sub(fmt.Sprintf("%010d", i), e)
	}
	id.sub("files", files)
	if v >= ManifestMediaFormat {
		media := newIdentity("media", v)
		for i, o := range m.Media {
			e := newIdentity("media_object", v)
			e.str("path", o.Path)
			e.str("sha256", o.SHA256)
			e.int("size", o.Size)
			media.sub(fmt.Sprintf("%010d", i), e)
		}
		id.sub("media", media)
	}
	id.field("schema", m.Schema)
	id.str("table", string(m.Table))
	return id.sum()
}

func (m *Manifest) seal() {
	if len(m.Media) == 0 {
		m.Media = nil // format 1 writes no "media" field
	}
	m.Format = m.format()
	if m.Files == nil {
		m.Files = []DataFile{}
	}
	m.ID = ManifestID(m.identity())
}

// validate checks a manifest's internal consistency.
func (m *Manifest) validate() error {
	var total int64
	for _, f := range m.Files {
		if err := validDataPath(f.Path); err != nil {
			return err
		}
		var sum int64
		for _, n := range f.RowGroups {
			if n < 0 || n > math.MaxInt64-sum {
				return fmt.Errorf("%w: file %s has a row group of %d rows after %d (negative, or past 2^63 rows in all)", ErrInvalid, f.Path, n, sum)
			}
			sum += n
		}
		if sum != f.Rows || f.Rows < 0 || f.Size < 0 {
			return fmt.Errorf("%w: file %s: row groups sum to %d, rows say %d", ErrInvalid, f.Path, sum, f.Rows)
		}
		if f.Rows > math.MaxInt64-total {
			return fmt.Errorf("%w: the files hold more than 2^63 rows", ErrInvalid)
		}
		total += f.Rows
	}
	for i, o := range m.Media {
		if err := o.Validate(); err != nil {
			return err
		}
		if i > 0 && m.Media[i-1].SHA256 >= o.SHA256 {
			return fmt.Errorf("%w: manifest media are not sorted by sha256 without repeats (%s after %s)", ErrInvalid, o.SHA256, m.Media[i-1].SHA256)
		}
	}
	return nil
}

// validDataPath checks a manifest's data file path: a valid key under the
// project's data directory ("data/TABLE/UUID.parquet"), so that a damaged
// manifest cannot send reads (or a collector's keep list) elsewhere.
func validDataPath(path string) error {
	if !strings.HasPrefix(path, DataDir) || bucket.ValidateKey(path) != nil {
		return fmt.Errorf("%w: data file path %s is not a key under %s", ErrInvalid, errdefs.Quote(path), DataDir)
	}
	return nil
}

// validate checks the names and ids a commit holds: they become object
// keys (its parent's, its manifests').
func (c *Commit) validate() error {
	if c.Parent != "" {
		if _, err := ParseCommitID(string(c.Parent)); err != nil {
			return fmt.Errorf("parent: %w", err)
		}
	}
	for t, mid := range c.Tables {
		if _, err := ParseTableName(string(t)); err != nil {
			return err
		}
		if _, err := ParseManifestID(string(mid)); err != nil {
			return fmt.Errorf("table %s: %w", t, err)
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
	if err := c.validate(); err != nil {
		// The store's damage: the chain keeps only ErrCorrupt.
		return nil, fmt.Errorf("%w: commit %s: %s", ErrCorrupt, want, err.Error())
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
	if m.Format != ManifestFormat && m.Format != ManifestMediaFormat {
		return nil, fmt.Errorf("%w: manifest %s has format %d; this Weft reads formats %d and %d (upgrade Weft)", ErrCorrupt, want, m.Format, ManifestFormat, ManifestMediaFormat)
	}
	if m.Format != m.format() {
		return nil, fmt.Errorf("%w: manifest %s has format %d but %d media objects (format %d names media, format %d none)", ErrCorrupt, want, m.Format, len(m.Media), ManifestMediaFormat, ManifestFormat)
	}
	if err := m.validate(); err != nil {
		// The store's damage, not the reader's request: the chain keeps
		// only ErrCorrupt.
		return nil, fmt.Errorf("%w: manifest %s: %s", ErrCorrupt, want, err.Error())
	}
	m.seal()
	if m.ID != want {
		return nil, fmt.Errorf("%w: manifest %s hashes to %s", ErrCorrupt, want, m.ID)
	}
	return &m, nil
}
