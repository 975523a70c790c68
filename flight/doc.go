// Package flight is Weft's Arrow Flight service: it serves the tables of a
// tables.Store to any Flight client (pyarrow.flight, arrow-go, Arrow C++).
//
// The protocol is the table in DESIGN.md, section "Flight protocol":
//
//   - DoAction create_project, create_branch, list_branches and log, with
//     JSON bodies and JSON results; ListActions describes them.
//   - DoPut to a path descriptor [project, branch, table] appends every
//     batch of the stream as ONE commit (the table is created on the first
//     write) and answers one PutResult whose app_metadata is
//     {"commit","rows"} (and "replayed": true, see below). A put that fails, runs past
//     Options.PutTimeout, or whose client goes away before it finishes the
//     stream, commits nothing. The first batch's app_metadata may carry
//     {"idempotency_key"}: a key that already committed on that table and
//     branch commits nothing again and answers its commit, "replayed": true.
//   - ListFlights (criteria: a project name, or empty for all) lists one
//     FlightInfo per table at branch main.
//   - GetSchema and GetFlightInfo take a path [project, ref, table] or the
//     command {"scan": {"project","ref","table","columns"?}}. The FlightInfo
//     is pinned to the commit the ref named (its app_metadata is
//     {"commit"}), has the projected schema and the exact total_records, and
//     one endpoint per group of consecutive row groups (about
//     Options.EndpointBytes of Parquet each). Reading the endpoints in order
//     yields the rows in ordinal order; several clients may read them in
//     parallel.
//   - DoGet streams a scan ticket's rows, sliced into record batches of at
//     most Options.BatchBytes (when single rows allow), so that clients with
//     gRPC's default 4 MiB message limit can read any scan.
//   - A scan command with "windows" is a windowed scan (scanwin.go): mix
//     (Engine.PrepareScan, Scan.Steps) makes the windows' columns as for a
//     run; endpoints are row ranges with signed tickets that carry the
//     canonical windows, and DoGet streams steps like a rank stream's.
//   - DoExchange (exchange.go) serves a rank ticket's steps as DoGet does
//     (serveRank is shared), or, for a same-host client asking for
//     "shm", in a ring of host shared-memory slots (package slots):
//     descriptors down, releases up (docs/flight.md, "Host slots").
//
// Tickets are opaque to clients: "weft", a format version (2), a kind byte
// (1 = scan, 2 = rank stream), a JSON payload, and an HMAC-SHA256 signature
// (auth.Signer) with a key id, the key shared through the bucket. DoGet
// verifies the signature before it reads anything else: a ticket edited in
// any byte, minted without the key, or issued over another store is
// InvalidArgument (get a new one from GetFlightInfo). Every ticket is pinned
// to a commit, so any server over the same bucket serves it. A verified
// ticket is worth no more than the caller's token: DoGet requires read on
// every project it names. Keys rotate with `flightd admin ticket-key
// rotate` (old tickets keep working until `ticket-key remove`).
//
// Every call is authenticated (Parts.Authenticator, by auth.Interceptors
// chained after panic recovery): Unauthenticated without a valid bearer
// token. Handlers check scopes once they know the projects (authz.go):
// create_project needs admin on the project, create_branch and DoPut write,
// the other calls read (a recipe or run: on every component's project);
// out of scope is PermissionDenied, except that a run the token may not
// read is NotFound, worded as for a run that does not exist. ListFlights
// lists only readable projects. With no Authenticator every call may do
// everything (the loopback development mode).
//
// Every error reaches the client through one function (Service.status) that
// maps Weft's error kinds to gRPC codes: InvalidArgument for bad input (bad
// JSON, bad names, short paths, schema mismatches, unknown columns, bad
// tickets and idempotency keys), Unauthenticated, PermissionDenied,
// NotFound for missing projects, branches, commits and tables,
// AlreadyExists, Aborted for lost races, Unimplemented for protocol rows not
// built yet, and Internal for server faults, whose cause is logged under an
// error id and never sent to the client.
//
// Every Arrow object the service makes is released on every path; the tests
// prove it with memory.NewCheckedAllocator.
package flight
