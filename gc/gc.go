package gc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/weftdata/weft/bucket"
	"github.com/weftdata/weft/versions"
)

// Options configure Collect.
type Options struct {
	// Grace: objects modified less than Grace before Collect starts are
	// never deleted. It must exceed the longest put (see the package doc).
	Grace time.Duration
	// DryRun counts what would be deleted and deletes nothing.
	DryRun bool
	// Deleters bounds the concurrent deletes.
	Deleters int
	// Now is the clock; Logger gets one line per deleted object at debug
	// level (nil discards); Progress, if set, is called after each phase
	// and every 1,000 objects with the counts so far.
	Now      func() time.Time
	Logger   *slog.Logger
	Progress func(Stats)
}

// DefaultOptions: a 24 hour grace, 8 concurrent deletes.
func DefaultOptions() Options {
	return Options{Grace: 24 * time.Hour, Deleters: 8, Now: time.Now}
}

// Validate reports an unusable option.
func (o Options) Validate() error {
	if o.Grace <= 0 || o.Deleters < 1 || o.Now == nil {
		return fmt.Errorf("%w: gc options need Grace > 0, Deleters >= 1 and a clock", ErrInvalid)
	}
	return nil
}

// Stats counts what Collect saw and did.
type Stats struct {
	Phase    string // "scan", "mark", "sweep", "done"
	Projects int
	// Scanned objects (commits, manifests, data files, media) and their bytes.
	Scanned      int
	ScannedBytes int64
	// Live: old enough to delete, but named by a reachable commit.
	// Young: modified within the grace period (live or not: perhaps a put
	// in flight), so never deleted.
	Live, Young int
	// Deleted (or, in a dry run, deletable) objects and their bytes.
	Deleted      int
	DeletedBytes int64
	// TempFiles and TempBytes: temporary files removed (fs store only).
	TempFiles int
	TempBytes int64
}

// tempRemover is what the fs store offers for its temporary files.
type tempRemover interface {
	RemoveStaleTemps(cutoff time.Time, dryRun bool) (bucket.TempStats, error)
}

