package client_test

import (
	"context"
	"net"

	"github.com/weftdata/weft/bucket"
	"github.com/weftdata/weft/episodes"
	"github.com/weftdata/weft/flight"
	"github.com/weftdata/weft/mix"
	"github.com/weftdata/weft/tables"
	"github.com/weftdata/weft/versions"
)

// serveVideo serves a Flight service over an fs bucket in dir, with the
// episodes window kinds and the write-time video check, as flightd wires
// them, on a free loopback port.
func serveVideo(dir string) (addr string, stop func(), err error) {
	b, err := bucket.NewFS(dir)
	if err != nil {
		return "", nil, err
	}
	v, err := versions.New(b, versions.DefaultOptions())
	if err != nil {
		return "", nil, err
	}
	ts, err := tables.New(v, tables.DefaultOptions())
	if err != nil {
		return "", nil, err
	}
	eo := episodes.DefaultOptions()
	eo.Media = ts
	kinds, err := episodes.New(eo)
	if err != nil {
		return "", nil, err
	}
	mo := mix.DefaultOptions()
	mo.Kinds = kinds.Map()
	engine, err := mix.New(ts, mo)
	if err != nil {
		kinds.Close()
		return "", nil, err
	}
	svc, err := flight.New(flight.Parts{Tables: ts, Mix: engine, AppendCheck: kinds.AppendCheck}, flight.DefaultOptions())
	if err != nil {
		engine.Close()
		kinds.Close()
		return "", nil, err
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		engine.Close()
		kinds.Close()
		return "", nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = svc.Serve(ctx, lis); close(done) }()
	return lis.Addr().String(), func() { cancel(); <-done; engine.Close(); kinds.Close() }, nil
}
