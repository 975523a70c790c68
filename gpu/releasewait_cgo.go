//go:build cgo && linux

package gpu

// The preamble of a file with //export may only declare: the driver
// calls are in device_cgo.go and memory_cgo.go.

/*
#include <stdint.h>
*/
import "C"

import (
	"context"
	"fmt"
	"runtime/cgo"
	"time"
)

// The backoff of releaseWait's polls of the event: from releasePollMin,
// doubling, up to releasePollMax.
const (
	releasePollMin = 50 * time.Microsecond
	releasePollMax = 2 * time.Millisecond
)

// releaseWait is one decode's wait for a device slot's release event
// (DecodeOptions.Wait; docs/gpu.md, "Releases after the trainer's work"):
// native.c's launch_rgb calls wgAwaitRelease before the decode's first
// write into a destination, with the session's wait_handle, a cgo.Handle
// of it.
type releaseWait struct {
	ctx   context.Context
	d     *Device
	bound time.Duration
	// handle is the cgo.Handle of the wait, the session's wait_handle.
	handle C.ulonglong
	// done: the event completed (a second attempt of the decode, with
	// other colours, does not wait again).
	done bool
	err  error // why the wait failed (the decode returns it)
}

// await polls ev (cuEventQuery) until it completed, ctx ends (ctx.Err())
// or the bound passes (ErrReleaseWait). It runs on the thread of the
// decode's cgo call (the device's context current there).
func (w *releaseWait) await(ev uint64) error {
	deadline := time.Now().Add(w.bound)
	delay := releasePollMin
	var t *time.Timer
	defer func() {
		if t != nil {
			t.Stop()
		}
	}()
	for {
		done, err := w.d.eventDone(ev)
		switch {
		case err != nil:
			return err
		case done:
			return nil
		}
		if err := w.ctx.Err(); err != nil {
			return err
		}
		left := time.Until(deadline)
		if left <= 0 {
			return fmt.Errorf("%w: the trainer's release event did not complete within %s (its stream is stuck, or its kernels on the slot run that long; --gpu-release-wait)", ErrReleaseWait, w.bound)
		}
		if t == nil {
			t = time.NewTimer(min(delay, left))
		} else {
			t.Reset(min(delay, left))
		}
		select {
		case <-w.ctx.Done():
			return w.ctx.Err()
		case <-t.C:
		}
		delay = min(2*delay, releasePollMax)
	}
}

//export wgAwaitRelease
func wgAwaitRelease(h, ev C.ulonglong) C.int {
	w, ok := cgo.Handle(h).Value().(*releaseWait)
	if !ok {
		return 1
	}
	if w.err = w.await(uint64(ev)); w.err != nil {
		return 1
	}
	return 0
}
