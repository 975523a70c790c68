package slots

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/weftdata/weft/client"
	"github.com/weftdata/weft/errdefs"
	"github.com/weftdata/weft/slots/internal/slottest"
)

// readMessage decodes the record-batch message at msg with schema, as a
// client does (the schema message, then the slot's bytes).
func readMessage(t *testing.T, mem memory.Allocator, schema *arrow.Schema, msg []byte) arrow.RecordBatch {
	t.Helper()
	p := ipc.GetSchemaPayload(schema, mem)
	defer p.Release()
	var stream bytes.Buffer
	_, err := p.WritePayload(&stream)
	require.NoError(t, err)
	stream.Write(msg)
	rd, err := ipc.NewReader(&stream, ipc.WithAllocator(mem))
	require.NoError(t, err)
	defer rd.Release()
	require.True(t, rd.Next(), "no batch: %v", rd.Err())
	rec := rd.RecordBatch()
	rec.Retain()
	require.False(t, rd.Next(), "one message, one batch")
	require.NoError(t, rd.Err())
	return rec
}

func TestWriteRecordBatch(t *testing.T) {
	t.Parallel()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	r := newRing(t, 2, 64<<10)
	ctx := context.Background()
	first, err := r.Acquire(ctx)
	require.NoError(t, err)
	s, err := r.Acquire(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, s.Index())
	defer func() { require.NoError(t, first.Release()) }()

	for _, tc := range []struct {
		name   string
		rows   int
		slice  [2]int64 // a zero-copy slice of the batch, if not zero
		offset int64
	}{
		{name: "100 rows", rows: 100},
		{name: "empty", rows: 0},
		{name: "a sliced batch", rows: 100, slice: [2]int64{37, 81}},
		{name: "after another message", rows: 50, offset: 1000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := slottest.Record(mem, tc.rows)
			defer want.Release()
			if tc.slice != [2]int64{} {
				sl := want.NewSlice(tc.slice[0], tc.slice[1])
				defer sl.Release()
				want = sl
			}
			off, n, err := WriteRecordBatchAt(s, tc.offset, want)
			require.NoError(t, err)
			require.GreaterOrEqual(t, off, tc.offset)
			require.Less(t, off-tc.offset, int64(bodyAlign), "no more padding than the alignment")
			header := int64(8) + int64(uint32(s.Bytes()[off+4])|uint32(s.Bytes()[off+5])<<8|uint32(s.Bytes()[off+6])<<16|uint32(s.Bytes()[off+7])<<24)
			require.Zero(t, (s.Offset()+off+header)%bodyAlign, "the body is 64-byte aligned in the ring's file")

			got := readMessage(t, mem, slottest.Schema, s.Bytes()[off:off+n])
			defer got.Release()
			require.True(t, array.RecordEqual(want, got), "got %v, want %v", got, want)

			d := s.Descriptor(off, n)
			require.Equal(t, r.Path(), d.Ring)
			require.Equal(t, s.Index(), d.Slot)
			require.Equal(t, s.Generation(), d.Generation)
			require.Equal(t, s.Offset()+off, d.Offset)
			require.Equal(t, n, d.Length)
			require.NoError(t, d.Validate())
			if tc.offset == 0 {
				need, err := MessageBytes(want)
				require.NoError(t, err)
				require.Equal(t, off+n, need, "MessageBytes is where the message ends")
			}
		})
	}
	require.NoError(t, s.Release())
}

func TestWriteRecordBatchTooLarge(t *testing.T) {
	t.Parallel()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	r := newRing(t, 1, 4096)
	s, err := r.Acquire(context.Background())
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Release()) }()
	for i := range s.Bytes() {
		s.Bytes()[i] = 0xAB
	}
	rec := slottest.Record(mem, 1000) // 8 + 16 + ~20 bytes a row: far more than 4 KiB
	defer rec.Release()
	for _, at := range []int64{0, 4000, 4096} {
		_, _, err = WriteRecordBatchAt(s, at, rec)
		require.ErrorIs(t, err, ErrTooLarge)
		require.ErrorIs(t, err, errdefs.ErrResourceExhausted)
	}
	require.Equal(t, bytes.Repeat([]byte{0xAB}, 4096), s.Bytes(), "nothing was written")
	_, _, err = WriteRecordBatchAt(s, 4097, rec)
	require.ErrorIs(t, err, errdefs.ErrInvalidArgument)

	small := slottest.Record(mem, 3)
	defer small.Release()
	_, _, err = WriteRecordBatch(s, small)
	require.NoError(t, err, "a batch that fits still does")
}

