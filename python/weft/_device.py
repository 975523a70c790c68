"""Device slots (issue 15, docs/gpu.md): a "cuda-ipc" exchange's video
windows, decoded by flightd's NVDEC into device memory and described per
step by ``{"run","step","device":[descriptor…]}``. A descriptor is

    {"column", "slot", "generation", "ipc_handle" (first use of the slot
     only), "event", "offset", "shape", "dtype": "uint8" (or a normalised
     window's "float32", "float16", "bfloat16"), "strides" (bytes),
     "device" (the GPU's UUID)}

``DeviceSlots`` opens each slot once and builds each step's tensors on the
slot's memory, without copying:

- on a real GPU (``ipc_handle`` is a base64 ``cudaIpcMemHandle_t``), with
  ctypes on ``libcudart``: ``cudaIpcOpenMemHandle`` once per slot,
  ``cudaIpcOpenEventHandle`` once per slot's event, ``cudaStreamWaitEvent``
  on the current stream before the step is handed on, and a tensor made
  through ``__cuda_array_interface__``. THIS PATH HAS NEVER RUN: no session
  that built it had a GPU. It is guarded and untested; ``make gpu-check``
  is where it will first run.
- with flightd's CPU fake (``--gpu-fake-memory``, device UUID ending in
  "fake"), the handle is the path of a /dev/shm file: it is mapped and the
  tensors are CPU tensors of the same shape, so that CI tests the protocol
  end to end.

Tensors are valid until the trainer takes the next step (their slot goes
back then), or the iteration ends, or the loader closes (the handles are
closed then): call ``.clone()`` to keep one.

Releases after the trainer's work (docs/gpu.md): when a slot goes back,
kernels the trainer queued on its tensors may still be running (CUDA is
asynchronous). So at each release the loader records an interprocess event
of its own for that slot (``cudaEventCreateWithFlags(DisableTiming |
Interprocess)``, one per slot, made at the slot's first release) on the
current torch stream of the releasing thread, and the slot's first release
carries the event's handle (``"event"``, base64 of the
``cudaIpcEventHandle_t``): flightd opens it once and its decode waits for
the event to complete (``cuEventQuery``, polled by flightd's host thread)
before it writes the slot again. No host synchronisation on the loader's
side. With the fake, the event is a
64-byte /dev/shm file (gpu/shmevent.go's words: recorded, completed,
waits, blocked) whose path is the handle; a record completes at once
unless ``hold_events`` is set (a test's stand-in for a kernel still
running), until ``complete_events()``.

Each step's descriptor has its own shape and offset: steps of one exchange
may differ in frame size (a mix of tables whose cameras differ). A step
whose frames do not fit the slots so far comes in a slot of a larger ring
that flightd makes then, numbered after every earlier slot: a slot index
names one memory for the whole exchange, so what is opened per index (its
memory, its event) stays right, and the new slots' handles come with their
first use like any slot's. Every slot opened stays open until the exchange
ends (``close``).

The order at the end of an exchange (docs/gpu.md, "The end of an
exchange"): flightd frees a slot's memory only when the call ends, and
the loader ends the call only after ``close_handles``: every step handed
on is released, the device is synchronised (no queued work still reads a
slot), every IPC handle is closed (``cudaIpcCloseMemHandle``) and every
opened event destroyed. The loader's own release events go
(``destroy_events``) only once flightd's side is done with them: at its
end message, or, for a loader stopped early, once the call has ended
(the loader ends its side and reads the call to its status; flightd frees
the slots and closes the events it opened before that status). With the
fake, an open handle is a shared ``flock`` on the slot's file, held from
its opening to ``close_handles``: flightd's fake (``gpu.ShmMemory.Free``)
fails loudly when it frees a slot that a client still holds so.
"""

from __future__ import annotations

import base64
import contextlib
import ctypes
import fcntl
import logging
import mmap
import threading
import os
from typing import Any, Iterator, Optional

import numpy as np
import torch

from ._errors import WeftError

log = logging.getLogger("weft")

FAKE_SUFFIX = "fake"  # gpu.ShmMemory's DeviceUUID ends so


