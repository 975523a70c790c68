"""TrainLoader(delivery=...): host slots (issue 14, docs/flight.md "Host
slots") against a real flightd. The shm tests need a flightd that serves
DoExchange with slots; against one without they skip loudly (never counted
as passing). The fallback tests run against any flightd."""

from __future__ import annotations

import glob
import logging
import mmap
import os
import signal
import stat
import subprocess
import sys
import textwrap
import time

import numpy as np
import pyarrow as pa
import pytest
import torch

import weft
from conftest import SMALL, Flightd
from test_gpu_delivery import _read as _gpu_read
from test_gpu_delivery import _video_recipe, fake_driver, gpu_server  # noqa: F401 - fixtures
from weft._torch import FAKE_DEVICE_SLOTS_ENV
from weftflight import make_table

RINGS = "/dev/shm/weft-ring-*"


@pytest.fixture
def server(flightd_bin, store, tmp_path):
    """flightd with every step in a slot (--slot-inline-size 0): the
    fixtures' steps are a few KiB, which by default travel inline."""
    d = Flightd(flightd_bin, store, tmp_path, (*SMALL, "--slot-inline-size", "0"))
    d.start()
    yield d
    rc = d.stop()
    print(d.log_text()[-20000:])
    assert rc in (0, None, -signal.SIGKILL), f"flightd exited with {rc}"


@pytest.fixture
def wc(server):
    c = weft.Client(server.location)
    yield c
    c.close()


@pytest.fixture
def small(wc):
    br = wc.create_project("p").branch("main")
    br.table("a").append(make_table(0, 941).to_batches(max_chunksize=400))
    br.table("b").append(make_table(0, 2100))
    return weft.Recipe(seed=2048, batch_size=64, components=[
        weft.Component(br.table("a"), weight=0.3), weft.Component(br.table("b"), weight=0.7)])


@pytest.fixture
def large(wc):
    """Rows of 100 KiB binary, a small batch."""
    br = wc.create_project("big").branch("main")
    rng = np.random.default_rng(7)
    for name, n in (("a", 60), ("b", 90)):
        blobs = [rng.bytes(100 * 1024) for _ in range(n)]
        br.table(name).append(pa.table({"id": pa.array(range(n), pa.int64()), "blob": pa.array(blobs, pa.binary()),
                                        "x": pa.array(rng.random(n), pa.float64())}))
    return weft.Recipe(seed=5, batch_size=4, components=[
        weft.Component(br.table("a"), weight=0.4), weft.Component(br.table("b"), weight=0.6)])


def ipc_bytes(batch: pa.RecordBatch) -> bytes:
    """The batch's IPC message (a copy: safe past the step)."""
    return batch.serialize().to_pybytes()


def kept(batch: dict) -> dict:
    """A batch's tensors cloned (shm views are valid until the next step)."""
    return {k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in batch.items()}


def read(recipe, delivery, world=None, **kw):
    """(delivery in use, [IPC bytes of each step's RecordBatch], [tensors])."""
    raws, out = [], []

    def rec(batch):
        raws.append(ipc_bytes(batch))
        return batch

    with weft.TrainLoader(recipe, world=world, delivery=delivery, transform_fn=rec, **kw) as loader:
        for batch in loader:
            out.append(kept(batch))
        return loader.delivery, raws, out


def need_shm(delivery: str) -> None:
    if delivery != "shm":
        msg = "this flightd does not serve host slots (DoExchange): waits on the server side of issue 14"
        print(f"\n*** SKIPPING: {msg} ***", file=sys.stderr)
        pytest.skip(msg)


def same(a: list[dict], b: list[dict]) -> None:
    assert len(a) == len(b)
    for i, (x, y) in enumerate(zip(a, b)):
        assert x.keys() == y.keys(), i
        for k in x:
            if isinstance(x[k], torch.Tensor):
                assert x[k].dtype == y[k].dtype and x[k].shape == y[k].shape, (i, k)
                assert x[k].numpy().tobytes() == y[k].numpy().tobytes(), (i, k)  # NaN-safe
            else:
                assert x[k] == y[k], (i, k)


def test_delivery_is_checked():
    with pytest.raises(weft.InvalidArgument, match="delivery 'tcp' must be one of auto, shm, flight"):
        weft.TrainLoader(weft.Recipe(seed=1, batch_size=1, components=[
            weft.Component(weft.Client("grpc://127.0.0.1:1").project("p").branch("main").table("t"))]),
            delivery="tcp")


