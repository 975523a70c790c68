package bucket_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftdata/weft/bucket"
)

// TestFSRefusesSymlinks plants symbolic links inside an FS store's directory,
// to a file and a directory outside it (and one inside it), and checks that
// no operation reads, lists, writes or deletes through them.
func TestFSRefusesSymlinks(t *testing.T) {
	ctx := context.Background()
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret")
	require.NoError(t, os.WriteFile(secret, []byte("outside the store"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(outside, "dir"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(outside, "dir", "obj"), []byte("outside too"), 0o644))

	f := newFS(t)
	root := f.Dir()
	_, err := f.PutIfAbsent(ctx, "p/real", []byte("inside"))
	require.NoError(t, err)
	// A link to a file outside, a linked directory outside, a link to an
	// object inside the store (also refused: links are never objects).
	require.NoError(t, os.Symlink(secret, filepath.Join(root, "p", "file-link")))
	require.NoError(t, os.Symlink(filepath.Join(outside, "dir"), filepath.Join(root, "p", "dir-link")))
	require.NoError(t, os.Symlink(filepath.Join(root, "p", "real"), filepath.Join(root, "p", "inner-link")))
	require.NoError(t, os.Symlink(filepath.Join(root, "p"), filepath.Join(root, "q")))
	require.NoError(t, syscall.Mkfifo(filepath.Join(root, "p", "fifo"), 0o644))

	refused := func(t *testing.T, err error) {
		t.Helper()
		require.Error(t, err)
		require.ErrorIs(t, err, bucket.ErrSymlink)
		require.ErrorIs(t, err, bucket.ErrInvalidKey)
	}
	for _, key := range []string{"p/file-link", "p/dir-link/obj", "p/inner-link", "q/real"} {
		t.Run("read "+key, func(t *testing.T) {
			_, _, err := f.Get(ctx, key)
			refused(t, err)
			_, err = f.Open(ctx, key)
			refused(t, err)
			_, err = f.Stat(ctx, key)
			refused(t, err)
		})
	}
	t.Run("fifo is no object and does not block", func(t *testing.T) {
		_, _, err := f.Get(ctx, "p/fifo")
		require.ErrorIs(t, err, bucket.ErrNotFound)
	})
	t.Run("writes through a linked directory", func(t *testing.T) {
		_, err := f.Put(ctx, "p/dir-link/new", bytes.NewReader([]byte("x")), 1)
		refused(t, err)
		_, err = f.PutIfAbsent(ctx, "p/dir-link/new2", []byte("x"))
		refused(t, err)
		_, err = f.CompareAndSwap(ctx, "p/dir-link/obj", bucket.ContentETag([]byte("outside too")), []byte("y"))
		refused(t, err)
		_, err = f.Put(ctx, "q/new", bytes.NewReader([]byte("x")), 1)
		refused(t, err)
		refused(t, f.Delete(ctx, "p/dir-link/obj"))
		entries, err := os.ReadDir(filepath.Join(outside, "dir"))
		require.NoError(t, err)
		require.Len(t, entries, 1, "nothing may be written or removed outside the store")
		data, err := os.ReadFile(filepath.Join(outside, "dir", "obj"))
		require.NoError(t, err)
		require.Equal(t, "outside too", string(data))
	})
	t.Run("list skips links and refuses a linked prefix", func(t *testing.T) {
		var keys []string
		for info, err := range f.List(ctx, "") {
			require.NoError(t, err)
			keys = append(keys, info.Key)
		}
		require.Equal(t, []string{"p/real"}, keys)
		for _, prefix := range []string{"p/dir-link/", "q/"} {
			var errs []error
			for _, err := range f.List(ctx, prefix) {
				errs = append(errs, err)
			}
			require.Len(t, errs, 1, prefix)
			refused(t, errs[0])
		}
	})
	t.Run("replacing a link with an object leaves its target alone", func(t *testing.T) {
		// Put renames over the final path component, which replaces the
		// link itself, never the file it points to.
		_, err := f.Put(ctx, "p/file-link", bytes.NewReader([]byte("new")), 3)
		require.NoError(t, err)
		data, err := os.ReadFile(secret)
		require.NoError(t, err)
		require.Equal(t, "outside the store", string(data))
		got, _, err := f.Get(ctx, "p/file-link")
		require.NoError(t, err)
		require.Equal(t, "new", string(got))
	})
}
