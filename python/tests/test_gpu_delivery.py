"""Issue 15: TrainLoader(delivery="cuda-ipc").

Without a GPU (CI): the loader's choice of delivery, and the whole device
slot protocol against a real flightd running the fake driver
(gpu/testdata/fakedriver: libavcodec on the CPU standing in for libcuda and
libnvcuvid) with ``--gpu-fake-memory`` (device slots are /dev/shm files, the
IPC handle a path). The loader, with $WEFT_FAKE_DEVICE_SLOTS=1, maps them
and builds CPU tensors: frames equal the CPU-decode path's, slots are
released, a window with a size is resized on the device (within 1 LSB of
the CPU path's resize), and a SIGKILLed trainer's device ring is freed. What only a GPU
can run (CUDA IPC, DLPack on device memory) skips loudly here: it is
`make gpu-check`'s (docs/gpu.md)."""

from __future__ import annotations

import dataclasses
import glob
import logging
import os
import signal
import subprocess
import sys
import textwrap
import time

import pyarrow as pa
import pytest
import torch

import weft
from weft._torch import DELIVERIES, FAKE_DEVICE_SLOTS_ENV, select_delivery

import videoref as ref
from conftest import REPO, SMALL, Flightd

DSLOTS = "/dev/shm/weft-dslot-*"


NO_CUDART = "libcudart cannot be loaded (libcudart.so: cannot open shared object file)"


@pytest.mark.parametrize("wanted,device,ipc,expect,why", [
    ("flight", "cpu", None, "flight", None),
    ("shm", "cuda", NO_CUDART, "shm", None),
    ("auto", "cuda", None, "auto", None),
    ("cuda-ipc", "cuda", None, "cuda-ipc", None),  # the exchange's header says when flightd falls back
    # this process cannot open CUDA IPC handles: CPU decode and a pinned copy, and why
    ("cuda-ipc", "cuda", NO_CUDART, "auto", f"cuda-ipc: {NO_CUDART}; CPU decode and a pinned host-to-device copy "
                                            "instead (same frames)"),
])
def test_select_delivery(wanted, device, ipc, expect, why):
    assert select_delivery(wanted, device, ipc_unavailable=ipc) == (expect, why)


def test_cuda_ipc_needs_cuda_device():
    assert "cuda-ipc" in DELIVERIES
    with pytest.raises(weft.InvalidArgument, match="cuda-ipc.*device='cuda'"):
        select_delivery("cuda-ipc", "cpu")
    assert select_delivery("cuda-ipc", "cpu", fake_device_slots=True) == ("cuda-ipc", None)
    assert select_delivery("cuda-ipc", "cpu", fake_device_slots=True, ipc_unavailable=NO_CUDART) == ("cuda-ipc", None)


REFUSAL = ("DoExchange: send step 7: step 7 column cam: failed precondition: cuda-ipc delivery cannot serve this "
           "step: the GPU decode of segment 1 failed: gpu: segment invalid argument: the stream is 32x32")


@pytest.mark.parametrize("err,want", [
    # how pyarrow words FAILED_PRECONDITION
    (pa.ArrowInvalid(f"gRPC returned precondition failed error, with message: {REFUSAL}. gRPC client debug "
                     "context: UNKNOWN:Error received from peer. Client context: OK"), REFUSAL),
    (pa.ArrowException(f"Flight returned failed precondition error, with message: {REFUSAL}"), REFUSAL),
    # another FAILED_PRECONDITION (a stale release) is not a refusal, nor another code with the words
    (pa.ArrowInvalid("gRPC returned precondition failed error, with message: DoExchange: slot 1 generation 2 "
                     "is not held"), None),
    (pa.ArrowInvalid(f"Flight returned invalid argument error, with message: {REFUSAL}"), None),
    (pa.ArrowInvalid(REFUSAL), None),
])
def test_cuda_ipc_refusal(err, want):
    from weft._torch import cuda_ipc_refusal
    assert cuda_ipc_refusal(err) == want


def test_cuda_ipc_unavailable_says_why():
    from weft._device import cuda_ipc_unavailable
    why = cuda_ipc_unavailable()
    assert why is None or ("libcudart" in why and not why.startswith("cuda-ipc")), why


