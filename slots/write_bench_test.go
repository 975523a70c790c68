package slots

import (
	"context"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/weftdata/weft/slots/internal/slottest"
)

// wideRecord is rows rows of cols columns, alternately int64 and binary
// (a wide step: its metadata, which every encode builds, grows with the
// columns).
func wideRecord(mem memory.Allocator, cols, rows int) arrow.RecordBatch {
	fields := make([]arrow.Field, cols)
	for i := range fields {
		dt := arrow.DataType(arrow.PrimitiveTypes.Int64)
		if i%2 == 1 {
			dt = arrow.BinaryTypes.Binary
		}
		fields[i] = arrow.Field{Name: fmt.Sprintf("c%d", i), Type: dt, Nullable: true}
	}
	b := array.NewRecordBuilder(mem, arrow.NewSchema(fields, nil))
	defer b.Release()
	for i := range cols {
		for r := range rows {
			switch fb := b.Field(i).(type) {
			case *array.Int64Builder:
				fb.Append(int64(r * i))
			case *array.BinaryBuilder:
				fb.Append(slottest.Blob(r))
			}
		}
	}
	return b.NewRecordBatch()
}

// BenchmarkFirstStep is the first step of a host-slot exchange: the sizes
// the ring and the arena are made from (the message's length, the header
// room), then the message written into a slot.
func BenchmarkFirstStep(b *testing.B) {
	if testing.Short() {
		b.Skip("short")
	}
	mem := memory.NewGoAllocator()
	for _, tc := range []struct {
		name string
		rec  arrow.RecordBatch
	}{
		{"3 columns 256 rows", slottest.Record(mem, 256)},
		{"64 columns 256 rows", wideRecord(mem, 64, 256)},
	} {
		defer tc.rec.Release()
		r, err := NewRing(context.Background(), Options{Dir: DefaultDir, Slots: 1, SlotBytes: 4 << 20})
		if err != nil {
			b.Skipf("SKIPPED: no ring: %v", err)
		}
		defer r.Close()
		slot, err := r.Acquire(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		b.Run(tc.name+"/three encodes", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				need, err := MessageBytes(tc.rec)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := HeaderRoom(tc.rec); err != nil {
					b.Fatal(err)
				}
				off, n, err := WriteRecordBatch(slot, tc.rec)
				if err != nil || off+n != need {
					b.Fatal(off, n, need, err)
				}
			}
		})
		b.Run(tc.name+"/one encode", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				m, err := Encode(tc.rec)
				if err != nil {
					b.Fatal(err)
				}
				need, _ := m.Bytes(), m.HeaderRoom()
				off, n, err := m.WriteAt(slot, 0)
				m.Release()
				if err != nil || off+n != need {
					b.Fatal(off, n, need, err)
				}
			}
		})
		if err := slot.Release(); err != nil {
			b.Fatal(err)
		}
	}
}
