package tables

import (
	"context"
	"errors"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/weftdata/weft/bucket"
	"github.com/weftdata/weft/versions"
)

// TestReadFixedList: fixed-size list columns of numbers read directly
// (all elements present) or through pqarrow (some null element) give the
// rows written, for whole row groups and for pieces that start inside a
// row group (a seek across pages: f32 and f64 span several); so do flat
// number columns, direct or not.
func TestReadFixedList(t *testing.T) {
	ctx := context.Background()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	v, err := versions.New(bucket.NewMem(), versions.DefaultOptions())
	require.NoError(t, err)
	_, err = v.CreateProject(ctx, "p")
	require.NoError(t, err)
	const rows, group = 20000, 10000
	s, err := New(v, Options{RowGroupRows: group, RowGroupBytes: 1 << 30, Allocator: mem})
	require.NoError(t, err)

	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "f32", Type: arrow.FixedSizeListOf(8, arrow.PrimitiveTypes.Float32), Nullable: true},
		{Name: "i64", Type: arrow.FixedSizeListOf(2, arrow.PrimitiveTypes.Int64), Nullable: true},
		{Name: "f64", Type: arrow.FixedSizeListOf(4, arrow.PrimitiveTypes.Float64), Nullable: true},
		{Name: "i32", Type: arrow.FixedSizeListOfNonNullable(1, arrow.PrimitiveTypes.Int32)},
		{Name: "x", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "n", Type: arrow.PrimitiveTypes.Int32},
		{Name: "u", Type: arrow.PrimitiveTypes.Uint32}, // pqarrow's
	}, nil)
	bld := array.NewRecordBuilder(mem, schema)
	for id := range int64(rows) {
		bld.Field(0).(*array.Int64Builder).Append(id)
		f32 := bld.Field(1).(*array.FixedSizeListBuilder)
		f32.Append(true)
		for k := range 8 {
			f32.ValueBuilder().(*array.Float32Builder).Append(float32(id) + float32(k)/4)
		}
		i64 := bld.Field(2).(*array.FixedSizeListBuilder)
		i64.Append(true)
		// null elements in the second row group only (the store holds no
		// null fixed-size list rows)
		i64.ValueBuilder().(*array.Int64Builder).AppendValues([]int64{id, -id}, []bool{true, id < group || id%1000 != 500})
		f64 := bld.Field(3).(*array.FixedSizeListBuilder)
		f64.Append(true)
		for k := range 4 {
			if id%777 == 5 && k == 2 {
				f64.ValueBuilder().AppendNull() // a null element
			} else {
				f64.ValueBuilder().(*array.Float64Builder).Append(float64(id*4 + int64(k)))
			}
		}
		i32 := bld.Field(4).(*array.FixedSizeListBuilder)
		i32.Append(true)
		i32.ValueBuilder().(*array.Int32Builder).Append(int32(id))
		if id >= group && id%999 == 0 {
			bld.Field(5).AppendNull()
		} else {
			bld.Field(5).(*array.Float64Builder).Append(float64(id) / 3)
		}
		bld.Field(6).(*array.Int32Builder).Append(int32(-id))
		bld.Field(7).(*array.Uint32Builder).Append(uint32(id) << 16)
	}
	want := bld.NewRecordBatch()
	bld.Release()
	defer want.Release()
	rr, err := array.NewRecordReader(schema, []arrow.RecordBatch{want})
	require.NoError(t, err)
	_, err = s.Append(ctx, "p", "main", "t", rr, "")
	rr.Release()
	require.NoError(t, err)
	ver, err := s.Table(ctx, "p", "main", "t")
	require.NoError(t, err)
	require.Len(t, ver.Blocks(), 2)

	r := s.NewReader(nil)
	defer r.Close()
	f, err := s.openFile(ctx, ver, 0, r.scratch)
	require.NoError(t, err)
	require.Equal(t, -1, fixedLeaf(f.pf.MetaData(), schema.Field(7)), "uint32 is not read directly")
	require.NoError(t, f.Close())
	// Which (row group, column) pairs read directly.
	direct := map[string][]bool{"f32": {true, true}, "i64": {true, false}, "f64": {false, false}, "i32": {true, true},
		"id": {true, true}, "x": {true, false}, "n": {true, true}}
	for name, wantDirect := range direct {
		for rg, d := range wantDirect {
			f, err := s.openFile(ctx, ver, 0, r.scratch)
			require.NoError(t, err)
			fd := schema.Field(schema.FieldIndices(name)[0])
			leaf := fixedLeaf(f.pf.MetaData(), fd)
			require.GreaterOrEqual(t, leaf, 0, name)
			b := ver.Blocks()[rg]
			col, err := r.readFixedColumn(ctx, f, b, leaf, fd)
			if d {
				require.NoError(t, err, "%s row group %d", name, rg)
				col.Release()
			} else {
				require.True(t, errors.Is(err, errNotDirect), "%s row group %d: %v", name, rg, err)
			}
			require.NoError(t, f.Close())
		}
	}

	cases := []struct {
		name             string
		rg, offset, rows int64
	}{
		{"first row group", 0, 0, group},
		{"second row group", 1, 0, group},
		{"a piece inside the first", 0, 4321, 3000},
		{"the last row of the second", 1, group - 1, 1},
		{"a piece inside the second", 1, 777, 5555},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := ver.Blocks()[tc.rg]
			b.Offset, b.Rows, b.FirstRow = tc.offset, tc.rows, b.FirstRow+tc.offset
			got, err := r.ReadBlock(ctx, ver, b, ver.Schema)
			require.NoError(t, err)
			defer got.Release()
			exp := want.NewSlice(b.FirstRow, b.FirstRow+tc.rows)
			defer exp.Release()
			for i := range exp.NumCols() {
				require.True(t, array.Equal(exp.Column(int(i)), got.Column(int(i))), "column %s", schema.Field(int(i)).Name)
			}
		})
	}
}

