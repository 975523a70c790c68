package flight

import (
	"context"
	"fmt"
	"slices"

	"github.com/weftdata/weft/auth"
	"github.com/weftdata/weft/client"
	"github.com/weftdata/weft/mix"
)

// Who may call what. The interceptors (auth.Interceptors, chained after
// panic recovery in NewServer) authenticate every call and put its
// auth.Principal into the context; the handlers below check scopes once
// they know the projects a call touches:
//
//	create_project                       admin on the project (a global admin token, or one granted admin there)
//	create_branch, DoPut                 write on the project (a media upload too)
//	list_branches, log, GetSchema, scan  read on the project
//	stat_media                           read on the project
//	import                               write on the project (checked before the source is opened)
//	recipe (GetFlightInfo, GetSchema)    read on every component's project
//	run by id                            read on every component's project; otherwise NotFound, as for an unknown run
//	DoGet, DoExchange                    a ticket this store signed, and read on every project it names
//	ListFlights                          the projects the token may read
//	ListActions                          any valid token

// allow checks that the call's principal holds scope in project.
func allow(ctx context.Context, project string, scope auth.Scope) error {
	return auth.Require(ctx, project, scope)
}

// requireRecipe checks read access to every component's project, before
// anything is resolved or stored.
func requireRecipe(ctx context.Context, r *client.Recipe) error {
	for _, c := range r.Components {
		if err := allow(ctx, c.Project, auth.Read); err != nil {
			return err
		}
	}
	return nil
}

// runProjects lists the projects a run reads, without repeats, in
// component order (the first holds the run record).
func runProjects(run *mix.Run) []string {
	var out []string
	for _, c := range run.Record().Components {
		if !slices.Contains(out, string(c.Project)) {
			out = append(out, string(c.Project))
		}
	}
	return out
}

// canReadRun reports whether the call's principal may read every project
// of run.
func canReadRun(ctx context.Context, run *mix.Run) bool {
	p, _ := auth.FromContext(ctx)
	for _, project := range runProjects(run) {
		if !p.Can(project, auth.Read) {
			return false
		}
	}
	return true
}

// runNotFound is what a caller who may not read run ref is told: the
// words mix uses for a run that does not exist, so that run ids cannot be
// probed for existence.
func runNotFound(ref string) error {
	if len(ref) == 64 {
		return fmt.Errorf("%w: no run %s in this store; resolve its recipe with {\"recipe\": …} first", mix.ErrRunNotFound, ref)
	}
	return fmt.Errorf("%w: no run starts with %s in this store; resolve its recipe with {\"recipe\": …} first", mix.ErrRunNotFound, ref)
}