@pytest.mark.skipif(not torch.cuda.is_available(),
                    reason="SKIP (loud): no CUDA device: the zero-copy CUDA IPC path (cudaIpcOpenMemHandle, "
                           "events, __cuda_array_interface__ tensors on device memory) has NEVER RUN; it is "
                           "checked on a GPU machine by `make gpu-check` (docs/gpu.md)")
def test_cuda_ipc_on_gpu():
    pytest.skip("SKIP (loud): a real-GPU TrainLoader test needs flightd with NVDEC on the same GPU; "
                "run `make gpu-check`")


def _skip(msg: str) -> None:
    msg = "SKIPPED LOUDLY: " + msg
    if os.environ.get("CI") == "true":
        pytest.fail(msg)
    pytest.skip(msg)


@pytest.fixture(scope="module")
def fake_driver(tmp_path_factory):
    """The fake driver library, built with gcc and libavcodec-dev."""
    out = tmp_path_factory.mktemp("fakedriver") / "libfakecuda.so"
    gpu = REPO / "gpu"
    try:
        r = subprocess.run(["gcc", "-O2", "-fPIC", "-shared", f"-I{gpu / 'include'}", "-o", str(out),
                            str(gpu / "testdata/fakedriver/fake_driver.c"), "-lavcodec", "-lavutil"],
                           capture_output=True, text=True)
    except FileNotFoundError:
        _skip("gcc not found: the cuda-ipc loader tests (fake driver) did not run")
    if r.returncode != 0:
        if "libavcodec/avcodec.h" in r.stderr:
            _skip("libavcodec-dev not installed: the cuda-ipc loader tests (fake driver) did not run")
        pytest.fail(r.stderr)
    return str(out)


class _EnvStore:
    """store, with more environment for flightd (the fake driver's knobs)."""

    def __init__(self, store, **env):
        self._store = store
        self.env = dict(store.env if store.env is not None else os.environ, **env)

    def __getattr__(self, name):
        return getattr(self._store, name)


def _gpu_server(flightd_bin, store, tmp_path, fake_driver):
    d = Flightd(flightd_bin, store, tmp_path, (*SMALL, "--gpu-cuda-lib", fake_driver, "--gpu-cuvid-lib", fake_driver,
                                                "--gpu-fake-memory", "--gpu-memory-limit", "64MiB"))
    d.start()
    yield d
    rc = d.stop()
    print(d.log_text()[-20000:])
    assert rc in (0, None, -signal.SIGKILL), f"flightd exited with {rc}"
    # every test on the fake: no device slot was freed while a loader still had its handle open
    assert not _still_open(d), "flightd freed a device slot whose IPC handle a loader still had open"


# flightd's log line when its fake (gpu.ShmMemory) frees a device slot that a
# client still holds open (its shared flock): on CUDA, a use after free.
STILL_OPEN = "device slot freed while the client still had its IPC handle open"


def _still_open(server) -> list[str]:
    return [line for line in server.log_text().splitlines() if STILL_OPEN in line]


@pytest.fixture
def gpu_server(flightd_bin, store, tmp_path, fake_driver):
    yield from _gpu_server(flightd_bin, store, tmp_path, fake_driver)


@pytest.fixture
def gpu_server_without_av1(flightd_bin, store, tmp_path, fake_driver):
    """flightd on a fake NVDEC whose cuvidGetDecoderCaps lacks AV1 ($MOCK_DENY_CODECS)."""
    yield from _gpu_server(flightd_bin, _EnvStore(store, MOCK_DENY_CODECS="av1"), tmp_path, fake_driver)


@pytest.fixture
def video_recipe(gpu_server, tmp_path):
    yield from _video_recipe(gpu_server, tmp_path, "h264_bframes")


