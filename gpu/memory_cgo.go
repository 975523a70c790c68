//go:build cgo && linux

package gpu

/*
#include <stdlib.h>
#include "native.h"
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// Memory is the device's memory for a DeviceRing: cuMemAlloc,
// cuIpcGetMemHandle, interprocess events (cuEventCreate with
// CU_EVENT_INTERPROCESS, cuIpcGetEventHandle).
func (d *Device) Memory() Memory { return devMemory{d} }

type devMemory struct{ d *Device }

func (m devMemory) Alloc(n int64) (Region, error) {
	b, err := m.d.Alloc(int(n))
	return Region{Ptr: b.Ptr, Size: int64(b.Size)}, err
}

func (m devMemory) Free(r Region) error { return m.d.Free(Buffer{Ptr: r.Ptr, Size: int(r.Size)}) }

func (m devMemory) ExportMem(r Region) ([]byte, error) {
	if err := m.d.enter(); err != nil {
		return nil, err
	}
	defer m.d.active.Done()
	h := C.malloc(64)
	defer C.free(h)
	if rc := C.wg_ipc_mem(m.d.drv, C.ulonglong(r.Ptr), h); rc != 0 {
		return nil, m.d.driverErr("cuIpcGetMemHandle", rc)
	}
	return C.GoBytes(h, 64), nil
}

func (m devMemory) NewEvent() (uint64, []byte, error) {
	if err := m.d.enter(); err != nil {
		return 0, nil, err
	}
	defer m.d.active.Done()
	h := C.malloc(64)
	defer C.free(h)
	var ev C.ulonglong
	if rc := C.wg_event_create(m.d.drv, &ev, h); rc != 0 {
		return 0, nil, m.d.driverErr("cuEventCreate(INTERPROCESS)/cuIpcGetEventHandle", rc)
	}
	return uint64(ev), C.GoBytes(unsafe.Pointer(h), 64), nil
}

func (m devMemory) Record(ev uint64) error {
	if err := m.d.enter(); err != nil {
		return err
	}
	defer m.d.active.Done()
	if rc := C.wg_event_record(m.d.drv, C.ulonglong(ev)); rc != 0 {
		return m.d.driverErr("cuEventRecord", rc)
	}
	return nil
}

func (m devMemory) DestroyEvent(ev uint64) error {
	if err := m.d.enter(); err != nil {
		return err
	}
	defer m.d.active.Done()
	if rc := C.wg_event_destroy(m.d.drv, C.ulonglong(ev)); rc != 0 {
		return m.d.driverErr("cuEventDestroy", rc)
	}
	return nil
}

// OpenEvent opens a client's interprocess event (cuIpcOpenEventHandle).
func (m devMemory) OpenEvent(handle []byte) (uint64, error) {
	if len(handle) != 64 {
		return 0, fmt.Errorf("%w: an event handle of %d bytes (cudaIpcEventHandle_t has 64)", ErrBadEvent, len(handle))
	}
	if err := m.d.enter(); err != nil {
		return 0, err
	}
	defer m.d.active.Done()
	h := C.CBytes(handle)
	defer C.free(h)
	var ev C.ulonglong
	if rc := C.wg_ipc_open_event(m.d.drv, h, &ev); rc != 0 {
		// not an interprocess event of this device (the client's, or
		// garbage): the release is refused, not the driver
		return 0, fmt.Errorf("%w: cuIpcOpenEventHandle: %s (%d)", ErrBadEvent, C.GoString(C.wg_err_name(m.d.drv, C.CUresult(rc))), int(rc))
	}
	return uint64(ev), nil
}

// eventDone queries ev (cuEventQuery): true once the work its last
// record captured completed. Called within a decode (its session holds a
// use of the driver).
func (d *Device) eventDone(ev uint64) (bool, error) {
	switch rc := C.wg_event_query(d.drv, C.ulonglong(ev)); rc {
	case 0:
		return true, nil
	case 600: // CUDA_ERROR_NOT_READY
		return false, nil
	default:
		return false, d.driverErr("cuEventQuery", rc)
	}
}

// CloseEvent destroys an event OpenEvent opened (cuEventDestroy: an
// opened IPC event is the opener's to destroy).
func (m devMemory) CloseEvent(ev uint64) error { return m.DestroyEvent(ev) }

func (m devMemory) DeviceUUID() string { return m.d.info.UUIDString() }
