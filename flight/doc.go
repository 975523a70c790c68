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
//     {"commit","rows"}. A put that fails, or whose client goes away before
//     it finishes the stream, commits nothing.
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
//
// Tickets are opaque to clients: "weft", a format version, a kind byte (1 =
// scan; later kinds are added without breaking old tickets), a JSON payload
// and a truncated SHA-256 checksum. Every ticket is pinned to a commit, so
// any server over the same bucket can serve it, and a forged, corrupted or
// truncated ticket is rejected with InvalidArgument.
//
// Every error reaches the client through one function (Service.status) that
// maps Weft's error kinds to gRPC codes: InvalidArgument for bad input (bad
// JSON, bad names, short paths, schema mismatches, unknown columns),
// NotFound for missing projects, branches, commits and tables,
// AlreadyExists, Aborted for lost races, Unimplemented for protocol rows not
// built yet, and Internal for server faults, whose cause is logged under an
// error id and never sent to the client.
//
// Every Arrow object the service makes is released on every path; the tests
// prove it with memory.NewCheckedAllocator.
package flight
