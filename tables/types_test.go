package tables_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/weftdata/weft/bucket"
	"github.com/weftdata/weft/errdefs"
	"github.com/weftdata/weft/internal/typematrix"
	"github.com/weftdata/weft/tables"
	"github.com/weftdata/weft/versions"
)

// refusedTypes are the matrix cases Append must refuse, each because
// arrow-go v18.8.0's Parquet path gives back another type or cannot write
// it at all (found by running the matrix with no type check: see the
// comment of each group). Keep this list and tables.checkType in step.
var refusedTypes = []string{
	// Read back as another type.
	"date64",                            // as date32
	"time32[s]",                         // as time32[ms]
	"timestamp[s,]", "timestamp[s,UTC]", // as timestamp[ms] (and tz=UTC for other zones)
	"timestamp[s,America/New_York]", "timestamp[s,+05:30]",
	"large_list<int32>", "large_list<string>", "large_list<large_string>", // element field renamed
	"large_list<large_list<int32>>", "list<large_list<int32>>", "large_list<list<int32>>",
	"large_list<element: int32>",
	"list<date64>", "struct<d date64>", // date32 inside
	"dictionary<int32, large_string>", "dictionary<int32, large_binary>", // as dictionary<string|binary>
	"dictionary<int32, int64>", "dictionary<int32, date64>", "dictionary<int16, float64>", // decoded
	"dictionary<int32, fixed_size_binary[1]>",
	"arrow.json<string>", "arrow.json<large_string>", // as binary; large_string panics in the reader
	"arrow.bool8",          // as int8
	"arrow.opaque<binary>", // as its storage
	// Not writable at all.
	"duration[s]", "duration[ms]", "duration[us]", "duration[ns]",
	"interval[month]", "interval[day_time]", "interval[month_day_nano]",
	"decimal32(9,2)", "decimal64(18,2)",
	"string_view", "binary_view", "list<string_view>", "dictionary<int32, string_view>", "arrow.json<string_view>",
	"list_view<int32>", "large_list_view<int32>", "list_view<list_view<int32>>", "large_list_view<large_list_view<int32>>",
	"struct<>",
	"sparse_union<i int32, s string>", "dense_union<i int32, s string>",
	"run_end_encoded<int32, string>", "run_end_encoded<int16, int64>", "run_end_encoded<int64, float64>",
	"arrow.timestamp_with_offset[ms]",
}

// TestTypeMatrix: every Arrow type either comes back from Append → Table →
// ReadBlock / Scan / ScanBatches exactly (type and values), or Append
// refuses it with ErrUnsupportedType, an invalid argument naming the column
// and the type, and stores nothing.
func TestTypeMatrix(t *testing.T) {
	backends := map[string]func(t *testing.T) bucket.Bucket{
		"mem": func(*testing.T) bucket.Bucket { return bucket.NewMem() },
		"fs": func(t *testing.T) bucket.Bucket {
			b, err := bucket.NewFS(t.TempDir())
			require.NoError(t, err)
			return b
		},
		"minio": func(t *testing.T) bucket.Bucket { return newMinIOBucket(t) },
	}
	for _, name := range []string{"mem", "fs", "minio"} {
		t.Run(name, func(t *testing.T) {
			if name != "mem" && testing.Short() {
				t.Skip("-short: the mem bucket only")
			}
			e := newProjectEnv(t, backends[name](t), tables.DefaultOptions())
			refused := map[string]bool{}
			for i, tc := range typematrix.Cases() {
				t.Run(tc.Name, func(t *testing.T) {
					if checkTypeCase(t, e, versions.TableName(fmt.Sprint("t", i)), tc) {
						refused[tc.Name] = true
					}
				})
			}
			if !t.Failed() {
				require.ElementsMatch(t, refusedTypes, slices.Collect(maps.Keys(refused)), "refused types")
			}
		})
	}
}