def _video_recipe(gpu_server, tmp_path, clip_name: str):
    if not ref.FFMPEG:
        _skip("the ffmpeg program is missing")
    try:
        import av  # noqa: F401
    except ImportError:
        _skip("PyAV is missing: the CPU decode path cannot be compared")
    c = weft.Client(gpu_server.location)
    episodes = {}
    for e in range(2):
        d = tmp_path / f"ep{e}"
        d.mkdir()
        episodes[e] = ref.make_clip(clip_name, d, seconds=1.0)
    clips = {e: ref.demux(p) for e, p in episodes.items()}
    eps, ts = [], []
    for e, clip in clips.items():
        for p in clip.frame_pts:
            eps.append(e)
            ts.append(p / clip.timescale)
    t = c.create_project("robots").branch("main").table("moments")  # one clip kind per server
    t.append(pa.table({"episode_index": pa.array(eps, pa.int64()), "timestamp": pa.array(ts, pa.float64())}),
             videos={"cam": {e: str(p) for e, p in episodes.items()}, "wrist": {e: str(p) for e, p in episodes.items()}})
    # two video columns: one device slot per step holds both, at their offsets
    recipe = weft.Recipe(seed=5, batch_size=4, components=[
        weft.Component(t, windows=weft.Windows({"cam": weft.Video([-3, 0, 2]), "wrist": weft.Video([0, 1])}))])
    yield recipe
    c.close()


def _read(recipe: weft.Recipe, delivery: str, monkeypatch=None) -> tuple[str, list[dict], weft.TrainLoader]:
    out = []
    with weft.TrainLoader(recipe, delivery=delivery, prefetch=2, decode_threads=1) as loader:
        for batch in loader:
            out.append({k: (v.clone() if isinstance(v, torch.Tensor) else v) for k, v in batch.items()})
        return loader.delivery, out, loader


# The fake does not parse VUI: tagged clips (h264_bt709_full) get the
# unspecified colour rule there, so they are left to `make gpu-check`.
# AV1 (LeRobot's default codec) goes through NVDEC too: libaom's clips have
# hidden alt-ref frames shown later (show_existing_frame).
@pytest.mark.parametrize("clip", ["h264_bframes", "hevc_open_gop", "hevc_10bit", "av1", "av1_10bit"])
def test_cuda_ipc_fake_equals_cpu_decode(gpu_server, tmp_path, monkeypatch, clip):
    video_recipe = next(_video_recipe(gpu_server, tmp_path, clip))
    monkeypatch.setenv(FAKE_DEVICE_SLOTS_ENV, "1")
    want_d, want, _ = _read(video_recipe, "flight")
    assert want_d == "flight"
    got_d, got, loader = _read(video_recipe, "cuda-ipc")
    assert got_d == "cuda-ipc", loader.delivery_fallback
    assert loader.delivery_fallback is None
    assert len(got) == len(want) > 2
    paths = loader._device_slots.paths
    assert paths and all(p.startswith("/dev/shm/weft-dslot-") for p in paths)
    for i, (g, w) in enumerate(zip(got, want)):
        assert set(g) == set(w), i
        assert g["cam"].dtype == torch.uint8 and g["cam"].shape == w["cam"].shape, i
        assert g["cam"].shape[1] == 3 and g["cam"].shape[4] == 3, i
        # the frames of the fake's device slots are the CPU decode path's, byte for byte
        assert torch.equal(g["cam"], w["cam"]), f"step {i}"
        assert g["wrist"].shape[1] == 2 and torch.equal(g["wrist"], w["wrist"]), f"step {i}"
        for k in w:
            if k not in ("cam", "wrist") and isinstance(w[k], torch.Tensor):
                assert torch.equal(g[k], w[k]), (i, k)
    # the exchange ended: the server freed its device ring
    for _ in range(200):
        if not any(os.path.exists(p) for p in paths):
            break
        time.sleep(0.05)
    assert not any(os.path.exists(p) for p in paths), "the device ring is freed when the exchange ends"


def test_cuda_ipc_codec_the_caps_deny_falls_back(gpu_server_without_av1, tmp_path, monkeypatch):
    recipe = next(_video_recipe(gpu_server_without_av1, tmp_path, "av1"))
    monkeypatch.setenv(FAKE_DEVICE_SLOTS_ENV, "1")
    want_d, want, _ = _read(recipe, "flight")
    d, got, loader = _read(recipe, "cuda-ipc")
    assert d == "shm"
    assert "av1" in (loader.delivery_fallback or ""), loader.delivery_fallback
    assert len(got) == len(want) and all(torch.equal(g["cam"], w["cam"]) for g, w in zip(got, want))