def release_device_message(desc: dict[str, Any], event: Optional[str] = None) -> bytes:
    """The JSON a client sends when done with a step's device slot; with
    ``event`` (base64 of the slot's release event handle: its first
    release only), flightd waits on that event before it rewrites the slot."""
    msg = b'{"slot":%d,"generation":%d,"device":true' % (int(desc["slot"]), int(desc["generation"]))
    if event is not None:
        msg += b',"event":"%s"' % event.encode("ascii")
    return msg + b"}"


# The fake release event (gpu/shmevent.go): 64 bytes, "WEFTEVT1" then
# uint64 words recorded, completed, waits, blocked.
FAKE_EVENT_BYTES = 64
FAKE_EVENT_MAGIC = b"WEFTEVT1"
FAKE_EVENT_PREFIX = "/dev/shm/weft-devent-"


def is_fake(desc: dict[str, Any]) -> bool:
    return str(desc.get("device", "")).endswith(FAKE_SUFFIX)


class _IpcHandle(ctypes.Structure):
    """cudaIpcMemHandle_t / cudaIpcEventHandle_t (and the driver's CUipc*
    twins): 64 opaque bytes, passed BY VALUE. (A ctypes array argument
    would pass a pointer to them: the wrong ABI.)"""

    _fields_ = [("reserved", ctypes.c_char * 64)]


def _handle(b: bytes) -> _IpcHandle:
    if len(b) != 64:
        raise WeftError(f"cuda-ipc: an IPC handle of {len(b)} bytes (64 expected)")
    return _IpcHandle.from_buffer_copy(b)


