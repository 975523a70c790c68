"""weft._device._CudaRT's ctypes calls against a compiled stand-in of
libcudart and libcuda (tests/data/fake_cudart.c).

The real CUDA IPC path runs only on a GPU (`make gpu-check`), so these
tests pin what can be checked on a CPU: the 64-byte IPC handles are passed
by value (a ctypes array argument would pass a pointer, the wrong ABI; the
stand-in refuses that), pointers and events come back through their out-
parameters, the stream and event reach cudaStreamWaitEvent, and a failing
call raises with the library's own error string. Both the runtime and the
driver-API fallback are exercised."""

from __future__ import annotations

import ctypes
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from weft import WeftError
from weft._device import _CudaRT

SRC = Path(__file__).parent / "data" / "fake_cudart.c"


@pytest.fixture(scope="module")
def fake_lib(tmp_path_factory) -> str:
    if shutil.which("gcc") is None:
        pytest.fail("gcc not found: the CUDA ctypes ABI tests cannot build their stand-in library")
    out = tmp_path_factory.mktemp("cudart") / "libfakecudart.so"
    subprocess.run(["gcc", "-O2", "-Wall", "-fPIC", "-shared", "-o", str(out), str(SRC)], check=True)
    return str(out)


def _handle(ptr: int, event: int = 0, ok: bool = True) -> bytes:
    b = bytearray(struct.pack("<QQ", ptr, event) + bytes(48))
    b[63] = 0x5A if ok else 0
    return bytes(b)


@pytest.mark.parametrize("driver", [False, True], ids=["cudart", "driver-api"])
def test_cuda_rt_passes_handles_by_value(fake_lib, driver):
    rt = _CudaRT(runtimes=() if driver else (fake_lib,), drivers=(fake_lib,))
    assert rt.driver is driver
    lib = ctypes.CDLL(fake_lib)
    for f in ("fake_last_stream", "fake_last_event", "fake_last_closed"):
        getattr(lib, f).restype = ctypes.c_uint64

    ptr = 0x7F00_DEAD_BEE0
    assert rt.open_mem(_handle(ptr)) == ptr
    assert lib.fake_last_flags() == 1  # lazy peer access
    ev = rt.open_event(_handle(0, event=0x1234_5678))
    assert ev == 0x1234_5678
    rt.wait(0xABC0, ev)
    assert lib.fake_last_stream() == 0xABC0 and lib.fake_last_event() == ev
    rt.wait(0, ev)  # the legacy default stream is NULL
    assert lib.fake_last_stream() == 0
    rt.close_mem(ptr)
    assert lib.fake_last_closed() == ptr

    with pytest.raises(WeftError, match="invalid resource handle|INVALID_HANDLE"):
        rt.open_mem(_handle(ptr, ok=False))
    with pytest.raises(WeftError, match="64 expected"):
        rt.open_mem(b"short")


def test_cuda_rt_says_what_is_missing():
    with pytest.raises(WeftError, match="neither libcudart nor libcuda"):
        _CudaRT(runtimes=("libnope-cudart.so",), drivers=("libnope-cuda.so.1",))


@pytest.mark.parametrize("driver", [False, True], ids=["cudart", "driver-api"])
def test_device_slots_close_destroys_events(fake_lib, driver):
    """DeviceSlots.close closes every opened slot memory and destroys every
    opened interprocess event (one per slot of every ring of the exchange);
    they leaked once per exchange before."""
    import torch

    from weft._device import DeviceSlots

    lib = ctypes.CDLL(fake_lib)
    lib.fake_last_destroyed.restype = ctypes.c_uint64
    rt = _CudaRT(runtimes=() if driver else (fake_lib,), drivers=(fake_lib,))
    dev = DeviceSlots(torch.device("cpu"))
    dev._rt = rt  # what DeviceSlots._cuda opens on a GPU
    events = [0x1000 + i for i in range(3)]
    for i, e in enumerate(events):
        dev._events[f"ev{i}"] = rt.open_event(_handle(0, event=e))
    dev._ptrs[0] = rt.open_mem(_handle(0x7000))
    before = lib.fake_destroyed()
    dev.close()
    assert lib.fake_destroyed() - before == len(events)
    assert lib.fake_last_destroyed() in events
    assert lib.fake_last_closed() == 0x7000
    assert not dev._events and not dev._ptrs
    dev.close()  # idempotent: nothing is destroyed twice
    assert lib.fake_destroyed() - before == len(events)


