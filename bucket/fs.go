package bucket

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"hash/fnv"
	"io"
	"io/fs"
	"iter"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// FS is a Bucket in a local directory, the embedded default store. Linux only.
//
// Layout: the object with key "a/b/c" is the regular file DIR/a/b/c, so the
// store can be read with ordinary tools. As on versitygw's posix backend, a
// key cannot be both a file and a directory: with "a/b" stored, writing
// "a/b/c" (or the reverse) fails with ErrInvalidKey. Bookkeeping lives in
// DIR/.weft-tmp (temporary files; leftovers older than an hour are removed by
// NewFS) and DIR/.weft-locks (256 lock files). Delete leaves empty
// directories behind.
//
// Symbolic links are refused: a key whose path under DIR passes through a
// symlink (a planted link to a file, or a linked directory, pointing inside
// or outside DIR) reads as an error wrapping ErrSymlink (and so
// ErrInvalidKey), for Get, Open, Stat, writes and Delete; List skips links
// and refuses a prefix whose directory is reached through one. Reads open
// each path component with O_NOFOLLOW relative to the previous one (openat),
// so a link swapped in while a read resolves its path is still refused;
// writes and Delete check the components with Lstat just before they act, a
// check that someone who can write inside DIR could race (DIR itself may be
// a link: it is resolved once, by NewFS's caller).
//
// Writes are atomic and durable: the body goes to a temporary file that is
// fsynced and then renamed (Put, CompareAndSwap) or hard-linked (PutIfAbsent)
// into place, and the parent directory is fsynced. Readers open the file, so
// they see the old or the new content, never a mix, and an open Reader keeps
// its version (the inode) after later writes.
//
// Consistency holds between processes sharing the directory, not only between
// goroutines: PutIfAbsent relies on link(2) failing with EEXIST; Put,
// CompareAndSwap and Delete hold an flock(2) on the key's lock stripe while
// they check and rename or unlink, so a CompareAndSwap's compare and its
// rename cannot be split by another writer. flock needs a local file system
// (not NFS).
//
// The ETag is ContentETag of the bytes. It is not stored: Stat and
// CompareAndSwap read and hash the whole file (about 1 GB/s), and List
// returns no ETag. Conditional objects are small, so this is cheap where it
// matters.
type FS struct {
	root    string
	tmpDir  string
	lockDir string
}

var _ Bucket = (*FS)(nil)

// ErrSymlink: FS met a symbolic link on a key's path under its directory.
// (FS-only; it sits here, not in errors.go, as only FS can raise it.)
var ErrSymlink = fmt.Errorf("%w: the path passes through a symbolic link, which the fs store refuses", ErrInvalidKey)

const (
	fsTmpDir      = ".weft-tmp"
	fsLockDir     = ".weft-locks"
	fsLockStripes = 256
	fsTmpMaxAge   = time.Hour
	fsCopyBuffer  = 256 << 10
)

// NewFS opens the store in dir, creating dir and its bookkeeping
// directories if needed, and removes temporary files older than an hour
// (leftovers of crashed writers).
func NewFS(dir string) (*FS, error) {
	if dir == "" {
		return nil, errors.New("fs: empty directory name")
	}
	root, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("fs %s: %w", dir, err)
	}
	f := &FS{
		root:    root,
		tmpDir:  filepath.Join(root, fsTmpDir),
		lockDir: filepath.Join(root, fsLockDir),
	}
	for _, d := range []string{root, f.tmpDir, f.lockDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("fs %s: %w", dir, err)
		}
	}
	f.removeStaleTemps(time.Now().Add(-fsTmpMaxAge))
	return f, nil
}

// Dir returns the store's absolute directory.
func (f *FS) Dir() string { return f.root }

// removeStaleTemps deletes temporary files last modified before cutoff. It
// is best effort: a file it cannot remove is left for the next NewFS.
func (f *FS) removeStaleTemps(cutoff time.Time) {
	_, _ = f.RemoveStaleTemps(cutoff, false)
}

// TempStats counts temporary files found (and removed) by RemoveStaleTemps.
type TempStats struct {
	Files int
	Bytes int64
}