// TestEncodeSizes: one Encode gives the sizes the ring and the arena are
// made from, and they are what its write produced, byte for byte the
// message WriteRecordBatch writes, for odd shapes: no rows, no columns,
// nulls, a large binary value, a dictionary column, a sliced batch.
func TestEncodeSizes(t *testing.T) {
	t.Parallel()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	const slotBytes = 4 << 20
	r := newRing(t, 3, slotBytes)
	ctx := context.Background()

	big := bytes.Repeat([]byte("0123456789abcdef"), (1<<20)/16+3) // over 1 MiB, not a multiple of 8
	dictType := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int16, ValueType: arrow.BinaryTypes.String}
	for _, tc := range []struct {
		name string
		cols func() []arrow.Array
		rows int64
		// dict: the message carries the indices only (the dictionary is a
		// message of its own, which slots do not write): sizes and bytes
		// are checked, the batch is not read back.
		dict  bool
		slice [2]int64
	}{
		{name: "no rows", rows: 0, cols: func() []arrow.Array {
			return []arrow.Array{fromJSON(t, mem, arrow.PrimitiveTypes.Int64, `[]`), fromJSON(t, mem, arrow.BinaryTypes.String, `[]`)}
		}},
		{name: "no columns", rows: 5, cols: func() []arrow.Array { return nil }},
		{name: "nulls", rows: 4, cols: func() []arrow.Array {
			return []arrow.Array{
				fromJSON(t, mem, arrow.PrimitiveTypes.Int32, `[1, null, 3, null]`),
				fromJSON(t, mem, arrow.BinaryTypes.String, `[null, "b", null, "dddd"]`),
				fromJSON(t, mem, arrow.ListOf(arrow.PrimitiveTypes.Float64), `[[1.5], null, [], [null, 2]]`),
				fromJSON(t, mem, arrow.Null, `[null, null, null, null]`),
			}
		}},
		{name: "all null", rows: 3, cols: func() []arrow.Array {
			return []arrow.Array{fromJSON(t, mem, arrow.PrimitiveTypes.Uint8, `[null, null, null]`)}
		}},
		{name: "large binary", rows: 3, cols: func() []arrow.Array {
			b := array.NewBinaryBuilder(mem, arrow.BinaryTypes.LargeBinary)
			defer b.Release()
			b.Append(big)
			b.AppendNull()
			b.Append([]byte("x"))
			return []arrow.Array{b.NewArray()}
		}},
		{name: "dictionary", rows: 4, dict: true, cols: func() []arrow.Array {
			b := array.NewDictionaryBuilder(mem, dictType).(*array.BinaryDictionaryBuilder)
			defer b.Release()
			for _, s := range []string{"a", "bb", "a", ""} {
				require.NoError(t, b.AppendString(s))
			}
			return []arrow.Array{b.NewArray()}
		}},
		{name: "sliced", rows: 100, slice: [2]int64{3, 70}, cols: func() []arrow.Array {
			rec := slottest.Record(mem, 100)
			defer rec.Release()
			cols := rec.Columns()
			for _, c := range cols {
				c.Retain()
			}
			return cols
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cols := tc.cols()
			fields := make([]arrow.Field, len(cols))
			for i, c := range cols {
				fields[i] = arrow.Field{Name: fmt.Sprintf("c%d", i), Type: c.DataType(), Nullable: true}
			}
			schema := arrow.NewSchema(fields, nil)
			rec := array.NewRecordBatch(schema, cols, tc.rows)
			for _, c := range cols {
				c.Release()
			}
			defer rec.Release()
			if tc.slice != [2]int64{} {
				sl := rec.NewSlice(tc.slice[0], tc.slice[1])
				defer sl.Release()
				rec = sl
			}

			m, err := Encode(rec)
			require.NoError(t, err)
			defer m.Release()
			need, room := m.Bytes(), m.HeaderRoom()
			s, err := r.Acquire(ctx)
			require.NoError(t, err)
			defer func() { require.NoError(t, s.Release()) }()
			for i := range s.Bytes() {
				s.Bytes()[i] = 0x5A // what an earlier step left
			}
			off, n, err := m.WriteAt(s, 0)
			require.NoError(t, err)
			require.Equal(t, off+n, need, "Bytes is where the written message ends")
			header := int64(8) + int64(binary.LittleEndian.Uint32(s.Bytes()[off+4:]))
			require.Zero(t, (off+header)%bodyAlign, "the body is aligned")
			require.Equal(t, roundUp(header+bodyAlign, bodyAlign), room, "HeaderRoom is the written header's, with the margin")

			// The one-encode sizes are the separate functions' ...
			mb, err := MessageBytes(rec)
			require.NoError(t, err)
			require.Equal(t, need, mb)
			hr, err := HeaderRoom(rec)
			require.NoError(t, err)
			require.Equal(t, room, hr)
			// ... and its bytes WriteRecordBatch's.
			s2, err := r.Acquire(ctx)
			require.NoError(t, err)
			defer func() { require.NoError(t, s2.Release()) }()
			off2, n2, err := WriteRecordBatch(s2, rec)
			require.NoError(t, err)
			require.Equal(t, [2]int64{off, n}, [2]int64{off2, n2})
			require.True(t, bytes.Equal(s.Bytes()[off:off+n], s2.Bytes()[off2:off2+n2]), "the same message")

			// Written again, after another message: the same length.
			off3, n3, err := m.WriteAt(s, off+n)
			require.NoError(t, err)
			require.Equal(t, n, n3)
			require.True(t, bytes.Equal(s.Bytes()[off:off+n], s.Bytes()[off3:off3+n3]))

			// An arena with that header room takes the batch's message.
			a, err := NewArena(s2, room, mem)
			require.NoError(t, err)
			_, _, _, err = a.WriteRecordBatch(rec)
			require.NoError(t, err, "the header fits the room")

			if !tc.dict {
				got := readMessage(t, mem, schema, s.Bytes()[off:off+n])
				defer got.Release()
				require.True(t, array.RecordEqual(rec, got), "got %v, want %v", got, rec)
			}
		})
	}
}