@pytest.mark.parametrize("driver", [False, True], ids=["cudart", "driver-api"])
def test_cuda_rt_release_events(fake_lib, driver):
    """The loader's own release event: created interprocess with timing
    disabled (flags 0x2|0x4), its 64-byte handle read back through the
    out-parameter, recorded on the given stream (NULL for the legacy
    default stream)."""
    rt = _CudaRT(runtimes=() if driver else (fake_lib,), drivers=(fake_lib,))
    lib = ctypes.CDLL(fake_lib)
    for f in ("fake_last_record_event", "fake_last_record_stream"):
        getattr(lib, f).restype = ctypes.c_uint64
    ev, h = rt.create_ipc_event()
    assert lib.fake_last_create_flags() == 0x2 | 0x4
    assert len(h) == 64 and h[63] == 0x5A and struct.unpack_from("<Q", h, 8)[0] == ev
    assert rt.open_event(h) == ev  # the handle is what an opener's cudaIpcOpenEventHandle takes
    rt.record(ev, 0xBEE0)
    assert lib.fake_last_record_event() == ev and lib.fake_last_record_stream() == 0xBEE0
    rt.record(ev, 0)
    assert lib.fake_last_record_stream() == 0


def test_driver_api_calls_make_the_loaders_context_current(fake_lib):
    """The driver API acts on the calling thread's current context: the
    loader's calls come from threads with none (the prefetch thread, a map
    pool's release callbacks) or with another. Every call makes the
    device's primary context current (retained once, at the first call)
    and leaves the thread's own as it was; the stand-in refuses a driver
    call without it (CUDA_ERROR_INVALID_CONTEXT), as libcuda does."""
    import threading

    lib = ctypes.CDLL(fake_lib)
    lib.fake_current_context.restype = ctypes.c_uint64
    rt = _CudaRT(runtimes=(), drivers=(fake_lib,), device=1)
    held = lib.fake_retained()  # by the other tests' _CudaRTs (one library for the module)
    before = (lib.fake_no_context(), lib.fake_wrong_context())
    assert rt.driver and lib.fake_retained() == held  # nothing retained before a call
    ev, h = rt.create_ipc_event()
    assert lib.fake_retained() == held + 1
    errors: list[BaseException] = []
    others: list[int] = []

    def calls(other: bool) -> None:
        try:
            if other:
                assert lib.fake_push_other_context() == 0
            mine = lib.fake_current_context()
            rt.record(ev, 0xBEE0)  # a release callback's record
            ptr = rt.open_mem(_handle(0x7100))  # a prefetch thread's first use of a slot
            opened = rt.open_event(_handle(0, event=0x2345))
            rt.wait(0xABC0, opened)
            rt.destroy_event(opened)
            rt.close_mem(ptr)
            others.append(lib.fake_current_context() == mine)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=calls, args=(i % 2 == 1,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert others == [True] * 4, "a thread's own context was not current again after the calls"
    assert (lib.fake_no_context(), lib.fake_wrong_context()) == before
    assert lib.fake_retained() == held + 1  # once for every thread
    rt.destroy_event(ev)
    rt.close()
    assert lib.fake_retained() == held
    rt.close()  # idempotent
    assert lib.fake_retained() == held


def test_the_stand_in_refuses_a_driver_call_without_a_context(fake_lib):
    """What the test above relies on: a bare driver call on a thread with
    no current context fails as libcuda's does."""
    lib = ctypes.CDLL(fake_lib)
    lib.cuEventRecord.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    before = lib.fake_no_context()
    assert lib.cuEventRecord(0x9010, None) == 201  # CUDA_ERROR_INVALID_CONTEXT
    assert lib.fake_no_context() == before + 1


def test_a_failed_call_keeps_its_error_when_the_pop_fails(fake_lib, caplog):
    """A driver call that fails inside the pushed context raises its own
    error; a pop failing after it is logged, not raised in its place. A
    pop failing after a call that worked raises."""
    rt = _CudaRT(runtimes=(), drivers=(fake_lib,), device=0)
    real_pop = rt._pop
    ev, _ = rt.create_ipc_event()  # retains the context

    def bad_pop(p):
        real_pop(p)
        return 201

    rt._pop = bad_pop
    try:
        with caplog.at_level("WARNING", logger="weft"):
            with pytest.raises(WeftError, match="invalid resource handle|INVALID_HANDLE"):
                rt.open_mem(_handle(0x7200, ok=False))
        assert "cuCtxPopCurrent after a failed call" in caplog.text
        with pytest.raises(WeftError, match="cuCtxPopCurrent"):
            rt.record(ev, 0xBEE0)
    finally:
        rt._pop = real_pop
        rt.destroy_event(ev)
        rt.close()