// RemoveStaleTemps deletes the temporary files of writes (.weft-tmp/)
// last modified before cutoff, leftovers of writers that crashed or were
// killed, and returns what it removed; with dryRun it only counts them. A
// write still going on whose file is older than cutoff fails (its rename
// or link finds no file) and changes nothing, so the cutoff only has to be
// later than the longest write. Files it cannot remove are skipped.
func (f *FS) RemoveStaleTemps(cutoff time.Time, dryRun bool) (TempStats, error) {
	var st TempStats
	entries, err := os.ReadDir(f.tmpDir)
	if err != nil {
		return st, fmt.Errorf("fs list temporary files: %w", err)
	}
	for _, e := range entries {
		info, err := e.Info()
		if err != nil || !info.Mode().IsRegular() || !info.ModTime().Before(cutoff) {
			continue
		}
		if !dryRun {
			if err := os.Remove(filepath.Join(f.tmpDir, e.Name())); err != nil {
				continue
			}
		}
		st.Files++
		st.Bytes += info.Size()
	}
	return st, nil
}

func (f *FS) path(key string) string {
	return filepath.Join(f.root, filepath.FromSlash(key))
}

// openObject opens the object's file for reading.
func (f *FS) openObject(op, key string) (*os.File, os.FileInfo, error) {
	if err := ValidateKey(key); err != nil {
		return nil, nil, err
	}
	fh, err := f.openBeneath(key)
	if err != nil {
		return nil, nil, f.readErr(op, key, err)
	}
	st, err := fh.Stat()
	if err != nil {
		fh.Close()
		return nil, nil, fmt.Errorf("fs %s %s: %w", op, key, err)
	}
	if !st.Mode().IsRegular() {
		fh.Close()
		return nil, nil, fmt.Errorf("fs %s %s: %w", op, key, ErrNotFound)
	}
	return fh, st, nil
}

// readErr maps an error from looking up key's file.
func (f *FS) readErr(op, key string, err error) error {
	switch {
	case errors.Is(err, ErrSymlink):
		return fmt.Errorf("fs %s %s: %w", op, key, err)
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		return fmt.Errorf("fs %s %s: %w", op, key, ErrNotFound)
	case errors.Is(err, syscall.ENAMETOOLONG):
		return fmt.Errorf("fs %s %s: %w: %w", op, key, ErrInvalidKey, err)
	}
	return fmt.Errorf("fs %s %s: %w", op, key, err)
}

// writeErr maps an error from creating key's file or its directories.
func (f *FS) writeErr(op, key string, err error) error {
	switch {
	case errors.Is(err, ErrSymlink):
		return fmt.Errorf("fs %s %s: %w", op, key, err)
	case errors.Is(err, syscall.EISDIR), errors.Is(err, fs.ErrExist) && isDir(f.path(key)):
		// os.Rename reports a directory in the way as EEXIST.
		return fmt.Errorf("fs %s %s: %w: the key is a directory of other keys", op, key, ErrInvalidKey)
	case errors.Is(err, syscall.ENOTDIR), errors.Is(err, fs.ErrExist):
		return fmt.Errorf("fs %s %s: %w: a parent path is an object", op, key, ErrInvalidKey)
	case errors.Is(err, syscall.ENAMETOOLONG):
		return fmt.Errorf("fs %s %s: %w: %w", op, key, ErrInvalidKey, err)
	}
	return fmt.Errorf("fs %s %s: %w", op, key, err)
}

func (f *FS) Get(ctx context.Context, key string) ([]byte, ObjectInfo, error) {
	return f.getSmall(ctx, key, -1)
}

// getSmall is Get refusing an object over limit bytes (limit < 0: any).
func (f *FS) getSmall(_ context.Context, key string, limit int64) ([]byte, ObjectInfo, error) {
	fh, st, err := f.openObject("get", key)
	if err != nil {
		return nil, ObjectInfo{}, err
	}
	defer fh.Close()
	if limit >= 0 && st.Size() > limit {
		return nil, ObjectInfo{}, fmt.Errorf("fs get: %w", tooLarge(key, st.Size(), limit))
	}
	// The file is never written in place, so its size is fixed.
	data := make([]byte, st.Size())
	if _, err := io.ReadFull(fh, data); err != nil {
		return nil, ObjectInfo{}, fmt.Errorf("fs get %s: %w", key, err)
	}
	return data, fsInfo(key, st, ContentETag(data)), nil
}