def test_auto_falls_back_or_takes_slots(small):
    """"auto" gives the same batches as "flight", by whichever path."""
    d_flight, raw_f, out_f = read(small, "flight")
    assert d_flight == "flight"
    d_auto, raw_a, out_a = read(small, "auto")
    assert d_auto in ("shm", "flight")
    assert raw_a == raw_f
    same(out_a, out_f)


def test_shm_insists(small):
    loader = weft.TrainLoader(small, delivery="shm")
    try:
        it = iter(loader)
        first = next(it)
    except weft.Unavailable as e:
        assert "delivery='shm'" in str(e)
        need_shm("flight")
    else:
        assert loader.delivery == "shm" and "_row" in first
    finally:
        loader.close()


def _older_server(monkeypatch) -> list[int]:
    """The stream's header as an older flightd sends it: slots 64 bytes
    over whole pages (its slots were 64-byte aligned only: two steps could
    share a page). The client's check of the header is the real one; the
    slot sizes it was told come back."""
    from weft import _slots

    expect = _slots.Rings.expect
    told: list[int] = []

    def older(rings, ring, slot_bytes):
        told.append(slot_bytes + 64)
        return expect(rings, ring, slot_bytes + 64)

    monkeypatch.setattr(_slots.Rings, "expect", older)
    return told


def test_an_older_servers_ring_is_refused(small, monkeypatch, caplog):
    """A ring whose slots are not whole pages is not mapped: "auto" reads
    the plain stream (the same batches as "flight", none in a ring; said
    once on the "weft" logger), "shm" raises naming the server's slot size."""
    need_shm(read(small, "auto", prefetch=1)[0])
    told = _older_server(monkeypatch)
    _, raw_f, out_f = read(small, "flight")
    before = set(glob.glob(RINGS))
    raws, out = [], []

    def rec(batch):
        raws.append(ipc_bytes(batch))
        return batch

    with caplog.at_level(logging.WARNING, logger="weft"):
        with weft.TrainLoader(small, delivery="auto", transform_fn=rec, prefetch=2) as loader:
            for batch in loader:
                where = _mapping_of(batch["id"].data_ptr()) or ""
                assert not where.startswith("/dev/shm/weft-ring-"), where
                out.append(kept(batch))
            assert loader.delivery == "flight"
    assert told and told[0] % mmap.PAGESIZE
    assert raws == raw_f
    same(out, out_f)
    warned = [r.getMessage() for r in caplog.records if "host slots unavailable" in r.getMessage()]
    assert len(warned) == 1, warned
    assert f"host slots are {told[0]} bytes, not whole pages of {mmap.PAGESIZE}" in warned[0], warned[0]

    loader = weft.TrainLoader(small, delivery="shm", prefetch=1)
    try:
        with pytest.raises(weft.Unavailable) as err:
            next(iter(loader))
    finally:
        loader.close()
    msg = str(err.value)
    assert f"delivery='shm' but the server's host slots are {told[-1]} bytes, not whole pages" in msg, msg
    assert "older than this client" in msg, msg
    for _ in range(500):  # the exchanges ended: flightd unlinks their rings
        if not set(glob.glob(RINGS)) - before:
            break
        time.sleep(0.01)
    assert set(glob.glob(RINGS)) - before == set()


def test_an_older_servers_ring_under_cuda_ipc(gpu_server, tmp_path, monkeypatch):
    """"cuda-ipc" (the fake driver, as test_gpu_delivery): its step's other
    columns come by host slots, whose ring an older server's header makes
    unusable: the loader reads the plain stream and decodes on the CPU
    (the frames of "flight"), and delivery_fallback says why."""
    recipe = next(_video_recipe(gpu_server, tmp_path, "h264_bframes"))
    monkeypatch.setenv(FAKE_DEVICE_SLOTS_ENV, "1")
    _, want, _ = _gpu_read(recipe, "flight")
    told = _older_server(monkeypatch)
    d, got, loader = _gpu_read(recipe, "cuda-ipc")
    assert told and d == "flight"
    fallback = loader.delivery_fallback or ""
    assert fallback.startswith("cuda-ipc: no host slots from step 0 on") and f"{told[0]} bytes" in fallback, fallback
    same(got, want)


