package importers

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/weftdata/weft/bucket"
	"github.com/weftdata/weft/errdefs"
)

// File is one file of a Source: its path relative to the source's
// directory ("/"-separated) and its size in bytes.
type File struct {
	Path string
	Size int64
}

// ReaderAt reads ranges of one source file (bucket.Reader's contract).
type ReaderAt = bucket.Reader

// Source is the files of a dataset. Paths are relative to its directory,
// "/"-separated, without "." or ".." segments. Its methods may be called
// concurrently.
type Source interface {
	// URL is the source as the user gave it, for messages and the commit
	// record.
	URL() string
	// Pattern is the file-name pattern the URL ended with ("" if none):
	// a glob with brace expansion, shard-{000..009}.tar, or a single
	// file's name. Formats select their files with Match.
	Pattern() string
	// List returns every file under dir ("" for all), recursively,
	// sorted by path.
	List(ctx context.Context, dir string) ([]File, error)
	// Open streams one file from its start.
	Open(ctx context.Context, path string) (io.ReadCloser, error)
	// OpenAt opens one file for random access.
	OpenAt(ctx context.Context, path string) (ReaderAt, error)
	// Close releases the source's connections.
	Close() error
}

// SourceOptions say which sources OpenSource accepts and how it reaches S3.
type SourceOptions struct {
	// Roots, if not empty, are the only local directories a source may
	// lie under (resolved, symlinks included); LocalAllowed must be true
	// too for any local source.
	Roots []string
	// LocalAllowed lets local paths be sources at all (true for the CLI;
	// the server sets it only when it has import roots).
	LocalAllowed bool
	// S3 overrides the AWS_* environment for s3:// sources (endpoint,
	// keys, region); the bucket comes from the URL.
	S3 bucket.S3Config
	// ChunkBytes is the size of the ranged reads that stream S3 files
	// (0: 8 MiB); two are in flight per open file.
	ChunkBytes int64
}

// patternChars mark the last path segment of a URL as a file pattern.
const patternChars = "*?[{"

// OpenSource opens the dataset a URL names: a local directory (or
// file://DIR), a local file or pattern in one, or s3://BUCKET/PREFIX with
// an optional pattern as the last segment. A local source outside the
// allowed roots, or any local source when none is allowed, is refused
// with ErrSourceDenied before anything is read.
func OpenSource(ctx context.Context, url string, opts SourceOptions) (Source, error) {
	if url == "" {
		return nil, fmt.Errorf("%w: empty source; give a directory, file://DIR or s3://BUCKET/PREFIX", ErrBadSource)
	}
	if strings.HasPrefix(url, "s3://") {
		return openS3Source(ctx, url, opts)
	}
	if strings.Contains(url, "://") && !strings.HasPrefix(url, "file://") {
		return nil, fmt.Errorf("%w: %s: unknown scheme; give a directory, file://DIR or s3://BUCKET/PREFIX", ErrBadSource, errdefs.Quote(url))
	}
	return openLocalSource(url, opts)
}

// splitPattern cuts a trailing pattern segment off p.
func splitPattern(p string) (dir, pattern string) {
	p = strings.TrimRight(p, "/")
	i := strings.LastIndex(p, "/")
	last := p[i+1:]
	if strings.ContainsAny(last, patternChars) {
		if i < 0 {
			return ".", last
		}
		return p[:i], last
	}
	return p, ""
}

// within reports whether path p (resolved, absolute) is dir or under it.
func within(dir, p string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

type localSource struct {
	url, root, pattern string
	dir                *os.Root // root, opened: every file is opened through it
}

func openLocalSource(url string, opts SourceOptions) (Source, error) {
	if !opts.LocalAllowed {
		return nil, fmt.Errorf("%w: %s is a local path, and this server imports only from s3:// URLs (start flightd with --import-root DIR to allow local directories under DIR)", ErrSourceDenied, errdefs.Quote(url))
	}
	p := strings.TrimPrefix(url, "file://")
	dir, pattern := splitPattern(p)
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrBadSource, errdefs.Quote(url), err)
	}
	// Roots are checked on the unresolved path too, so that nothing about
	// a path outside them (even whether it exists) is revealed.
	roots := make([]string, 0, len(opts.Roots))
	for _, r := range opts.Roots {
		ra, err := filepath.Abs(r)
		if err != nil {
			return nil, fmt.Errorf("%w: import root %s: %w", ErrBadSource, errdefs.Quote(r), err)
		}
		if rr, err := filepath.EvalSymlinks(ra); err == nil {
			ra = rr
		}
		roots = append(roots, ra)
	}
	allowed := func(p string) bool {
		if len(roots) == 0 {
			return true
		}
		return slices.ContainsFunc(roots, func(r string) bool { return within(r, p) })
	}
	if !allowed(filepath.Clean(abs)) {
		return nil, fmt.Errorf("%w: %s is not under an import root (%s)", ErrSourceDenied, errdefs.Quote(url), strings.Join(opts.Roots, ", "))
	}
	resolved, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrSourceNotFound, errdefs.Quote(url), errors.Unwrap(err))
	}
	if !allowed(resolved) {
		return nil, fmt.Errorf("%w: %s resolves to %s, which is not under an import root", ErrSourceDenied, errdefs.Quote(url), resolved)
	}
	st, err := os.Stat(resolved)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrSourceNotFound, errdefs.Quote(url), err)
	}
	if !st.IsDir() {
		if pattern != "" {
			return nil, fmt.Errorf("%w: %s: %s is not a directory", ErrBadSource, errdefs.Quote(url), dir)
		}
		// A single file: its directory is the source, its name the pattern.
		pattern = filepath.Base(resolved)
		resolved = filepath.Dir(resolved)
	}
	// Files are opened through an os.Root of the source's directory, itself
	// opened through the import root it lies under: a symlink swapped in
	// after the checks above cannot lead outside (the checks give the
	// errors; the roots make them hold).
	dirRoot, err := openConfined(roots, resolved)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrSourceDenied, errdefs.Quote(url), err)
	}
	return &localSource{url: url, root: resolved, dir: dirRoot, pattern: pattern}, nil
}

