package slots

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/weftdata/weft/errdefs"
)

// inArena copies a into memory from mem (as a gather into a slot does).
func inArena(t *testing.T, mem memory.Allocator, a arrow.Array) arrow.Array {
	t.Helper()
	out, err := array.Concatenate([]arrow.Array{a}, mem)
	require.NoError(t, err)
	return out
}

// fromJSON builds an array of dt from its JSON values.
func fromJSON(t *testing.T, mem memory.Allocator, dt arrow.DataType, js string) arrow.Array {
	t.Helper()
	a, _, err := array.FromJSON(mem, dt, strings.NewReader(js))
	require.NoError(t, err, "%s: %s", dt, js)
	return a
}

// arenaCase is a batch: columns built on the heap, and which of them are
// copied into the arena (the others stay where they are, as a column
// another materializer built does), and slices of the arena's copies.
type arenaCase struct {
	name    string
	cols    []arrow.Array // on the heap; the test releases them
	heap    []bool        // column i stays on the heap
	slice   [2]int64      // slice every arena column to [lo, hi) when hi > 0
	inPlace bool          // no body byte is copied
}

// writeArena writes the case's batch through an arena in a fresh slot of
// r whose bytes are garbage, reads it back as a client does and checks it
// equals the batch and the plain message's batch.
func writeArena(t *testing.T, r *Ring, mem memory.Allocator, tc arenaCase) {
	t.Helper()
	ctx := context.Background()
	slot, err := r.Acquire(ctx)
	require.NoError(t, err)
	defer func() { require.NoError(t, slot.Release()) }()
	for i := range slot.Bytes() {
		slot.Bytes()[i] = 0xA5 // what an earlier step left
	}
	fields := make([]arrow.Field, len(tc.cols))
	for i, c := range tc.cols {
		fields[i] = arrow.Field{Name: fmt.Sprintf("c%d", i), Type: c.DataType(), Nullable: true}
	}
	schema := arrow.NewSchema(fields, nil)
	plainCols := make([]arrow.Array, len(tc.cols))
	for i, c := range tc.cols {
		plainCols[i] = c
		if tc.slice[1] > 0 {
			plainCols[i] = array.NewSlice(c, tc.slice[0], tc.slice[1])
			defer plainCols[i].Release()
		}
	}
	rows := int64(tc.cols[0].Len())
	if tc.slice[1] > 0 {
		rows = tc.slice[1] - tc.slice[0]
	}
	want := array.NewRecordBatch(schema, plainCols, rows)
	defer want.Release()
	room, err := HeaderRoom(want)
	require.NoError(t, err)
	a, err := NewArena(slot, room, mem)
	require.NoError(t, err)
	cols := make([]arrow.Array, len(tc.cols))
	for i, c := range tc.cols {
		if tc.heap != nil && tc.heap[i] {
			c.Retain()
			cols[i] = c
		} else {
			cols[i] = inArena(t, a, c)
		}
		if tc.slice[1] > 0 {
			s := array.NewSlice(cols[i], tc.slice[0], tc.slice[1])
			cols[i].Release()
			cols[i] = s
		}
	}
	rec := array.NewRecordBatch(schema, cols, rows)
	for _, c := range cols {
		c.Release()
	}
	off, n, copied, err := a.WriteRecordBatch(rec)
	require.NoError(t, err)
	if tc.inPlace {
		require.Zero(t, copied, "every buffer was in the slot")
	}
	header := int64(8) + int64(uint32(slot.Bytes()[off+4])|uint32(slot.Bytes()[off+5])<<8|uint32(slot.Bytes()[off+6])<<16|uint32(slot.Bytes()[off+7])<<24)
	require.Zero(t, (slot.Offset()+off+header)%bodyAlign, "the body is 64-byte aligned in the ring's file")
	require.LessOrEqual(t, off+n, int64(len(slot.Bytes())))
	msg := append([]byte(nil), slot.Bytes()[off:off+n]...) // the batch below reads the slot
	rec.Release()                                          // the arena's memory is the slot's: freeing it does nothing

	got := readMessage(t, mem, schema, msg)
	defer got.Release()
	require.True(t, array.RecordEqual(want, got), "got %v\nwant %v", got, want)

	// The plain message of the same batch decodes to the same batch.
	plainSlot, err := r.Acquire(ctx)
	require.NoError(t, err)
	defer func() { require.NoError(t, plainSlot.Release()) }()
	poff, pn, err := WriteRecordBatch(plainSlot, want)
	require.NoError(t, err)
	plain := readMessage(t, mem, schema, plainSlot.Bytes()[poff:poff+pn])
	defer plain.Release()
	require.True(t, array.RecordEqual(plain, got))
}