def _byte_identical(recipe) -> None:
    d, raw_s, out_s = read(recipe, "shm" if _serves_shm(recipe) else "flight")
    need_shm(d)
    _, raw_f, out_f = read(recipe, "flight")
    assert raw_s == raw_f, "every step's RecordBatch, all columns, byte for byte"
    same(out_s, out_f)


def test_byte_identical_small_rows(small):
    _byte_identical(small)


def test_byte_identical_large_rows(large):
    _byte_identical(large)


def _serves_shm(recipe) -> bool:
    with weft.TrainLoader(recipe, delivery="auto", prefetch=1) as loader:
        next(iter(loader))
        return loader.delivery == "shm"


def _mapping_of(addr: int) -> str | None:
    with open("/proc/self/maps") as f:
        for line in f:
            parts = line.split()
            lo, hi = (int(v, 16) for v in parts[0].split("-"))
            if lo <= addr < hi:
                return parts[5] if len(parts) > 5 else ""
    return None


def test_zero_copy_mode_and_release(small):
    # More steps than the ring has slots (up to 64): the ring is still
    # there while the first steps are read.
    small = weft.Recipe(seed=small.seed, batch_size=small.batch_size, components=small.components, steps=300)
    before = set(glob.glob(RINGS))
    loader = weft.TrainLoader(small, delivery="auto", prefetch=2)
    try:
        for i, batch in enumerate(loader):
            need_shm(loader.delivery)
            for name in ("_row", "id", "_component"):  # numeric, no nulls (x has NaNs: copied)
                where = _mapping_of(batch[name].data_ptr())
                assert where is not None and where.startswith("/dev/shm/weft-ring-"), (name, where)
            rings = set(glob.glob(RINGS)) - before
            assert len(rings) == 1
            ring = rings.pop()
            assert stat.S_IMODE(os.stat(ring).st_mode) == 0o600
            if i == 3:
                break
    finally:
        loader.close()
    # the exchange ended: the server unlinks the ring as the call ends
    for _ in range(500):
        if not os.path.exists(ring):
            break
        time.sleep(0.01)
    assert not os.path.exists(ring)
    rest = list(loader)  # continues at the next step, on a new ring
    assert len(rest) == loader.steps - 4
    assert set(glob.glob(RINGS)) - before == set()


def test_a_corrupt_slot_ends_the_iteration_with_its_step(small, monkeypatch):
    """A step whose slot does not hold a record batch (its bytes
    overwritten in the ring file, after flightd wrote them and before the
    loader reads them) ends the iteration with an error naming the step and
    the slot, not a fallback to another delivery ("the ring cannot be
    mapped", which OSError from pyarrow was taken for before) nor pyarrow's
    bare message; the exchange ends and flightd frees the ring."""
    from weft import _slots

    read_batch = _slots.Ring.read_batch
    corrupted: list = []

    def corrupt_third(ring, desc, schema):
        if len(corrupted) == 2:
            fd = os.open(desc.ring, os.O_RDWR)
            try:
                os.pwrite(fd, b"\xff" * (desc.length - 8), desc.offset + 8)
            finally:
                os.close(fd)
        corrupted.append(desc)
        return read_batch(ring, desc, schema)

    monkeypatch.setattr(_slots.Ring, "read_batch", corrupt_third)
    before = set(glob.glob(RINGS))
    loader = weft.TrainLoader(small, delivery="shm", prefetch=1)
    got = 0
    try:
        with pytest.raises(weft.WeftError) as err:
            for _ in loader:
                got += 1
    finally:
        loader.close()
    assert type(err.value) is weft.WeftError, err.value
    step = corrupted[2]
    assert f"step 2: the step in host slot {step.slot} (generation {step.generation}" in str(err.value)
    assert "is not a record batch of the stream's schema" in str(err.value)
    assert got == 2 and loader.delivery == "shm"
    for _ in range(500):  # the call ended: flightd unlinks the ring
        if not set(glob.glob(RINGS)) - before:
            break
        time.sleep(0.01)
    assert set(glob.glob(RINGS)) - before == set()


