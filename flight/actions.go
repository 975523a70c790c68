package flight

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	arrowflight "github.com/apache/arrow-go/v18/arrow/flight"

	"github.com/weftdata/weft/auth"
	"github.com/weftdata/weft/client"
	"github.com/weftdata/weft/versions"
)

// action is one DoAction type.
type action struct {
	name, description string
	run               func(s *Service, ctx context.Context, body []byte) (any, error)
	// stream, instead of run, sends its own results (import).
	stream func(s *Service, ctx context.Context, body []byte, out arrowflight.FlightService_DoActionServer) error
}

// actions lists the DoAction types in the order ListActions reports them.
var actions = []action{
	{"create_project", `Create a project with branch "main" at an empty root commit. Body {"project"}; result {"project","branch","commit"}.`, (*Service).createProject, nil},
	{"create_branch", `Create a branch at the commit a ref names. Body {"project","branch","from"} (from: a branch or commit id; default "main"); result {"branch","commit"}.`, (*Service).createBranch, nil},
	{"list_branches", `List a project's branches. Body {"project"}; result [{"branch","commit"}], sorted by name.`, (*Service).listBranches, nil},
	{"log", `List the commits reachable from a ref, newest first. Body {"project","ref","limit"?} (ref default "main"; no limit: all, up to the server's --max-list, 10,000 by default); result [{"commit","parent","time","message","tables"}].`, (*Service).logAction, nil},
	{"stat_media", `Whether a project holds a media object. Body {"project","sha256"}; result {"sha256","size","exists"} (size 0 when absent).`, (*Service).statMedia, nil},
	{"read_media", `Read a range of a media object's bytes. Body {"project","sha256","offset","length"} (length at most 256 MiB); results: the bytes in order, at most 4 MiB each (fewer bytes at the object's end).`, nil, (*Service).readMediaAction},
	{"import", `Import a dataset server-side as one commit (needs write on the project). Body {"format","source","project","branch"?,"table","options"?} (format: wds, mds, hf, lerobot; source: s3://BUCKET/PREFIX or a directory under an --import-root); results: {"progress":{…}} per tick, then {"commit","record"}.`, nil, (*Service).importAction},
}

func actionNames() string {
	names := make([]string, len(actions))
	for i, a := range actions {
		names[i] = a.name
	}
	return strings.Join(names, ", ")
}

// ListActions describes every DoAction type.
func (s *Service) ListActions(_ *arrowflight.Empty, stream arrowflight.FlightService_ListActionsServer) error {
	for _, a := range actions {
		if err := stream.Send(&arrowflight.ActionType{Type: a.name, Description: a.description}); err != nil {
			return s.status(stream.Context(), "ListActions", err)
		}
	}
	return nil
}

// DoAction runs one action and sends its JSON result as one Result.
func (s *Service) DoAction(a *arrowflight.Action, stream arrowflight.FlightService_DoActionServer) error {
	ctx := stream.Context()
	op := "DoAction " + a.GetType()
	s.hook("DoAction")
	err := func() error {
		for _, act := range actions {
			if act.name != a.GetType() {
				continue
			}
			if err := s.checkLen(act.name+" body", a.GetBody()); err != nil {
				return err
			}
			if act.stream != nil {
				return act.stream(s, ctx, a.GetBody(), stream)
			}
			res, err := act.run(s, ctx, a.GetBody())
			if err != nil {
				return err
			}
			body, err := json.Marshal(res)
			if err != nil {
				return fmt.Errorf("encode result: %w", err)
			}
			return stream.Send(&arrowflight.Result{Body: body})
		}
		return fmt.Errorf("%w: unknown action %q; actions are: %s", ErrBadRequest, a.GetType(), actionNames())
	}()
	return s.status(ctx, op, err)
}

func parseProject(s string) (versions.ProjectName, error) {
	return versions.ParseProjectName(s)
}