func fsInfo(key string, st os.FileInfo, etag ETag) ObjectInfo {
	return ObjectInfo{Key: key, Size: st.Size(), ETag: etag, ModTime: st.ModTime()}
}

func (f *FS) Open(ctx context.Context, key string) (Reader, error) {
	fh, st, err := f.openObject("open", key)
	if err != nil {
		return nil, err
	}
	return &fsReader{f: fh, key: key, size: st.Size()}, nil
}

// fsReader reads one version of an object through an open file: a rename
// over the key leaves this inode intact. os.File.ReadAt is pread, so
// concurrent calls do not share a file offset.
type fsReader struct {
	f    *os.File
	key  string
	size int64
}

func (r *fsReader) Size() int64 { return r.size }

func (r *fsReader) ReadAt(p []byte, off int64) (int, error) {
	want, err := readSpan("fs read", r.key, off, len(p), r.size)
	if want == 0 {
		return 0, err
	}
	n, err := r.f.ReadAt(p[:want], off)
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF // the file shrank: not ours to write
		}
		return n, fmt.Errorf("fs read %s: %w", r.key, err)
	}
	if want < int64(len(p)) {
		return n, io.EOF
	}
	return n, nil
}

func (r *fsReader) Close() error { return r.f.Close() }

func (f *FS) Put(ctx context.Context, key string, body io.Reader, size int64) (ETag, error) {
	if err := ValidateKey(key); err != nil {
		return "", err
	}
	tmp, etag, n, err := f.writeTemp(ctx, body)
	if err != nil {
		return "", fmt.Errorf("fs put %s: %w", key, err)
	}
	defer removeIfExists(tmp)
	if size >= 0 && n != size {
		return "", fmt.Errorf("fs put %s: body has %d bytes, size said %d", key, n, size)
	}
	unlock, err := f.lock(ctx, key)
	if err != nil {
		return "", fmt.Errorf("fs put %s: %w", key, err)
	}
	defer unlock()
	if err := f.rename(tmp, key); err != nil {
		return "", f.writeErr("put", key, err)
	}
	return etag, nil
}

func (f *FS) PutIfAbsent(ctx context.Context, key string, data []byte) (ETag, error) {
	if err := checkConditional(key, data); err != nil {
		return "", err
	}
	tmp, etag, _, err := f.writeTemp(ctx, bytes.NewReader(data))
	if err != nil {
		return "", fmt.Errorf("fs put-if-absent %s: %w", key, err)
	}
	defer removeIfExists(tmp)
	p := f.path(key)
	if err := f.mkdirs(filepath.Dir(p)); err != nil {
		return "", f.writeErr("put-if-absent", key, err)
	}
	if err := f.checkNoLinks(key, false); err != nil {
		return "", f.writeErr("put-if-absent", key, err)
	}
	// link(2) never replaces: the atomic create-if-absent, also between
	// processes. The temp name goes away in the deferred remove.
	if err := os.Link(tmp, p); err != nil {
		if errors.Is(err, fs.ErrExist) && !isDir(p) {
			return "", fmt.Errorf("fs put-if-absent %s: %w", key, ErrExists)
		}
		return "", f.writeErr("put-if-absent", key, err)
	}
	if err := syncDir(filepath.Dir(p)); err != nil {
		return "", fmt.Errorf("fs put-if-absent %s: %w", key, err)
	}
	return etag, nil
}

