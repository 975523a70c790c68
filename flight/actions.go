package flight

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	arrowflight "github.com/apache/arrow-go/v18/arrow/flight"

	"github.com/weftdata/weft/versions"
)

// action is one DoAction type.
type action struct {
	name, description string
	run               func(s *Service, ctx context.Context, body []byte) (any, error)
}

// actions lists the DoAction types in the order ListActions reports them.
var actions = []action{
	{"create_project", `Create a project with branch "main" at an empty root commit. Body {"project"}; result {"project","branch","commit"}.`, (*Service).createProject},
	{"create_branch", `Create a branch at the commit a ref names. Body {"project","branch","from"} (from: a branch or commit id; default "main"); result {"branch","commit"}.`, (*Service).createBranch},
	{"list_branches", `List a project's branches. Body {"project"}; result [{"branch","commit"}], sorted by name.`, (*Service).listBranches},
	{"log", `List the commits reachable from a ref, newest first. Body {"project","ref","limit"?} (ref default "main"; no limit: all); result [{"commit","parent","time","message","tables"}].`, (*Service).logAction},
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
	err := func() error {
		for _, act := range actions {
			if act.name != a.GetType() {
				continue
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

// decodeBody parses a JSON object into dst, rejecting unknown fields,
// trailing data and anything but an object.
func decodeBody(what string, body []byte, dst any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	err := dec.Decode(dst)
	switch {
	case errors.Is(err, io.EOF):
		return fmt.Errorf("%w: %s: empty body; send a JSON object", ErrBadRequest, what)
	case err != nil:
		return fmt.Errorf("%w: %s: the body is not the expected JSON object: %w", ErrBadRequest, what, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return fmt.Errorf("%w: %s: trailing data after the JSON object", ErrBadRequest, what)
	}
	return nil
}

func required(what, field, value string) error {
	if value == "" {
		return fmt.Errorf("%w: %s: field %q is missing or empty", ErrBadRequest, what, field)
	}
	return nil
}

func parseProject(what, s string) (versions.ProjectName, error) {
	if err := required(what, "project", s); err != nil {
		return "", err
	}
	return versions.ParseProjectName(s)
}

type createProjectResult struct {
	Project versions.ProjectName `json:"project"`
	Branch  versions.BranchName  `json:"branch"`
	Commit  versions.CommitID    `json:"commit"`
}

func (s *Service) createProject(ctx context.Context, body []byte) (any, error) {
	var req struct {
		Project string `json:"project"`
	}
	if err := decodeBody("create_project", body, &req); err != nil {
		return nil, err
	}
	p, err := parseProject("create_project", req.Project)
	if err != nil {
		return nil, err
	}
	c, err := s.v.CreateProject(ctx, p)
	if err != nil {
		return nil, err
	}
	return createProjectResult{Project: p, Branch: versions.MainBranch, Commit: c.ID}, nil
}

type branchResult struct {
	Branch versions.BranchName `json:"branch"`
	Commit versions.CommitID   `json:"commit"`
}

func (s *Service) createBranch(ctx context.Context, body []byte) (any, error) {
	var req struct {
		Project string `json:"project"`
		Branch  string `json:"branch"`
		From    string `json:"from"`
	}
	if err := decodeBody("create_branch", body, &req); err != nil {
		return nil, err
	}
	p, err := parseProject("create_branch", req.Project)
	if err != nil {
		return nil, err
	}
	if err := required("create_branch", "branch", req.Branch); err != nil {
		return nil, err
	}
	b, err := versions.ParseBranchName(req.Branch)
	if err != nil {
		return nil, err
	}
	if req.From == "" {
		req.From = string(versions.MainBranch)
	}
	id, err := s.v.CreateBranch(ctx, p, b, req.From)
	if err != nil {
		return nil, err
	}
	return branchResult{Branch: b, Commit: id}, nil
}

func (s *Service) listBranches(ctx context.Context, body []byte) (any, error) {
	var req struct {
		Project string `json:"project"`
	}
	if err := decodeBody("list_branches", body, &req); err != nil {
		return nil, err
	}
	p, err := parseProject("list_branches", req.Project)
	if err != nil {
		return nil, err
	}
	branches, err := s.v.ListBranches(ctx, p)
	if err != nil {
		return nil, err
	}
	out := make([]branchResult, len(branches))
	for i, b := range branches {
		out[i] = branchResult{Branch: b.Name, Commit: b.Head}
	}
	return out, nil
}

type logEntry struct {
	Commit  versions.CommitID                          `json:"commit"`
	Parent  *versions.CommitID                         `json:"parent"` // null for a project's root commit
	Time    time.Time                                  `json:"time"`
	Message string                                     `json:"message"`
	Tables  map[versions.TableName]versions.ManifestID `json:"tables"` // table -> manifest id at this commit
}

func (s *Service) logAction(ctx context.Context, body []byte) (any, error) {
	var req struct {
		Project string `json:"project"`
		Ref     string `json:"ref"`
		Limit   *int   `json:"limit"`
	}
	if err := decodeBody("log", body, &req); err != nil {
		return nil, err
	}
	p, err := parseProject("log", req.Project)
	if err != nil {
		return nil, err
	}
	if req.Ref == "" {
		req.Ref = string(versions.MainBranch)
	}
	limit := 0
	if req.Limit != nil {
		if *req.Limit < 1 {
			return nil, fmt.Errorf("%w: log: limit is %d; give a positive number, or leave it out for the whole history", ErrBadRequest, *req.Limit)
		}
		limit = *req.Limit
	}
	commits, err := s.v.Log(ctx, p, req.Ref, limit)
	if err != nil {
		return nil, err
	}
	out := make([]logEntry, len(commits))
	for i, c := range commits {
		out[i] = logEntry{Commit: c.ID, Time: c.Time, Message: c.Message, Tables: c.Tables}
		if c.Parent != "" {
			parent := c.Parent
			out[i].Parent = &parent
		}
		if out[i].Tables == nil {
			out[i].Tables = map[versions.TableName]versions.ManifestID{}
		}
	}
	return out, nil
}