def test_cuda_ipc_refused_mid_run_falls_back(gpu_server, tmp_path, monkeypatch, caplog):
    """A stream the (fake) NVDEC refuses mid-run: an AV1 clip whose frames change size within its
    sequence (SVT-AV1 resize-mode=1), after a good one. The run's first steps come in device slots;
    at the first step with the bad clip flightd ends the exchange with FAILED_PRECONDITION
    (flight.ErrUnavailableDelivery) and the loader reads the run again from that step on the host
    path, decoding on the CPU: the trainer gets exactly the steps of delivery="flight", byte for
    byte, none lost or repeated, and the loader says so once (delivery, delivery_fallback, a
    warning). The window has a size: the CPU path refuses a batch of 64x64 and 32x32 frames."""
    if not ref.FFMPEG:
        _skip("the ffmpeg program is missing")
    try:
        import av  # noqa: F401
    except ImportError:
        _skip("PyAV is missing: the CPU decode path cannot be compared")
    d = tmp_path / "clips"
    d.mkdir()
    try:
        paths = {0: ref.make_clip("av1_svt", d), 1: ref.make_clip("av1_svt_resize", d)}
    except subprocess.CalledProcessError as e:
        _skip(f"ffmpeg cannot encode with libsvtav1: the mid-run fallback test did not run ({e.stderr!r})")
    c = weft.Client(gpu_server.location)
    eps, ts = [], []
    for e, p in paths.items():
        clip = ref.demux(p)
        for pts in clip.frame_pts:
            eps.append(e)
            ts.append(pts / clip.timescale)
    t = c.create_project("robots").branch("main").table("moments")
    t.append(pa.table({"episode_index": pa.array(eps, pa.int64()), "timestamp": pa.array(ts, pa.float64())}),
             videos={"cam": {e: str(p) for e, p in paths.items()}})
    # buffer_rows=0: the rows in block order (one block here): the good episode's steps first
    recipe = weft.Recipe(seed=5, batch_size=4, shuffle=weft.ShuffleConfig(buffer_rows=0), components=[
        weft.Component(t, windows=weft.Windows({"cam": weft.Video([-2, 0, 1], size=(64, 64))}))])
    want_d, want, _ = _read(recipe, "flight")
    assert want_d == "flight"
    first_bad = next(i for i, w in enumerate(want) if bool((w["episode_index"] == 1).any()))
    assert 0 < first_bad < len(want) - 1, "the refusal must come mid-run"

    monkeypatch.setenv(FAKE_DEVICE_SLOTS_ENV, "1")
    from weft._device import DeviceSlots
    served = []  # the steps whose video came in a device slot
    tensor = DeviceSlots.tensor

    def counting(self, desc):
        served.append(desc["column"])
        return tensor(self, desc)

    monkeypatch.setattr(DeviceSlots, "tensor", counting)
    with caplog.at_level(logging.WARNING, logger="weft"):
        got_d, got, loader = _read(recipe, "cuda-ipc")
    assert len(served) == first_bad, f"steps 0..{first_bad - 1} in device slots, then the refusal"
    assert got_d == "shm", "from the refused step on: host slots, CPU decode"
    why = loader.delivery_fallback or ""
    assert f"step {first_bad}" in why and "cuda-ipc delivery cannot serve this step" in why, why
    warned = [r for r in caplog.records if r.name == "weft" and "cuda-ipc" in r.getMessage()]
    assert len(warned) == 1, [r.getMessage() for r in warned]
    print(warned[0].getMessage())
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        assert set(g) == set(w), i
        for k in w:
            if isinstance(w[k], torch.Tensor):
                assert g[k].dtype == w[k].dtype and torch.equal(g[k], w[k]), (i, k)
            else:
                assert g[k] == w[k], (i, k)


