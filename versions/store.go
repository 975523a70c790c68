package versions

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/weftdata/weft/bucket"
	"github.com/weftdata/weft/errdefs"
)

// Options configure a Store.
type Options struct {
	// MaxAttempts bounds how often a commit is retried on a lost race for
	// its branch before it gives up with ErrTooManyRetries.
	MaxAttempts int
	// Backoff is the first retry delay; it doubles up to MaxBackoff, with jitter.
	Backoff, MaxBackoff time.Duration
	// Now is the clock for commit times.
	Now func() time.Time
	// Logger receives debug lines about retries; nil discards.
	Logger *slog.Logger
}

// DefaultOptions are sensible for both fs and S3 buckets.
func DefaultOptions() Options {
	return Options{MaxAttempts: 1000, Backoff: 2 * time.Millisecond, MaxBackoff: 200 * time.Millisecond, Now: time.Now}
}

// Validate reports an unusable option.
func (o Options) Validate() error {
	if o.MaxAttempts < 1 || o.Backoff <= 0 || o.MaxBackoff < o.Backoff || o.Now == nil {
		return fmt.Errorf("%w: versions options need MaxAttempts >= 1, 0 < Backoff <= MaxBackoff and a clock", ErrInvalid)
	}
	return nil
}

// Store reads and writes project histories in a bucket.
type Store struct {
	b    bucket.Bucket
	opts Options
	log  *slog.Logger
}

// New returns a Store over b.
func New(b bucket.Bucket, opts Options) (*Store, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Store{b: b, opts: opts, log: log}, nil
}

// Bucket is the bucket the store lives in.
func (s *Store) Bucket() bucket.Bucket { return s.b }

// CreateProject makes project p with branch main at an empty root commit.
func (s *Store) CreateProject(ctx context.Context, p ProjectName) (*Commit, error) {
	if err := validateName("project", string(p)); err != nil {
		return nil, err
	}
	if _, _, err := s.readRef(ctx, p, MainBranch); err == nil {
		return nil, fmt.Errorf("%w: %q; use it, or pick another name", ErrProjectExists, p)
	} else if !errors.Is(err, ErrNotFound) {
		return nil, err
	}
	root := &Commit{Project: p, Time: s.opts.Now(), Message: "create project " + string(p)}
	if err := s.putCommit(ctx, root); err != nil {
		return nil, err
	}
	_, err := s.b.PutIfAbsent(ctx, RefKey(p, MainBranch), refBody(root.ID))
	if errors.Is(err, bucket.ErrExists) {
		return nil, fmt.Errorf("%w: %q; use it, or pick another name", ErrProjectExists, p)
	}
	if err != nil {
		return nil, fmt.Errorf("create project %s: %w", p, err)
	}
	return root, nil
}

// ListProjects returns every project, sorted by name.
func (s *Store) ListProjects(ctx context.Context) ([]ProjectName, error) {
	var out []ProjectName
	for info, err := range s.b.List(ctx, ProjectsPrefix) {
		if err != nil {
			return nil, fmt.Errorf("list projects: %w", err)
		}
		if p, ok := projectOfMainRef(info.Key); ok {
			out = append(out, p)
		}
	}
	return out, nil
}

// Branch is a branch name and the commit it points at.
type Branch struct {
	Name BranchName
	Head CommitID
}

// CreateBranch makes branch b of project p point at the commit that ref from names.
func (s *Store) CreateBranch(ctx context.Context, p ProjectName, b BranchName, from string) (CommitID, error) {
	if err := validateName("branch", string(b)); err != nil {
		return "", err
	}
	head, err := s.Resolve(ctx, p, from)
	if err != nil {
		return "", err
	}
	_, err = s.b.PutIfAbsent(ctx, RefKey(p, b), refBody(head))
	if errors.Is(err, bucket.ErrExists) {
		return "", fmt.Errorf("%w: %q in project %q; check it out, or pick another name", ErrBranchExists, b, p)
	}
	if err != nil {
		return "", fmt.Errorf("create branch %s/%s: %w", p, b, err)
	}
	return head, nil
}