// openConfined opens dir (resolved, absolute) as an os.Root: through the
// first import root it is under, so that no component of it can be
// swapped for a symlink that leaves that root; without roots, directly.
func openConfined(roots []string, dir string) (*os.Root, error) {
	for _, r := range roots {
		if !within(r, dir) {
			continue
		}
		base, err := os.OpenRoot(r)
		if err != nil {
			return nil, err
		}
		defer base.Close()
		rel, err := filepath.Rel(r, dir)
		if err != nil {
			return nil, err
		}
		return base.OpenRoot(rel)
	}
	return os.OpenRoot(dir)
}

func (s *localSource) URL() string     { return s.url }
func (s *localSource) Pattern() string { return s.pattern }
func (s *localSource) Close() error    { return s.dir.Close() }

// resolve maps a source path to a local file, refusing any path (or
// symlink) that leaves the source's directory.
func (s *localSource) resolve(p string) (string, error) {
	if err := checkRelPath(p); err != nil {
		return "", err
	}
	full := filepath.Join(s.root, filepath.FromSlash(p))
	real, err := filepath.EvalSymlinks(full)
	if err != nil {
		return "", fmt.Errorf("%w: %s: %w", ErrSourceNotFound, errdefs.Quote(p), err)
	}
	if !within(s.root, real) {
		return "", fmt.Errorf("%w: %s is a symlink to %s, outside the source directory", ErrSourceDenied, errdefs.Quote(p), real)
	}
	return real, nil
}

// checkRelPath refuses absolute paths and "." or ".." segments.
func checkRelPath(p string) error {
	if p == "" || strings.HasPrefix(p, "/") {
		return fmt.Errorf("%w: path %s must be relative to the source", ErrBadSource, errdefs.Quote(p))
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return fmt.Errorf("%w: path %s has an empty, . or .. segment", ErrBadSource, errdefs.Quote(p))
		}
	}
	return nil
}

func (s *localSource) List(ctx context.Context, dir string) ([]File, error) {
	start := "."
	if dir != "" {
		if err := checkRelPath(dir); err != nil {
			return nil, err
		}
		start = dir
	}
	// Walked through the source's os.Root, as files are opened: a directory
	// swapped for a symlink cannot list what lies outside it.
	fsys := s.dir.FS()
	var out []File
	err := fs.WalkDir(fsys, start, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == start && errors.Is(err, fs.ErrNotExist) {
				return fs.SkipAll
			}
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		// A symlink is followed only inside the source directory (the
		// root refuses the others: skipped, Open of it says why); a
		// symlink to a directory is not descended into.
		st, err := fs.Stat(fsys, p)
		if err != nil {
			if d.Type()&fs.ModeSymlink != 0 {
				return nil
			}
			return err
		}
		if st.Mode().IsRegular() {
			out = append(out, File{Path: p, Size: st.Size()})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", s.url, err)
	}
	slices.SortFunc(out, func(a, b File) int { return strings.Compare(a.Path, b.Path) })
	return out, nil
}

func (s *localSource) Open(ctx context.Context, p string) (io.ReadCloser, error) {
	return s.open(p)
}

// open opens p, resolved under the source's directory.
func (s *localSource) open(p string) (*os.File, error) {
	if _, err := s.resolve(p); err != nil {
		return nil, err // the error that says why (not found, a symlink outside)
	}
	f, err := s.dir.Open(filepath.FromSlash(p))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: open %s: %w", ErrSourceNotFound, p, err)
	}
	if err != nil { // a path that left the directory since resolve, among others
		return nil, fmt.Errorf("%w: open %s: %w", ErrSourceDenied, p, err)
	}
	return f, nil
}

