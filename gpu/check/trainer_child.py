"""One trainer of `weftgpu deliver` (make gpu-check's delivery stage).

argv[1] is a JSON object (cmd/weftgpu's trainerArgs): flightd's location,
project, table, seed, batch, the video window's frame offsets, steps,
seconds, prefetch, device ("cuda"; "cpu" with the fake driver's device
slots, $WEFT_FAKE_DEVICE_SLOTS=1) and optionally normalize. It reads its
own run with ``weft.TrainLoader(recipe, device=..., delivery="cuda-ipc")``
(the weft package from the checkout's python/ on $PYTHONPATH), and prints
one line per event on stdout, a word then JSON:

- ``READY {...}`` after the first step: the delivery in use (and why not
  cuda-ipc), the video tensor's shape, dtype and device;
- then waits for a line on stdin (the orchestrator's GO, sent to every
  trainer at once) and takes steps for the given seconds, each made ready
  on the current stream (``synchronize``: the step's frames are there) and
  checked to lie on its device slot (the tensor's pointer is the opened IPC
  pointer plus a descriptor's offset: no copy);
- ``DONE {...}``: steps, windows, frames, seconds, copies (steps whose
  tensor was not on a device slot);
- ``ERROR {...}`` when it cannot go on.
"""
import collections
import ctypes
import json
import os
import sys
import threading
import time

A = json.loads(sys.argv[1])


def emit(kind, **kw):
    print(kind, json.dumps(kw), flush=True)


try:
    import torch

    import weft
    from weft import _device
except Exception as e:  # noqa: BLE001
    emit("ERROR", error=f"import: {type(e).__name__}: {e}")
    sys.exit(1)

# The pointers the steps' tensors must have: recorded where the loader builds
# them from the descriptors (DeviceSlots.tensor: the opened IPC pointer, or
# the fake's mapped file, plus the offset; the loader's prefetch runs ahead),
# each matched once by a batch's tensor. A batch tensor elsewhere is a copy.
expected = collections.Counter()
lock = threading.Lock()
_orig_tensor = _device.DeviceSlots.tensor


def _tensor(self, desc):
    t = _orig_tensor(self, desc)
    slot, base = int(desc["slot"]), None
    if slot in self._ptrs:
        base = self._ptrs[slot]
    elif slot in self._maps:  # the fake: the slot's file, mapped
        base = ctypes.addressof(ctypes.c_char.from_buffer(self._maps[slot]))
    if base is not None:
        with lock:
            expected[base + int(desc["offset"])] += 1
    return t


_device.DeviceSlots.tensor = _tensor


def main():
    t0 = time.perf_counter()
    cuda = A["device"].startswith("cuda")
    client = weft.Client(A["location"])
    table = client.project(A["project"]).branch("main").table(A["table"])
    kw = {}
    if A.get("normalize"):
        n = A["normalize"]
        kw = {"normalize": (n["mean"], n["std"]), "dtype": n["dtype"]}
    recipe = weft.Recipe(seed=A["seed"], batch_size=A["batch"], steps=A["steps"], components=[
        weft.Component(table, columns=["episode_index"], windows=weft.Windows({"cam": weft.Video(A["frames"], **kw)}))])
    loader = weft.TrainLoader(recipe, device=A["device"], delivery="cuda-ipc", prefetch=A["prefetch"], decode_threads=1)
    it = iter(loader)
    copies = 0

    def step():
        nonlocal copies
        b = next(it)
        cam = b["cam"]
        if cuda:
            torch.cuda.current_stream().synchronize()
        with lock:
            if expected[cam.data_ptr()] > 0:
                expected[cam.data_ptr()] -= 1
            else:
                copies += 1
        return cam

    cam = step()
    emit("READY", delivery=loader.delivery, fallback=loader.delivery_fallback or "", shape=list(cam.shape),
         dtype=str(cam.dtype).replace("torch.", ""), device=str(cam.device), copies=copies,
         ready_s=time.perf_counter() - t0, versions=f"torch={torch.__version__}")
    sys.stdin.readline()  # GO
    copies = 0
    steps = windows = frames = 0
    start = time.perf_counter()
    end = start + A["secs"]
    while time.perf_counter() < end:
        try:
            cam = step()
        except StopIteration:
            break
        steps += 1
        windows += cam.shape[0]
        frames += cam.shape[0] * cam.shape[1]
    secs = time.perf_counter() - start
    emit("DONE", delivery=loader.delivery, fallback=loader.delivery_fallback or "", steps=steps, windows=windows,
         frames=frames, secs=secs, copies=copies)
    try:
        loader.close()
        client.close()
    except Exception:  # noqa: BLE001  (the numbers are out; flightd frees a dead trainer's slots too)
        pass


try:
    main()
except Exception as e:  # noqa: BLE001
    emit("ERROR", error=f"{type(e).__name__}: {e}")
    sys.stdout.flush()
    os._exit(1)
sys.stdout.flush()
os._exit(0)