// checkTypeCase appends tc as table tbl and checks the round trip; it
// returns whether Append refused the type.
func checkTypeCase(t *testing.T, e *env, tbl versions.TableName, tc typematrix.Case) bool {
	ctx := context.Background()
	arr, err := tc.Build(e.mem)
	require.NoError(t, err)
	defer arr.Release()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "c", Type: tc.Type, Nullable: true},
	}, nil)
	ids, _, err := array.FromJSON(e.mem, arrow.PrimitiveTypes.Int64, strings.NewReader(`[0, 1, 2, 3]`))
	require.NoError(t, err)
	defer ids.Release()
	rec := array.NewRecordBatch(schema, []arrow.Array{ids, arr}, int64(arr.Len()))
	r, err := array.NewRecordReader(schema, []arrow.RecordBatch{rec})
	rec.Release()
	require.NoError(t, err)
	defer r.Release()

	before := listing(t, e.b)
	_, err = e.s.Append(ctx, "p", "main", tbl, r, "")
	if err != nil {
		require.ErrorIs(t, err, tables.ErrUnsupportedType)
		require.ErrorIs(t, err, errdefs.ErrInvalidArgument)
		require.Contains(t, err.Error(), `column "c`)
		require.Contains(t, err.Error(), "has type")
		require.Less(t, len(err.Error()), 1024)
		require.Equal(t, before, listing(t, e.b), "a refused append stored something")
		return true
	}

	v, err := e.s.Table(ctx, "p", "main", tbl)
	require.NoError(t, err)
	require.True(t, arrow.TypeEqual(tc.Type, v.Schema.Field(1).Type, arrow.CheckMetadata()), "manifest type %s", v.Schema.Field(1).Type)
	requireSame := func(how string, got arrow.RecordBatch) {
		t.Helper()
		col := got.Column(int(got.NumCols()) - 1)
		require.True(t, arrow.TypeEqual(tc.Type, col.DataType()), "%s: type %s", how, col.DataType())
		require.True(t, array.Equal(arr, col), "%s: got %v, want %v", how, col, arr)
	}
	rd := e.s.NewReader(memory.DefaultAllocator)
	defer rd.Close()
	got, err := rd.ReadBlock(ctx, v, v.Blocks()[0], v.Schema)
	require.NoError(t, err)
	requireSame("ReadBlock", got)
	got.Release()
	proj, err := v.Projection([]string{"c"})
	require.NoError(t, err)
	got, err = rd.ReadBlock(ctx, v, v.Blocks()[0], proj)
	require.NoError(t, err)
	require.EqualValues(t, 1, got.NumCols())
	requireSame("ReadBlock projected", got)
	got.Release()
	got, err = rd.GatherRows(ctx, v, []int64{0, 1, 2}[:min(3, int(v.Rows()))], v.Schema)
	require.NoError(t, err)
	col := got.Column(int(got.NumCols()) - 1)
	require.True(t, arrow.TypeEqual(tc.Type, col.DataType()), "GatherRows: type %s", col.DataType())
	want := array.NewSlice(arr, 0, int64(min(3, int(v.Rows()))))
	require.True(t, array.Equal(want, col), "GatherRows: got %v, want %v", col, want)
	want.Release()
	got.Release()
	n := 0
	for got, err := range e.s.Scan(ctx, v, nil, 0, 1, 1<<20) {
		require.NoError(t, err)
		requireSame("Scan", got)
		got.Release()
		n++
	}
	require.Equal(t, 1, n)
	return false
}

// listing is every object of b with its size and etag.
func listing(t *testing.T, b bucket.Bucket) map[string]string {
	t.Helper()
	out := map[string]string{}
	for info, err := range b.List(context.Background(), "") {
		require.NoError(t, err)
		out[info.Key] = fmt.Sprint(info.Size, " ", info.ETag)
	}
	return out
}