class _CudaRT:
    """The few CUDA calls device slots need, through ctypes: the runtime
    (``libcudart``, the copy torch already loaded when there is one) or,
    without it, the driver API (``libcuda.so.1``).

    The driver API acts on the calling thread's current context, and the
    threads that call it (the prefetch thread, a map pool's callbacks, the
    trainer's) may have none, or another: at its first call it retains the
    primary context of device ``device`` (``cuDevicePrimaryCtxRetain``: the
    context torch's runtime uses) and every call pushes it current
    (``cuCtxPushCurrent``) and pops it after, so the thread's own context
    is left as it was; :meth:`close` releases it. (The runtime makes the
    current device's primary context current by itself; the caller sets
    the device: ``torch.cuda.device``.)

    The argument passing is tested against a compiled stand-in of both
    libraries (tests/test_device_ctypes.py, which also refuses a driver
    call on a thread without the context); the real libraries only run on
    a GPU (``make gpu-check``)."""

    RUNTIMES = ("libcudart.so", "libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0")
    DRIVERS = ("libcuda.so.1",)

    def __init__(self, runtimes: tuple[str, ...] = RUNTIMES, drivers: tuple[str, ...] = DRIVERS, device: int = 0) -> None:
        errs: list[str] = []
        self.driver = False
        self.device = device
        self._ctx: Optional[int] = None  # driver API: the device's primary context, retained at the first call
        self._dev = 0  # its CUdevice
        self._ctx_lock = threading.Lock()
        for name in runtimes:
            try:
                self.lib = ctypes.CDLL(name)
                break
            except OSError as e:
                errs.append(str(e))
        else:
            for name in drivers:
                try:
                    self.lib = ctypes.CDLL(name)
                    self.driver = True
                    break
                except OSError as e:
                    errs.append(str(e))
            else:
                raise WeftError(f"cuda-ipc: neither libcudart nor libcuda can be loaded ({'; '.join(errs)}); install "
                                "the NVIDIA driver and the CUDA runtime (torch's wheels ship one: nvidia-cuda-runtime)")
        L, vp, u = self.lib, ctypes.c_void_p, ctypes.c_uint
        if self.driver:
            # CUDA >= 11 exports cuIpcOpenMemHandle as cuIpcOpenMemHandle_v2 (cuda.h's #define).
            self._open_mem = getattr(L, "cuIpcOpenMemHandle_v2", None) or L.cuIpcOpenMemHandle
            self._open_mem.argtypes = [ctypes.POINTER(ctypes.c_uint64), _IpcHandle, u]
            self._close_mem = L.cuIpcCloseMemHandle
            self._close_mem.argtypes = [ctypes.c_uint64]
            self._open_event = L.cuIpcOpenEventHandle
            self._open_event.argtypes = [ctypes.POINTER(vp), _IpcHandle]
            self._wait = L.cuStreamWaitEvent
            # CUDA >= 11 exports cuEventDestroy as cuEventDestroy_v2 (cuda.h's #define).
            self._destroy_event = getattr(L, "cuEventDestroy_v2", None) or L.cuEventDestroy
            # cuda.h's #defines: cuCtxPushCurrent_v2, cuCtxPopCurrent_v2, cuDevicePrimaryCtxRelease_v2 (CUDA >= 11)
            self._push = getattr(L, "cuCtxPushCurrent_v2", None) or L.cuCtxPushCurrent
            self._push.argtypes = [vp]
            self._pop = getattr(L, "cuCtxPopCurrent_v2", None) or L.cuCtxPopCurrent
            self._pop.argtypes = [ctypes.POINTER(vp)]
            self._retain = L.cuDevicePrimaryCtxRetain
            self._retain.argtypes = [ctypes.POINTER(vp), ctypes.c_int]
            self._release_ctx = getattr(L, "cuDevicePrimaryCtxRelease_v2", None) or L.cuDevicePrimaryCtxRelease
            self._release_ctx.argtypes = [ctypes.c_int]
            L.cuInit.argtypes = [u]
            L.cuDeviceGet.argtypes = [ctypes.POINTER(ctypes.c_int), ctypes.c_int]
            for f in (self._push, self._pop, self._retain, self._release_ctx, L.cuInit, L.cuDeviceGet):
                f.restype = ctypes.c_int
        else:
            self._open_mem = L.cudaIpcOpenMemHandle
            self._open_mem.argtypes = [ctypes.POINTER(vp), _IpcHandle, u]
            self._close_mem = L.cudaIpcCloseMemHandle
            self._close_mem.argtypes = [vp]
            self._open_event = L.cudaIpcOpenEventHandle
            self._open_event.argtypes = [ctypes.POINTER(vp), _IpcHandle]
            self._wait = L.cudaStreamWaitEvent
            self._destroy_event = L.cudaEventDestroy
        if self.driver:
            self._create_event = L.cuEventCreate
            self._event_handle = L.cuIpcGetEventHandle
            self._record = L.cuEventRecord
        else:
            self._create_event = L.cudaEventCreateWithFlags
            self._event_handle = L.cudaIpcGetEventHandle
            self._record = L.cudaEventRecord
        self._create_event.argtypes = [ctypes.POINTER(vp), u]
        self._event_handle.argtypes = [ctypes.POINTER(_IpcHandle), vp]
        self._record.argtypes = [vp, vp]
        self._wait.argtypes = [vp, vp, u]
        self._destroy_event.argtypes = [vp]
        for f in (self._open_mem, self._close_mem, self._open_event, self._wait, self._destroy_event,
                  self._create_event, self._event_handle, self._record):
            f.restype = ctypes.c_int

    def check(self, rc: int, what: str) -> None:
        if rc == 0:
            return
        msg = ctypes.c_char_p()
        if self.driver:
            self.lib.cuGetErrorString.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
            self.lib.cuGetErrorString(rc, ctypes.byref(msg))
        else:
            self.lib.cudaGetErrorString.restype = ctypes.c_char_p
            self.lib.cudaGetErrorString.argtypes = [ctypes.c_int]
            msg = ctypes.c_char_p(self.lib.cudaGetErrorString(rc))
        raise WeftError(f"cuda-ipc: {what} failed: {(msg.value or b'?').decode()} ({rc})")

    @contextlib.contextmanager
    def _current(self) -> Iterator[None]:
        """Driver API: the device's primary context is current on this
        thread for the calls inside (pushed, then popped: the thread's own
        context, if any, is current again after). Nothing for the runtime."""
        if not self.driver:
            yield
            return
        with self._ctx_lock:
            if self._ctx is None:
                self.check(self.lib.cuInit(0), "cuInit")
                dev = ctypes.c_int()
                self.check(self.lib.cuDeviceGet(ctypes.byref(dev), self.device), f"cuDeviceGet({self.device})")
                ctx = ctypes.c_void_p()
                self.check(self._retain(ctypes.byref(ctx), dev), "cuDevicePrimaryCtxRetain")
                self._ctx, self._dev = int(ctx.value or 0), dev.value
            ctx_now = self._ctx
        self.check(self._push(ctx_now), "cuCtxPushCurrent")
        try:
            yield
        except BaseException:
            # The call's own error says more than a failed pop after it.
            rc = self._pop(None)
            if rc:
                log.warning("cuCtxPopCurrent after a failed call: CUDA error %d", rc)
            raise
        self.check(self._pop(None), "cuCtxPopCurrent")

    def close(self) -> None:
        """Driver API: releases the primary context retained (after every
        handle and event of it is closed). Idempotent."""
        with self._ctx_lock:
            if self._ctx is not None:
                self._ctx = None
                self._release_ctx(self._dev)

    def open_mem(self, handle: bytes) -> int:
        h = _handle(handle)
        with self._current():
            if self.driver:
                p = ctypes.c_uint64()
                # CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS = 1
                self.check(self._open_mem(ctypes.byref(p), h, 1), "cuIpcOpenMemHandle")
                return int(p.value)
            ptr = ctypes.c_void_p()
            # cudaIpcOpenMemHandle(void **devPtr, cudaIpcMemHandle_t handle, cudaIpcMemLazyEnablePeerAccess)
            self.check(self._open_mem(ctypes.byref(ptr), h, 1), "cudaIpcOpenMemHandle")
            return int(ptr.value or 0)

    def close_mem(self, ptr: int) -> None:
        with self._current():
            self._close_mem(ptr)

    def open_event(self, handle: bytes) -> int:
        ev = ctypes.c_void_p()
        with self._current():
            self.check(self._open_event(ctypes.byref(ev), _handle(handle)), "cudaIpcOpenEventHandle")
        return int(ev.value or 0)

    def destroy_event(self, event: int) -> None:
        with self._current():
            self._destroy_event(event)

    def wait(self, stream: int, event: int) -> None:
        with self._current():
            self.check(self._wait(stream or None, event, 0), "cudaStreamWaitEvent")

    # cudaEventDisableTiming | cudaEventInterprocess (CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS)
    INTERPROCESS_EVENT = 0x02 | 0x04

    def create_ipc_event(self) -> tuple[int, bytes]:
        """A new interprocess event (timing disabled, as interprocess events
        must be) and its 64-byte handle."""
        ev = ctypes.c_void_p()
        h = _IpcHandle()
        with self._current():
            self.check(self._create_event(ctypes.byref(ev), self.INTERPROCESS_EVENT), "cudaEventCreateWithFlags")
            rc = self._event_handle(ctypes.byref(h), ev)
            if rc != 0:
                self._destroy_event(ev)
                self.check(rc, "cudaIpcGetEventHandle")
        return int(ev.value or 0), ctypes.string_at(ctypes.addressof(h), 64)  # (.reserved would stop at a NUL)

    def record(self, event: int, stream: int) -> None:
        with self._current():
            self.check(self._record(event, stream or None), "cudaEventRecord")