func TestLevelChecks(t *testing.T) {
	rows := func(n, k int, tweak func([]int16)) []int16 {
		s := make([]int16, 0, n*k)
		for range k {
			s = append(s, 0)
			for range n - 1 {
				s = append(s, 1)
			}
		}
		if tweak != nil {
			tweak(s)
		}
		return s
	}
	cases := []struct {
		name  string
		reps  []int16
		first int64
		n     int64
		want  bool
	}{
		{"rows of 8", rows(8, 1000, nil), 0, 8, true},
		{"rows of 3", rows(3, 7, nil), 0, 3, true},
		{"rows of 1", rows(1, 9, nil), 0, 1, true},
		{"a short row", rows(8, 10, func(s []int16) { s[13] = 0 }), 0, 8, false},
		{"a long row", rows(8, 10, func(s []int16) { s[16] = 1 }), 0, 8, false},
		{"a level of 2", rows(8, 10, func(s []int16) { s[9], s[10] = 0, 2 }), 0, 8, false},
		{"starting inside a row", rows(4, 5, nil)[2:], 2, 4, true},
		{"starting inside a row, wrong", rows(4, 5, nil)[2:], 1, 4, false},
		{"part of a row", rows(5, 3, nil)[:12], 0, 5, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, rowStarts(tc.reps, tc.first, tc.n))
		})
	}
	for _, n := range []int{0, 1, 3, 4, 5, 17, 4096} {
		s := make([]int16, n)
		for i := range s {
			s[i] = 3
		}
		require.True(t, allEqual16(s, 3), "len %d", n)
		if n > 0 {
			s[n-1] = 2
			require.False(t, allEqual16(s, 3), "len %d, last differs", n)
			s[n-1], s[0] = 3, -3
			require.False(t, allEqual16(s, 3), "len %d, first differs", n)
		}
	}
	big := make([]int16, 5<<16+3) // lanes flushed more than once
	for i := range big {
		big[i] = int16(i % 2)
	}
	require.EqualValues(t, len(big)/2, sum16(big))
}