func (f *FS) CompareAndSwap(ctx context.Context, key string, old ETag, data []byte) (ETag, error) {
	if err := checkConditional(key, data); err != nil {
		return "", err
	}
	// Write outside the lock; hold it only to compare and rename.
	tmp, etag, _, err := f.writeTemp(ctx, bytes.NewReader(data))
	if err != nil {
		return "", fmt.Errorf("fs compare-and-swap %s: %w", key, err)
	}
	defer removeIfExists(tmp)
	unlock, err := f.lock(ctx, key)
	if err != nil {
		return "", fmt.Errorf("fs compare-and-swap %s: %w", key, err)
	}
	defer unlock()
	info, err := f.stat("compare-and-swap", key)
	if err != nil {
		return "", err
	}
	if info.ETag != old {
		return "", fmt.Errorf("fs compare-and-swap %s: %w", key, ErrConflict)
	}
	if err := f.rename(tmp, key); err != nil {
		return "", f.writeErr("compare-and-swap", key, err)
	}
	return etag, nil
}

func (f *FS) Stat(ctx context.Context, key string) (ObjectInfo, error) {
	return f.stat("stat", key)
}

// stat hashes the object's file for its ETag.
func (f *FS) stat(op, key string) (ObjectInfo, error) {
	fh, st, err := f.openObject(op, key)
	if err != nil {
		return ObjectInfo{}, err
	}
	defer fh.Close()
	h := sha256.New()
	if _, err := io.CopyBuffer(h, fh, make([]byte, fsCopyBuffer)); err != nil {
		return ObjectInfo{}, fmt.Errorf("fs %s %s: %w", op, key, err)
	}
	return fsInfo(key, st, etagOfHash(h)), nil
}

func (f *FS) Delete(ctx context.Context, key string) error {
	if err := ValidateKey(key); err != nil {
		return err
	}
	unlock, err := f.lock(ctx, key)
	if err != nil {
		return fmt.Errorf("fs delete %s: %w", key, err)
	}
	defer unlock()
	p := f.path(key)
	if err := f.checkNoLinks(key, false); err != nil {
		if errors.Is(err, ErrSymlink) {
			return fmt.Errorf("fs delete %s: %w", key, err)
		}
		return nil // a parent is missing or a file: nothing to delete
	}
	// unlink, not os.Remove: a directory at the path holds other keys and
	// must not be removed.
	if err := syscall.Unlink(p); err != nil {
		switch {
		case errors.Is(err, syscall.ENOENT), errors.Is(err, syscall.ENOTDIR):
			return nil
		case errors.Is(err, syscall.EISDIR), errors.Is(err, syscall.EPERM):
			if isDir(p) {
				return nil
			}
		case errors.Is(err, syscall.ENAMETOOLONG):
			return fmt.Errorf("fs delete %s: %w: %w", key, ErrInvalidKey, err)
		}
		return fmt.Errorf("fs delete %s: %w", key, err)
	}
	if err := syncDir(filepath.Dir(p)); err != nil {
		return fmt.Errorf("fs delete %s: %w", key, err)
	}
	return nil
}

// List walks the directory tree from the deepest directory named by prefix,
// visiting each directory's entries in the byte order of the keys they hold
// (a directory "a" sorts as "a/", after "a-b" and before "a0"), so keys come
// out in order without collecting them first.
func (f *FS) List(ctx context.Context, prefix string) iter.Seq2[ObjectInfo, error] {
	return func(yield func(ObjectInfo, error) bool) {
		start := ""
		if i := strings.LastIndexByte(prefix, '/'); i >= 0 {
			start = prefix[:i]
			// Every stored key is valid, and a valid key's whole leading
			// segments are a valid key: no match is possible otherwise.
			if ValidateKey(start) != nil {
				return
			}
			if err := f.checkNoLinks(start, true); errors.Is(err, ErrSymlink) {
				yield(ObjectInfo{}, fmt.Errorf("fs list %q: %w", prefix, err))
				return
			}
		}
		err := f.walk(ctx, start, prefix, yield)
		if err != nil && !errors.Is(err, errStopWalk) {
			yield(ObjectInfo{}, fmt.Errorf("fs list %q: %w", prefix, err))
		}
	}
}

var errStopWalk = errors.New("stop walk")

type fsEntry struct {
	name    string
	sortKey string // name, or name+"/" for a directory
	dir     bool
}