// TestBadDictionaryIndex: a dictionary batch whose index points past its
// dictionary is refused as an invalid argument naming the column, and
// nothing is stored; so are other malformed arrays.
func TestBadData(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	dictOf := func(idxType arrow.DataType, idxJSON string) func() arrow.Array {
		return func() arrow.Array {
			dt := &arrow.DictionaryType{IndexType: idxType, ValueType: arrow.BinaryTypes.String}
			idx, _, err := array.FromJSON(mem, idxType, strings.NewReader(idxJSON))
			require.NoError(t, err)
			defer idx.Release()
			dict, _, err := array.FromJSON(mem, arrow.BinaryTypes.String, strings.NewReader(`["a", "b"]`))
			require.NoError(t, err)
			defer dict.Release()
			return array.NewDictionaryArray(dt, idx, dict)
		}
	}
	fromJSON := func(dt arrow.DataType, js string) func() arrow.Array {
		return func() arrow.Array {
			a, _, err := array.FromJSON(mem, dt, strings.NewReader(js))
			require.NoError(t, err)
			return a
		}
	}
	badOffsets := func() arrow.Array {
		good, _, err := array.FromJSON(mem, arrow.BinaryTypes.String, strings.NewReader(`["ab", "cd", "ef", "gh"]`))
		require.NoError(t, err)
		defer good.Release()
		offs := arrow.Int32Traits.CastFromBytes(good.Data().Buffers()[1].Bytes())
		offs[2] = 100 // past the data
		return array.MakeFromData(good.Data())
	}
	cases := []struct {
		name     string
		col      func() arrow.Array
		contains string
	}{
		{"dictionary index past the end", dictOf(arrow.PrimitiveTypes.Int32, `[0, 1, 5, 0]`), "dictionary index 5 at row 2"},
		{"negative dictionary index", dictOf(arrow.PrimitiveTypes.Int8, `[0, -1, 1, 0]`), "dictionary index -1 at row 1"},
		{"uint64 dictionary index", dictOf(arrow.PrimitiveTypes.Uint64, `[0, 18446744073709551615, 1, 0]`), "outside the dictionary"},
		{"null fixed_size_list entry", fromJSON(arrow.FixedSizeListOf(2, arrow.PrimitiveTypes.Int32), `[[1, 2], null, [3, 4], [5, 6]]`), "null fixed_size_list"},
		{"nested null fixed_size_list entry", fromJSON(arrow.ListOf(arrow.FixedSizeListOf(1, arrow.PrimitiveTypes.Int32)), `[[[1]], [null], [], [[2]]]`), "null fixed_size_list"},
		{"string offsets past the data", badOffsets, `column "c"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newProjectEnv(t, bucket.NewMem(), tables.DefaultOptions())
			col := tc.col()
			defer col.Release()
			ids, _, err := array.FromJSON(e.mem, arrow.PrimitiveTypes.Int64, strings.NewReader(`[0, 1, 2, 3]`))
			require.NoError(t, err)
			defer ids.Release()
			schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "c", Type: col.DataType(), Nullable: true}}, nil)
			rec := array.NewRecordBatch(schema, []arrow.Array{ids, col}, 4)
			r, err := array.NewRecordReader(schema, []arrow.RecordBatch{rec})
			rec.Release()
			require.NoError(t, err)
			defer r.Release()
			before := listing(t, e.b)
			_, err = e.s.Append(context.Background(), "p", "main", "t", r, "")
			require.ErrorIs(t, err, tables.ErrBadData)
			require.ErrorIs(t, err, errdefs.ErrInvalidArgument)
			require.Contains(t, err.Error(), `column "c`)
			require.Contains(t, err.Error(), tc.contains)
			require.Equal(t, before, listing(t, e.b))
		})
	}
}

// TestPoisonedTable: a table whose manifest schema holds a type this
// server refuses (written by an older server, here through versions
// directly) fails to open with an error naming the column, the type and
// the last commit to branch from, and that commit can be branched from.
func TestPoisonedTable(t *testing.T) {
	ctx := context.Background()
	e := newProjectEnv(t, bucket.NewMem(), tables.DefaultOptions())
	e.append(t, "p", "main", "good", 0, 10, 10)
	beforeBad, err := e.v.Head(ctx, "p", "main")
	require.NoError(t, err)

	commitSchema := func(tbl versions.TableName, schema *arrow.Schema) versions.CommitID {
		enc, err := tables.EncodeSchema(schema)
		require.NoError(t, err)
		c, err := e.v.Commit(ctx, "p", "main", "older server", func(ctx context.Context, head *versions.Commit) (map[versions.TableName]versions.ManifestID, error) {
			m := &versions.Manifest{Table: tbl, Schema: enc, Files: []versions.DataFile{{Path: "data/x.parquet", Rows: 1, Size: 1, RowGroups: []int64{1}}}}
			id, err := e.v.PutManifest(ctx, "p", m)
			return map[versions.TableName]versions.ManifestID{tbl: id}, err
		})
		require.NoError(t, err)
		return c.ID
	}
	date64 := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "d", Type: arrow.FixedWidthTypes.Date64, Nullable: true}}, nil)
	nested := arrow.NewSchema([]arrow.Field{{Name: "s", Type: arrow.StructOf(arrow.Field{Name: "j", Type: arrow.LargeListOf(arrow.BinaryTypes.LargeString), Nullable: true})}}, nil)
	ints := arrow.NewSchema([]arrow.Field{{Name: "s", Type: arrow.PrimitiveTypes.Int64}}, nil)

	commitSchema("bad", date64)
	commitSchema("bad", date64) // a second append: the walk passes it
	goodBefore := commitSchema("changed", ints)
	commitSchema("changed", nested)
	e.append(t, "p", "main", "good", 10, 5, 5) // a later, unrelated commit

	cases := []struct {
		table      versions.TableName
		want       versions.CommitID
		contains   []string
		notContain string
	}{
		{"bad", beforeBad, []string{`column "d" has type date64`, "did not exist before", "send it as date32"}, ""},
		{"changed", goodBefore, []string{`column "s.j" has type large_list`, "last whose schema of the table is readable"}, ""},
	}
	for _, tc := range cases {
		t.Run(string(tc.table), func(t *testing.T) {
			_, err := e.s.Table(ctx, "p", "main", tc.table)
			require.ErrorIs(t, err, tables.ErrUnreadableSchema)
			require.ErrorIs(t, err, errdefs.ErrFailedPrecondition)
			require.Contains(t, err.Error(), "branch from "+string(tc.want))
			for _, s := range tc.contains {
				require.Contains(t, err.Error(), s)
			}
			require.Less(t, len(err.Error()), 1024)
			// The advice works: a branch from that commit reads.
			br := versions.BranchName("fix-" + string(tc.table))
			_, err = e.v.CreateBranch(ctx, "p", br, string(tc.want))
			require.NoError(t, err)
			v, err := e.s.Table(ctx, "p", string(br), "good")
			require.NoError(t, err)
			require.Equal(t, seq(0, 10), e.readAll(t, v))
		})
	}
	// Other tables of the same commit still read.
	v, err := e.s.Table(ctx, "p", "main", "good")
	require.NoError(t, err)
	require.Equal(t, seq(0, 15), e.readAll(t, v))
}