# The fake clips are 64x48: a downscale, an upscale, and one of each with odd sizes.
@pytest.mark.parametrize("size", [(24, 32), (17, 29), (61, 97), (35, 75)])
def test_cuda_ipc_resize_on_device(video_recipe, monkeypatch, size):
    """A window with size= is resized by flightd on the device (the fake runs the kernels' float32
    statements on the CPU): within 1 LSB of the CPU path's resize (numpy's float32 matmul sums in
    BLAS's order), the number of differing values printed."""
    monkeypatch.setenv(FAKE_DEVICE_SLOTS_ENV, "1")
    t = video_recipe.components[0].table
    recipe = weft.Recipe(seed=5, batch_size=4, components=[
        weft.Component(t, windows=weft.Windows({"cam": weft.Video([0, 1], size=size)}))])
    want_d, want, _ = _read(recipe, "flight")
    assert want_d == "flight"
    d, got, loader = _read(recipe, "cuda-ipc")
    assert d == "cuda-ipc", loader.delivery_fallback
    assert loader.delivery_fallback is None
    assert len(got) == len(want) > 2
    differ = total = max_diff = 0
    for i, (g, w) in enumerate(zip(got, want)):
        assert g["cam"].dtype == torch.uint8 and g["cam"].shape == w["cam"].shape == (4, 2, *size, 3), i
        diff = (g["cam"].to(torch.int16) - w["cam"].to(torch.int16)).abs()
        max_diff = max(max_diff, int(diff.max()))
        differ += int((diff != 0).sum())
        total += diff.numel()
    print(f"resize to {size}: {differ} of {total} values differ from delivery='flight' (max |diff| {max_diff})")
    assert max_diff <= 1, "more than 1 LSB from the CPU path's resize"


def test_sigkill_frees_the_device_ring(video_recipe):
    t = video_recipe.components[0].table
    before = set(glob.glob(DSLOTS))
    code = textwrap.dedent(f"""
        import os, sys, time, weft
        c = weft.Client({t.client.uri!r})
        t = c.project("robots").branch("main").table("moments")
        r = weft.Recipe(seed=5, batch_size=4, components=[
            weft.Component(t, windows=weft.Windows({{"cam": weft.Video([-3, 0, 2])}}))])
        loader = weft.TrainLoader(r, delivery="cuda-ipc", prefetch=1)
        it = iter(loader)
        b = next(it)
        assert loader.delivery == "cuda-ipc", loader.delivery_fallback
        print("holding", tuple(b["cam"].shape), flush=True)
        time.sleep(600)
    """)
    env = dict(os.environ, **{FAKE_DEVICE_SLOTS_ENV: "1"})
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, env=env, text=True)
    try:
        line = proc.stdout.readline().strip()
        assert line.startswith("holding"), line
        mine = set(glob.glob(DSLOTS)) - before
        assert mine, "the server made a device ring for the trainer"
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        for _ in range(200):  # the server notices the dead peer (no timing asserted: up to 20 s)
            if not any(os.path.exists(p) for p in mine):
                break
            time.sleep(0.1)
        assert not any(os.path.exists(p) for p in mine), "the server frees a killed trainer's device ring"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_cuda_ipc_mix_of_frame_sizes(gpu_server, tmp_path, monkeypatch):
    """A mix of two tables whose cameras differ in size (64x96 and 96x128),
    one row per rank and step: each step comes in a device slot with its own
    shape, a step with larger frames than the slots hold in a larger ring
    that flightd makes then (new slots, opened at their first use), and
    every step's frames equal the CPU decode path's."""
    if not ref.FFMPEG:
        _skip("the ffmpeg program is missing")
    try:
        import av  # noqa: F401
    except ImportError:
        _skip("PyAV is missing: the CPU decode path cannot be compared")
    monkeypatch.setenv(FAKE_DEVICE_SLOTS_ENV, "1")
    c = weft.Client(gpu_server.location)
    branch = c.create_project("mixed").branch("main")
    tables = []
    for name, size in (("small", (64, 96)), ("big", (96, 128))):
        d = tmp_path / name
        d.mkdir()
        clip = ref.make_clip("h264_bframes", d, size=size, seconds=1.0)
        pts = ref.demux(clip)
        t = branch.table(name)
        t.append(pa.table({"episode_index": pa.array([0] * len(pts.frame_pts), pa.int64()),
                           "timestamp": pa.array([p / pts.timescale for p in pts.frame_pts], pa.float64())}),
                 videos={"cam": {0: str(clip)}})
        tables.append(t)
    world = 4
    recipe = weft.Recipe(seed=3, batch_size=world, components=[
        weft.Component(t, windows=weft.Windows({"cam": weft.Video([-1, 0])})) for t in tables])
    grew = False
    for rank in range(world):
        def read(delivery):
            out = []
            with weft.TrainLoader(recipe, world=weft.World(rank, world), delivery=delivery, prefetch=2,
                                  decode_threads=1) as loader:
                for batch in loader:
                    out.append({k: (v.clone() if isinstance(v, torch.Tensor) else v) for k, v in batch.items()})
                return loader.delivery, loader.delivery_fallback, out
        _, _, want = read("flight")
        d, why, got = read("cuda-ipc")
        assert d == "cuda-ipc" and why is None, why
        assert len(got) == len(want) > 2
        heights = [g["cam"].shape[2] for g in got]
        assert set(heights) <= {64, 96}
        for i, (g, w) in enumerate(zip(got, want)):
            assert set(g) == set(w), i
            assert g["cam"].shape == w["cam"].shape, (rank, i)
            assert torch.equal(g["cam"], w["cam"]), f"rank {rank} step {i}: the fake's frames are the CPU path's"
        if heights[0] == 64 and 96 in heights:
            grew = True  # the first ring was sized for the small frames: a larger one came for the big
    assert grew, "no rank started with the small camera and met the big one later; change the seed"
    c.close()