// Collect deletes the objects of v's bucket that no commit names and that
// are older than the grace period; see the package doc for what it
// deletes and why that is safe against concurrent writers.
func Collect(ctx context.Context, v *versions.Store, opts Options) (Stats, error) {
	if err := opts.Validate(); err != nil {
		return Stats{}, err
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	progress := func(st Stats) {
		if opts.Progress != nil {
			opts.Progress(st)
		}
	}
	b := v.Bucket()
	t0 := opts.Now()
	cutoff := t0.Add(-opts.Grace)
	var st Stats

	// Scan: every candidate, with its modification time.
	st.Phase = "scan"
	projects, err := v.ListProjects(ctx)
	if err != nil {
		return st, fmt.Errorf("%w: %w", ErrMarkFailed, err)
	}
	st.Projects = len(projects)
	type candidate struct {
		key  string
		size int64
	}
	var old []candidate
	for _, p := range projects {
		for _, prefix := range []string{versions.CommitsPrefix(p), versions.ManifestsPrefix(p), versions.DataPrefix(p), versions.MediaPrefix(p)} {
			for info, err := range b.List(ctx, prefix) {
				if err != nil {
					return st, fmt.Errorf("%w: %w", ErrMarkFailed, err)
				}
				st.Scanned++
				st.ScannedBytes += info.Size
				if info.ModTime.Before(cutoff) {
					old = append(old, candidate{info.Key, info.Size})
				} else {
					st.Young++
				}
				if st.Scanned%1000 == 0 {
					progress(st)
				}
			}
		}
	}
	progress(st)

	// Mark: everything reachable, read after the scan.
	st.Phase = "mark"
	live, err := mark(ctx, v, projects)
	if err != nil {
		return st, fmt.Errorf("%w: %w", ErrMarkFailed, err)
	}
	progress(st)

	// Sweep.
	st.Phase = "sweep"
	var mu sync.Mutex
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(opts.Deleters)
	for _, c := range old {
		if live[c.key] {
			st.Live++
			continue
		}
		g.Go(func() error {
			if !opts.DryRun {
				if err := b.Delete(gctx, c.key); err != nil {
					return fmt.Errorf("delete %s: %w", c.key, err)
				}
			}
			log.Debug("gc deleted", "key", c.key, "bytes", c.size, "dry_run", opts.DryRun)
			mu.Lock()
			defer mu.Unlock()
			st.Deleted++
			st.DeletedBytes += c.size
			if st.Deleted%1000 == 0 {
				progress(st)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return st, err
	}
	if tr, ok := b.(tempRemover); ok {
		ts, err := tr.RemoveStaleTemps(cutoff, opts.DryRun)
		if err != nil {
			return st, err
		}
		st.TempFiles, st.TempBytes = ts.Files, ts.Bytes
	}
	st.Phase = "done"
	progress(st)
	return st, nil
}

// mark returns the keys of every live commit, manifest and data file: those
// reachable from a branch head of a project, or from a commit a run record
// pins.
func mark(ctx context.Context, v *versions.Store, projects []versions.ProjectName) (map[string]bool, error) {
	live := make(map[string]bool)
	type pin struct {
		p versions.ProjectName
		c versions.CommitID
	}
	var roots, pins []pin
	for _, p := range projects {
		branches, err := v.ListBranches(ctx, p)
		if err != nil {
			return nil, err
		}
		for _, br := range branches {
			roots = append(roots, pin{p, br.Head})
		}
		ps, err := runPins(ctx, v.Bucket(), p)
		if err != nil {
			return nil, err
		}
		for _, rp := range ps {
			pins = append(pins, pin{rp.Project, rp.Commit})
		}
	}
	seenManifest := make(map[string]bool)
	walk := func(p versions.ProjectName, id versions.CommitID, pinned bool) error {
		for id != "" {
			key := versions.CommitsPrefix(p) + string(id)
			if live[key] {
				return nil // this history is marked from here on
			}
			c, err := v.GetCommit(ctx, p, id)
			if pinned && errors.Is(err, versions.ErrCommitNotFound) {
				return nil // a run pinning a commit that is gone: nothing to keep
			}
			if err != nil {
				return err
			}
			pinned = false
			live[key] = true
			for _, mid := range c.Tables {
				mkey := versions.ManifestsPrefix(p) + string(mid)
				if seenManifest[mkey] {
					continue
				}
				m, err := v.GetManifest(ctx, p, mid)
				if err != nil {
					return err
				}
				seenManifest[mkey] = true
				live[mkey] = true
				for _, f := range m.Files {
					live[versions.DataFileKey(p, f.Path)] = true
				}
				for _, o := range m.Media {
					live[versions.MediaKey(p, o.SHA256)] = true
				}
			}
			id = c.Parent
		}
		return nil
	}
	for _, r := range roots {
		if err := walk(r.p, r.c, false); err != nil {
			return nil, err
		}
	}
	for _, r := range pins {
		if _, err := versions.ParseProjectName(string(r.p)); err != nil {
			continue
		}
		if _, err := versions.ParseCommitID(string(r.c)); err != nil {
			continue
		}
		if err := walk(r.p, r.c, true); err != nil {
			return nil, err
		}
	}
	return live, nil
}

// runComponent is the part of a run record (docs/format.md) gc reads.
type runComponent struct {
	Project versions.ProjectName `json:"project"`
	Commit  versions.CommitID    `json:"commit"`
}

// runPins returns the (project, commit) pairs pinned by the run records
// stored in project p.
func runPins(ctx context.Context, b bucket.Bucket, p versions.ProjectName) ([]runComponent, error) {
	var out []runComponent
	for info, err := range b.List(ctx, versions.RunsPrefix(p)) {
		if err != nil {
			return nil, err
		}
		if strings.Contains(strings.TrimPrefix(info.Key, versions.RunsPrefix(p)), "/") {
			continue
		}
		// A larger object here than a run record can be is Corrupt and
		// not read into memory (mark fails: nothing is deleted).
		data, _, err := versions.GetSmall(ctx, b, info.Key)
		if errors.Is(err, bucket.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		var rec struct {
			Components []runComponent `json:"components"`
		}
		if err := json.Unmarshal(data, &rec); err != nil {
			return nil, fmt.Errorf("%w: run record %s: %w", versions.ErrCorrupt, info.Key, err)
		}
		out = append(out, rec.Components...)
	}
	return out, nil
}
