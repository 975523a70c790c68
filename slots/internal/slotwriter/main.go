// Command slotwriter is a test helper for the Python side of host slots
// (python/tests/test_slots.py): it makes a ring (in -dir, default
// /dev/shm), writes slottest.Record(-rows) into a slot and prints one JSON
// line {"descriptor": client.SlotDescriptor, "schema": base64 of the
// schema's IPC message}; then it reads one client.SlotRelease JSON line
// from stdin, releases the slot with it (printing {"released": true} or
// {"error": "..."}), and closes the ring, which unlinks its file.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/weftdata/weft/client"
	"github.com/weftdata/weft/slots"
	"github.com/weftdata/weft/slots/internal/slottest"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "slotwriter:", err)
		os.Exit(1)
	}
}

func run() error {
	dir := flag.String("dir", slots.DefaultDir, "directory of the ring's file")
	rows := flag.Int("rows", 1000, "rows in the batch")
	slotBytes := flag.Int64("slot-bytes", 1<<20, "bytes per slot")
	flag.Parse()

	ctx := context.Background()
	ring, err := slots.NewRing(ctx, slots.Options{Dir: *dir, Slots: 2, SlotBytes: *slotBytes})
	if err != nil {
		return err
	}
	defer ring.Close()
	// Use the second slot's second generation, so offsets and generations
	// other than the first are exercised.
	for range 3 {
		s, err := ring.Acquire(ctx)
		if err != nil {
			return err
		}
		if err := s.Release(); err != nil {
			return err
		}
	}
	s, err := ring.Acquire(ctx)
	if err != nil {
		return err
	}
	rec := slottest.Record(memory.DefaultAllocator, *rows)
	off, n, err := slots.WriteRecordBatch(s, rec)
	rec.Release()
	if err != nil {
		return err
	}
	out := json.NewEncoder(os.Stdout)
	if err := out.Encode(map[string]any{
		"descriptor": s.Descriptor(off, n),
		"schema":     flight.SerializeSchema(slottest.Schema, memory.DefaultAllocator),
	}); err != nil {
		return err
	}
	line, err := bufio.NewReader(os.Stdin).ReadBytes('\n')
	if err != nil {
		return fmt.Errorf("read release: %w", err)
	}
	var rel client.SlotRelease
	if err := client.Decode("slot release", line, &rel); err != nil {
		return out.Encode(map[string]any{"error": err.Error()})
	}
	if err := ring.Release(rel.Slot, rel.Generation); err != nil {
		return out.Encode(map[string]any{"error": err.Error()})
	}
	return out.Encode(map[string]any{"released": true, "held": ring.Held()})
}
