package adversarial_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	arrowflight "github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"

	"github.com/weftdata/weft/auth"
	"github.com/weftdata/weft/client"
)

// The auth category: a second flightd over the same store, with --auth
// tokens (on loopback), and tokens made with `flightd admin token create`.
// Expected answers are docs/flight.md's "Security": no or a bad token is
// Unauthenticated, a token out of scope PermissionDenied, a run of a
// project the token may not read NotFound.

// authFixture is the tokens server and what the auth inputs use.
type authFixture struct {
	srv     *flightd
	secret  map[string]string         // by role
	clients map[string]*client.Client // by role; "none" sends no token
	// Project other (readable by role readB only, among the scoped
	// tokens): table t, a run of it for 2 ranks, a scan ticket; and a run
	// over adv/t and other/t (stored under adv).
	otherRun, crossRun   string
	otherScan, otherRank []byte
}

// roles are the tokens the suite makes: name → `token create` flags.
var roles = map[string][]string{
	"admin":   {"--global-admin"},
	"readA":   {"--project", "adv", "--scope", "read"},
	"writeA":  {"--project", "adv", "--scope", "write"},
	"readB":   {"--project", "other", "--scope", "read"},
	"revoked": {"--project", "adv", "--scope", "admin"},
}

// adminCLI runs `flightd admin ARGS` over st and returns its stdout.
func adminCLI(t *testing.T, st *store, args ...string) string {
	t.Helper()
	cmd := exec.Command(flightdBin, append(append([]string{"admin"}, args...), st.args...)...)
	cmd.Env = append(os.Environ(), st.env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "flightd admin %v: %s", args, stderr.String())
	return strings.TrimSpace(stdout.String())
}

// setupAuth starts the tokens server over st, makes the tokens (revoking
// one) and project other, before the suite's snapshot of the store.
func setupAuth(t *testing.T, st *store, fx *fixture) *authFixture {
	t.Helper()
	ctx := ctxT(t)
	a := &authFixture{secret: map[string]string{}, clients: map[string]*client.Client{}}
	for role, flags := range roles {
		a.secret[role] = adminCLI(t, st, append([]string{"token", "create", "--name", "adv-" + role}, flags...)...)
		require.True(t, strings.HasPrefix(a.secret[role], auth.TokenPrefix), "token create printed %q", a.secret[role])
	}
	adminCLI(t, st, "token", "revoke", auth.TokenID(auth.HashSecret(a.secret["revoked"])))
	a.srv = startFlightd(t, st, "--auth", "tokens")
	for role := range roles {
		c, err := client.Dial(a.srv.addr, client.Options{Token: a.secret[role]})
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		a.clients[role] = c
	}
	a.clients["none"] = dial(t, a.srv.addr)

	admin := a.clients["admin"]
	_, err := admin.CreateProject(ctx, "other")
	require.NoError(t, err)
	schema, recs, err := fromJSON(tSchema, tRows(0, 8))
	require.NoError(t, err)
	r, err := array.NewRecordReader(schema, recs)
	require.NoError(t, err)
	recs[0].Release()
	_, err = admin.Put(ctx, client.PutDescriptor{Project: "other", Branch: "main", Table: "t"}, r)
	r.Release()
	require.NoError(t, err)
	plan, err := admin.Resolve(ctx, client.Recipe{Seed: 2, BatchSize: 4, Components: []client.Component{{Project: "other", Table: "t"}}}, 2)
	require.NoError(t, err)
	a.otherRun, a.otherRank = plan.Record.Run, plan.Ranks[1].Ticket
	cross, err := admin.Resolve(ctx, client.Recipe{Seed: 3, BatchSize: 4, Components: []client.Component{{Project: "adv", Table: "t"}, {Project: "other", Table: "t"}}}, 1)
	require.NoError(t, err)
	a.crossRun = cross.Record.Run
	scan, err := admin.Scan(ctx, client.ScanRequest{Project: "other", Ref: "main", Table: "t"})
	require.NoError(t, err)
	a.otherScan = scan.Endpoints[0].Ticket
	return a
}

