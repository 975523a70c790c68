package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/weftdata/weft/auth"
	"github.com/weftdata/weft/bucket"
	"github.com/weftdata/weft/gc"
	"github.com/weftdata/weft/internal/bytesize"
	"github.com/weftdata/weft/versions"
)

const adminUsage = `Usage: flightd admin COMMAND [flags]

Administer a store directly (no server needed; every server over the store
sees the change: tokens within seconds, ticket keys within 30 s).

Commands:
  token create --project P --scope read|write|admin [--name N]   make a token; prints its secret once
  token create --global-admin [--name N]                         a token that may do everything
  token list                                                     names, ids, scopes, creation times (never secrets)
  token revoke ID                                                delete a token (ID from 'token list')
  ticket-key list                                                the keys that sign Flight tickets
  ticket-key rotate                                              add a new signing key (old tickets stay valid)
  ticket-key remove ID                                           delete an old key (its tickets stop working)
  gc --older-than 24h [--dry-run]                                delete objects no commit names

Every command takes --store URL and the --s3-* flags of 'flightd serve'.
Run 'flightd admin COMMAND --help' for its flags.
`

// adminCommand dispatches `flightd admin …`.
func adminCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprint(stdout, adminUsage)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	sub := args[0]
	if sub == "token" || sub == "ticket-key" {
		if len(args) < 2 {
			fmt.Fprintf(stderr, "flightd admin %s: missing a command (see 'flightd admin --help')\n", sub)
			return exitUsage
		}
		if h := args[1]; h == "help" || h == "-h" || h == "--help" {
			fmt.Fprint(stdout, adminUsage) // the admin help lists token's and ticket-key's commands
			return exitOK
		}
		sub += " " + args[1]
		args = args[1:]
	}
	switch sub {
	case "token create":
		return tokenCreate(ctx, args[1:], stdout, stderr)
	case "token list":
		return tokenList(ctx, args[1:], stdout, stderr)
	case "token revoke":
		return tokenRevoke(ctx, args[1:], stdout, stderr)
	case "ticket-key list", "ticket-key rotate", "ticket-key remove":
		return ticketKey(ctx, strings.TrimPrefix(sub, "ticket-key "), args[1:], stdout, stderr)
	case "gc":
		return gcCommand(ctx, args[1:], stdout, stderr)
	}
	fmt.Fprintf(stderr, "flightd admin: unknown command %q (see 'flightd admin --help')\n", sub)
	return exitUsage
}

// storeFlags are the flags every admin command takes to open the store.
type storeFlags struct {
	store string
	s3    bucket.S3Config
}

func (s *storeFlags) register(fs *flag.FlagSet) {
	s.store = bucket.DefaultStore
	fs.StringVar(&s.store, "store", s.store, "store `URL`: a directory, file://DIR, or s3://BUCKET[/PREFIX]")
	fs.StringVar(&s.s3.Endpoint, "s3-endpoint", "", "S3 endpoint `URL` for s3:// stores (default $AWS_ENDPOINT_URL_S3, $AWS_ENDPOINT_URL, else AWS)")
	fs.StringVar(&s.s3.AccessKey, "s3-access-key", "", "S3 access `key` (default $AWS_ACCESS_KEY_ID)")
	fs.StringVar(&s.s3.SecretKey, "s3-secret-key", "", "S3 secret `key` (default $AWS_SECRET_ACCESS_KEY)")
	fs.StringVar(&s.s3.Region, "s3-region", "", "S3 `region` (default $AWS_REGION, $AWS_DEFAULT_REGION, else us-east-1)")
}

func (s *storeFlags) open(ctx context.Context) (bucket.Bucket, func(), error) {
	octx, cancel := context.WithTimeout(ctx, storeCheckTimeout)
	defer cancel()
	b, err := bucket.Open(octx, s.store, s.s3)
	if err != nil {
		return nil, nil, fmt.Errorf("cannot open the store: %w", err)
	}
	closeFn := func() {
		if c, ok := b.(io.Closer); ok {
			c.Close()
		}
	}
	return b, closeFn, nil
}