IMAGENET = ((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))


def _int_view(t: torch.Tensor) -> torch.Tensor:
    return t.view(torch.int32 if t.element_size() == 4 else torch.int16)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
@pytest.mark.parametrize("size", [None, (17, 29)])
def test_cuda_ipc_normalized_on_device(video_recipe, monkeypatch, dtype, size):
    """A window with normalize= comes in device slots of its dtype, made by
    the kernels' last write (the fake runs their statements on the CPU).
    Without a resize the frames equal delivery='flight' bit for bit. With
    one, the device's uint8 may differ from the CPU path's resize by 1 LSB
    (test_cuda_ipc_resize_on_device): there the device's normalised frames
    are the rule applied to the device's own uint8 frames bit for bit, and
    those are within 1 LSB of the CPU path's."""
    from weft import _video

    monkeypatch.setenv(FAKE_DEVICE_SLOTS_ENV, "1")
    t = video_recipe.components[0].table

    def recipe(**kw):
        return weft.Recipe(seed=5, batch_size=4, components=[
            weft.Component(t, windows=weft.Windows({"cam": weft.Video([-1, 0, 2], size=size, **kw)}))])

    norm = recipe(normalize=IMAGENET, dtype=dtype)
    want_d, want, _ = _read(norm, "flight")
    assert want_d == "flight"
    d, got, loader = _read(norm, "cuda-ipc")
    assert d == "cuda-ipc", loader.delivery_fallback
    assert loader.delivery_fallback is None
    assert len(got) == len(want) > 2
    tdt = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32}[dtype]
    if size is None:
        for i, (g, w) in enumerate(zip(got, want)):
            assert g["cam"].dtype == w["cam"].dtype == tdt and g["cam"].shape == w["cam"].shape, i
            assert torch.equal(_int_view(g["cam"]), _int_view(w["cam"])), f"step {i}: not bit for bit"
        return
    _, dev_u8, _ = _read(recipe(), "cuda-ipc")
    _, cpu_u8, _ = _read(recipe(), "flight")
    assert len(dev_u8) == len(cpu_u8) == len(got)
    for i, (g, du, cu) in enumerate(zip(got, dev_u8, cpu_u8)):
        assert g["cam"].dtype == tdt and g["cam"].shape == du["cam"].shape == (4, 3, *size, 3), i
        rule = _video.normalize(du["cam"].numpy(), *IMAGENET, dtype)
        gi = _int_view(g["cam"]).numpy()
        assert (gi == rule.view(gi.dtype)).all(), f"step {i}: not the rule applied to the device's uint8"
        assert int((du["cam"].to(torch.int16) - cu["cam"].to(torch.int16)).abs().max()) <= 1, i


def _freed(paths, polls=200) -> bool:
    """Whether every file of paths is gone (the server freed the ring), waiting up to 20 s (no timing asserted)."""
    for _ in range(polls):
        if not any(os.path.exists(p) for p in paths):
            return True
        time.sleep(0.1)
    return False