def cuda_ipc_unavailable() -> Optional[str]:
    """Why this process cannot open CUDA IPC handles (neither ``libcudart``
    nor ``libcuda`` loads), or None when it can."""
    try:
        _CudaRT()
    except WeftError as e:
        return str(e).removeprefix("cuda-ipc: ")
    return None


# A descriptor's dtype → (numpy/__cuda_array_interface__ typestr of its
# storage, the torch dtype the tensor is viewed as). bfloat16 has no
# typestr: its bits are read as int16 (torch < 2.3 has no uint16) and
# viewed as torch.bfloat16, no copy.
DTYPES = {"uint8": ("|u1", torch.uint8), "float32": ("<f4", torch.float32), "float16": ("<f2", torch.float16),
          "bfloat16": ("<i2", torch.bfloat16)}


class _CudaArray:
    """An object with ``__cuda_array_interface__`` over device memory."""

    def __init__(self, ptr: int, shape: list[int], strides: list[int], typestr: str = "|u1"):
        self.__cuda_array_interface__ = {"shape": tuple(shape), "typestr": typestr, "data": (ptr, False),
                                         "strides": tuple(strides), "version": 3}


def _view(t: torch.Tensor, dtype: str) -> torch.Tensor:
    want = DTYPES[dtype][1]
    return t if t.dtype == want else t.view(want)


