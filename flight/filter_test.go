package flight_test

import (
	"encoding/json"
	"fmt"
	"testing"

	arrowflight "github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/weftdata/weft/bucket"
	"github.com/weftdata/weft/client"
	"github.com/weftdata/weft/flight"
	"github.com/weftdata/weft/tables"
)

// TestFilteredScan: a filter over Flight, plain (endpoints by size) and in
// balanced shards (counts within one, every matching row once, in order);
// bad filters are InvalidArgument with the position.
func TestFilteredScan(t *testing.T) {
	e := newEnv(t, bucket.NewMem(), envOpts{
		tables: func(o *tables.Options) { o.RowGroupRows = 100 },
		flight: func(o *flight.Options) { o.EndpointBytes = 1 },
	})
	e.createProject("p")
	e.mustPut("p", "main", "t", 0, 1000, 250, 16)
	want := func(keep func(int64) bool) []int64 {
		var out []int64
		for id := range int64(1000) {
			if keep(id) {
				out = append(out, id)
			}
		}
		return out
	}
	for _, c := range []struct {
		filter string
		keep   func(int64) bool
	}{
		{"id % 2 = 0", nil},
		{"id >= 990 OR id IN (3, 500)", func(id int64) bool { return id >= 990 || id == 3 || id == 500 }},
		{"name LIKE 'row-12%'", func(id int64) bool { return id == 12 || id/10 == 12 || id/100 == 12 }},
		{"id < 0", func(int64) bool { return false }},
	} {
		t.Run(c.filter, func(t *testing.T) {
			cmd := func(extra string) *arrowflight.FlightDescriptor {
				f, _ := json.Marshal(c.filter)
				return cmdDesc(`{"scan": {"project":"p","ref":"main","table":"t","filter":` + string(f) + extra + `}}`)
			}
			if c.keep == nil {
				_, err := e.client.GetFlightInfo(ctxT(t), cmd(""))
				require.Equal(t, codes.InvalidArgument, status.Code(err), "%v", err)
				require.Contains(t, err.Error(), "at byte 3: unexpected character '%'")
				return
			}
			info := e.info(cmd(""))
			require.EqualValues(t, -1, info.TotalRecords)
			require.Len(t, info.Endpoint, 10)
			got := e.scan(info)
			require.Equal(t, want(c.keep), nilIfEmpty(got))

			for _, n := range []int{1, 3, 16} {
				info := e.info(cmd(fmt.Sprintf(`,"shards":%d`, n)))
				w := want(c.keep)
				require.EqualValues(t, len(w), info.TotalRecords)
				require.Len(t, info.Endpoint, n)
				var meta client.ScanMetadata
				require.NoError(t, json.Unmarshal(info.AppMetadata, &meta))
				require.Len(t, meta.ShardRows, n)
				var all []int64
				for j, ep := range info.Endpoint {
					ids, _, err := e.read(ctxT(t), ep.Ticket, nil)
					require.NoError(t, err)
					require.Len(t, ids, int(meta.ShardRows[j]))
					require.InDelta(t, len(w)/n, len(ids), 1)
					all = append(all, ids...)
				}
				require.Equal(t, w, nilIfEmpty(all))
			}
		})
	}
	// Balanced without a count; unfiltered balanced shards.
	info := e.info(cmdDesc(`{"scan": {"project":"p","ref":"main","table":"t","balanced":true}}`))
	require.EqualValues(t, 1000, info.TotalRecords)
	require.Equal(t, want(func(int64) bool { return true }), e.scan(info))
	info = e.info(cmdDesc(`{"scan": {"project":"p","ref":"main","table":"t","shards":7,"columns":["name"],"filter":"id BETWEEN 10 AND 19"}}`))
	require.EqualValues(t, 10, info.TotalRecords)

	for _, bad := range []struct{ filter, msg string }{
		{"id = ", "at byte 5: expected a literal"},
		{"nope = 1", "at byte 0: \"nope\" is not a column"},
		{"name = 3", "at byte 7: column \"name\" is utf8; expected a 'string', found 3"},
	} {
		f, _ := json.Marshal(bad.filter)
		_, err := e.client.GetFlightInfo(ctxT(t), cmdDesc(`{"scan": {"project":"p","ref":"main","table":"t","filter":`+string(f)+`}}`))
		require.Equal(t, codes.InvalidArgument, status.Code(err), "%v", err)
		require.Contains(t, err.Error(), bad.msg)
	}
}

func nilIfEmpty(s []int64) []int64 {
	if len(s) == 0 {
		return nil
	}
	return s
}
