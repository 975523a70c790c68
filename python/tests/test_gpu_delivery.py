"""Issue 15: the loader's choice of delivery for device="cuda" (no GPU
needed), and the loud skip of what only a GPU can run (`make gpu-check`)."""

import pytest
import torch

import weft
from weft._torch import DELIVERIES, select_delivery


@pytest.mark.parametrize("wanted,device,expect,why", [
    ("flight", "cpu", "flight", False),
    ("shm", "cuda", "shm", False),
    ("auto", "cuda", "auto", False),
    ("cuda-ipc", "cuda", "auto", True),  # flightd serves no device slots yet: CPU decode + pinned copy
])
def test_select_delivery(wanted, device, expect, why):
    got, reason = select_delivery(wanted, device)
    assert got == expect
    assert (reason is not None) == why
    if why:
        assert "pinned" in reason and "cuda-ipc" in reason


def test_select_delivery_server_with_device_slots():
    assert select_delivery("cuda-ipc", "cuda", server_device_slots=True) == ("cuda-ipc", None)


def test_cuda_ipc_needs_cuda_device():
    assert "cuda-ipc" in DELIVERIES
    with pytest.raises(weft.InvalidArgument, match="cuda-ipc.*device='cuda'"):
        select_delivery("cuda-ipc", "cpu")


@pytest.mark.skipif(not torch.cuda.is_available(),
                    reason="SKIP (loud): no CUDA device: the zero-copy CUDA IPC path (device slots, DLPack) "
                           "never runs here; it is checked on a GPU machine by `make gpu-check` (docs/gpu.md)")
def test_cuda_ipc_on_gpu():
    pytest.skip("SKIP (loud): flightd does not serve device slots over the exchange yet (issue 15 open)")
