package flight_test

import (
	"testing"

	arrowflight "github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"

	"github.com/weftdata/weft/bucket"
	"github.com/weftdata/weft/flight"
)

// TestNullsAndWrongTypes: JSON nulls, wrong types and missing fields in
// every command and action body are InvalidArgument naming the field, over
// the wire; the server keeps answering after each.
func TestNullsAndWrongTypes(t *testing.T) {
	e := newEnv(t, bucket.NewMem(), envOpts{})
	e.createProject("p")
	e.mustPut("p", "main", "t", 0, 10, 10, 4)
	ctx := ctxT(t)
	info := func(cmd string) error { _, err := e.client.GetFlightInfo(ctx, cmdDesc(cmd)); return err }
	schema := func(cmd string) error { _, err := e.client.GetSchema(ctx, cmdDesc(cmd)); return err }
	action := func(name, body string) func() error {
		return func() error { _, err := e.action(name, body); return err }
	}
	for _, tc := range []struct {
		name     string
		call     func() error
		contains string
	}{
		{"info run null", func() error { return info(`{"run": null}`) }, `"run" is null`},
		{"schema run null", func() error { return schema(`{"run": null}`) }, `"run" is null`},
		{"info recipe null", func() error { return info(`{"recipe": null}`) }, `"recipe" is null`},
		{"info scan null", func() error { return info(`{"scan": null}`) }, `"scan" is null`},
		{"info null", func() error { return info(`null`) }, "null"},
		{"info world null", func() error { return info(`{"run": "0123456789abcdef", "world_size": null}`) }, `"world_size" is null`},
		{"info run number", func() error { return info(`{"run": 7}`) }, `"run" must be a string`},
		{"info world string", func() error { return info(`{"run": "x", "world_size": "2"}`) }, `"world_size" must be an integer`},
		{"info start float", func() error { return info(`{"run": "x", "start_step": 1.5}`) }, `"start_step" must be an integer`},
		{"info scan list", func() error { return info(`{"scan": []}`) }, `"scan" must be an object`},
		{"info scan columns null", func() error { return info(`{"scan": {"project":"p","ref":"main","table":"t","columns":null}}`) }, `"scan.columns" is null`},
		{"info scan column null", func() error { return info(`{"scan": {"project":"p","ref":"main","table":"t","columns":["id",null]}}`) }, `"scan.columns[1]" is null`},
		{"info recipe seed null", func() error { return info(`{"recipe": {"seed": null, "batch_size": 8, "components": []}}`) }, `"seed" is missing`},
		{"info recipe components null", func() error { return info(`{"recipe": {"seed": 1, "batch_size": 8, "components": null}}`) }, `"components" is missing`},
		{"info recipe component null", func() error {
			return info(`{"recipe": {"seed": 1, "batch_size": 8, "components": [null]}}`)
		}, `"recipe.components[0]" is null`},
		{"info recipe weight string", func() error {
			return info(`{"recipe": {"seed": 1, "batch_size": 8, "components": [{"project":"p","table":"t","weight":"1"}]}}`)
		}, `"components.weight" must be a number`},
		{"info recipe seed negative", func() error { return info(`{"recipe": {"seed": -1, "batch_size": 8, "components": []}}`) }, `"seed" must be a non-negative integer`},
		{"info empty command", func() error { return info(`{}`) }, "empty command"},
		{"info run and scan", func() error { return info(`{"scan": {"project":"p","ref":"main","table":"t"}, "run": "x"}`) }, `one key "scan"`},
		{"action project null", action("create_project", `{"project": null}`), `"project" is null`},
		{"action project number", action("create_project", `{"project": 1}`), `"project" must be a string`},
		{"action branch null", action("create_branch", `{"project": "p", "branch": null}`), `"branch" is null`},
		{"action log limit null", action("log", `{"project": "p", "limit": null}`), `"limit" is null`},
		{"action log limit string", action("log", `{"project": "p", "limit": "3"}`), `"limit" must be an integer`},
		{"action null body", action("list_branches", `null`), "null"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			requireCode(t, tc.call(), codes.InvalidArgument, tc.contains)
			_, err := e.c.Branches(ctx, "p")
			require.NoError(t, err, "the server still answers")
		})
	}
}

// TestPanicRecovered: a panic in a unary or a streaming handler is
// answered Internal with an error id, and the server keeps serving.
func TestPanicRecovered(t *testing.T) {
	e := newEnv(t, bucket.NewMem(), envOpts{})
	e.createProject("p")
	e.mustPut("p", "main", "t", 0, 10, 10, 4)
	plan := e.info(pathDesc("p", "main", "t"))
	flight.SetBeforeCall(e.svc, func(method string) {
		if method != "DoAction" {
			panic("forced panic in " + method)
		}
	})
	ctx := ctxT(t)
	_, err := e.client.GetFlightInfo(ctx, pathDesc("p", "main", "t"))
	requireCode(t, err, codes.Internal, "error id")
	_, _, err = e.read(ctx, plan.Endpoint[0].Ticket, nil)
	requireCode(t, err, codes.Internal, "error id")
	_, err = e.c.Branches(ctx, "p")
	require.NoError(t, err, "the server still answers")
	flight.SetBeforeCall(e.svc, nil)
	require.Equal(t, seq(0, 10), e.scan(e.info(pathDesc("p", "main", "t"))))
	_ = arrowflight.DescriptorCMD
}