// openVersions opens the store and its versions store (default options).
func (s *storeFlags) openVersions(ctx context.Context) (bucket.Bucket, *versions.Store, func(), error) {
	b, closeFn, err := s.open(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	v, err := versions.New(b, versions.DefaultOptions())
	if err != nil {
		closeFn()
		return nil, nil, nil, err
	}
	return b, v, closeFn, nil
}

// parseAdmin parses flags and positional arguments in any order; it
// returns (positionals, done, code) like parseFlags.
func parseAdmin(fs *flag.FlagSet, args []string, nargs int, stdout, stderr io.Writer) ([]string, bool, int) {
	pos, done, code := parseInterspersed(fs, args, "admin "+fs.Name(), stdout, stderr)
	if done {
		return nil, done, code
	}
	if len(pos) != nargs {
		fmt.Fprintf(stderr, "flightd admin %s: want %d argument(s), got %d (see 'flightd admin %s --help')\n", fs.Name(), nargs, len(pos), fs.Name())
		return nil, true, exitUsage
	}
	return pos, false, exitOK
}

// parseInterspersed parses flags and positional arguments in any order
// for 'flightd CMD'; it returns (positionals, done, code) like parseFlags:
// done after --help (exitOK) or a bad flag (exitUsage, said on stderr).
func parseInterspersed(fs *flag.FlagSet, args []string, cmd string, stdout, stderr io.Writer) ([]string, bool, int) {
	fs.SetOutput(io.Discard)
	var pos []string
	for {
		err := fs.Parse(args)
		switch {
		case errors.Is(err, flag.ErrHelp):
			fs.SetOutput(stdout)
			fs.Usage()
			return nil, true, exitOK
		case err != nil:
			fmt.Fprintf(stderr, "flightd %s: %v (see 'flightd %s --help')\n", cmd, err, cmd)
			return nil, true, exitUsage
		}
		if fs.NArg() == 0 {
			return pos, false, exitOK
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

func newAdminFlags(name, usage string, sf *storeFlags) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	sf.register(fs)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: flightd admin %s\n\nFlags:\n", usage)
		fs.PrintDefaults()
	}
	return fs
}

func tokenCreate(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var sf storeFlags
	var project, scope, name string
	var global bool
	fs := newAdminFlags("token create", "token create --project P --scope read|write|admin [--name N] | --global-admin [--name N]", &sf)
	fs.StringVar(&project, "project", "", "the `project` the token may access")
	fs.StringVar(&scope, "scope", "", "what it may do there: read, write or admin")
	fs.BoolVar(&global, "global-admin", false, "make a token that may do everything in every project")
	fs.StringVar(&name, "name", "", "a `name` for listings and logs (default: PROJECT-SCOPE, or global-admin)")
	if _, done, code := parseAdmin(fs, args, 0, stdout, stderr); done {
		return code
	}
	spec := auth.TokenSpec{Name: name, GlobalAdmin: global}
	switch {
	case project != "" || scope != "":
		if project == "" || scope == "" {
			fmt.Fprintln(stderr, "flightd admin token create: give both --project and --scope")
			return exitUsage
		}
		sc, err := auth.ParseScope(scope)
		if err != nil {
			fmt.Fprintf(stderr, "flightd admin token create: %v\n", err)
			return exitUsage
		}
		spec.Projects = map[string]auth.Scope{project: sc}
		if spec.Name == "" {
			spec.Name = project + "-" + scope
		}
	case global:
		if spec.Name == "" {
			spec.Name = "global-admin"
		}
	default:
		fmt.Fprintln(stderr, "flightd admin token create: give --project and --scope, or --global-admin")
		return exitUsage
	}
	b, closeFn, err := sf.open(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "flightd admin token create: %v\n", err)
		return exitUsage
	}
	defer closeFn()
	secret, tok, err := auth.CreateToken(ctx, b, spec, time.Now())
	if err != nil {
		fmt.Fprintf(stderr, "flightd admin token create: %v\n", err)
		return exitFail
	}
	fmt.Fprintf(stderr, "created token %s (%s, %s); its secret is printed once, on stdout: store it now\n", tok.ID, tok.Name, grants(tok))
	fmt.Fprintln(stdout, secret)
	return exitOK
}

func grants(t *auth.Token) string {
	if t.GlobalAdmin {
		return "global admin"
	}
	var parts []string
	for p, s := range t.Projects {
		parts = append(parts, p+":"+s.String())
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

func tokenList(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var sf storeFlags
	fs := newAdminFlags("token list", "token list", &sf)
	if _, done, code := parseAdmin(fs, args, 0, stdout, stderr); done {
		return code
	}
	b, closeFn, err := sf.open(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "flightd admin token list: %v\n", err)
		return exitUsage
	}
	defer closeFn()
	toks, err := auth.ListTokens(ctx, b)
	if err != nil {
		fmt.Fprintf(stderr, "flightd admin token list: %v\n", err)
		return exitFail
	}
	w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "ID\tNAME\tSCOPES\tCREATED")
	for _, t := range toks {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", t.ID, t.Name, grants(t), t.Created.Format(time.RFC3339))
	}
	w.Flush()
	return exitOK
}

func tokenRevoke(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var sf storeFlags
	fs := newAdminFlags("token revoke", "token revoke ID", &sf)
	pos, done, code := parseAdmin(fs, args, 1, stdout, stderr)
	if done {
		return code
	}
	b, closeFn, err := sf.open(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "flightd admin token revoke: %v\n", err)
		return exitUsage
	}
	defer closeFn()
	t, err := auth.RevokeToken(ctx, b, pos[0])
	if err != nil {
		fmt.Fprintf(stderr, "flightd admin token revoke: %v\n", err)
		return exitFail
	}
	fmt.Fprintf(stdout, "revoked token %s (%s); servers refuse it within %s\n", t.ID, t.Name, auth.DefaultOptions().CacheTTL)
	return exitOK
}

