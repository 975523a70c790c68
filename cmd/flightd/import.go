package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/weftdata/weft/bucket"
	"github.com/weftdata/weft/episodes"
	"github.com/weftdata/weft/errdefs"
	"github.com/weftdata/weft/importers"
	"github.com/weftdata/weft/internal/bytesize"
	"github.com/weftdata/weft/tables"
	"github.com/weftdata/weft/versions"
)

const importUsage = `Usage: flightd import FORMAT SRC --project P --table T [--branch B] [flags]

Import a dataset into table T (and T.SUFFIX for formats with several tables)
of project P as ONE commit on branch B: all of it, or nothing on any error.
FORMAT is one of: %s. SRC is a local directory, a file or a pattern in one
(shard-{000000..000099}.tar, *.tar), or s3://BUCKET/PREFIX[/PATTERN] (keys
from $AWS_ACCESS_KEY_ID and $AWS_SECRET_ACCESS_KEY, endpoint from
--source-s3-endpoint, else the store's).

Flags:
`

// multiFlag collects a repeated string flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

// importCommand is `flightd import FORMAT SRC …`: flags → importers.
func importCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var sf storeFlags
	var req importers.Request
	var roots, opts multiFlag
	var srcS3 bucket.S3Config
	var create, quiet bool
	opt := importers.DefaultOptions()
	reg := importers.DefaultRegistry()
	fs := flag.NewFlagSet("import", flag.ContinueOnError)
	sf.register(fs)
	fs.StringVar(&req.Project, "project", "", "target `project` (required)")
	fs.StringVar(&req.Branch, "branch", string(versions.MainBranch), "target `branch`")
	fs.StringVar(&req.Table, "table", "", "target `table` (required)")
	fs.Var(&opts, "opt", "a format option `KEY=VALUE` (repeatable; see README.md, \"Import datasets you already have\")")
	fs.Var(&roots, "import-root", "allow local sources only under this `DIR` (repeatable; none: any local path)")
	fs.StringVar(&srcS3.Endpoint, "source-s3-endpoint", "", "S3 endpoint `URL` of an s3:// source (default: --s3-endpoint, then $AWS_ENDPOINT_URL_S3, $AWS_ENDPOINT_URL)")
	fs.BoolVar(&create, "create", false, "create the project and branch if missing (the branch from main)")
	fs.BoolVar(&quiet, "quiet", false, "no progress display")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), importUsage, strings.Join(reg.Names(), ", "))
		fs.PrintDefaults()
	}
	pos, done, code := parseInterspersed(fs, args, "import", stdout, stderr)
	if done {
		return code
	}
	if len(pos) != 2 || req.Project == "" || req.Table == "" {
		fmt.Fprintf(stderr, "flightd import: want FORMAT SRC --project P --table T (see 'flightd import --help')\n")
		return exitUsage
	}
	req.Format, req.Source = pos[0], pos[1]
	if len(opts) > 0 {
		req.Options = importers.FormatOptions{}
		for _, kv := range opts {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || k == "" {
				fmt.Fprintf(stderr, "flightd import: --opt %q: want KEY=VALUE\n", kv)
				return exitUsage
			}
			req.Options[k] = v
		}
	}
	opt.Source = importers.SourceOptions{Roots: roots, LocalAllowed: true, S3: sourceS3(srcS3, sf.s3)}
	opt.Registry = reg

	log := slog.New(slog.NewTextHandler(stderr, nil))
	opt.Logger = log
	_, v, closeFn, err := sf.openVersions(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "flightd import: %v\n", err)
		return exitUsage
	}
	defer closeFn()
	ts, err := tables.New(v, tables.DefaultOptions())
	if err != nil {
		fmt.Fprintf(stderr, "flightd import: %v\n", err)
		return exitUsage
	}
	if create {
		if err := ensureTarget(ctx, v, req.Project, req.Branch); err != nil {
			fmt.Fprintf(stderr, "flightd import: %v\n", err)
			return exitFail
		}
	}
	// Video rows must name frames of their media, as for a put.
	opt.AppendCheck = episodes.AppendCheck(ts)
	im, err := importers.New(ts, opt)
	if err != nil {
		fmt.Fprintf(stderr, "flightd import: %v\n", err)
		return exitUsage
	}
	var progress importers.ProgressFunc
	if !quiet {
		if f, ok := stderr.(*os.File); ok && isTerminal(f) {
			progress = importers.BarReporter(stderr)
		} else {
			progress = importers.LogReporter(log)
		}
	}
	res, err := im.Import(ctx, req, progress)
	if err != nil {
		fmt.Fprintf(stderr, "flightd import: %v\n", err)
		if errors.Is(err, errdefs.ErrInvalidArgument) || errors.Is(err, errdefs.ErrPermissionDenied) || errors.Is(err, errdefs.ErrNotFound) {
			return exitUsage
		}
		return exitFail
	}
	fmt.Fprintf(stdout, "%s\n", res.Commit.ID)
	fmt.Fprintf(stderr, "imported %d rows (%d files, %s) into %s on %s/%s: commit %s\n", res.Record.Rows, res.Record.Files, bytesize.Human(res.Record.Bytes), strings.Join(slices.Sorted(maps.Keys(res.Record.Tables)), ", "), req.Project, req.Branch, res.Commit.ID.Short())
	return exitOK
}

// sourceS3 is the S3 config of import sources: src's endpoint, else the
// store's, and the store's keys and region.
func sourceS3(src, store bucket.S3Config) bucket.S3Config {
	if src.Endpoint == "" {
		src.Endpoint = store.Endpoint
	}
	src.AccessKey, src.SecretKey, src.Region = store.AccessKey, store.SecretKey, store.Region
	return src
}

// ensureTarget creates project p and branch b (from main) if missing.
func ensureTarget(ctx context.Context, v *versions.Store, project, branch string) error {
	p, err := versions.ParseProjectName(project)
	if err != nil {
		return err
	}
	if _, err := v.CreateProject(ctx, p); err != nil && !errors.Is(err, errdefs.ErrAlreadyExists) {
		return err
	}
	b, err := versions.ParseBranchName(branch)
	if err != nil {
		return err
	}
	if b == versions.MainBranch {
		return nil
	}
	if _, err := v.CreateBranch(ctx, p, b, string(versions.MainBranch)); err != nil && !errors.Is(err, errdefs.ErrAlreadyExists) {
		return err
	}
	return nil
}

// isTerminal reports whether f is a character device (a terminal).
func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
