"""The child of `weftgpu check`'s CUDA IPC stage (run on the GPU machine).

Reads a JSON list of device slot descriptors (gpu.DeviceSlot) on stdin, and
for each: opens the slot's memory handle (cudaIpcOpenMemHandle, through
CuPy) and event handle, makes the current stream wait on the event, reads
the tensor [shape] uint8 at offset, hashes it (sha256), and wraps it as a
torch tensor with DLPack (same pointer, no copy). Prints one JSON line:
{"hashes": [...], "open_ms": [...], "torch": "ok|fail ...|absent", "versions": "..."}.
"""
import base64
import hashlib
import json
import sys
import time

import cupy as cp

descs = json.load(sys.stdin)
hashes, open_ms, torch_state = [], [], "absent"
try:
    import torch
    torch_state = "ok"
except Exception as e:  # noqa: BLE001
    torch = None
    torch_state = f"absent({type(e).__name__})"
opened = {}
stream = cp.cuda.Stream(non_blocking=True)
for d in descs:
    if d.get("ipc_handle"):
        t = time.perf_counter()
        ptr = cp.cuda.runtime.ipcOpenMemHandle(base64.b64decode(d["ipc_handle"]))
        open_ms.append((time.perf_counter() - t) * 1e3)
        opened[d["slot"]] = ptr
    ev = cp.cuda.runtime.ipcOpenEventHandle(base64.b64decode(d["event"]))
    cp.cuda.runtime.streamWaitEvent(stream.ptr, ev, 0)
    n = 1
    for s in d["shape"]:
        n *= s
    mem = cp.cuda.UnownedMemory(opened[d["slot"]], d["offset"] + n, owner=None)
    with stream:
        arr = cp.ndarray(tuple(d["shape"]), dtype=cp.uint8, memptr=cp.cuda.MemoryPointer(mem, d["offset"]))
        if torch is not None and torch_state == "ok":
            tt = torch.from_dlpack(arr)
            if tt.data_ptr() != arr.data.ptr or tuple(tt.shape) != tuple(d["shape"]):
                torch_state = "fail pointer_or_shape"
        host = arr.get(stream=stream)
    stream.synchronize()
    hashes.append(hashlib.sha256(host.tobytes()).hexdigest())
vers = f"cupy={cp.__version__}" + (f" torch={torch.__version__}" if torch is not None else "")
print(json.dumps({"hashes": hashes, "open_ms": open_ms, "torch": torch_state, "versions": vers.replace(" ", ",")}))