func ticketKey(ctx context.Context, op string, args []string, stdout, stderr io.Writer) int {
	var sf storeFlags
	nargs := 0
	if op == "remove" {
		nargs = 1
	}
	fs := newAdminFlags("ticket-key "+op, "ticket-key "+op+map[bool]string{true: " ID"}[nargs == 1], &sf)
	pos, done, code := parseAdmin(fs, args, nargs, stdout, stderr)
	if done {
		return code
	}
	fail := func(err error) int {
		fmt.Fprintf(stderr, "flightd admin ticket-key %s: %v\n", op, err)
		return exitFail
	}
	b, closeFn, err := sf.open(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "flightd admin ticket-key %s: %v\n", op, err)
		return exitUsage
	}
	defer closeFn()
	switch op {
	case "list":
		keys, err := auth.ListTicketKeys(ctx, b)
		if err != nil {
			return fail(err)
		}
		w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "ID\tCREATED\tUSE")
		for i, k := range keys {
			use := "verifies"
			if i == len(keys)-1 {
				use = "signs and verifies"
			}
			fmt.Fprintf(w, "%d\t%s\t%s\n", k.ID, k.Created.Format(time.RFC3339), use)
		}
		w.Flush()
	case "rotate":
		k, err := auth.RotateTicketKey(ctx, b, time.Now())
		if err != nil {
			return fail(err)
		}
		fmt.Fprintf(stdout, "added ticket key %d; servers sign with it within %s; remove older keys once their tickets may expire\n", k.ID, auth.DefaultSignerOptions().Refresh)
	case "remove":
		id, err := strconv.ParseUint(pos[0], 10, 32)
		if err != nil {
			fmt.Fprintf(stderr, "flightd admin ticket-key remove: %q is not a key id (see 'flightd admin ticket-key list')\n", pos[0])
			return exitUsage
		}
		if err := auth.RemoveTicketKey(ctx, b, uint32(id)); err != nil {
			return fail(err)
		}
		fmt.Fprintf(stdout, "removed ticket key %d; its tickets stop working within %s\n", id, auth.DefaultSignerOptions().Refresh)
	}
	return exitOK
}

func gcCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var sf storeFlags
	opts := gc.DefaultOptions()
	fs := newAdminFlags("gc", "gc --older-than DURATION [--dry-run]", &sf)
	fs.DurationVar(&opts.Grace, "older-than", opts.Grace, "delete only unreferenced objects last modified longer ago than this `DURATION`; it must exceed the longest put")
	fs.BoolVar(&opts.DryRun, "dry-run", false, "count what would be deleted, delete nothing")
	if _, done, code := parseAdmin(fs, args, 0, stdout, stderr); done {
		return code
	}
	if err := opts.Validate(); err != nil {
		fmt.Fprintf(stderr, "flightd admin gc: %v\n", err)
		return exitUsage
	}
	_, v, closeFn, err := sf.openVersions(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "flightd admin gc: %v\n", err)
		return exitUsage
	}
	defer closeFn()
	verb := "deleted"
	if opts.DryRun {
		verb = "would delete"
	}
	opts.Progress = func(st gc.Stats) {
		fmt.Fprintf(stderr, "gc %s: %d projects, %d objects scanned (%s), %s %d (%s)\n", st.Phase, st.Projects, st.Scanned, bytesize.Human(st.ScannedBytes), verb, st.Deleted, bytesize.Human(st.DeletedBytes))
	}
	st, err := gc.Collect(ctx, v, opts)
	if err != nil {
		fmt.Fprintf(stderr, "flightd admin gc: %v\n", err)
		return exitFail
	}
	fmt.Fprintf(stdout, "scanned %d objects (%s) in %d projects; %s %d unreferenced objects (%s) older than %s; kept %d referenced and %d younger; %s %d temporary files (%s)\n",
		st.Scanned, bytesize.Human(st.ScannedBytes), st.Projects, verb, st.Deleted, bytesize.Human(st.DeletedBytes), opts.Grace, st.Live, st.Young, verb, st.TempFiles, bytesize.Human(st.TempBytes))
	return exitOK
}