// authInputs are the calls of the auth category, on the tokens server.
func authInputs() []input {
	var out []input
	add := func(name string, code codes.Code, call func(ctx context.Context, fx *fixture) error) {
		out = append(out, input{category: "auth", name: name, want: want(code), call: call})
	}
	// as runs call with role's client on the tokens server.
	as := func(role string, call func(ctx context.Context, fx *fixture) error) func(ctx context.Context, fx *fixture) error {
		return func(ctx context.Context, fx *fixture) error {
			return call(ctx, &fixture{c: fx.auth.clients[role], root: fx.root, head: fx.head, run: fx.run,
				scanTicket: fx.scanTicket, rankTicket: fx.rankTicket, signer: fx.signer, auth: fx.auth})
		}
	}
	// header runs call without a token, with these authorization headers.
	header := func(vals func(fx *fixture) []string, call func(ctx context.Context, fx *fixture) error) func(ctx context.Context, fx *fixture) error {
		return as("none", func(ctx context.Context, fx *fixture) error {
			for _, v := range vals(fx) {
				ctx = metadata.AppendToOutgoingContext(ctx, auth.MetadataKey, v)
			}
			return call(ctx, fx)
		})
	}
	listBranches := func(project string) func(ctx context.Context, fx *fixture) error {
		return func(ctx context.Context, fx *fixture) error { _, err := fx.c.Branches(ctx, project); return err }
	}
	runCmd := func(run func(fx *fixture) string) func(ctx context.Context, fx *fixture) error {
		return func(ctx context.Context, fx *fixture) error {
			return fx.info(ctx, cmdDesc(fmt.Appendf(nil, `{"run": %q, "world_size": 1}`, run(fx))))
		}
	}
	recipe := func(projects ...string) func(ctx context.Context, fx *fixture) error {
		return func(ctx context.Context, fx *fixture) error {
			var cs []string
			for _, p := range projects {
				cs = append(cs, fmt.Sprintf(`{"project": %q, "table": "t"}`, p))
			}
			return fx.info(ctx, cmdDesc(fmt.Appendf(nil, `{"recipe": {"seed": 9, "batch_size": 4, "components": [%s]}, "world_size": 1}`, strings.Join(cs, ","))))
		}
	}
	calls := []struct {
		name string
		call func(ctx context.Context, fx *fixture) error
	}{
		{"list_branches", listBranches("adv")},
		{"log", func(ctx context.Context, fx *fixture) error {
			return fx.action(ctx, "log", []byte(`{"project": "adv", "ref": "main"}`))
		}},
		{"scan", func(ctx context.Context, fx *fixture) error { return fx.info(ctx, pathDesc("adv", "main", "t")) }},
		{"GetSchema", func(ctx context.Context, fx *fixture) error { return fx.schema(ctx, pathDesc("adv", "main", "t")) }},
		{"run by id", runCmd(func(fx *fixture) string { return fx.run })},
		{"recipe", recipe("adv")},
		{"DoGet scan ticket", func(ctx context.Context, fx *fixture) error { return fx.doGet(ctx, fx.scanTicket) }},
		{"DoGet rank ticket", func(ctx context.Context, fx *fixture) error { return fx.doGet(ctx, fx.rankTicket[0]) }},
		{"DoPut", func(ctx context.Context, fx *fixture) error {
			return fx.put(ctx, pathDesc("adv", "main", "t"), nil, goodBatch)
		}},
		{"create_branch", func(ctx context.Context, fx *fixture) error {
			return fx.action(ctx, "create_branch", []byte(`{"project": "adv", "branch": "x", "from": "main"}`))
		}},
		{"create_project", func(ctx context.Context, fx *fixture) error {
			return fx.action(ctx, "create_project", []byte(`{"project": "fresh"}`))
		}},
		{"ListFlights", func(ctx context.Context, fx *fixture) error { return fx.listFlights(ctx, nil) }},
		{"ListActions", func(ctx context.Context, fx *fixture) error {
			s, err := fx.c.Flight().ListActions(ctx, &arrowflight.Empty{})
			if err != nil {
				return err
			}
			return drain(s.Recv)
		}},
	}
	// No token, or a revoked one: every call.
	for _, c := range calls {
		add("no token: "+c.name, codes.Unauthenticated, as("none", c.call))
		add("revoked token: "+c.name, codes.Unauthenticated, as("revoked", c.call))
	}
	// Bad authorization headers.
	secret := func(fx *fixture) string { return fx.auth.secret["admin"] }
	for _, h := range []struct {
		name string
		vals func(fx *fixture) []string
	}{
		{"unknown well-formed token", func(*fixture) []string { return []string{"Bearer weft_" + strings.Repeat("A", 43)} }},
		{"token with one character changed", func(fx *fixture) []string {
			s := secret(fx)
			last := map[bool]string{true: "B", false: "A"}[s[len(s)-1] == 'A']
			return []string{"Bearer " + s[:len(s)-1] + last}
		}},
		{"token one character short", func(fx *fixture) []string { s := secret(fx); return []string{"Bearer " + s[:len(s)-1]} }},
		{"token one character more", func(fx *fixture) []string { return []string{"Bearer " + secret(fx) + "A"} }},
		{"token in bad base64", func(*fixture) []string { return []string{"Bearer weft_" + strings.Repeat("!", 43)} }},
		{"token hash instead of secret", func(fx *fixture) []string { return []string{"Bearer " + auth.HashSecret(secret(fx))} }},
		{"token id", func(fx *fixture) []string { return []string{"Bearer " + auth.TokenID(auth.HashSecret(secret(fx)))} }},
		{"secret without scheme", func(fx *fixture) []string { return []string{secret(fx)} }},
		{"scheme only", func(*fixture) []string { return []string{"Bearer"} }},
		{"scheme and space", func(*fixture) []string { return []string{"Bearer "} }},
		{"empty header", func(*fixture) []string { return []string{""} }},
		{"basic auth", func(*fixture) []string { return []string{"Basic YWRtaW46YWRtaW4="} }},
		{"basic scheme, token", func(fx *fixture) []string { return []string{"Basic " + secret(fx)} }},
		{"token scheme, token", func(fx *fixture) []string { return []string{"Token " + secret(fx)} }},
		{"two tokens in one header", func(fx *fixture) []string { return []string{"Bearer " + secret(fx) + " " + secret(fx)} }},
		{"4 KiB of garbage", func(*fixture) []string { return []string{"Bearer " + strings.Repeat("x", 4<<10)} }},
		{"json", func(fx *fixture) []string { return []string{`{"token": "` + secret(fx) + `"}`} }},
		{"two headers, both valid", func(fx *fixture) []string { return []string{"Bearer " + secret(fx), "Bearer " + secret(fx)} }},
		{"two headers, valid then bad", func(fx *fixture) []string { return []string{"Bearer " + secret(fx), "Bearer nope"} }},
		{"two headers, bad then valid", func(fx *fixture) []string { return []string{"Bearer nope", "Bearer " + secret(fx)} }},
		{"two headers, valid and revoked", func(fx *fixture) []string {
			return []string{"Bearer " + secret(fx), "Bearer " + fx.auth.secret["revoked"]}
		}},
	} {
		add("header "+h.name+": list_branches", codes.Unauthenticated, header(h.vals, listBranches("adv")))
		add("header "+h.name+": DoPut", codes.Unauthenticated, header(h.vals, func(ctx context.Context, fx *fixture) error {
			return fx.put(ctx, pathDesc("adv", "main", "t"), nil, goodBatch)
		}))
	}
	// A read token writing.
	for _, c := range calls {
		switch c.name {
		case "DoPut", "create_branch", "create_project":
			add("read token: "+c.name, codes.PermissionDenied, as("readA", c.call))
		}
	}
	add("read token: DoPut to dev", codes.PermissionDenied, as("readA", func(ctx context.Context, fx *fixture) error {
		return fx.put(ctx, pathDesc("adv", "dev", "t"), nil, goodBatch)
	}))
	add("read token: DoPut a new table", codes.PermissionDenied, as("readA", func(ctx context.Context, fx *fixture) error {
		return fx.put(ctx, pathDesc("adv", "main", "fresh"), nil, goodBatch)
	}))
	add("write token: create_project", codes.PermissionDenied, as("writeA", func(ctx context.Context, fx *fixture) error {
		return fx.action(ctx, "create_project", []byte(`{"project": "fresh"}`))
	}))
	add("write token: create_project of its own", codes.PermissionDenied, as("writeA", func(ctx context.Context, fx *fixture) error {
		return fx.action(ctx, "create_project", []byte(`{"project": "adv"}`))
	}))
	// Project A's tokens on project B (and B's on A).
	for _, role := range []string{"readA", "writeA"} {
		on := func(name string, code codes.Code, call func(ctx context.Context, fx *fixture) error) {
			add(role+" on other: "+name, code, as(role, call))
		}
		on("list_branches", codes.PermissionDenied, listBranches("other"))
		on("log", codes.PermissionDenied, func(ctx context.Context, fx *fixture) error {
			return fx.action(ctx, "log", []byte(`{"project": "other", "ref": "main"}`))
		})
		on("scan", codes.PermissionDenied, func(ctx context.Context, fx *fixture) error { return fx.info(ctx, pathDesc("other", "main", "t")) })
		on("GetSchema", codes.PermissionDenied, func(ctx context.Context, fx *fixture) error { return fx.schema(ctx, pathDesc("other", "main", "t")) })
		on("scan command", codes.PermissionDenied, func(ctx context.Context, fx *fixture) error {
			return fx.info(ctx, cmdDesc([]byte(`{"scan": {"project": "other", "ref": "main", "table": "t"}}`)))
		})
		on("run by id", codes.NotFound, runCmd(func(fx *fixture) string { return fx.auth.otherRun }))
		on("run by prefix", codes.NotFound, runCmd(func(fx *fixture) string { return fx.auth.otherRun[:8] }))
		on("cross-project run by id", codes.NotFound, runCmd(func(fx *fixture) string { return fx.auth.crossRun }))
		on("run by id [schema]", codes.NotFound, func(ctx context.Context, fx *fixture) error {
			return fx.schema(ctx, cmdDesc(fmt.Appendf(nil, `{"run": %q}`, fx.auth.otherRun)))
		})
		on("recipe", codes.PermissionDenied, recipe("other"))
		on("recipe over both", codes.PermissionDenied, recipe("adv", "other"))
		on("recipe over both [schema]", codes.PermissionDenied, func(ctx context.Context, fx *fixture) error {
			return fx.schema(ctx, cmdDesc([]byte(`{"recipe": {"seed": 9, "batch_size": 4, "components": [{"project": "adv", "table": "t"}, {"project": "other", "table": "t"}]}}`)))
		})
		on("DoGet scan ticket", codes.PermissionDenied, func(ctx context.Context, fx *fixture) error { return fx.doGet(ctx, fx.auth.otherScan) })
		on("DoGet rank ticket", codes.PermissionDenied, func(ctx context.Context, fx *fixture) error { return fx.doGet(ctx, fx.auth.otherRank) })
		on("ListFlights", codes.PermissionDenied, func(ctx context.Context, fx *fixture) error { return fx.listFlights(ctx, []byte("other")) })
		on("DoPut", codes.PermissionDenied, func(ctx context.Context, fx *fixture) error {
			return fx.put(ctx, pathDesc("other", "main", "t"), nil, goodBatch)
		})
		on("create_branch", codes.PermissionDenied, func(ctx context.Context, fx *fixture) error {
			return fx.action(ctx, "create_branch", []byte(`{"project": "other", "branch": "x", "from": "main"}`))
		})
		on("list_branches of a project that does not exist", codes.PermissionDenied, listBranches("ghost"))
	}
	onA := func(name string, code codes.Code, call func(ctx context.Context, fx *fixture) error) {
		add("readB on adv: "+name, code, as("readB", call))
	}
	onA("DoGet scan ticket", codes.PermissionDenied, func(ctx context.Context, fx *fixture) error { return fx.doGet(ctx, fx.scanTicket) })
	onA("DoGet rank ticket", codes.PermissionDenied, func(ctx context.Context, fx *fixture) error { return fx.doGet(ctx, fx.rankTicket[1]) })
	onA("run by id", codes.NotFound, runCmd(func(fx *fixture) string { return fx.run }))
	onA("cross-project run by id", codes.NotFound, runCmd(func(fx *fixture) string { return fx.auth.crossRun }))
	onA("scan", codes.PermissionDenied, func(ctx context.Context, fx *fixture) error { return fx.info(ctx, pathDesc("adv", "main", "t")) })
	// Tickets: a readA ticket edited to name other is refused by its
	// signature before any scope check.
	add("readA: adv scan ticket edited to other", codes.InvalidArgument, as("readA", func(ctx context.Context, fx *fixture) error {
		return fx.doGet(ctx, edited(fx.scanTicket, set("p", "other")))
	}))
	add("readA: adv rank ticket edited to other", codes.InvalidArgument, as("readA", func(ctx context.Context, fx *fixture) error {
		return fx.doGet(ctx, edited(fx.rankTicket[1], set("p", "other")))
	}))
	// Not here: other's rank ticket re-signed naming "p": "adv" streams
	// other's run to readA (the rank ticket's project is a hint to the run
	// lookup). Only a server can sign, and it names the run's projects.
	return out
}

// drain reads a stream to its end.
func drain[T any](recv func() (T, error)) error {
	for {
		if _, err := recv(); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return err
		}
	}
}
