package slots_test

import (
	"context"
	"fmt"
	"os"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/weftdata/weft/slots"
	"github.com/weftdata/weft/slots/internal/slottest"
)

// A server writes a step into a slot, sends the descriptor, and reuses the
// slot once the client has released it.
func Example() {
	ctx := context.Background()
	opts := slots.DefaultOptions()
	opts.Dir = os.TempDir() // /dev/shm in flightd
	opts.Slots, opts.SlotBytes = 2, 1<<20
	ring, err := slots.NewRing(ctx, opts)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ring.Close()

	slot, err := ring.Acquire(ctx) // waits while every slot is held
	if err != nil {
		fmt.Println(err)
		return
	}
	rec := slottest.Record(memory.DefaultAllocator, 100)
	off, n, err := slots.WriteRecordBatch(slot, rec)
	rec.Release()
	if err != nil {
		fmt.Println(err)
		return
	}
	d := slot.Descriptor(off, n) // sent to the client
	fmt.Println(d.Slot, d.Generation, d.Length > 0)

	// The client's release names the slot and generation of its descriptor.
	fmt.Println(ring.Release(d.Slot, d.Generation))
	fmt.Println(ring.Release(d.Slot, d.Generation))
	// Output:
	// 0 1 true
	// <nil>
	// slots: slot not held: failed precondition: slot 0 generation 1 was released already
}