def test_another_user_cannot_open_the_ring(small):
    """The ring is the server's user's only: a process of another uid
    cannot open it (run as root here: the child drops to nobody; as
    another user the mode bits are what the zero-copy test checks)."""
    if os.geteuid() != 0:
        msg = "not root: cannot run a child as another uid; the 0600 mode is checked by test_zero_copy_mode_and_release"
        print(f"\n*** SKIPPING: {msg} ***", file=sys.stderr)
        pytest.skip(msg)
    small = weft.Recipe(seed=small.seed, batch_size=small.batch_size, components=small.components, steps=300)
    before = set(glob.glob(RINGS))
    with weft.TrainLoader(small, delivery="auto", prefetch=1) as loader:
        it = iter(loader)  # kept: a dropped iterator ends the exchange
        next(it)
        need_shm(loader.delivery)
        (ring,) = set(glob.glob(RINGS)) - before
        probe = subprocess.run([sys.executable, "-c", textwrap.dedent(f"""
            import os, sys
            os.setgid(65534); os.setuid(65534)
            try:
                open({ring!r}, "rb").close()
            except PermissionError:
                sys.exit(3)
            sys.exit(0)
        """)], capture_output=True, text=True)
        assert probe.returncode == 3, f"uid 65534 opened {ring}: rc {probe.returncode} {probe.stderr}"
        assert open(ring, "rb").read(1) is not None  # and its owner can


def test_resume_equals_flight(small):
    _, _, whole = read(small, "flight")
    loader = weft.TrainLoader(small, delivery="auto")
    it = iter(loader)
    for _ in range(5):
        next(it)
    need_shm(loader.delivery)
    state = loader.state_dict()
    loader.close()
    resumed = weft.TrainLoader(small, delivery="shm")
    resumed.load_state_dict(state)
    same([kept(b) for b in resumed], whole[5:])
    assert resumed.delivery == "shm"
    resumed.close()


def test_four_ranks_concatenate_to_world_one(small):
    need_shm(read(small, "auto", prefetch=1)[0])
    _, _, one = read(small, "flight", world=weft.World(0, 1))
    ranks = [read(small, "shm", world=weft.World(r, 4)) for r in range(4)]
    assert {d for d, _, _ in ranks} == {"shm"}
    for i, step in enumerate(one):
        for k, v in step.items():
            parts = [ranks[r][2][i][k] for r in range(4)]
            if isinstance(v, torch.Tensor):
                # rank r holds positions r, r+4, …
                joined = torch.stack(parts, 1).reshape(v.shape)
                assert joined.numpy().tobytes() == v.numpy().tobytes(), (i, k)
            else:
                joined = [x for group in zip(*parts) for x in group]
                assert joined == v, (i, k)


def test_sigkill_frees_the_ring(small, tmp_path):
    need_shm(read(small, "auto", prefetch=1)[0])
    before = set(glob.glob(RINGS))
    code = textwrap.dedent(f"""
        import os, sys, time, weft
        sys.path.insert(0, {os.path.dirname(__file__)!r})
        c = weft.Client({small.components[0].table.client.uri!r})
        t = c.project("p").branch("main")
        r = weft.Recipe(seed=2048, batch_size=64, components=[
            weft.Component(t.table("a"), weight=0.3), weft.Component(t.table("b"), weight=0.7)])
        loader = weft.TrainLoader(r, delivery="shm", prefetch=1)
        it = iter(loader)
        next(it)
        print("holding", flush=True)
        time.sleep(600)
    """)
    env = dict(os.environ)
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, env=env, text=True)
    try:
        assert proc.stdout.readline().strip() == "holding"
        mine = set(glob.glob(RINGS)) - before
        assert len(mine) == 1
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        ring = mine.pop()
        for _ in range(200):  # the server notices the dead peer (no timing asserted: up to 20 s)
            if not os.path.exists(ring):
                break
            import time
            time.sleep(0.1)
        assert not os.path.exists(ring), "the server frees a killed trainer's ring"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _blob_fixed(batch: pa.RecordBatch) -> pa.RecordBatch:
    """transform_fn: the 100 KiB blobs as fixed_size_binary, on the same memory."""
    i = batch.schema.get_field_index("blob")
    return batch.set_column(i, "blob", weft.fixed_size_binary(batch.column(i), "blob"))


def test_fixed_size_binary_is_a_view_on_the_slot(large):
    """Binary values of one length become uint8 [n, L]: a view on the slot
    on "shm" (no copy), one copy on "flight"; equal bytes on both."""
    loader = weft.TrainLoader(large, delivery="auto", transform_fn=_blob_fixed, prefetch=2)
    shm = []
    try:
        for batch in loader:
            need_shm(loader.delivery)
            blob = batch["blob"]
            assert blob.dtype == torch.uint8 and blob.shape[1:] == (100 * 1024,)
            where = _mapping_of(blob.data_ptr())
            assert where is not None and where.startswith("/dev/shm/weft-ring-"), where
            shm.append(kept(batch))
    finally:
        loader.close()
    with weft.TrainLoader(large, delivery="flight", transform_fn=_blob_fixed) as fl:
        flight = [kept(b) for b in fl]
    same(shm, flight)
    # and against the variable-size column as Python bytes
    _, _, plain = read(large, "flight")
    for s, p in zip(flight, plain):
        assert [bytes(r) for r in s["blob"].numpy()] == p["blob"]