func TestArenaWriteRecordBatch(t *testing.T) {
	t.Parallel()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	r := newRing(t, 2, 1<<20)
	video := arrow.StructOf( // the shape of a video window: segments and frame times
		arrow.Field{Name: "segments", Type: arrow.ListOf(arrow.BinaryTypes.Binary), Nullable: true},
		arrow.Field{Name: "pts", Type: arrow.FixedSizeListOf(3, arrow.PrimitiveTypes.Int64)},
		arrow.Field{Name: "ok", Type: arrow.FixedWidthTypes.Boolean},
	)
	cases := []struct {
		name    string
		types   []arrow.DataType
		values  []string
		heap    []bool
		slice   [2]int64
		inPlace bool
	}{
		{name: "fixed width", types: []arrow.DataType{arrow.PrimitiveTypes.Int64, arrow.PrimitiveTypes.Float32, arrow.PrimitiveTypes.Int8, arrow.FixedWidthTypes.Boolean},
			values: []string{`[1,2,3,-4,5]`, `[0.5,1.5,2.5,3.5,-1]`, `[1,-2,3,4,5]`, `[true,false,true,true,false]`}, inPlace: true},
		{name: "nulls", types: []arrow.DataType{arrow.PrimitiveTypes.Int32, arrow.BinaryTypes.String, arrow.FixedWidthTypes.Boolean},
			values: []string{`[1,null,3,null,5]`, `["a",null,"ccc","",null]`, `[null,true,false,null,true]`}, inPlace: true},
		{name: "binary and large", types: []arrow.DataType{arrow.BinaryTypes.Binary, arrow.BinaryTypes.LargeString, arrow.BinaryTypes.LargeBinary, &arrow.FixedSizeBinaryType{ByteWidth: 3}},
			values: []string{`["AAEC","","AwQFBgc=","CA==","CQoL"]`, `["x","yy","","zzz","w"]`, `["AA==","AQI=","","Aw==","BAU="]`, `["AAEC","AwQF","BgcI","CQoL","DA0O"]`}, inPlace: true},
		{name: "lists", types: []arrow.DataType{arrow.ListOf(arrow.PrimitiveTypes.Int16), arrow.LargeListOf(arrow.BinaryTypes.String), arrow.FixedSizeListOf(2, arrow.PrimitiveTypes.Float64)},
			values: []string{`[[1,2],[],null,[3],[4,5,6]]`, `[["a"],["b","c"],[],null,["d"]]`, `[[1,2],[3,4],null,[5,6],[7,8]]`}, inPlace: true},
		{name: "structs and video windows", types: []arrow.DataType{arrow.StructOf(arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int32, Nullable: true}, arrow.Field{Name: "b", Type: arrow.BinaryTypes.String, Nullable: true}), video},
			values: []string{`[{"a":1,"b":"x"},null,{"a":null,"b":"zz"},{"a":4,"b":null},{"a":5,"b":""}]`,
				`[{"segments":["AAE=","AgME"],"pts":[1,2,3],"ok":true},{"segments":[],"pts":[4,5,6],"ok":false},{"segments":null,"pts":[7,8,9],"ok":true},{"segments":["BQ=="],"pts":[10,11,12],"ok":true},{"segments":["Bgc=","CA==","CQ=="],"pts":[13,14,15],"ok":false}]`}},
		{name: "a column on the heap", types: []arrow.DataType{arrow.PrimitiveTypes.Int64, arrow.BinaryTypes.Binary}, heap: []bool{true, false},
			values: []string{`[1,2,3,4,5]`, `["AAEC","","AwQFBgc=","CA==","CQoL"]`}},
		{name: "sliced arrays with offsets", types: []arrow.DataType{arrow.PrimitiveTypes.Int64, arrow.BinaryTypes.String, arrow.ListOf(arrow.PrimitiveTypes.Int32), arrow.FixedWidthTypes.Boolean},
			values: []string{`[1,2,null,4,5]`, `["a","bb",null,"dddd","e"]`, `[[1],[2,3],null,[4,5,6],[]]`, `[true,null,false,true,true]`}, slice: [2]int64{1, 4}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tc := arenaCase{name: c.name, heap: c.heap, slice: c.slice, inPlace: c.inPlace}
			for i, dt := range c.types {
				tc.cols = append(tc.cols, fromJSON(t, mem, dt, c.values[i]))
			}
			defer func() {
				for _, col := range tc.cols {
					col.Release()
				}
			}()
			writeArena(t, r, mem, tc)
		})
	}
}