func (s *localSource) OpenAt(ctx context.Context, p string) (ReaderAt, error) {
	f, err := s.open(p)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("open %s: %w", p, err)
	}
	return &osReaderAt{File: f, size: st.Size()}, nil
}

type osReaderAt struct {
	*os.File
	size int64
}

func (r *osReaderAt) Size() int64 { return r.size }

// s3Source reads objects under a prefix of a bucket.
type s3Source struct {
	url, pattern string
	b            bucket.Bucket
	chunk        int64
}

func openS3Source(ctx context.Context, url string, opts SourceOptions) (Source, error) {
	dir, pattern := splitPattern(url)
	if strings.TrimPrefix(dir, "s3://") == "" {
		return nil, fmt.Errorf("%w: %s: no bucket; give s3://BUCKET/PREFIX", ErrBadSource, errdefs.Quote(url))
	}
	b, err := bucket.Open(ctx, dir, opts.S3)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadSource, err)
	}
	chunk := opts.ChunkBytes
	if chunk <= 0 {
		chunk = 8 << 20
	}
	s := &s3Source{url: url, pattern: pattern, b: b, chunk: chunk}
	if pattern == "" {
		// A URL naming one object, not a prefix: its "directory" is the
		// source and its name the pattern.
		if i := strings.LastIndex(dir, "/"); i > len("s3://") {
			files, err := s.List(ctx, "")
			if err == nil && len(files) == 0 {
				parent, name := dir[:i], dir[i+1:]
				pb, perr := bucket.Open(ctx, parent, opts.S3)
				if perr == nil {
					if _, serr := pb.Stat(ctx, name); serr == nil {
						_ = s.Close()
						return &s3Source{url: url, pattern: name, b: pb, chunk: chunk}, nil
					}
					if c, ok := pb.(io.Closer); ok {
						_ = c.Close()
					}
				}
			}
		}
	}
	return s, nil
}

func (s *s3Source) URL() string     { return s.url }
func (s *s3Source) Pattern() string { return s.pattern }
func (s *s3Source) Close() error {
	if c, ok := s.b.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

func (s *s3Source) List(ctx context.Context, dir string) ([]File, error) {
	prefix := ""
	if dir != "" {
		if err := checkRelPath(dir); err != nil {
			return nil, err
		}
		prefix = strings.TrimSuffix(dir, "/") + "/"
	}
	var out []File
	for info, err := range s.b.List(ctx, prefix) {
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", s.url, err)
		}
		out = append(out, File{Path: info.Key, Size: info.Size})
	}
	return out, nil // bucket.List is sorted by key
}

func (s *s3Source) OpenAt(ctx context.Context, p string) (ReaderAt, error) {
	if err := checkRelPath(p); err != nil {
		return nil, err
	}
	r, err := s.b.Open(ctx, p)
	if err != nil {
		if errors.Is(err, errdefs.ErrNotFound) {
			return nil, fmt.Errorf("%w: %s: %w", ErrSourceNotFound, errdefs.Quote(p), err)
		}
		return nil, fmt.Errorf("open %s: %w", p, err)
	}
	return r, nil
}

func (s *s3Source) Open(ctx context.Context, p string) (io.ReadCloser, error) {
	r, err := s.OpenAt(ctx, p)
	if err != nil {
		return nil, err
	}
	return newChunkReader(ctx, r, s.chunk), nil
}

// Match reports whether a file's path matches a Source pattern: a
// path.Match glob with {a,b} and {000..099} brace expansion (ExpandBraces).
// A pattern without "/" names files of the source's directory itself,
// not of its subdirectories. An empty pattern matches everything.
func Match(pattern, p string) (bool, error) {
	m, err := compilePattern(pattern)
	if err != nil {
		return false, err
	}
	return m.match(p), nil
}

func (m *matcher) match(p string) bool {
	if m == nil {
		return true
	}
	if !m.nested && strings.Contains(p, "/") {
		return false
	}
	if m.exact[p] {
		return true
	}
	for _, g := range m.globs {
		if ok, err := path.Match(g, p); err == nil && ok {
			return true
		}
	}
	return false
}

// Select lists the files of src that match its pattern, in path order;
// none is an error wrapping ErrSourceNotFound.
func Select(ctx context.Context, src Source) ([]File, error) {
	all, err := src.List(ctx, "")
	if err != nil {
		return nil, err
	}
	m, err := compilePattern(src.Pattern())
	if err != nil {
		return nil, err
	}
	var out []File
	for _, f := range all {
		if m.match(f.Path) {
			out = append(out, f)
		}
	}
	if len(out) == 0 {
		if src.Pattern() != "" {
			return nil, fmt.Errorf("%w: no file of %s matches %s", ErrSourceNotFound, errdefs.Quote(src.URL()), errdefs.Quote(src.Pattern()))
		}
		return nil, fmt.Errorf("%w: %s holds no files", ErrSourceNotFound, errdefs.Quote(src.URL()))
	}
	return out, nil
}