// walk yields the objects under the directory of key dirKey ("" for the
// root) whose keys start with prefix.
func (f *FS) walk(ctx context.Context, dirKey, prefix string, yield func(ObjectInfo, error) bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	dirPath := f.root
	if dirKey != "" {
		dirPath = f.path(dirKey)
	}
	des, err := os.ReadDir(dirPath)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			return nil // the prefix names no directory: nothing under it
		}
		return err
	}
	entries := make([]fsEntry, 0, len(des))
	for _, de := range des {
		name := de.Name()
		if strings.HasPrefix(name, ".weft") {
			continue // bookkeeping, never a key segment
		}
		switch {
		case de.IsDir():
			entries = append(entries, fsEntry{name: name, sortKey: name + "/", dir: true})
		case de.Type().IsRegular():
			entries = append(entries, fsEntry{name: name, sortKey: name})
		}
	}
	slices.SortFunc(entries, func(a, b fsEntry) int { return strings.Compare(a.sortKey, b.sortKey) })
	for _, e := range entries {
		key := e.name
		if dirKey != "" {
			key = dirKey + "/" + e.name
		}
		if e.dir {
			sub := key + "/"
			if !strings.HasPrefix(sub, prefix) && !strings.HasPrefix(prefix, sub) {
				continue
			}
			if err := f.walk(ctx, key, prefix, yield); err != nil {
				return err
			}
			continue
		}
		if !strings.HasPrefix(key, prefix) {
			continue
		}
		st, err := os.Lstat(filepath.Join(dirPath, e.name))
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue // deleted while we walked
			}
			return err
		}
		if !yield(ObjectInfo{Key: key, Size: st.Size(), ModTime: st.ModTime()}, nil) {
			return errStopWalk
		}
	}
	return nil
}

// writeTemp copies body into a new fsynced file under .weft-tmp and returns
// its path, the content's ETag and length. The caller removes the file.
func (f *FS) writeTemp(ctx context.Context, body io.Reader) (string, ETag, int64, error) {
	fh, err := os.CreateTemp(f.tmpDir, "put-*")
	if err != nil {
		return "", "", 0, err
	}
	name := fh.Name()
	h := sha256.New()
	n, err := io.CopyBuffer(io.MultiWriter(fh, h), ctxReader{ctx, body}, make([]byte, fsCopyBuffer))
	if err == nil {
		err = fh.Chmod(0o644)
	}
	if err == nil {
		err = fh.Sync()
	}
	if cerr := fh.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(name)
		return "", "", 0, err
	}
	return name, etagOfHash(h), n, nil
}

// rename moves the temp file onto key's path and makes it durable. The
// caller holds key's lock.
func (f *FS) rename(tmp, key string) error {
	p := f.path(key)
	dir := filepath.Dir(p)
	if err := f.mkdirs(dir); err != nil {
		return err
	}
	if err := f.checkNoLinks(key, false); err != nil {
		return err
	}
	if err := os.Rename(tmp, p); err != nil {
		return err
	}
	return syncDir(dir)
}

// openBeneath opens key's file read-only, one path component at a time
// with openat(2) and O_NOFOLLOW from the root, so no symbolic link below
// the root is followed, even one swapped in meanwhile. A link gives an
// error wrapping ErrSymlink; other errors are the syscall's.
func (f *FS) openBeneath(key string) (*os.File, error) {
	const dirFlags = syscall.O_RDONLY | syscall.O_DIRECTORY | syscall.O_NOFOLLOW | syscall.O_CLOEXEC
	dirfd, err := openRetry(func() (int, error) {
		return syscall.Open(f.root, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	})
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: f.root, Err: err}
	}
	segs := strings.Split(key, "/")
	for i, seg := range segs {
		flags := dirFlags
		if i == len(segs)-1 {
			flags = syscall.O_RDONLY | syscall.O_NOFOLLOW | syscall.O_NONBLOCK | syscall.O_CLOEXEC // a planted FIFO must not block the open
		}
		fd, err := openRetry(func() (int, error) { return syscall.Openat(dirfd, seg, flags, 0) })
		if err != nil {
			// O_NOFOLLOW refuses a link with ELOOP; with O_DIRECTORY some
			// kernels say ENOTDIR, so look at what is there.
			if err == syscall.ELOOP || err == syscall.ENOTDIR && isLink(f.path(strings.Join(segs[:i+1], "/"))) {
				err = ErrSymlink
			}
			syscall.Close(dirfd)
			return nil, &fs.PathError{Op: "open", Path: f.path(strings.Join(segs[:i+1], "/")), Err: err}
		}
		syscall.Close(dirfd)
		dirfd = fd
	}
	return os.NewFile(uintptr(dirfd), f.path(key)), nil
}

