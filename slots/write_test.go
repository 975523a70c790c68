package slots

import (
	"bytes"
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

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
