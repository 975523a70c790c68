package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftdata/weft/auth"
	"github.com/weftdata/weft/bucket"
	"github.com/weftdata/weft/versions"
)

func runAdmin(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(context.Background(), append([]string{"admin"}, args...), &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestAdminTokens(t *testing.T) {
	dir := t.TempDir()
	code, secret, msg := runAdmin(t, "token", "create", "--store", dir, "--project", "robotics", "--scope", "write", "--name", "trainer")
	require.Equal(t, exitOK, code, msg)
	secret = strings.TrimSpace(secret)
	require.True(t, strings.HasPrefix(secret, auth.TokenPrefix), secret)
	id := auth.TokenID(auth.HashSecret(secret))
	require.Contains(t, msg, id)

	code, _, _ = runAdmin(t, "token", "create", "--store", dir, "--global-admin")
	require.Equal(t, exitOK, code)

	code, list, msg := runAdmin(t, "token", "list", "--store", dir)
	require.Equal(t, exitOK, code, msg)
	require.Contains(t, list, id)
	require.Contains(t, list, "trainer")
	require.Contains(t, list, "robotics:write")
	require.Contains(t, list, "global admin")
	require.NotContains(t, list, secret[len(auth.TokenPrefix):])

	// Positional id before or after the flags.
	code, out, msg := runAdmin(t, "token", "revoke", id, "--store", dir)
	require.Equal(t, exitOK, code, msg)
	require.Contains(t, out, "revoked token "+id)
	code, _, msg = runAdmin(t, "token", "revoke", "--store", dir, id)
	require.Equal(t, exitFail, code)
	require.Contains(t, msg, "no token has id")

	for _, bad := range [][]string{
		{"token", "create", "--store", dir},
		{"token", "create", "--store", dir, "--project", "p"},
		{"token", "create", "--store", dir, "--project", "p", "--scope", "root"},
		{"token", "revoke", "--store", dir},
		{"token"},
		{"nope"},
	} {
		code, _, _ := runAdmin(t, bad...)
		require.Equal(t, exitUsage, code, bad)
	}
}

func TestAdminTicketKeys(t *testing.T) {
	dir := t.TempDir()
	code, out, msg := runAdmin(t, "ticket-key", "rotate", "--store", dir)
	require.Equal(t, exitOK, code, msg)
	require.Contains(t, out, "added ticket key 1")
	code, out, _ = runAdmin(t, "ticket-key", "rotate", "--store", dir)
	require.Equal(t, exitOK, code)
	require.Contains(t, out, "added ticket key 2")
	code, out, _ = runAdmin(t, "ticket-key", "list", "--store", dir)
	require.Equal(t, exitOK, code)
	require.Contains(t, out, "2  ")
	require.Contains(t, out, "signs and verifies")
	code, _, msg = runAdmin(t, "ticket-key", "remove", "2", "--store", dir)
	require.Equal(t, exitFail, code)
	require.Contains(t, msg, "newest")
	code, _, msg = runAdmin(t, "ticket-key", "remove", "1", "--store", dir)
	require.Equal(t, exitOK, code, msg)
}

func TestAdminGC(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	b, err := bucket.NewFS(dir)
	require.NoError(t, err)
	// An empty store (with a stray directory), then a project and an
	// orphan data file.
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "x"), 0o755))
	code, _, msg := runAdmin(t, "gc", "--store", dir, "--older-than", "1ns")
	require.Equal(t, exitOK, code, msg)
	require.NoError(t, createProject(ctx, b, "p"))
	_, err = b.Put(ctx, "projects/p/data/t/orphan.parquet", strings.NewReader("orphan!"), 7)
	require.NoError(t, err)

	code, out, msg := runAdmin(t, "gc", "--store", dir, "--older-than", "1ns", "--dry-run")
	require.Equal(t, exitOK, code, msg)
	require.Contains(t, out, "would delete 1 unreferenced objects (7 B)")
	require.Contains(t, msg, "gc done")
	_, err = b.Stat(ctx, "projects/p/data/t/orphan.parquet")
	require.NoError(t, err)

	code, out, msg = runAdmin(t, "gc", "--older-than", "1ns", "--store", dir)
	require.Equal(t, exitOK, code, msg)
	require.Contains(t, out, "deleted 1 unreferenced objects (7 B)")
	require.Contains(t, out, "kept 1 referenced")
	_, err = b.Stat(ctx, "projects/p/data/t/orphan.parquet")
	require.ErrorIs(t, err, bucket.ErrNotFound)

	code, _, _ = runAdmin(t, "gc", "--store", dir, "--older-than", "0s")
	require.Equal(t, exitUsage, code)
}

func createProject(ctx context.Context, b bucket.Bucket, p versions.ProjectName) error {
	v, err := versions.New(b, versions.DefaultOptions())
	if err != nil {
		return err
	}
	_, err = v.CreateProject(ctx, p)
	return err
}
