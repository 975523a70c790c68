// Package versions keeps projects, branches, content-addressed commits and
// table manifests in a bucket.Bucket, git-style.
//
// Layout under the bucket (see docs/format.md):
//
//	projects/P/refs/heads/BRANCH   commit id + "\n"          (moved by CompareAndSwap)
//	projects/P/commits/ID          commit, JSON              (PutIfAbsent, immutable)
//	projects/P/manifests/ID        table manifest, JSON      (PutIfAbsent, immutable)
//	projects/P/data/TABLE/…        data files (written by package tables)
//	projects/P/idempotency/H       idempotency record of a key (CommitIdempotent)
//
// Promises:
//   - Ids are hex SHA-256 hashes of a canonical, versioned, length-prefixed
//     encoding of an object's semantic fields; every read re-derives the id
//     and rejects an object whose bytes do not match it (ErrCorrupt).
//   - A commit becomes visible only when its branch ref moves, and the ref
//     moves only after the commit (and everything it names) is stored. A
//     crash at any point leaves the branch at its previous commit.
//   - Concurrent writers to one branch retry on a lost CompareAndSwap and
//     re-apply their change on the new head: no commit is ever lost, and the
//     history stays linear.
//   - A project exists once its "main" ref exists.
package versions
