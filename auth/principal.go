package auth

import (
	"context"
	"fmt"
	"sort"
)

// Principal is who a call runs as: a token's grants, or the loopback
// development identity that may do everything.
type Principal struct {
	// Name is the token's name ("loopback" for the development principal).
	Name string
	// ID is the token's short id (TokenID), empty for the development principal.
	ID string
	// GlobalAdmin: every scope in every project, present and future.
	GlobalAdmin bool
	// Projects maps a project name to the scope granted there.
	Projects map[string]Scope
}

// Loopback is the principal of a server running open (no tokens) on a
// loopback address: it may do everything.
func Loopback() *Principal { return &Principal{Name: "loopback", GlobalAdmin: true} }

// Scope is what p may do in project.
func (p *Principal) Scope(project string) Scope {
	if p == nil {
		return None
	}
	if p.GlobalAdmin {
		return Admin
	}
	return p.Projects[project]
}

// Can reports whether p holds at least scope s in project.
func (p *Principal) Can(project string, s Scope) bool { return p.Scope(project) >= s }

// Require returns nil if p holds at least scope s in project, else an
// error wrapping ErrDenied (errdefs.ErrPermissionDenied) that names the
// project and the scope needed. A nil p is ErrNoToken.
func (p *Principal) Require(project string, s Scope) error {
	if p == nil {
		return fmt.Errorf("%w: this call needs %s access to project %q; pass a token (authorization: Bearer …)", ErrNoToken, s, project)
	}
	if have := p.Scope(project); have < s {
		return fmt.Errorf("%w: token %q has %s access to project %q, this call needs %s; ask an admin for a token with that scope", ErrDenied, p.Name, have, project, s)
	}
	return nil
}

// RequireGlobalAdmin returns nil if p is a global admin, else ErrDenied
// (or ErrNoToken for a nil p). For calls that span every project.
func (p *Principal) RequireGlobalAdmin(what string) error {
	switch {
	case p == nil:
		return fmt.Errorf("%w: %s needs a global admin token; pass one (authorization: Bearer …)", ErrNoToken, what)
	case !p.GlobalAdmin:
		return fmt.Errorf("%w: %s needs a global admin token, and token %q is not one", ErrDenied, what, p.Name)
	}
	return nil
}

// Readable filters projects to those p may read, keeping their order: for
// listings, so that a token never learns of projects outside its grants.
func (p *Principal) Readable(projects []string) []string {
	var out []string
	for _, name := range projects {
		if p.Can(name, Read) {
			out = append(out, name)
		}
	}
	return out
}

// GrantedProjects lists the projects p holds a scope in, sorted (not the
// global admin's "every project").
func (p *Principal) GrantedProjects() []string {
	var out []string
	for name, s := range p.Projects {
		if s > None {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

type ctxKey struct{}

// NewContext returns ctx carrying p.
func NewContext(ctx context.Context, p *Principal) context.Context {
	return context.WithValue(ctx, ctxKey{}, p)
}

// FromContext returns the principal the interceptors put into ctx, if any.
func FromContext(ctx context.Context) (*Principal, bool) {
	p, ok := ctx.Value(ctxKey{}).(*Principal)
	return p, ok && p != nil
}

// Require is FromContext(ctx).Require(project, s): what a Flight handler
// calls once it knows the project of a request (from its path, its JSON
// body or its verified ticket). A ctx without a principal is ErrNoToken.
func Require(ctx context.Context, project string, s Scope) error {
	p, _ := FromContext(ctx)
	return p.Require(project, s)
}