// randomType is a random column type of the mixer's kinds, nested at most
// depth deep.
func randomType(rng *rand.Rand, depth int) arrow.DataType {
	leaves := []arrow.DataType{arrow.PrimitiveTypes.Int8, arrow.PrimitiveTypes.Int32, arrow.PrimitiveTypes.Int64, arrow.PrimitiveTypes.Float64,
		arrow.FixedWidthTypes.Boolean, arrow.BinaryTypes.String, arrow.BinaryTypes.Binary, arrow.BinaryTypes.LargeString, &arrow.FixedSizeBinaryType{ByteWidth: 5}}
	if depth == 0 || rng.IntN(3) > 0 {
		return leaves[rng.IntN(len(leaves))]
	}
	switch rng.IntN(4) {
	case 0:
		return arrow.ListOf(randomType(rng, depth-1))
	case 1:
		return arrow.LargeListOf(randomType(rng, depth-1))
	case 2:
		return arrow.FixedSizeListOf(int32(1+rng.IntN(3)), randomType(rng, depth-1))
	default:
		fs := make([]arrow.Field, 1+rng.IntN(3))
		for i := range fs {
			fs[i] = arrow.Field{Name: fmt.Sprintf("f%d", i), Type: randomType(rng, depth-1), Nullable: true}
		}
		return arrow.StructOf(fs...)
	}
}

// randomValue is a random JSON value of dt (null with probability 1/6).
func randomValue(rng *rand.Rand, dt arrow.DataType, big bool) any {
	if rng.IntN(6) == 0 {
		return nil
	}
	switch t := dt.(type) {
	case *arrow.Int8Type:
		return rng.IntN(200) - 100
	case *arrow.Int32Type, *arrow.Int64Type:
		return rng.IntN(1<<30) - 1<<29
	case *arrow.Float64Type:
		return float64(rng.IntN(1000)) / 8
	case *arrow.BooleanType:
		return rng.IntN(2) == 0
	case *arrow.StringType, *arrow.LargeStringType:
		n := rng.IntN(12)
		if big && rng.IntN(4) == 0 {
			n = 20 << 10
		}
		return strings.Repeat(string(rune('a'+rng.IntN(26))), n)
	case *arrow.BinaryType:
		n := rng.IntN(9)
		if big && rng.IntN(4) == 0 {
			n = 30 << 10
		}
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		return b // JSON: base64
	case *arrow.FixedSizeBinaryType:
		b := make([]byte, t.ByteWidth)
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		return b
	case *arrow.ListType:
		return randomList(rng, t.Elem(), rng.IntN(4), big)
	case *arrow.LargeListType:
		return randomList(rng, t.Elem(), rng.IntN(4), big)
	case *arrow.FixedSizeListType:
		return randomList(rng, t.Elem(), int(t.Len()), big)
	case *arrow.StructType:
		m := map[string]any{}
		for _, f := range t.Fields() {
			m[f.Name] = randomValue(rng, f.Type, big)
		}
		return m
	}
	panic(fmt.Sprintf("randomValue: %s", dt))
}

