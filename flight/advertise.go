package flight

import (
	"fmt"
	"net"
	"net/url"

	arrowflight "github.com/apache/arrow-go/v18/arrow/flight"
)

// Advertised servers. With Options.Advertise, every endpoint of a run or a
// scan names the servers that share this one's bucket as its locations, so
// that clients spread their streams over them: endpoint i lists server
// i mod N first, then the others in turn (i+1, i+2, … mod N), the further
// ones for a client to fail over to when the first goes away. Any of them
// serves the ticket: run records, tickets' signing keys and tokens are all
// in the bucket. Without Advertise, endpoints have no locations, which
// Flight reads as "this server".

// advertiseSchemes are the location schemes Advertise accepts.
var advertiseSchemes = map[string]bool{"grpc": true, "grpc+tcp": true, "grpc+tls": true}

// checkLocation reports a location that Flight clients cannot dial:
// it must be grpc://, grpc+tcp:// or grpc+tls:// HOST:PORT, nothing more.
func checkLocation(loc string) error {
	u, err := url.Parse(loc)
	if err != nil {
		return fmt.Errorf("flight options: advertised location %q: %w", loc, err)
	}
	if !advertiseSchemes[u.Scheme] {
		return fmt.Errorf("flight options: advertised location %q: scheme %q; want grpc://HOST:PORT or grpc+tls://HOST:PORT", loc, u.Scheme)
	}
	host, port, err := net.SplitHostPort(u.Host)
	if err != nil || host == "" || port == "" || u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("flight options: advertised location %q: want %s://HOST:PORT and nothing else", loc, u.Scheme)
	}
	return nil
}

// checkAdvertise reports an unusable Advertise list: a bad location, or
// one given twice (a client failing over would retry the same server).
func checkAdvertise(locs []string) error {
	seen := make(map[string]bool, len(locs))
	for _, l := range locs {
		if err := checkLocation(l); err != nil {
			return err
		}
		if seen[l] {
			return fmt.Errorf("flight options: advertised location %q is given twice", l)
		}
		seen[l] = true
	}
	return nil
}

// locations is the location list of endpoint i (a rank, or a scan's i-th
// endpoint): every advertised server, starting at i mod N; nil without
// Advertise.
func (s *Service) locations(i int) []*arrowflight.Location {
	n := len(s.opts.Advertise)
	if n == 0 {
		return nil
	}
	out := make([]*arrowflight.Location, n)
	for k := range n {
		out[k] = &arrowflight.Location{Uri: s.opts.Advertise[(i+k)%n]}
	}
	return out
}