class DeviceSlots:
    """The device slots of one exchange, opened at their first use."""

    def __init__(self, device: torch.device):
        self.device = device
        self._maps: dict[int, mmap.mmap] = {}  # fake: slot → its file, mapped
        self._locks: dict[int, int] = {}  # fake: slot → a descriptor holding a shared flock (the open handle)
        self._paths: dict[int, str] = {}
        self._ptrs: dict[int, int] = {}  # CUDA: slot → opened pointer
        self._events: dict[str, int] = {}  # event handle (base64) → opened event
        # the loader's own release events, one per slot, made at the slot's first release
        self._own: dict[int, int] = {}  # CUDA: slot → its event
        self._fake_events: dict[int, tuple[str, mmap.mmap]] = {}  # fake: slot → its event file, mapped
        self.hold_events = False  # fake only (tests): records stay incomplete until complete_events()
        self._rt: Optional[_CudaRT] = None
        # tensor() runs in the loader's reading thread, close() in whichever
        # thread lets the last step go (or the one stopping the loader)
        self._lock = threading.Lock()
        self.closed = False

    @property
    def opened(self) -> int:
        """How many slots' handles are open now."""
        with self._lock:
            return len(self._locks) + len(self._ptrs)

    @property
    def paths(self) -> list[str]:
        """The fake's slot files mapped so far (for tests)."""
        return list(self._paths.values())

    def tensor(self, desc: dict[str, Any]) -> torch.Tensor:
        """The step's tensor of descriptor desc, on the slot's memory."""
        slot = int(desc["slot"])
        shape, strides, offset = [int(s) for s in desc["shape"]], [int(s) for s in desc["strides"]], int(desc["offset"])
        dtype = desc.get("dtype")
        if dtype not in DTYPES or len(shape) != len(strides):
            raise WeftError(f"cuda-ipc: descriptor {desc!r}: only {', '.join(DTYPES)} tensors with strides per dimension")
        handle = base64.b64decode(desc["ipc_handle"]) if desc.get("ipc_handle") else None
        with self._lock:
            if self.closed:
                raise WeftError("cuda-ipc: the exchange's device slots are closed")
            if is_fake(desc):
                return _view(self._fake(slot, handle, shape, strides, offset, DTYPES[dtype][0]), dtype)
            return _view(self._cuda(slot, handle, desc, shape, strides, offset, DTYPES[dtype][0]), dtype)

    def _fake(self, slot: int, handle: Optional[bytes], shape: list[int], strides: list[int], offset: int,
              typestr: str) -> torch.Tensor:
        if handle is not None:
            path = handle.decode()
            old = self._maps.pop(slot, None)
            if old is not None:  # (flightd never sends a slot's handle twice)
                try:
                    old.close()
                except BufferError:
                    pass  # a tensor still views it: the mapping goes with it
            old_lock = self._locks.pop(slot, None)
            if old_lock is not None:
                os.close(old_lock)
            # The fake's open handle: a shared flock on a descriptor of its
            # own (not the mapping's), held until close (the fake's
            # cudaIpcCloseMemHandle), which flightd's fake checks at free.
            lock = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
            try:
                fcntl.flock(lock, fcntl.LOCK_SH)
                fd = os.open(path, os.O_RDWR | os.O_CLOEXEC | os.O_NOFOLLOW)
                try:
                    self._maps[slot] = mmap.mmap(fd, os.fstat(fd).st_size)
                finally:
                    os.close(fd)
            except BaseException:
                os.close(lock)
                raise
            self._locks[slot] = lock
            self._paths[slot] = path
        mm = self._maps.get(slot)
        if mm is None:
            raise WeftError(f"cuda-ipc: device slot {slot} used before its handle came")
        n = int(np.prod(shape))
        arr = np.frombuffer(mm, np.dtype(typestr), count=n, offset=offset)
        arr = np.lib.stride_tricks.as_strided(arr, shape=shape, strides=strides)
        return torch.from_numpy(arr)

    def _cuda(self, slot: int, handle: Optional[bytes], desc: dict[str, Any], shape: list[int], strides: list[int],
              offset: int, typestr: str) -> torch.Tensor:  # pragma: no cover - needs a GPU (make gpu-check)
        if self.device.type != "cuda":
            raise WeftError("cuda-ipc: a real device slot needs device='cuda'")
        if self._rt is None:
            self._rt = _CudaRT(device=self.device.index if self.device.index is not None else torch.cuda.current_device())
        with torch.cuda.device(self.device):
            if handle is not None:
                old = self._ptrs.pop(slot, None)
                if old is not None:  # (flightd never sends a slot's handle twice)
                    self._rt.close_mem(old)
                self._ptrs[slot] = self._rt.open_mem(handle)
            ev = str(desc["event"])  # one interprocess event per slot: opened once per handle
            if ev not in self._events:
                self._events[ev] = self._rt.open_event(base64.b64decode(ev))
            ptr = self._ptrs.get(slot)
            if ptr is None:
                raise WeftError(f"cuda-ipc: device slot {slot} used before its handle came")
            self._rt.wait(torch.cuda.current_stream(self.device).cuda_stream, self._events[ev])
            return torch.as_tensor(_CudaArray(ptr + offset, shape, strides, typestr), device=self.device)

    def release_event(self, slot: int) -> Optional[str]:
        """Records slot's release event (made at its first release) on the
        current stream, after the work the trainer queued on the slot's
        tensors, and returns its handle (base64) at the slot's first
        release, None after (flightd keeps what it opened): the release
        message carries it. None also when the exchange's slots are closed
        or the slot was never opened (nothing read it)."""
        with self._lock:
            if self.closed:
                return None
            if slot in self._maps:
                return self._fake_release(slot)
            if slot in self._ptrs:  # pragma: no cover - needs a GPU (make gpu-check)
                return self._cuda_release(slot)
            return None

    def _fake_release(self, slot: int) -> Optional[str]:
        first = slot not in self._fake_events
        if first:
            fd, path = _fake_event_file()
            try:
                mm = mmap.mmap(fd, FAKE_EVENT_BYTES)
            finally:
                os.close(fd)
            mm[:8] = FAKE_EVENT_MAGIC
            self._fake_events[slot] = (path, mm)
        path, mm = self._fake_events[slot]
        recorded = _word(mm, 1) + 1
        _set_word(mm, 1, recorded)
        if not self.hold_events:
            _set_word(mm, 2, recorded)  # the fake's "kernels" are done: the record completes at once
        return base64.b64encode(path.encode()).decode() if first else None

    def _cuda_release(self, slot: int) -> Optional[str]:  # pragma: no cover - needs a GPU (make gpu-check)
        assert self._rt is not None
        with torch.cuda.device(self.device):
            handle = None
            if slot not in self._own:
                ev, h = self._rt.create_ipc_event()
                self._own[slot] = ev
                handle = base64.b64encode(h).decode()
            # the releasing thread's current stream: where the trainer's work on the slot was queued
            self._rt.record(self._own[slot], torch.cuda.current_stream(self.device).cuda_stream)
            return handle

    def event_state(self, slot: int) -> dict[str, int]:
        """The fake release event's words of slot (tests): recorded,
        completed, waits (flightd's queries of it), blocked (its queries
        that found it incomplete: a write waiting for it)."""
        with self._lock:
            _, mm = self._fake_events[slot]
            return {k: _word(mm, i + 1) for i, k in enumerate(("recorded", "completed", "waits", "blocked"))}

    def complete_events(self) -> None:
        """Completes every fake release event's records (the held "kernels" end)."""
        with self._lock:
            for _, mm in self._fake_events.values():
                _set_word(mm, 2, _word(mm, 1))

    @property
    def has_events(self) -> bool:
        """Whether the loader made release events of its own (whose handles
        went to flightd) that are not destroyed yet."""
        with self._lock:
            return bool(self._own or self._fake_events)

    def close(self) -> None:
        """Closes every handle opened and destroys the loader's release
        events (idempotent; later ``tensor`` calls fail): ``close_handles``
        then ``destroy_events``. The loader calls it at the exchange's end
        message (flightd's decodes are done: nothing of flightd's waits on
        the events any more), once every step it handed on is released, and
        only then ends the exchange (flightd then frees the slots)."""
        self.close_handles()
        self.destroy_events()

    def close_handles(self) -> None:
        """Closes every slot's handle and every event opened (flightd's),
        not the loader's own release events (idempotent; later ``tensor``
        and ``release_event`` calls fail or do nothing). Call it once no
        step's tensors are used any more and before the call ends: flightd
        frees the slots then. On CUDA the device is synchronised first, so
        that no work still queued reads a slot."""
        with self._lock:
            if self.closed:
                return
            self.closed = True
            for mm in self._maps.values():
                try:
                    mm.close()
                except BufferError:
                    pass  # a tensor still views it: the mapping goes with it
            self._maps.clear()
            for lock in self._locks.values():
                os.close(lock)  # the fake's handle is closed: its flock goes
            self._locks.clear()
            for _, mm in self._fake_events.values():
                _set_word(mm, 2, _word(mm, 1))  # nothing of ours runs any more (the device is "synchronised")
            if self._rt is not None:  # pragma: no cover - needs a GPU
                with self._on_device():
                    if self.device.type == "cuda":
                        torch.cuda.synchronize(self.device)  # no queued work reads a slot once its handle is closed
                    for ptr in self._ptrs.values():
                        self._rt.close_mem(ptr)
                    for ev in self._events.values():  # an opened IPC event is the opener's to destroy
                        self._rt.destroy_event(ev)
            self._ptrs.clear()
            self._events.clear()

    def destroy_events(self) -> None:
        """Destroys the loader's own release events (idempotent), after
        ``close_handles``. flightd opened them and its decode may wait on
        one (``cuEventQuery``) until its side of the exchange is done: at
        its end message, or, for a loader stopped early, once the call has
        ended with flightd's status (docs/gpu.md, "The end of an
        exchange"). With the fake, the event file is unlinked (the test
        checks that flightd no longer maps it then)."""
        with self._lock:
            if not self.closed:
                raise WeftError("cuda-ipc: the release events are destroyed after the handles are closed")
            for path, mm in self._fake_events.values():
                mm.close()
                try:
                    os.unlink(path)  # flightd's mapping of it stays valid
                except FileNotFoundError:
                    pass
            self._fake_events.clear()
            if self._rt is not None:  # pragma: no cover - needs a GPU
                with self._on_device():
                    for ev in self._own.values():  # the device was synchronised (close_handles)
                        self._rt.destroy_event(ev)
                self._rt.close()  # the driver API's primary context, retained at the first call
            self._own.clear()

    def _on_device(self) -> contextlib.AbstractContextManager[Any]:
        """The slots' CUDA device made current (nothing for the CPU device
        of the ctypes tests)."""
        return torch.cuda.device(self.device) if self.device.type == "cuda" else contextlib.nullcontext()


def _word(mm: mmap.mmap, i: int) -> int:
    return int.from_bytes(mm[8 * i:8 * i + 8], "little")


def _set_word(mm: mmap.mmap, i: int, v: int) -> None:
    mm[8 * i:8 * i + 8] = v.to_bytes(8, "little")


def _fake_event_file() -> tuple[int, str]:
    """A new fake release event file (zeroed), open read-write."""
    for _ in range(100):
        path = FAKE_EVENT_PREFIX + os.urandom(8).hex()
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
        except FileExistsError:
            continue
        os.ftruncate(fd, FAKE_EVENT_BYTES)
        return fd, path
    raise WeftError("cuda-ipc: no fake release event file could be made in /dev/shm")