func (s *Service) createProject(ctx context.Context, body []byte) (any, error) {
	var req client.CreateProjectRequest
	if err := decode(ErrBadRequest, client.ActionCreateProject, body, &req); err != nil {
		return nil, err
	}
	p, err := parseProject(req.Project)
	if err != nil {
		return nil, err
	}
	// Admin on the project: a global admin token, or one an admin granted
	// admin on this name before the project existed.
	if err := allow(ctx, string(p), auth.Admin); err != nil {
		return nil, err
	}
	c, err := s.v.CreateProject(ctx, p)
	if err != nil {
		return nil, err
	}
	return client.CreateProjectResult{Project: string(p), Branch: string(versions.MainBranch), Commit: string(c.ID)}, nil
}

func (s *Service) createBranch(ctx context.Context, body []byte) (any, error) {
	var req client.CreateBranchRequest
	if err := decode(ErrBadRequest, client.ActionCreateBranch, body, &req); err != nil {
		return nil, err
	}
	p, err := parseProject(req.Project)
	if err != nil {
		return nil, err
	}
	b, err := versions.ParseBranchName(req.Branch)
	if err != nil {
		return nil, err
	}
	if err := allow(ctx, string(p), auth.Write); err != nil {
		return nil, err
	}
	if req.From == "" {
		req.From = string(versions.MainBranch)
	}
	id, err := s.v.CreateBranch(ctx, p, b, req.From)
	if err != nil {
		return nil, err
	}
	return client.Branch{Branch: string(b), Commit: string(id)}, nil
}

func (s *Service) listBranches(ctx context.Context, body []byte) (any, error) {
	var req client.ListBranchesRequest
	if err := decode(ErrBadRequest, client.ActionListBranches, body, &req); err != nil {
		return nil, err
	}
	p, err := parseProject(req.Project)
	if err != nil {
		return nil, err
	}
	if err := allow(ctx, string(p), auth.Read); err != nil {
		return nil, err
	}
	branches, err := s.v.ListBranches(ctx, p)
	if err != nil {
		return nil, err
	}
	if len(branches) > s.opts.MaxListEntries {
		return nil, fmt.Errorf("%w: project %s has %d branches, over the server's limit of %d entries in one list (--max-list); delete branches you no longer need, or ask the operator to raise the limit", ErrTooLarge, p, len(branches), s.opts.MaxListEntries)
	}
	out := make([]client.Branch, len(branches))
	for i, b := range branches {
		out[i] = client.Branch{Branch: string(b.Name), Commit: string(b.Head)}
	}
	return out, nil
}

func (s *Service) logAction(ctx context.Context, body []byte) (any, error) {
	var req client.LogRequest
	if err := decode(ErrBadRequest, client.ActionLog, body, &req); err != nil {
		return nil, err
	}
	p, err := parseProject(req.Project)
	if err != nil {
		return nil, err
	}
	if err := allow(ctx, string(p), auth.Read); err != nil {
		return nil, err
	}
	if req.Ref == "" {
		req.Ref = string(versions.MainBranch)
	}
	// Without a limit, the whole history up to MaxListEntries: one more
	// is asked for, to tell a longer history apart.
	limit := s.opts.MaxListEntries + 1
	if req.Limit != nil {
		if *req.Limit > s.opts.MaxListEntries {
			return nil, fmt.Errorf("%w: limit %d is over the server's limit of %d entries in one list (--max-list); ask for fewer, and page with \"ref\" set to the last commit listed", ErrTooLarge, *req.Limit, s.opts.MaxListEntries)
		}
		limit = *req.Limit
	}
	commits, err := s.v.Log(ctx, p, req.Ref, limit)
	if err != nil {
		return nil, err
	}
	if len(commits) > s.opts.MaxListEntries {
		return nil, fmt.Errorf("%w: the history of %s at %q has more than %d commits, the server's limit of entries in one list (--max-list); give \"limit\" (at most %d), and page with \"ref\" set to the last commit listed", ErrTooLarge, p, req.Ref, s.opts.MaxListEntries, s.opts.MaxListEntries)
	}
	out := make([]client.LogEntry, len(commits))
	for i, c := range commits {
		out[i] = client.LogEntry{Commit: string(c.ID), Time: c.Time, Message: c.Message, Tables: make(map[string]string, len(c.Tables))}
		if c.Parent != "" {
			parent := string(c.Parent)
			out[i].Parent = &parent
		}
		for t, m := range c.Tables {
			out[i].Tables[string(t)] = string(m)
		}
	}
	return out, nil
}
