package versions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/weftdata/weft/bucket"
)

// IdempotencyKey names one logical write chosen by the client (a UUID, say),
// so that a write retried after a lost acknowledgement is applied once. It
// is 1 to 256 printable ASCII characters (no space); build it with
// ParseIdempotencyKey at the edge.
type IdempotencyKey string

// MaxIdempotencyKeyLen bounds an idempotency key.
const MaxIdempotencyKeyLen = 256

// ParseIdempotencyKey validates a client's idempotency key.
func ParseIdempotencyKey(s string) (IdempotencyKey, error) {
	if len(s) == 0 || len(s) > MaxIdempotencyKeyLen {
		return "", fmt.Errorf("%w: an idempotency key must be 1 to %d characters, got %d; use a fresh UUID per append", ErrInvalidIdempotencyKey, MaxIdempotencyKeyLen, len(s))
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return "", fmt.Errorf("%w: an idempotency key must be printable ASCII without spaces (byte %d is 0x%02x); use a fresh UUID per append", ErrInvalidIdempotencyKey, i, s[i])
		}
	}
	return IdempotencyKey(s), nil
}

// IdempotencyFormat is the format version of idempotency records.
const IdempotencyFormat = 1

// idemRecord is the stored record of one idempotency key
// (projects/P/idempotency/SHA256(KEY)); see docs/format.md.
type idemRecord struct {
	Format  int        `json:"format"`
	Key     string     `json:"key"`
	Branch  BranchName `json:"branch"`
	Table   TableName  `json:"table,omitempty"`
	Created time.Time  `json:"created"`
	Tries   []idemTry  `json:"attempts"`
	Landed  CommitID   `json:"landed,omitempty"`
}

// idemTry is one commit proposed under the key, recorded before the ref
// move that would make it visible.
type idemTry struct {
	Commit CommitID `json:"commit"`
	Parent CommitID `json:"parent"`
	Rows   int64    `json:"rows"`
}

// Idempotency is what CommitIdempotent records with a commit.
type Idempotency struct {
	Key IdempotencyKey
	// Table, if set, is recorded; a retry of the key naming another table
	// (or branch) is refused with ErrIdempotencyKeyReused.
	Table TableName
	// Rows is the caller's count of what the commit adds (package tables:
	// rows appended); a replay returns the first commit's Rows.
	Rows int64
}

// IdempotentResult is the outcome of an idempotent commit.
type IdempotentResult struct {
	Commit *Commit
	Rows   int64
	// Replayed: the key had already committed (Commit is that earlier
	// commit and Rows its count); this call changed nothing on the branch.
	Replayed bool
}

// FindIdempotent returns the commit that key id.Key made on branch b of
// project p, with the Rows recorded for it, or nil if that key has not
// committed (yet). It refuses a key recorded for another branch or table.
// Package tables calls it before writing any data.
func (s *Store) FindIdempotent(ctx context.Context, p ProjectName, b BranchName, id Idempotency) (*IdempotentResult, error) {
	headID, err := s.Head(ctx, p, b)
	if err != nil {
		return nil, err
	}
	g := &idemGuard{s: s, p: p, b: b, id: id}
	c, err := g.before(ctx, headID)
	if err != nil || c == nil {
		return nil, err
	}
	return &IdempotentResult{Commit: c, Rows: g.replayRows, Replayed: true}, nil
}

// CommitIdempotent is Commit under an idempotency key: the key's commit
// lands on the branch at most once, whoever retries it and however often.
//
// How: every commit proposed under the key is added to the key's record
// (created with PutIfAbsent, extended with CompareAndSwap, never shortened)
// before the branch ref moves to it, and every attempt reads the record
// after reading the branch head and, if one of the recorded commits is on
// the branch's history, returns it instead of committing. Two attempts
// cannot both land: the later ref move starts from a head that already
// contains the earlier commit (the ref only moves forward), and it read
// the record after that head, so it saw the earlier commit listed. A
// commit is on the history iff walking back from the head meets it before
// its recorded parent; after a successful ref move the record's "landed"
// field is set (best effort), so a later retry skips that walk.
func (s *Store) CommitIdempotent(ctx context.Context, p ProjectName, b BranchName, message string, change Change, id Idempotency) (*IdempotentResult, error) {
	if _, err := ParseIdempotencyKey(string(id.Key)); err != nil {
		return nil, err
	}
	g := &idemGuard{s: s, p: p, b: b, id: id}
	c, replayed, err := s.commit(ctx, p, b, message, change, g)
	if err != nil {
		return nil, err
	}
	if replayed {
		return &IdempotentResult{Commit: c, Rows: g.replayRows, Replayed: true}, nil
	}
	return &IdempotentResult{Commit: c, Rows: id.Rows}, nil
}

// idemGuard is the commitGuard of CommitIdempotent.
type idemGuard struct {
	s  *Store
	p  ProjectName
	b  BranchName
	id Idempotency

	rec        *idemRecord // as read by the last before; nil if absent
	etag       bucket.ETag
	replayRows int64
}

func (g *idemGuard) key() string { return idempotencyKey(g.p, g.id.Key) }