// ListBranches returns the branches of p, sorted by name.
func (s *Store) ListBranches(ctx context.Context, p ProjectName) ([]Branch, error) {
	if err := s.checkProject(ctx, p); err != nil {
		return nil, err
	}
	prefix := RefsPrefix(p)
	var out []Branch
	for info, err := range s.b.List(ctx, prefix) {
		if err != nil {
			return nil, fmt.Errorf("list branches of %s: %w", p, err)
		}
		name := BranchName(strings.TrimPrefix(info.Key, prefix))
		head, _, err := s.readRef(ctx, p, name)
		if err != nil {
			return nil, err
		}
		out = append(out, Branch{Name: name, Head: head})
	}
	return out, nil
}

// checkProject returns ErrProjectNotFound unless p exists.
func (s *Store) checkProject(ctx context.Context, p ProjectName) error {
	if err := validateName("project", string(p)); err != nil {
		return err
	}
	_, _, err := s.readRef(ctx, p, MainBranch)
	if errors.Is(err, ErrBranchNotFound) {
		return fmt.Errorf("%w: %q; create it first (create_project)", ErrProjectNotFound, p)
	}
	return err
}

// Head returns the commit branch b of p points at.
func (s *Store) Head(ctx context.Context, p ProjectName, b BranchName) (CommitID, error) {
	if err := validateName("branch", string(b)); err != nil {
		return "", err
	}
	head, _, err := s.readRef(ctx, p, b)
	if errors.Is(err, ErrBranchNotFound) {
		if perr := s.checkProject(ctx, p); perr != nil {
			return "", perr
		}
	}
	return head, err
}

