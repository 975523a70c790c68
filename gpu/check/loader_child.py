"""The second child of `weftgpu check`'s CUDA IPC stage (run on the GPU
machine): the same descriptors as ipc_child.py, opened by the loader's own
code, python/weft/_device.py's DeviceSlots (ctypes on libcudart:
cudaIpcOpenMemHandle, cudaIpcOpenEventHandle, cudaStreamWaitEvent, and a
torch tensor through __cuda_array_interface__, no copy). It loads that file
alone (with a stand-in for weft._errors), so neither pyarrow nor the rest of
the weft package is needed here. Prints one JSON line:
{"hashes": [...], "open_ms": [...], "zero_copy": "ok|fail ...", "versions": "..."}.
"""
import hashlib
import importlib.util
import json
import os
import sys
import time
import types

import torch

root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
pkg = types.ModuleType("weftdev")
pkg.__path__ = []
errors = types.ModuleType("weftdev._errors")


class WeftError(Exception):
    pass


errors.WeftError = WeftError
sys.modules["weftdev"], sys.modules["weftdev._errors"] = pkg, errors
spec = importlib.util.spec_from_file_location("weftdev._device", os.path.join(root, "python", "weft", "_device.py"))
dev = importlib.util.module_from_spec(spec)
sys.modules["weftdev._device"] = dev
spec.loader.exec_module(dev)

descs = json.load(sys.stdin)
slots = dev.DeviceSlots(torch.device("cuda"))
hashes, open_ms, zero_copy = [], [], "ok"
for d in descs:
    t = time.perf_counter()
    x = slots.tensor(d)
    if d.get("ipc_handle"):
        open_ms.append((time.perf_counter() - t) * 1e3)
    if x.device.type != "cuda" or tuple(x.shape) != tuple(d["shape"]) or x.dtype != torch.uint8:
        zero_copy = f"fail tensor {x.device} {tuple(x.shape)} {x.dtype}"
    elif x.data_ptr() != slots._ptrs[d["slot"]] + d["offset"]:
        zero_copy = "fail pointer (a copy was made)"
    torch.cuda.current_stream().synchronize()
    hashes.append(hashlib.sha256(x.cpu().numpy().tobytes()).hexdigest())
slots.close()
print(json.dumps({"hashes": hashes, "open_ms": open_ms, "zero_copy": zero_copy, "versions": f"torch={torch.__version__}"}))