# The end of an exchange (docs/gpu.md, "The end of an exchange"): flightd sends the end message
# after the last step, while up to `prefetch` steps still wait in the loader's queue on device
# slots and the trainer holds one. The loader ends the call only once every step it handed on is
# released and it closed the slots' handles (the fake: let go of their flocks); flightd frees
# the ring only then. The fake's free of a slot still held fails loudly (STILL_OPEN in its log).
@pytest.mark.parametrize("prefetch", [2, 4])
def test_cuda_ipc_end_frees_after_the_loader(gpu_server, video_recipe, monkeypatch, prefetch):
    monkeypatch.setenv(FAKE_DEVICE_SLOTS_ENV, "1")
    recipe = dataclasses.replace(video_recipe, steps=prefetch + 1)  # a short run: the end comes with the queue full
    with weft.TrainLoader(recipe, delivery="cuda-ipc", prefetch=prefetch, decode_threads=1) as loader:
        steps = loader.steps
        assert steps == prefetch + 1
        it = iter(loader)
        batches = [next(it) for _ in range(steps)]  # every step; the iteration has not ended
        assert loader.delivery == "cuda-ipc", loader.delivery_fallback
        dev = loader._device_slots
        paths = dev.paths
        assert paths and dev.opened
        # the prefetcher has read the end message (the queue is empty); the trainer holds the last step
        for _ in range(100):
            if loader._active is not None and loader._active.out.empty() and not loader._active.thread.is_alive():
                break
            up = getattr(loader._active, "up", None)
            if up is not None and up.server_done:
                break
            time.sleep(0.05)
        last = batches[-1]["cam"].clone()
        assert all(os.path.exists(p) for p in paths), "flightd freed a device slot the trainer still holds"
        assert torch.equal(batches[-1]["cam"], last)
        assert not _still_open(gpu_server)
        with pytest.raises(StopIteration):
            next(it)  # the trainer lets the last step go: the loader closes its handles, then the call ends
        assert dev.closed and not dev.opened
    assert _freed(paths), "the device ring is freed when the exchange ends"
    assert not _still_open(gpu_server), "flightd freed a device slot whose handle the loader still had open"


@pytest.mark.parametrize("how", ["break", "close"])
def test_cuda_ipc_stopped_early_closes_before_the_call_ends(gpu_server, video_recipe, monkeypatch, how):
    """A trainer that stops before the run's end (a break out of the loop, or close() while it
    holds a step): the loader closes the device slots' handles before it cancels the call."""
    monkeypatch.setenv(FAKE_DEVICE_SLOTS_ENV, "1")
    loader = weft.TrainLoader(video_recipe, delivery="cuda-ipc", prefetch=3, decode_threads=1)
    try:
        it = iter(loader)
        b = next(it)
        assert loader.delivery == "cuda-ipc", loader.delivery_fallback
        assert b["cam"].shape[1] == 3
        dev = loader._device_slots
        paths = dev.paths
        if how == "break":
            it.close()  # what a `break` out of `for batch in loader` does to the generator
        else:
            loader.close()
        assert dev.closed and not dev.opened
    finally:
        loader.close()
    assert _freed(paths), "the device ring is freed when the exchange ends"
    assert not _still_open(gpu_server), "flightd freed a device slot whose handle the loader still had open"


def test_cuda_ipc_release_waits_for_the_trainers_event(gpu_server, video_recipe, monkeypatch):
    """Releases after the trainer's work (docs/gpu.md): at each release the loader records a
    release event of its own for the slot on the current stream, its handle sent with the slot's
    first release; flightd's decode waits on it before it rewrites the slot. On the fake, the
    loader's event is a /dev/shm file and flightd's fake driver waits on it: the test holds the
    event of step 0's release incomplete (the stand-in for a trainer's kernel still reading step
    0's tensors) and sees flightd reach that slot's next write and wait (the event's "blocked"
    word), the slot still holding step 0's frames; once the event completes, the run goes on and
    every step equals delivery="flight"'s."""
    monkeypatch.setenv(FAKE_DEVICE_SLOTS_ENV, "1")
    # more steps than the device ring's slots: flightd comes back to step 0's slot while the
    # trainer holds step 1 (the ring's free slots are handed out in release order)
    recipe = dataclasses.replace(video_recipe, steps=24)
    _, want, _ = _read(recipe, "flight")
    assert len(want) == 24
    with weft.TrainLoader(recipe, delivery="cuda-ipc", prefetch=2, decode_threads=1) as loader:
        it = iter(loader)
        b0 = next(it)
        assert loader.delivery == "cuda-ipc", loader.delivery_fallback
        dev = loader._device_slots
        kept0 = {k: b0[k].clone() for k in ("cam", "wrist")}
        got = [kept0]
        dev.hold_events = True  # step 0's kernels "still run" when the trainer takes step 1
        b1 = next(it)
        got.append({k: b1[k].clone() for k in ("cam", "wrist")})
        dev.hold_events = False
        held = list(dev._fake_events)
        assert len(held) == 1, "one release so far: step 0's, whose event was made then"
        slot0 = held[0]
        deadline = time.monotonic() + 60
        while dev.event_state(slot0)["blocked"] < 1:
            assert time.monotonic() < deadline, f"flightd never waited on the held event: {dev.event_state(slot0)}"
            time.sleep(0.005)
        # flightd is at the slot's next write, waiting: the slot still holds step 0's frames
        assert torch.equal(b0["cam"], kept0["cam"]) and torch.equal(b0["wrist"], kept0["wrist"]), \
            "flightd rewrote the slot before the trainer's event completed"
        st = dev.event_state(slot0)
        assert st["recorded"] == 1 and st["completed"] == 0 and st["waits"] >= 1
        dev.complete_events()
        event_files = [path for path, _ in dev._fake_events.values()]
        for b in it:
            got.append({k: b[k].clone() for k in ("cam", "wrist")})
        assert loader.delivery == "cuda-ipc"
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        assert torch.equal(g["cam"], w["cam"]) and torch.equal(g["wrist"], w["wrist"]), f"step {i}"
    assert event_files and not any(os.path.exists(p) for p in event_files), "the loader's event files go at close"
    assert not _still_open(gpu_server)


