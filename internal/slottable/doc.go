// Package slottable is the slot table of a bounded ring of slots: which
// slots are free, which are held and under which generation. It is the one
// implementation behind both delivery rings: slots.Ring (host shared
// memory, issue 14) and gpu.DeviceRing (device memory, issue 15), which
// add the memory the slots name.
//
// A Table's promises, which the rings document as theirs:
//
//   - Acquire hands out a free slot, blocking (until ctx ends or the table
//     closes) while all are held. A slot is never handed out again before
//     its release.
//   - Each hand-out of a slot has a new generation (1, 2, …, per slot); a
//     release names (index, generation), so a release of an earlier use
//     (ErrStaleGeneration), of an index outside the table (ErrUnknownSlot)
//     or of a slot that is not held (ErrNotHeld, a double release) is
//     refused and changes nothing.
//   - ReleaseAll frees every held slot (the client that held them is
//     gone); releases of those hand-outs are then refused.
//   - Close wakes every blocked Acquire with ErrClosed; after it every call
//     but Held and Waiting fails with ErrClosed (ReleaseAll frees nothing).
//
// A table's slots are numbered from a first index (New's first), so that a
// ring that replaces another within one exchange continues the numbering
// and an index never names two rings' memory. A Table is safe for
// concurrent use.
package slottable
