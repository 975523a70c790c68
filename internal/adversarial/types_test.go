package adversarial_test

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/weftdata/weft/client"
	"github.com/weftdata/weft/internal/typematrix"
)

// TestTypesOverTheWire: every type of the matrix, put through the Go
// client to a real flightd, is either refused at DoPut with
// InvalidArgument naming the column and its type, leaving the store
// unchanged, or accepted and then read back exactly (schema and values)
// by a scan AND by a mix (a one-component recipe, rank 0 of 1 over every
// step, rows put back in _row order). Types listed in knownTypeBugs are
// checked in TestKnownTypeBugs instead.
func TestTypesOverTheWire(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a flightd process: skipped with -short")
	}
	runTypes(t, func(name string) bool { return knownTypeBugs[name] == "" })
}

// runTypes runs the matrix cases that pick selects, on every store.
func runTypes(t *testing.T, pick func(name string) bool) {
	for i, mk := range stores() {
		t.Run(storeName(i), func(t *testing.T) {
			st := mk(t)
			srv := startFlightd(t, st)
			c := dial(t, srv.addr)
			ctx := ctxT(t)
			_, err := c.CreateProject(ctx, "types")
			require.NoError(t, err)
			var accepted, refused []string
			for n, tc := range typematrix.Cases() {
				if !pick(tc.Name) {
					continue
				}
				t.Run(tc.Name, func(t *testing.T) {
					if checkTypeOverTheWire(t, c, st, fmt.Sprint("t", n), tc) {
						refused = append(refused, tc.Name)
					} else {
						accepted = append(accepted, tc.Name)
					}
				})
			}
			srv.requireHealthy(t)
			t.Logf("%s: %d types accepted and read back by scan and mix, %d refused at DoPut: %s",
				st.name, len(accepted), len(refused), strings.Join(refused, ", "))
		})
	}
}

// checkTypeOverTheWire puts tc as table tbl and checks it both ways; it
// returns whether DoPut refused the type.
func checkTypeOverTheWire(t *testing.T, c *client.Client, st *store, tbl string, tc typematrix.Case) bool {
	ctx := ctxT(t)
	mem := memory.DefaultAllocator
	arr, err := tc.Build(mem)
	require.NoError(t, err)
	defer arr.Release()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "c", Type: tc.Type, Nullable: true},
	}, nil)
	ids, _, err := array.FromJSON(mem, arrow.PrimitiveTypes.Int64, strings.NewReader(`[0, 1, 2, 3]`))
	require.NoError(t, err)
	defer ids.Release()
	rec := array.NewRecordBatch(schema, []arrow.Array{ids, arr}, int64(arr.Len()))
	r, err := array.NewRecordReader(schema, []arrow.RecordBatch{rec})
	rec.Release()
	require.NoError(t, err)
	defer r.Release()

	before := st.objects(t)
	_, err = c.Put(ctx, client.PutDescriptor{Project: "types", Branch: "main", Table: tbl}, r)
	if err != nil {
		s, _ := status.FromError(err)
		require.Equal(t, codes.InvalidArgument.String(), s.Code().String(), "put refused with %v", err)
		require.Contains(t, s.Message(), `column "c`, "the message names the column")
		require.Contains(t, s.Message(), "type", "the message names the type")
		require.LessOrEqual(t, len(s.Message()), maxMessage)
		require.Empty(t, diff(before, st.objects(t)), "a refused put stored something")
		return true
	}

	// Scan: schema and values.
	plan, err := c.Scan(ctx, client.ScanRequest{Project: "types", Ref: "main", Table: tbl})
	require.NoError(t, err, "scan of an accepted type")
	require.True(t, arrow.TypeEqual(tc.Type, plan.Schema.Field(1).Type, arrow.CheckMetadata()), "scan schema: %s", plan.Schema.Field(1).Type)
	var got []arrow.Array
	for _, ep := range plan.Endpoints {
		for b, err := range c.Read(ctx, ep) {
			require.NoError(t, err, "scan read")
			col := b.Column(1)
			col.Retain()
			got = append(got, col)
		}
	}
	scanned, err := array.Concatenate(got, mem)
	for _, g := range got {
		g.Release()
	}
	require.NoError(t, err)
	defer scanned.Release()
	require.True(t, arrow.TypeEqual(tc.Type, scanned.DataType()), "scan type %s", scanned.DataType())
	require.True(t, array.Equal(arr, scanned), "scan: got %v, want %v", scanned, arr)

	// Mix: one component, rank 0 of 1, every step; rows by _row.
	run, err := c.Resolve(ctx, client.Recipe{Seed: 7, BatchSize: 2, Components: []client.Component{{Project: "types", Table: tbl}}}, 1)
	require.NoError(t, err, "resolve a recipe over an accepted type")
	ci := run.Schema.FieldIndices("c")
	require.Len(t, ci, 1)
	require.True(t, arrow.TypeEqual(tc.Type, run.Schema.Field(ci[0]).Type, arrow.CheckMetadata()), "run schema: %s", run.Schema.Field(ci[0]).Type)
	type row struct {
		ord  int64
		vals arrow.Array
		i    int
	}
	var rows []row
	var keep []arrow.RecordBatch
	defer func() {
		for _, b := range keep {
			b.Release()
		}
	}()
	for step, err := range c.ReadRank(ctx, run.Ranks[0]) {
		require.NoError(t, err, "mix read")
		b := step.Batch
		b.Retain()
		keep = append(keep, b)
		col := b.Column(ci[0])
		require.True(t, arrow.TypeEqual(tc.Type, col.DataType()), "mix batch type %s", col.DataType())
		ords := b.Column(b.Schema().FieldIndices("_row")[0]).(*array.Int64)
		for i := range int(b.NumRows()) {
			rows = append(rows, row{ords.Value(i), col, i})
		}
	}
	require.Len(t, rows, 4, "one pass over 4 rows")
	slices.SortFunc(rows, func(a, b row) int { return cmp.Compare(a.ord, b.ord) })
	for k, r := range rows {
		require.EqualValues(t, k, r.ord, "every row once")
		require.True(t, array.SliceEqual(arr, int64(k), int64(k+1), r.vals, int64(r.i), int64(r.i+1)),
			"mix row %d: got %v, want %v", k, array.NewSlice(r.vals, int64(r.i), int64(r.i+1)), array.NewSlice(arr, int64(k), int64(k+1)))
	}
	return false
}

// knownTypeBugs are matrix types that today's server gets wrong over the
// wire, with what goes wrong; TestKnownTypeBugs runs them.
var knownTypeBugs = map[string]string{}

// TestKnownTypeBugs runs the types of knownTypeBugs: it fails until they
// are fixed (then delete their lines).
func TestKnownTypeBugs(t *testing.T) {
	if testing.Short() || len(knownTypeBugs) == 0 {
		t.Skip("no known type bugs, or -short")
	}
	runTypes(t, func(name string) bool { return knownTypeBugs[name] != "" })
}