func openRetry(open func() (int, error)) (int, error) {
	for {
		fd, err := open()
		if err != syscall.EINTR {
			return fd, err
		}
	}
}

// isLink reports whether p is a symbolic link.
func isLink(p string) bool {
	st, err := os.Lstat(p)
	return err == nil && st.Mode()&fs.ModeSymlink != 0
}

// checkNoLinks returns an error wrapping ErrSymlink if a directory on key's
// path under the root (and, with whole, key's own path) is a symbolic link.
// It stops without error at the first component that does not exist (what
// comes after it cannot be a link yet); other Lstat errors are returned.
func (f *FS) checkNoLinks(key string, whole bool) error {
	segs := strings.Split(key, "/")
	if !whole {
		segs = segs[:len(segs)-1]
	}
	p := f.root
	for _, seg := range segs {
		p = filepath.Join(p, seg)
		st, err := os.Lstat(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return nil
		case err != nil:
			return err
		case st.Mode()&fs.ModeSymlink != 0:
			return &fs.PathError{Op: "lstat", Path: p, Err: ErrSymlink}
		}
	}
	return nil
}

// mkdirs is os.MkdirAll that also fsyncs the parent of every directory it
// creates, so a durable file is not left in a directory that is not.
func (f *FS) mkdirs(dir string) error {
	st, err := os.Lstat(dir)
	if err == nil {
		if st.Mode()&fs.ModeSymlink != 0 {
			return &fs.PathError{Op: "mkdir", Path: dir, Err: ErrSymlink}
		}
		if st.IsDir() {
			return nil
		}
		return &fs.PathError{Op: "mkdir", Path: dir, Err: syscall.ENOTDIR}
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	parent := filepath.Dir(dir)
	if parent != dir && len(parent) >= len(f.root) {
		if err := f.mkdirs(parent); err != nil {
			return err
		}
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		if errors.Is(err, fs.ErrExist) {
			// Another writer made it first, or it is a file.
			if st, serr := os.Lstat(dir); serr == nil && st.IsDir() {
				return nil
			}
		}
		return err
	}
	return syncDir(parent)
}

// lock takes the exclusive flock of key's stripe. flock belongs to the open
// file description, so each call opens its own: that excludes other
// goroutines of this process as well as other processes. Locks are held
// for a hash and a rename, so lock waits for them briefly and does not
// watch ctx while it waits.
func (f *FS) lock(ctx context.Context, key string) (unlock func(), err error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	h := fnv.New32a()
	h.Write([]byte(key))
	name := filepath.Join(f.lockDir, fmt.Sprintf("%02x", h.Sum32()%fsLockStripes))
	fh, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	rc, err := fh.SyscallConn()
	if err != nil {
		fh.Close()
		return nil, err
	}
	var lerr error
	err = rc.Control(func(fd uintptr) {
		for {
			lerr = syscall.Flock(int(fd), syscall.LOCK_EX)
			if lerr != syscall.EINTR {
				return
			}
		}
	})
	if err == nil {
		err = lerr
	}
	if err != nil {
		fh.Close()
		return nil, fmt.Errorf("lock %s: %w", name, err)
	}
	// Closing the only descriptor releases the flock.
	return func() { fh.Close() }, nil
}

func isDir(p string) bool {
	st, err := os.Lstat(p)
	return err == nil && st.IsDir()
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

func removeIfExists(name string) {
	_ = os.Remove(name)
}

// etagOfHash finishes a SHA-256 the way ContentETag does.
func etagOfHash(h hash.Hash) ETag {
	sum := h.Sum(nil)
	return ETag(hex.EncodeToString(sum[:16]))
}

// ctxReader stops a copy when ctx is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