def _maps(pid: int) -> str:
    with open(f"/proc/{pid}/maps") as f:
        return f.read()


@pytest.mark.parametrize("how", ["break", "close"])
def test_cuda_ipc_stopped_early_destroys_its_events_after_the_call(gpu_server, video_recipe, monkeypatch, how):
    """A loader stopped early (a break, close()) while flightd's decode waits on its release event
    (held: a trainer's kernel still running) closes the slots' handles, ends its side and reads the
    call to its end, and only then destroys the event: flightd stopped at the loader's end, freed
    the ring and closed (unmapped) the events it opened before it ended the call. It destroyed the
    event first and then cancelled the call before, while flightd still had it open and waited on
    it (cuEventQuery of an event whose creator destroyed it: CUDA does not say what it reports)."""
    monkeypatch.setenv(FAKE_DEVICE_SLOTS_ENV, "1")
    from weft import _device

    pid = gpu_server.proc.pid
    destroyed: list[tuple[str, bool]] = []  # (event file, flightd mapped it then)
    unlink = os.unlink

    def spy(path, *a, **kw):
        if str(path).startswith(_device.FAKE_EVENT_PREFIX):
            destroyed.append((str(path), str(path) in _maps(pid)))
        return unlink(path, *a, **kw)

    monkeypatch.setattr(_device.os, "unlink", spy)
    recipe = dataclasses.replace(video_recipe, steps=24)  # flightd comes back to step 0's slot
    loader = weft.TrainLoader(recipe, delivery="cuda-ipc", prefetch=2, decode_threads=1)
    try:
        it = iter(loader)
        next(it)
        assert loader.delivery == "cuda-ipc", loader.delivery_fallback
        dev = loader._device_slots
        paths = dev.paths
        dev.hold_events = True  # step 0's release event stays incomplete
        next(it)
        [slot0] = list(dev._fake_events)
        event_file = dev._fake_events[slot0][0]
        deadline = time.monotonic() + 60
        while dev.event_state(slot0)["blocked"] < 1:  # flightd waits on it before it rewrites step 0's slot
            assert time.monotonic() < deadline, f"flightd never waited on the held event: {dev.event_state(slot0)}"
            time.sleep(0.005)
        assert event_file in _maps(pid), "flightd has the loader's event open while it waits on it"
        if how == "break":
            it.close()
        else:
            loader.close()
        assert dev.closed and not dev.opened and not dev._fake_events
    finally:
        loader.close()
    # step 0's event, and step 1's (released as the loop ends)
    assert event_file in [p for p, _ in destroyed], destroyed
    assert not [p for p, mapped in destroyed if mapped], "the loader destroyed a release event flightd still had open"
    assert not os.path.exists(event_file)
    assert _freed(paths), "the device ring is freed when the exchange ends"
    assert not _still_open(gpu_server), "flightd freed a device slot whose handle the loader still had open"