func randomList(rng *rand.Rand, elem arrow.DataType, n int, big bool) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = randomValue(rng, elem, big)
	}
	return out
}

// TestArenaRandomSchemas: batches of random schemas (nested lists and
// structs, nulls, binary up to tens of KiB a value), their columns in the
// arena, on the heap, or sliced, read back equal to what was written.
// Seeded: a failure names its seed.
func TestArenaRandomSchemas(t *testing.T) {
	t.Parallel()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	r := newRing(t, 2, 4<<20)
	iters := 200
	if testing.Short() {
		iters = 40
	}
	for seed := range uint64(iters) {
		rng := rand.New(rand.NewPCG(seed, 14))
		ncols, rows := 1+rng.IntN(5), 1+rng.IntN(40)
		big := rng.IntN(4) == 0
		tc := arenaCase{name: fmt.Sprint(seed), heap: make([]bool, ncols)}
		for i := range ncols {
			dt := randomType(rng, 2)
			vals := randomList(rng, dt, rows, big)
			js, err := json.Marshal(vals)
			require.NoError(t, err)
			tc.cols = append(tc.cols, fromJSON(t, mem, dt, string(js)))
			tc.heap[i] = rng.IntN(4) == 0
		}
		if rng.IntN(3) == 0 && rows > 2 {
			lo := int64(rng.IntN(rows / 2))
			tc.slice = [2]int64{lo, lo + 1 + int64(rng.IntN(rows-int(lo)-1))}
		}
		t.Run(fmt.Sprintf("seed %d", seed), func(t *testing.T) {
			defer func() {
				for _, col := range tc.cols {
					col.Release()
				}
			}()
			writeArena(t, r, mem, tc)
		})
	}
}

// TestArenaAllocator: the arena hands out 64-byte aligned slot memory,
// grows the last allocation in place, and hands out base memory once the
// slot is full (freed to the base).
func TestArenaAllocator(t *testing.T) {
	t.Parallel()
	base := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer base.AssertSize(t, 0)
	r := newRing(t, 1, 4096)
	slot, err := r.Acquire(context.Background())
	require.NoError(t, err)
	defer func() { require.NoError(t, slot.Release()) }()
	_, err = NewArena(slot, 8192, base)
	require.ErrorIs(t, err, errdefs.ErrInvalidArgument)
	a, err := NewArena(slot, 100, base)
	require.NoError(t, err)
	require.EqualValues(t, 128, a.Used(), "the header room, rounded up to 64")

	b1 := a.Allocate(10)
	at, ok := a.offsetOf(b1)
	require.True(t, ok)
	require.EqualValues(t, 128, at)
	b2 := a.Allocate(100)
	at2, ok := a.offsetOf(b2)
	require.True(t, ok)
	require.EqualValues(t, 192, at2, "64-byte aligned")
	copy(b2, strings.Repeat("x", 100))
	b2 = a.Reallocate(200, b2)
	at3, ok := a.offsetOf(b2)
	require.True(t, ok)
	require.Equal(t, at2, at3, "the last allocation grows in place")
	require.Equal(t, strings.Repeat("x", 100), string(b2[:100]))
	b1 = a.Reallocate(50, b1)
	at4, ok := a.offsetOf(b1)
	require.True(t, ok)
	require.Greater(t, at4, at3, "another allocation moves")
	a.Free(b1)

	big := a.Allocate(8192)
	_, ok = a.offsetOf(big)
	require.False(t, ok, "too large for the slot: from the base")
	require.EqualValues(t, 8192, base.CurrentAlloc())
	a.Free(big)
	a.Free(b2)
	require.Zero(t, base.CurrentAlloc())
}