// TestStepsDoNotSharePages: every slot starts on a page boundary (4 KiB)
// and is a whole number of pages, and a step's message (written plainly or
// through an arena) lies in its slot, so the bytes of the steps a client
// holds at once never share a page (a client that drops the pages it
// wrote in a step at its release drops nothing of another step's).
func TestStepsDoNotSharePages(t *testing.T) {
	t.Parallel()
	const page = 4096
	require.Zero(t, SlotAlign%page)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	const slots = 5
	r := newRing(t, slots, 2*SlotAlign)
	ctx := context.Background()
	var held []*Slot
	var descs []client.SlotDescriptor
	for i := range slots {
		s, err := r.Acquire(ctx)
		require.NoError(t, err)
		held = append(held, s)
		require.Zero(t, s.Offset()%page, "slot %d starts on a page boundary", s.Index())
		// steps of several sizes: a few rows, a slot nearly full; odd ones through an arena
		rows := []int{1, 3, 40, 150, 7}[i]
		rec := slottest.Record(mem, rows)
		var off, n int64
		if i%2 == 1 {
			room, err := HeaderRoom(rec)
			require.NoError(t, err)
			a, err := NewArena(s, room, mem)
			require.NoError(t, err)
			cols := make([]arrow.Array, rec.NumCols())
			for c := range cols {
				cols[c] = inArena(t, a, rec.Column(int(c)))
			}
			in := array.NewRecordBatch(rec.Schema(), cols, rec.NumRows())
			for _, c := range cols {
				c.Release()
			}
			off, n, _, err = a.WriteRecordBatch(in)
			in.Release()
			require.NoError(t, err)
		} else {
			var err error
			off, n, err = WriteRecordBatch(s, rec)
			require.NoError(t, err)
		}
		rec.Release()
		descs = append(descs, s.Descriptor(off, n))
	}
	pages := map[int64]int{} // page → the slot whose step has bytes on it
	for _, d := range descs {
		lo, hi := int64(d.Slot)*r.SlotBytes(), int64(d.Slot+1)*r.SlotBytes()
		require.True(t, d.Offset >= lo && d.Offset+d.Length <= hi, "slot %d's step [%d, %d) lies in its slot [%d, %d)", d.Slot, d.Offset, d.Offset+d.Length, lo, hi)
		for p := d.Offset / page; p <= (d.Offset+d.Length-1)/page; p++ {
			other, ok := pages[p]
			require.False(t, ok, "page %d holds steps of slots %d and %d", p, other, d.Slot)
			pages[p] = d.Slot
		}
	}
	for _, s := range held {
		require.NoError(t, s.Release())
	}
}