func (g *idemGuard) read(ctx context.Context) error {
	data, info, err := GetSmall(ctx, g.s.b, g.key())
	if errors.Is(err, bucket.ErrNotFound) {
		g.rec, g.etag = nil, ""
		return nil
	}
	if err != nil {
		return fmt.Errorf("read idempotency record of %q: %w", g.id.Key, err)
	}
	var rec idemRecord
	if err := json.Unmarshal(data, &rec); err != nil {
		return fmt.Errorf("%w: idempotency record %s: %w", ErrCorrupt, g.key(), err)
	}
	if rec.Format != IdempotencyFormat {
		return fmt.Errorf("%w: idempotency record %s has format %d; this Weft reads format %d (upgrade Weft)", ErrCorrupt, g.key(), rec.Format, IdempotencyFormat)
	}
	if rec.Key != string(g.id.Key) {
		return fmt.Errorf("%w: idempotency record %s is for another key", ErrCorrupt, g.key())
	}
	g.rec, g.etag = &rec, info.ETag
	return nil
}

// before reads the record and returns the key's landed commit, if any.
func (g *idemGuard) before(ctx context.Context, headID CommitID) (*Commit, error) {
	if err := g.read(ctx); err != nil || g.rec == nil {
		return nil, err
	}
	if g.rec.Branch != g.b || g.id.Table != "" && g.rec.Table != "" && g.rec.Table != g.id.Table {
		return nil, fmt.Errorf("%w: key %q was used for table %q on branch %q of project %q; use a new key for each append", ErrIdempotencyKeyReused, g.id.Key, g.rec.Table, g.rec.Branch, g.p)
	}
	if g.rec.Landed != "" {
		for _, t := range g.rec.Tries {
			if t.Commit == g.rec.Landed {
				c, err := g.s.GetCommit(ctx, g.p, t.Commit)
				g.replayRows = t.Rows
				return c, err
			}
		}
		return nil, fmt.Errorf("%w: idempotency record %s says it landed %s, which it does not list", ErrCorrupt, g.key(), g.rec.Landed)
	}
	t, err := g.s.landedTry(ctx, g.p, headID, g.rec.Tries)
	if err != nil || t == nil {
		return nil, err
	}
	c, err := g.s.GetCommit(ctx, g.p, t.Commit)
	if err != nil {
		return nil, err
	}
	g.replayRows = t.Rows
	g.markLanded(ctx, c.ID)
	return c, nil
}

// claim adds c to the record before the ref moves to it. A concurrent
// change of the record is a conflict: the attempt starts over.
func (g *idemGuard) claim(ctx context.Context, c *Commit) error {
	try := idemTry{Commit: c.ID, Parent: c.Parent, Rows: g.id.Rows}
	var err error
	if g.rec == nil {
		rec := idemRecord{Format: IdempotencyFormat, Key: string(g.id.Key), Branch: g.b, Table: g.id.Table, Created: g.s.opts.Now().UTC(), Tries: []idemTry{try}}
		data, merr := json.Marshal(rec)
		if merr != nil {
			return fmt.Errorf("encode idempotency record: %w", merr)
		}
		_, err = g.s.b.PutIfAbsent(ctx, g.key(), data)
	} else {
		rec := *g.rec
		rec.Tries = append(append([]idemTry(nil), rec.Tries...), try)
		data, merr := json.Marshal(rec)
		if merr != nil {
			return fmt.Errorf("encode idempotency record: %w", merr)
		}
		_, err = g.s.b.CompareAndSwap(ctx, g.key(), g.etag, data)
	}
	switch {
	case err == nil:
		return nil
	case errors.Is(err, bucket.ErrExists), errors.Is(err, bucket.ErrConflict), errors.Is(err, bucket.ErrNotFound):
		return fmt.Errorf("%w: the idempotency record of %q changed under a concurrent retry", ErrConflict, g.id.Key)
	}
	return fmt.Errorf("record idempotency key %q: %w", g.id.Key, err)
}

// done records that c landed, so retries need not walk the history.
func (g *idemGuard) done(ctx context.Context, c *Commit) { g.markLanded(ctx, c.ID) }

// markLanded sets the record's landed field. Best effort: the field is a
// shortcut, the history walk finds the commit without it. It gives up
// after a few lost races, or at once if ctx is done.
func (g *idemGuard) markLanded(ctx context.Context, id CommitID) {
	for range 5 {
		if err := g.read(ctx); err != nil || g.rec == nil || g.rec.Landed != "" {
			return
		}
		rec := *g.rec
		rec.Landed = id
		data, err := json.Marshal(rec)
		if err != nil {
			return
		}
		_, err = g.s.b.CompareAndSwap(ctx, g.key(), g.etag, data)
		if !errors.Is(err, bucket.ErrConflict) {
			if err != nil {
				g.s.log.Debug("could not mark an idempotency key landed", "key", g.id.Key, "err", err)
			}
			return
		}
	}
}

// landedTry returns the try whose commit is on the history ending at head,
// or nil. A try's commit can only sit right after its parent, and the
// parent stays on the history (refs only move forward), so the walk back
// from head stops once it has passed every try's parent.
func (s *Store) landedTry(ctx context.Context, p ProjectName, head CommitID, tries []idemTry) (*idemTry, error) {
	if len(tries) == 0 {
		return nil, nil
	}
	byCommit := make(map[CommitID]*idemTry, len(tries))
	pending := make(map[CommitID]int, len(tries)) // parent -> tries still possible
	for i := range tries {
		byCommit[tries[i].Commit] = &tries[i]
		pending[tries[i].Parent]++
	}
	left := len(tries)
	for id := head; id != ""; {
		if t, ok := byCommit[id]; ok {
			return t, nil
		}
		left -= pending[id]
		delete(pending, id)
		if left <= 0 {
			return nil, nil
		}
		c, err := s.GetCommit(ctx, p, id)
		if err != nil {
			return nil, err
		}
		id = c.Parent
	}
	return nil, nil
}