def test_fixed_size_binary_refuses_mixed_lengths():
    with pytest.raises(weft.InvalidArgument, match="2 lengths"):
        weft.fixed_size_binary(pa.array([b"a", b"bc"]), "blob")
    with pytest.raises(weft.InvalidArgument, match="nulls"):
        weft.fixed_size_binary(pa.array([b"ab", None]), "blob")
    sliced = pa.array([b"ab", b"cd", b"ef"]).slice(1)
    t = weft.to_tensors(pa.record_batch([weft.fixed_size_binary(sliced)], names=["x"]))
    assert t["x"].tolist() == [[99, 100], [101, 102]]


def test_small_steps_travel_inline_by_default(flightd_bin, store, tmp_path):
    """With flightd's default --slot-inline-size (64 KiB), steps of a few
    KiB come inline in the host-slot exchange (copies, no ring memory),
    larger ones in slots; the batches equal the Flight stream's."""
    d = Flightd(flightd_bin, store, tmp_path / "default", SMALL)
    (tmp_path / "default").mkdir()
    d.start()
    try:
        c = weft.Client(d.location)
        br = c.create_project("q").branch("main")
        br.table("a").append(make_table(0, 941))
        rng = np.random.default_rng(3)
        br.table("big").append(pa.table({"id": pa.array(range(40), pa.int64()),
                                         "blob": pa.array([rng.bytes(40 << 10) for _ in range(40)], pa.binary())}))
        for table, batch, in_slot in (("a", 64, False), ("big", 4, True)):
            recipe = weft.Recipe(seed=3, batch_size=batch, components=[weft.Component(br.table(table))])
            used, raw_s, out_s = read(recipe, "shm")
            assert used == "shm"
            _, raw_f, out_f = read(recipe, "flight")
            assert raw_s == raw_f
            same(out_s, out_f)
            with weft.TrainLoader(recipe, delivery="shm", prefetch=1) as loader:
                first = next(iter(loader))
                where = _mapping_of(first["id"].data_ptr()) or ""
                assert where.startswith("/dev/shm/weft-ring-") == in_slot, (table, where)
        c.close()
    finally:
        d.stop()


def _rings_locked_by(pid):
    """The ring files in /dev/shm on which process pid holds a flock (/proc/locks)."""
    inodes = set()
    with open("/proc/locks") as f:
        for line in f:
            fields = line.split()
            # "1: FLOCK  ADVISORY  READ  1234 00:19:5678 0 EOF" (a "->" after the number when blocked)
            if "->" in fields:
                fields.remove("->")
            if len(fields) >= 6 and fields[1] == "FLOCK" and fields[4] == str(pid):
                inodes.add(int(fields[5].rsplit(":", 1)[1]))
    rings = set()
    for r in glob.glob(RINGS):
        try:
            if os.stat(r).st_ino in inodes:
                rings.add(r)
        except FileNotFoundError:
            pass
    return rings


def test_a_killed_servers_ring_is_swept_at_restart(server, small):
    """A SIGKILLed flightd cannot unlink its rings: their memory stays in
    /dev/shm. The next flightd to start removes the rings whose owner is
    gone (their flock died with it) and keeps the live ones of other
    servers."""
    other = Flightd(server.binary, server.store, server.workdir / "other", server.args)
    (server.workdir / "other").mkdir()
    other.start()
    try:
        before = set(glob.glob(RINGS))
        oc = weft.Client(other.location)
        br = oc.project("p").branch("main")  # the same store: the other server's view of the tables
        on_other = weft.Recipe(seed=small.seed, batch_size=small.batch_size, steps=300, components=[
            weft.Component(br.table("a"), weight=0.3), weft.Component(br.table("b"), weight=0.7)])
        small = weft.Recipe(seed=small.seed, batch_size=small.batch_size, components=small.components, steps=300)
        live = weft.TrainLoader(on_other, delivery="shm", prefetch=2)
        dead = weft.TrainLoader(small, delivery="shm", prefetch=2)
        try:
            it_live, it_dead = iter(live), iter(dead)
            next(it_live)
            next(it_dead)
            # each server's rings, by the flock it holds on them: other processes on this
            # machine (tests running beside these) may be making rings in /dev/shm meanwhile
            live_rings = _rings_locked_by(other.proc.pid) - before
            dead_rings = _rings_locked_by(server.proc.pid) - before
            assert len(live_rings) == 1 and len(dead_rings) == 1, (live_rings, dead_rings)
            server.kill()
            (ring,) = dead_rings
            assert os.path.exists(ring), "a killed server leaves its ring behind"
            server.start()  # the restart sweeps
            assert not os.path.exists(ring), "the restarted server removed the dead server's ring"
            assert all(os.path.exists(r) for r in live_rings), "a live server's ring is kept"
            assert "removed slot rings of servers that died" in server.log_text()
        finally:
            dead.close()
            live.close()
            oc.close()
    finally:
        other.stop()