// TestBoundedMessages: messages about wide tables and huge names stay
// under 1 KiB and still name the first difference.
func TestBoundedMessages(t *testing.T) {
	ctx := context.Background()
	e := newProjectEnv(t, bucket.NewMem(), tables.DefaultOptions())
	wide := func(n int, rename int) *arrow.Schema {
		fs := make([]arrow.Field, n)
		for i := range fs {
			fs[i] = arrow.Field{Name: fmt.Sprintf("column_with_a_long_name_%04d", i), Type: arrow.PrimitiveTypes.Int32, Nullable: true}
			if i >= rename {
				fs[i].Name = fmt.Sprintf("renamed_%04d", i)
			}
		}
		return arrow.NewSchema(fs, nil)
	}
	appendSchema := func(s *arrow.Schema) error {
		rec := array.NewRecordBatch(s, func() []arrow.Array {
			cols := make([]arrow.Array, s.NumFields())
			for i := range cols {
				cols[i] = array.MakeArrayOfNull(e.mem, arrow.PrimitiveTypes.Int32, 2)
			}
			return cols
		}(), 2)
		for _, c := range rec.Columns() {
			c.Release()
		}
		r, err := array.NewRecordReader(s, []arrow.RecordBatch{rec})
		rec.Release()
		require.NoError(t, err)
		defer r.Release()
		_, err = e.s.Append(ctx, "p", "main", "wide", r, "")
		return err
	}
	require.NoError(t, appendSchema(wide(1000, 1000)))

	err := appendSchema(wide(1000, 7))
	require.ErrorIs(t, err, tables.ErrSchemaMismatch)
	require.Less(t, len(err.Error()), 1024, err.Error())
	require.Contains(t, err.Error(), `column 7 is "column_with_a_long_name_0007" int32 in the table but "renamed_0007" int32`)
	require.Contains(t, err.Error(), "and 990 more differences")
	require.Contains(t, err.Error(), "1000 columns")

	err = appendSchema(wide(999, 1000))
	require.ErrorIs(t, err, tables.ErrSchemaMismatch)
	require.Less(t, len(err.Error()), 1024, err.Error())
	require.Contains(t, err.Error(), `column 999 "column_with_a_long_name_0999" (int32) is missing`)

	v, err := e.s.Table(ctx, "p", "main", "wide")
	require.NoError(t, err)
	for _, col := range []string{"column_with_a_long_name_0l23", strings.Repeat("x", 17<<20)} {
		_, err = v.Projection([]string{"column_with_a_long_name_0000", col})
		require.ErrorIs(t, err, tables.ErrColumnNotFound)
		require.ErrorIs(t, err, errdefs.ErrInvalidArgument)
		require.Less(t, len(err.Error()), 1024, err.Error())
		require.Contains(t, err.Error(), col[:20])
		require.Contains(t, err.Error(), "and 992 more")
	}
	_, err = e.s.Table(ctx, "p", "main", versions.TableName(strings.Repeat("t", 17<<20)))
	require.ErrorIs(t, err, versions.ErrInvalidName)
	require.Less(t, len(err.Error()), 1024)
}