// TestArenaTooLarge: a batch whose heap buffers do not fit in the slot
// after the arena's fails with ErrTooLarge.
func TestArenaTooLarge(t *testing.T) {
	t.Parallel()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	r := newRing(t, 1, 4096)
	slot, err := r.Acquire(context.Background())
	require.NoError(t, err)
	defer func() { require.NoError(t, slot.Release()) }()
	col := fromJSON(t, mem, arrow.BinaryTypes.String, `["`+strings.Repeat("z", 5000)+`"]`)
	defer col.Release()
	rec := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "s", Type: arrow.BinaryTypes.String}}, nil), []arrow.Array{col}, 1)
	defer rec.Release()
	room, err := HeaderRoom(rec)
	require.NoError(t, err)
	a, err := NewArena(slot, room, mem)
	require.NoError(t, err)
	_, _, _, err = a.WriteRecordBatch(rec)
	require.ErrorIs(t, err, ErrTooLarge)
	require.ErrorIs(t, err, errdefs.ErrResourceExhausted)

	small, err := NewArena(slot, 16, mem)
	require.NoError(t, err)
	_, _, _, err = small.WriteRecordBatch(rec)
	require.ErrorIs(t, err, ErrTooLarge, "a header larger than the room")
}

// TestArenaSharedValues: two columns over one values buffer in the slot
// (a string array and a shorter one over the start of its values). The
// shorter one's buffer ends off an 8-byte boundary inside the other's
// bytes: zeroing its padding in place would corrupt the longer column.
func TestArenaSharedValues(t *testing.T) {
	t.Parallel()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	r := newRing(t, 1, 1<<16)
	slot, err := r.Acquire(context.Background())
	require.NoError(t, err)
	defer func() { require.NoError(t, slot.Release()) }()

	long := fromJSON(t, mem, arrow.BinaryTypes.String, `["abcde","fghijklmnop"]`)
	defer long.Release()
	schema := arrow.NewSchema([]arrow.Field{{Name: "long", Type: arrow.BinaryTypes.String}, {Name: "short", Type: arrow.BinaryTypes.String}}, nil)
	probe := array.NewRecordBatch(schema, []arrow.Array{long, long}, 2)
	room, err := HeaderRoom(probe)
	probe.Release()
	require.NoError(t, err)
	a, err := NewArena(slot, room, mem)
	require.NoError(t, err)
	inSlot := inArena(t, a, long)
	defer inSlot.Release()
	// short: the first string only, over the same values buffer in the slot.
	offs := memory.NewBufferBytes(arrow.Int32Traits.CastToBytes([]int32{0, 5, 5}))
	shortData := array.NewData(arrow.BinaryTypes.String, 2, []*memory.Buffer{nil, offs, inSlot.Data().Buffers()[2]}, nil, 0, 0)
	short := array.MakeFromData(shortData)
	shortData.Release()
	defer short.Release()
	rec := array.NewRecordBatch(schema, []arrow.Array{inSlot, short}, 2)
	defer rec.Release()
	off, n, copied, err := a.WriteRecordBatch(rec)
	require.NoError(t, err)
	require.Equal(t, int64(12), copied, "only short's offsets were copied")
	got := readMessage(t, mem, schema, append([]byte(nil), slot.Bytes()[off:off+n]...))
	defer got.Release()
	require.True(t, array.Equal(long, got.Column(0)), "long: got %v, want %v", got.Column(0), long)
	require.Equal(t, []string{"abcde", ""}, []string{got.Column(1).(*array.String).Value(0), got.Column(1).(*array.String).Value(1)})
}
