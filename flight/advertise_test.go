package flight_test

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/stretchr/testify/require"

	"github.com/weftdata/weft/bucket"
	"github.com/weftdata/weft/client"
	"github.com/weftdata/weft/flight"
	"github.com/weftdata/weft/tables"
)

func TestAdvertiseOptions(t *testing.T) {
	cases := map[string]struct {
		locs []string
		ok   bool
	}{
		"none":             {nil, true},
		"grpc":             {[]string{"grpc://10.0.0.1:8815"}, true},
		"several":          {[]string{"grpc://a:1", "grpc+tcp://b:2", "grpc+tls://c.example:443"}, true},
		"ipv6":             {[]string{"grpc://[::1]:8815"}, true},
		"no scheme":        {[]string{"10.0.0.1:8815"}, false},
		"http":             {[]string{"http://a:1"}, false},
		"no port":          {[]string{"grpc://a"}, false},
		"no host":          {[]string{"grpc://:8815"}, false},
		"path":             {[]string{"grpc://a:1/x"}, false},
		"query":            {[]string{"grpc://a:1?x=1"}, false},
		"user":             {[]string{"grpc://u@a:1"}, false},
		"twice":            {[]string{"grpc://a:1", "grpc://a:1"}, false},
		"reuse-connection": {[]string{"arrow-flight-reuse-connection://?"}, false},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			o := flight.DefaultOptions()
			o.Advertise = c.locs
			err := o.Validate()
			if c.ok {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			require.Contains(t, err.Error(), "advertised location")
		})
	}
}

// TestAdvertise plans on one server that advertises two others over the
// same bucket: rank r and scan endpoint i list server (r or i) mod 2 first
// and the other next, and each of them serves the tickets the planner
// signed, with the steps and rows the planner itself serves.
func TestAdvertise(t *testing.T) {
	b := bucket.NewMem()
	small := envOpts{tables: func(o *tables.Options) { o.RowGroupRows = 200 }}
	srvB, srvC := newEnv(t, b, small), newEnv(t, b, small)
	adv := []string{"grpc://" + srvB.addr, "grpc://" + srvC.addr}
	byLoc := map[string]*env{adv[0]: srvB, adv[1]: srvC}
	a := newEnv(t, b, envOpts{
		tables: small.tables,
		flight: func(o *flight.Options) { o.Advertise = adv; o.EndpointBytes = 1 },
	})
	a.createProject("p")
	a.mustPut("p", "main", "a", 0, 941, 400, 16)
	a.mustPut("p", "main", "b", 0, 2100, 700, 16)

	t.Run("run", func(t *testing.T) {
		const w = 4
		plan, err := a.c.Resolve(ctxT(t), mixRecipe("p"), w)
		require.NoError(t, err)
		require.Len(t, plan.Ranks, w)
		for r, ep := range plan.Ranks {
			require.Equal(t, []string{adv[r%2], adv[(r+1)%2]}, ep.Locations, "rank %d", r)
			want, err := a.readRank(ctxT(t), ep)
			require.NoError(t, err)
			require.NotEmpty(t, want)
			for _, loc := range ep.Locations {
				addr, useTLS, err := client.LocationAddr(loc)
				require.NoError(t, err)
				require.False(t, useTLS)
				srv := byLoc[loc]
				require.Equal(t, srv.addr, addr)
				got, err := srv.readRank(ctxT(t), client.RankEndpoint{RankMetadata: ep.RankMetadata, Ticket: ep.Ticket})
				require.NoError(t, err, "rank %d from %s", r, loc)
				require.Equal(t, want, got, "rank %d from %s", r, loc)
			}
		}
		// A plan from another server without --advertise has no locations.
		again, err := srvB.c.Resume(ctxT(t), plan.Record.Run, w, 3)
		require.NoError(t, err)
		for _, ep := range again.Ranks {
			require.Empty(t, ep.Locations)
		}
	})

	t.Run("scan", func(t *testing.T) {
		plan, err := a.c.Scan(ctxT(t), client.ScanRequest{Project: "p", Ref: "main", Table: "b", Columns: []string{"id"}})
		require.NoError(t, err)
		require.Greater(t, len(plan.Endpoints), 2)
		var ids []int64
		for i, ep := range plan.Endpoints {
			require.Equal(t, []string{adv[i%2], adv[(i+1)%2]}, ep.Locations, "endpoint %d", i)
			srv := byLoc[ep.Locations[0]]
			for rec, err := range srv.c.Read(ctxT(t), client.Endpoint{Ticket: ep.Ticket}) {
				require.NoError(t, err)
				ids = append(ids, rec.Column(0).(*array.Int64).Int64Values()...)
			}
		}
		require.Equal(t, seq(0, 2100), ids)
	})

	t.Run("filtered scan", func(t *testing.T) {
		plan, err := a.c.Scan(ctxT(t), client.ScanRequest{Project: "p", Ref: "main", Table: "b", Columns: []string{"id"}, Filter: "id < 1000", Shards: 3})
		require.NoError(t, err)
		require.Len(t, plan.Endpoints, 3)
		var ids []int64
		for i, ep := range plan.Endpoints {
			require.Equal(t, []string{adv[i%2], adv[(i+1)%2]}, ep.Locations, "endpoint %d", i)
			srv := byLoc[ep.Locations[0]]
			for rec, err := range srv.c.Read(ctxT(t), client.Endpoint{Ticket: ep.Ticket}) {
				require.NoError(t, err)
				ids = append(ids, rec.Column(0).(*array.Int64).Int64Values()...)
			}
		}
		require.Equal(t, seq(0, 1000), ids)
	})
}