// GetSmall reads key, an object this package writes with PutIfAbsent or
// CompareAndSwap (a ref, commit, manifest, run record or idempotency
// record), so at most bucket.MaxConditionalSize bytes: a larger one at
// its key (another tool's, a damaged one) is the store's damage,
// ErrCorrupt, and is not read into memory.
func GetSmall(ctx context.Context, b bucket.Bucket, key string) ([]byte, bucket.ObjectInfo, error) {
	data, info, err := bucket.GetSmall(ctx, b, key, bucket.MaxConditionalSize)
	if errors.Is(err, bucket.ErrObjectTooLarge) {
		return nil, info, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	return data, info, err
}

func refBody(c CommitID) []byte { return []byte(string(c) + "\n") }

func (s *Store) readRef(ctx context.Context, p ProjectName, b BranchName) (CommitID, bucket.ETag, error) {
	data, info, err := GetSmall(ctx, s.b, RefKey(p, b))
	if errors.Is(err, bucket.ErrNotFound) {
		return "", "", fmt.Errorf("%w: %q in project %q", ErrBranchNotFound, b, p)
	}
	if err != nil {
		return "", "", fmt.Errorf("read ref %s/%s: %w", p, b, err)
	}
	id := CommitID(bytes.TrimSpace(data))
	if len(id) != idLen || !isHex(string(id)) {
		return "", "", fmt.Errorf("%w: ref %s/%s holds %s, not a commit id", ErrCorrupt, p, b, errdefs.Quote(string(data)))
	}
	return id, info.ETag, nil
}

// Resolve turns a ref (a branch name, a full commit id, or a unique commit id
// prefix of at least 8 hex digits) into a commit id, in this order:
//
//  1. a full commit id (64 lowercase hex digits) of a commit that exists;
//  2. a branch of that name;
//  3. a unique commit id prefix (8 to 64 lowercase hex digits).
//
// New branch names cannot look like commit ids (ParseBranchName refuses 8 to
// 64 hex digits), so the order matters only for stores whose branches were
// named before that rule: there a branch never beats the exact commit id it
// spells, and a branch still beats a prefix, as in git, so that such a branch
// stays reachable by its name.
func (s *Store) Resolve(ctx context.Context, p ProjectName, ref string) (CommitID, error) {
	if err := s.checkProject(ctx, p); err != nil {
		return "", err
	}
	if ref == "" {
		return "", fmt.Errorf("%w: empty ref; give a branch name or a commit id", ErrInvalidRef)
	}
	if len(ref) == idLen && isHex(ref) {
		_, err := s.b.Stat(ctx, CommitKey(p, CommitID(ref)))
		if err == nil {
			return CommitID(ref), nil
		}
		if !errors.Is(err, bucket.ErrNotFound) {
			return "", fmt.Errorf("resolve %s: %w", ref, err)
		}
	}
	if validRefName(ref) {
		head, _, err := s.readRef(ctx, p, BranchName(ref))
		if err == nil {
			return head, nil
		}
		if !errors.Is(err, ErrBranchNotFound) {
			return "", err
		}
	}
	if len(ref) >= MinPrefixLen && len(ref) <= idLen && isHex(ref) {
		return s.resolvePrefix(ctx, p, ref)
	}
	return "", fmt.Errorf("%w: %s is neither a branch of project %q nor a commit id (or a unique prefix of %d+ hex digits)", ErrRefNotFound, errdefs.Quote(ref), p, MinPrefixLen)
}

func (s *Store) resolvePrefix(ctx context.Context, p ProjectName, prefix string) (CommitID, error) {
	base := CommitsPrefix(p)
	var found []CommitID
	for info, err := range s.b.List(ctx, base+prefix) {
		if err != nil {
			return "", fmt.Errorf("resolve %s: %w", prefix, err)
		}
		found = append(found, CommitID(strings.TrimPrefix(info.Key, base)))
		if len(found) > 1 {
			return "", fmt.Errorf("%w: %q matches %s and %s; give more digits", ErrAmbiguousRef, prefix, found[0].Short(), found[1].Short())
		}
	}
	if len(found) == 0 {
		return "", fmt.Errorf("%w: no branch or commit %q in project %q", ErrRefNotFound, prefix, p)
	}
	return found[0], nil
}

// GetCommit reads and verifies commit id of project p.
func (s *Store) GetCommit(ctx context.Context, p ProjectName, id CommitID) (*Commit, error) {
	data, _, err := GetSmall(ctx, s.b, CommitKey(p, id))
	if errors.Is(err, bucket.ErrNotFound) {
		return nil, fmt.Errorf("%w: %s in project %q", ErrCommitNotFound, id, p)
	}
	if err != nil {
		return nil, fmt.Errorf("read commit %s: %w", id, err)
	}
	return decodeCommit(data, id)
}

// Log returns up to limit commits (all if limit <= 0) reachable from ref,
// newest first.
func (s *Store) Log(ctx context.Context, p ProjectName, ref string, limit int) ([]*Commit, error) {
	id, err := s.Resolve(ctx, p, ref)
	if err != nil {
		return nil, err
	}
	var out []*Commit
	for id != "" && (limit <= 0 || len(out) < limit) {
		c, err := s.GetCommit(ctx, p, id)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
		id = c.Parent
	}
	return out, nil
}

func (s *Store) putCommit(ctx context.Context, c *Commit) error {
	c.seal()
	data, err := json.Marshal(c)
	if err != nil {
		return fmt.Errorf("encode commit: %w", err)
	}
	return s.putImmutable(ctx, CommitKey(c.Project, c.ID), data)
}

// putImmutable stores a content-addressed object. If it already exists, its
// bytes are the same by construction, so ErrExists is success.
func (s *Store) putImmutable(ctx context.Context, key string, data []byte) error {
	_, err := s.b.PutIfAbsent(ctx, key, data)
	if err != nil && !errors.Is(err, bucket.ErrExists) {
		return fmt.Errorf("write %s: %w", key, err)
	}
	return nil
}

// PutManifest stores m (setting its ID) in project p.
func (s *Store) PutManifest(ctx context.Context, p ProjectName, m *Manifest) (ManifestID, error) {
	if err := m.validate(); err != nil {
		return "", err
	}
	m.seal()
	data, err := json.Marshal(m)
	if err != nil {
		return "", fmt.Errorf("encode manifest: %w", err)
	}
	return m.ID, s.putImmutable(ctx, ManifestKey(p, m.ID), data)
}

// GetManifest reads and verifies manifest id of project p.
func (s *Store) GetManifest(ctx context.Context, p ProjectName, id ManifestID) (*Manifest, error) {
	data, _, err := GetSmall(ctx, s.b, ManifestKey(p, id))
	if errors.Is(err, bucket.ErrNotFound) {
		return nil, fmt.Errorf("%w: %s in project %q", ErrManifestNotFound, id, p)
	}
	if err != nil {
		return nil, fmt.Errorf("read manifest %s: %w", id, err)
	}
	return decodeManifest(data, id)
}

// Change computes a commit's table updates from the branch head it will sit
// on. It may be called more than once (once per attempt) and must not have
// side effects beyond storing immutable objects such as manifests.
type Change func(ctx context.Context, head *Commit) (map[TableName]ManifestID, error)

// Commit applies change on top of branch b of project p and moves the branch
// to the new commit. On a lost race for the branch it reloads the head and
// calls change again, until it wins, ctx ends, or MaxAttempts run out.
func (s *Store) Commit(ctx context.Context, p ProjectName, b BranchName, message string, change Change) (*Commit, error) {
	c, _, err := s.commit(ctx, p, b, message, change, nil)
	return c, err
}

// commitGuard lets CommitIdempotent take part in commit's retry loop.
// commit calls before after reading the head and before change: a non-nil
// commit ends the loop with that commit as a replay. It calls claim after
// storing the new commit and before moving the ref: an error wrapping
// ErrConflict restarts the attempt; done runs after the ref moved.
type commitGuard interface {
	before(ctx context.Context, headID CommitID) (*Commit, error)
	claim(ctx context.Context, c *Commit) error
	done(ctx context.Context, c *Commit)
}

// commit is Commit with an optional guard; replayed reports that the guard
// ended it with an earlier commit.
func (s *Store) commit(ctx context.Context, p ProjectName, b BranchName, message string, change Change, guard commitGuard) (c *Commit, replayed bool, err error) {
	if err := validateName("branch", string(b)); err != nil {
		return nil, false, err
	}
	delay := s.opts.Backoff
	for attempt := 1; ; attempt++ {
		headID, etag, err := s.readRef(ctx, p, b)
		if errors.Is(err, ErrBranchNotFound) {
			if perr := s.checkProject(ctx, p); perr != nil {
				return nil, false, perr
			}
		}
		if err != nil {
			return nil, false, err
		}
		if guard != nil {
			prev, err := guard.before(ctx, headID)
			if err != nil {
				return nil, false, err
			}
			if prev != nil {
				return prev, true, nil
			}
		}
		head, err := s.GetCommit(ctx, p, headID)
		if err != nil {
			return nil, false, err
		}
		updates, err := change(ctx, head)
		if err != nil {
			return nil, false, err
		}
		c := &Commit{Project: p, Parent: headID, Time: s.opts.Now(), Message: message, Tables: make(map[TableName]ManifestID, len(head.Tables)+len(updates))}
		for t, m := range head.Tables {
			c.Tables[t] = m
		}
		for t, m := range updates {
			c.Tables[t] = m
		}
		if err := s.putCommit(ctx, c); err != nil {
			return nil, false, err
		}
		if guard != nil {
			if err = guard.claim(ctx, c); err != nil && !errors.Is(err, ErrConflict) {
				return nil, false, err
			}
		}
		if err == nil {
			_, err = s.b.CompareAndSwap(ctx, RefKey(p, b), etag, refBody(c.ID))
			if err == nil {
				if guard != nil {
					guard.done(ctx, c)
				}
				return c, false, nil
			}
		}
		if !errors.Is(err, bucket.ErrConflict) && !errors.Is(err, ErrConflict) {
			return nil, false, fmt.Errorf("move branch %s/%s: %w", p, b, err)
		}
		if attempt >= s.opts.MaxAttempts {
			return nil, false, fmt.Errorf("%w: %s/%s lost %d races in a row; retry later", ErrTooManyRetries, p, b, attempt)
		}
		s.log.Debug("commit lost the race for its branch; retrying", "project", p, "branch", b, "attempt", attempt)
		sleep := delay/2 + rand.N(delay/2+1)
		select {
		case <-ctx.Done():
			return nil, false, ctx.Err()
		case <-time.After(sleep):
		}
		delay = min(2*delay, s.opts.MaxBackoff)
	}
}
