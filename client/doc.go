// Package client is Weft's Go client, and the home of the Flight protocol's
// request, result and metadata types: the structs a client encodes are the
// structs the server (package flight) decodes, as in arrow-go's Flight SQL
// client and server.
//
// Dial connects to a flightd; the Client's methods are the protocol of
// docs/flight.md: CreateProject, CreateBranch, Branches and Log (DoAction),
// Put (DoPut), Scan and Read (GetFlightInfo and DoGet of a table), Resolve,
// Resume and PlanRun (GetFlightInfo of a training run) and ReadRank (the
// DoGet of one rank, one record batch per step, with steps that the server
// sent as several messages reassembled).
//
// AppendEpisodes writes robot episodes with video in one commit, as the
// Python client's Table.append(data, videos=...): it checks the rows and
// files, uploads the MP4s the project lacks (PutMedia, streamed from the
// file) and puts the rows with one video column per camera (VideoField).
//
// Errors from the server carry their gRPC status (status.FromError works on
// them) and wrap the matching errdefs kind, so errors.Is(err,
// errdefs.ErrNotFound) tells a missing table from a bad request.
//
// Decode is the one strict JSON decoder of the protocol: it rejects unknown
// fields, trailing data, JSON null anywhere and values of the wrong type,
// and then runs the request's Validate method; every error wraps
// errdefs.ErrInvalidArgument and names the field at fault. The server
// decodes every command and action body with it.
//
// The package imports only arrow-go, gRPC and errdefs: never the server's
// packages.
package client