def _scribble_views(batch: dict) -> int:
    """Write garbage into every tensor of the batch that is a view on a
    ring, in place; how many."""
    n = 0
    for v in batch.values():
        if isinstance(v, torch.Tensor) and v.numel():
            where = _mapping_of(v.data_ptr())
            if where is not None and where.startswith("/dev/shm/weft-ring-"):
                v.view(torch.uint8).view(-1)[:] = 0xA5
                n += 1
    return n


def test_writes_into_views_stay_private_small_rows(small):
    _writes_stay_private(small, None, 300)  # a ring has at most 64 slots


def test_writes_into_views_stay_private_large_rows(large):
    _writes_stay_private(large, _blob_fixed, 100)  # ~12 slots of ~0.5 MiB


def _writes_stay_private(recipe, fn, steps) -> None:
    """The trainer writes into every view tensor of every step, over more
    steps than the ring has slots (each slot is used several times): every
    step still arrives byte-identical to "flight" (no written page survives
    its release), and the writes never reach the server (the next
    ring's steps, and the IPC bytes the transform saw, are the server's)."""
    recipe = weft.Recipe(seed=recipe.seed, batch_size=recipe.batch_size, components=recipe.components, steps=steps)
    raws: list[bytes] = []

    def rec(batch):
        raws.append(ipc_bytes(batch))
        return fn(batch) if fn else batch

    shm, written = [], 0
    loader = weft.TrainLoader(recipe, delivery="auto", transform_fn=rec, prefetch=3)
    try:
        for batch in loader:
            need_shm(loader.delivery)
            shm.append(kept(batch))
            written += _scribble_views(batch)
    finally:
        loader.close()
    assert len(shm) == steps
    assert written >= steps * 2, f"only {written} view tensors were written into"
    flight_raws: list[bytes] = []

    def rec_f(batch):
        flight_raws.append(ipc_bytes(batch))
        return fn(batch) if fn else batch

    with weft.TrainLoader(recipe, delivery="flight", transform_fn=rec_f) as fl:
        flight = [kept(b) for b in fl]
    assert raws == flight_raws, "a step's RecordBatch on the slot differs from the stream's"
    same(shm, flight)


def test_in_place_ops_in_a_trainer_process(small):
    """`batch["id"] -= 1`, `x.div_(255)` on view tensors: the trainer runs
    on (it died with SIGSEGV on a read-only mapping), in a child process."""
    need_shm(read(small, "auto", prefetch=1)[0])
    code = textwrap.dedent(f"""
        import torch, weft
        c = weft.Client({small.components[0].table.client.uri!r})
        t = c.project("p").branch("main")
        r = weft.Recipe(seed=2048, batch_size=64, steps=100, components=[
            weft.Component(t.table("a"), weight=0.3), weft.Component(t.table("b"), weight=0.7)])
        n = 0
        with weft.TrainLoader(r, delivery="shm") as loader:
            for batch in loader:
                before = batch["id"].clone()
                batch["id"] -= 1
                batch["_row"].add_(1)
                batch["id"].div_(3, rounding_mode="floor")
                assert torch.equal(batch["id"], torch.div(before - 1, 3, rounding_mode="floor"))
                n += 1
        print(loader.delivery, n)
    """)
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=dict(os.environ), timeout=300)
    assert p.returncode == 0, f"the trainer exited with {p.returncode}: {p.stderr[-4000:]}"
    assert p.stdout.split() == ["shm", "100"]
