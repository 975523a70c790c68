// Package gc deletes the objects of a Weft store that no commit names: the
// data files of failed or killed puts, the manifests and commits of
// attempts that lost the race for their branch, and, on the fs store, the
// temporary files of killed writers. `flightd admin gc` runs it.
//
// # What it deletes
//
// Under each project it considers commits/, manifests/, data/ and media/.
// An object there is live if it is a commit reachable from a branch head
// (or pinned by a run record), a manifest such a commit names, or a data
// file or media object such a manifest names. Refs, run records, idempotency records and
// everything outside projects/ (auth/) are never touched. Collect deletes
// the objects that are not live and were last modified more than
// Options.Grace before it started.
//
// # Why it never deletes what a concurrent commit is about to name
//
// Collect takes t0 = now, then lists the candidates with their modification
// times, then reads every branch head and walks the history and manifests
// ("marks"); it deletes a candidate X only if X was not marked and
// mtime(X) < t0 − Grace. Suppose a writer's commit C that names X moves its
// branch at time tc.
//
//   - If tc is before Collect read that branch's ref, C is reachable from
//     the head it read (a branch only moves forward, so every later head
//     has C in its history) and X is marked.
//   - Otherwise tc > t0. The writer stored X during the same put, and
//     assumption A below gives mtime(X) ≥ tc − Grace > t0 − Grace, so X is
//     too young to delete.
//
// Either way X survives. Objects named by older commits are named by a
// commit that landed earlier and stays reachable, so the same two cases
// apply. A failed mark (any error reading a ref, commit, manifest or run
// record other than a missing pinned commit) aborts Collect before it
// deletes anything.
//
// Assumption A: a put finishes, from the moment it starts writing its data
// file to the moment its branch moves, within Grace; and the bucket's
// clock (which stamps modification times) is within Grace/2 of the
// collector's. The writer side enforces it by giving every put a deadline
// well under Grace (the Flight server: a put timeout, e.g. 1 h against the
// default 24 h grace): a put past its deadline fails before moving its
// branch. (On S3 a multipart upload's modification time is when it began,
// which the deadline also covers.)
//
// Media objects are uploaded by calls of their own, before the put of
// the rows that name them, so for them assumption A reads: rows are
// appended within Grace of the upload of the media they name. An
// identical re-upload stores nothing and so does not refresh an old
// unnamed object's modification time: a client that re-uploads a file
// uploaded more than Grace ago and never committed may lose it to a
// concurrent Collect (its append then fails or, in a narrow race,
// commits a dangling name).
//
// Known limits: a commit id is resolvable by prefix even when no branch
// names it (an attempt that lost its race); a branch or run created from
// such an id after Collect started marking can lose its commit. Nobody is
// shown such ids, so this needs a guess; versions.Resolve should resolve
// only reachable commits to close it.
package gc
