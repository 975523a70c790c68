"""The `weft` Python client (python/weft) against a real flightd, on the fs
store and on MinIO: tables from pyarrow and pandas, ScanDataset over ranks
and DataLoader workers, TrainLoader's mix guarantees, resume from a saved
state, map workers, errors, and a restarted server mid-stream."""

import json
import math
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pytest
import torch
from torch.utils.data import DataLoader

import weft
from conftest import SMALL, Flightd, free_port
from weftflight import make_table

HERE = Path(__file__).resolve().parent


@pytest.fixture
def wc(server):
    c = weft.Client(server.location)
    yield c
    c.close()


@pytest.fixture
def robots(wc):
    """Project p with tables a (941 rows, ids 0..940) and b (2,100 rows,
    ids 0..2099): ids equal row ordinals."""
    br = wc.create_project("p").branch("main")
    br.table("a").append(make_table(0, 941).to_batches(max_chunksize=400))
    br.table("b").append(make_table(0, 2100))
    return br


def recipe(br, seed=2048, batch=20, weights=(0.3, 0.7), **kw):
    return weft.Recipe(seed=seed, batch_size=batch, components=[
        weft.Component(br.table("a"), weight=weights[0]),
        weft.Component(br.table("b"), weight=weights[1])], **kw)


def samples(batch):
    return list(zip(batch["_component"].tolist(), batch["_row"].tolist()))


def read_all(loader, limit=None):
    out = []
    for batch in loader:
        out.append(samples(batch))
        if limit is not None and len(out) >= limit:
            break
    return out


# ------------------------------------------------------------------ tables


def test_append_pyarrow_and_pandas_read_back(wc):
    proj = wc.create_project("t")
    br = proj.branch("main")
    table = make_table(0, 1200)
    c1 = br.table("x").append(table)  # a pyarrow Table
    c2 = br.table("x").append(make_table(1200, 300).to_batches()[0])  # a RecordBatch
    c3 = br.table("x").append(iter(make_table(1500, 500).to_batches(max_chunksize=128)))  # an iterable of batches
    assert len({c1, c2, c3}) == 3 and all(len(c) == 64 for c in (c1, c2, c3))
    back = br.table("x").read()
    assert back.equals(make_table(0, 2000))
    assert br.table("x").schema == table.schema
    assert [c.id for c in br.table("x").log()] == [c3, c2, c1]
    assert proj.branches() == {"main": c3}

    df = pd.DataFrame({"id": range(10), "label": [f"l{i}" for i in range(10)], "score": [i / 4 for i in range(10)]})
    c4 = br.table("df").append(df)
    back = br.table("df").read()
    pd.testing.assert_frame_equal(back.to_pandas(), df)
    assert br.table("df").read(columns=["score", "id"]).column_names == ["score", "id"]
    # The log of x does not list the commit that only wrote df.
    assert c4 not in [c.id for c in br.table("x").log()]
    assert br.table("x").num_rows() == 2000
    assert wc.tables("t") == {("t", "x"): 2000, ("t", "df"): 10}


def test_pinned_commit_reads_and_is_read_only(wc):
    br = wc.create_project("t").branch("main")
    first = br.table("x").append(make_table(0, 100))
    br.table("x").append(make_table(100, 50))
    pinned = wc.project("t").commit(first[:12]).table("x")
    assert pinned.read().num_rows == 100
    assert br.table("x").read().num_rows == 150
    with pytest.raises(weft.InvalidArgument, match="read-only"):
        pinned.append(make_table(0, 1))
    exp = wc.project("t").create_branch("exp", first)
    exp.table("x").append(make_table(500, 10))
    assert exp.table("x").read().num_rows == 110
    assert br.table("x").read().num_rows == 150


def test_errors_name_the_problem(wc, robots, server):
    port = free_port()
    with pytest.raises(weft.Unavailable, match=f"127.0.0.1:{port}"):
        weft.Client(f"grpc://127.0.0.1:{port}").create_project("x")
    with pytest.raises(weft.NotFound, match='table not found: "nope"'):
        robots.table("nope").schema
    with pytest.raises(weft.NotFound, match="nope"):
        weft.TrainLoader(weft.Recipe(seed=1, batch_size=4, components=[weft.Component(robots.table("nope"))])).run_id
    with pytest.raises(weft.AlreadyExists, match="already exists"):
        wc.create_project("p")
    with pytest.raises(weft.InvalidArgument, match="weight -1 must be a positive"):
        weft.TrainLoader(recipe(robots, weights=(-1, 1))).run_id
    with pytest.raises(weft.InvalidArgument, match="not finite"):
        recipe(robots, weights=(math.nan, 1))
    with pytest.raises(weft.InvalidArgument, match="divide"):
        len(weft.TrainLoader(recipe(robots, batch=20), world=weft.World(rank=0, world_size=3)))
    with pytest.raises(weft.InvalidArgument, match="rank 2 must be in 0..1"):
        weft.World(rank=2, world_size=2)
    with pytest.raises(weft.InvalidArgument, match="not a TrainLoader.state_dict"):
        weft.TrainLoader(recipe(robots)).load_state_dict({"step": 3})
    with pytest.raises(weft.NotFound, match="run"):
        weft.TrainLoader(recipe(robots)).load_state_dict({"run": "0" * 64, "step": 3})
    with pytest.raises(weft.InvalidArgument, match="cannot write a str"):
        robots.table("a").append("rows")
    with pytest.raises(weft.InvalidArgument):
        robots.table("a").append(pa.table({"other": [1, 2]}))  # schema mismatch: the server names the column
    if not torch.cuda.is_available():
        with pytest.raises(weft.InvalidArgument, match="cuda"):
            weft.TrainLoader(recipe(robots), device="cuda")


# ------------------------------------------------------------------ scans


def test_scan_dataset_every_row_once_over_ranks_and_workers(wc):
    br = wc.create_project("s").branch("main")
    n = 3210  # 7 row groups of ≤ 500 rows: 7 endpoints (the server runs with one per row group)
    br.table("x").append(make_table(0, n))
    scan = br.table("x").scan_request(["id", "emb", "name", "x"])
    seen = Counter()
    for rank in range(2):
        ds = weft.ScanDataset(scan, batch_size=64, world=weft.World(rank=rank, world_size=2))
        assert len(ds.plan.tickets) == 7
        for batch in DataLoader(ds, batch_size=None, num_workers=2, timeout=60):
            assert set(batch) == {"id", "emb", "name", "x"}
            assert batch["id"].dtype == torch.int64 and batch["emb"].dtype == torch.float32
            assert batch["emb"].shape == (len(batch["id"]), 4) and len(batch["id"]) <= 64
            assert isinstance(batch["name"], list) and batch["name"][0] == f"row-{batch['id'][0]}"
            assert torch.equal(batch["emb"][:, 0], batch["id"].float())
            # x has nulls (every 7th id from 3): floats become NaN
            for i, x in zip(batch["id"].tolist(), batch["x"].tolist()):
                assert math.isnan(x) if i % 7 == 3 else x == i * 0.5
            seen.update(batch["id"].tolist())
    assert sorted(seen) == list(range(n)) and set(seen.values()) == {1}


def test_scan_dataset_batches_and_pinning(wc):
    br = wc.create_project("s").branch("main")
    br.table("x").append(make_table(0, 1000))
    ds = weft.ScanDataset(br.table("x").scan_request(["id"]), batch_size=300)
    br.table("x").append(make_table(1000, 500))  # after planning: not seen
    sizes = [len(b["id"]) for b in ds]
    assert sizes == [300, 300, 300, 100]
    ds = weft.ScanDataset(br.table("x").scan_request(["id"]), batch_size=300, drop_last=True)
    assert [len(b["id"]) for b in ds] == [300] * 5


def _forked_call(uri, out):
    try:
        weft.Client(uri).project("s").branches()
        out.put("no error")
    except weft.WeftError as e:
        out.put(str(e))


def test_forked_child_fails_clearly_outside_scans(wc):
    """gRPC cannot run in a child forked after the parent used it: calls
    other than ScanDataset's relayed reads say so instead of hanging."""
    import multiprocessing

    wc.create_project("s")
    ctx = multiprocessing.get_context("fork")
    out = ctx.Queue()
    child = ctx.Process(target=_forked_call, args=(wc.uri, out))
    child.start()
    msg = out.get(timeout=60)
    child.join(60)
    assert "forked" in msg and "spawn" in msg, msg
    assert wc.project("s").branches()  # the parent's client still works


# ------------------------------------------------------------------ mixes


def test_train_loader_shares_and_ranks(robots):
    r = recipe(robots, batch=20, steps=60)
    one = weft.TrainLoader(r, world=weft.World(0, 1))
    assert len(one) == 60
    ref = read_all(one)
    assert len(ref) == 60 and len(one) == 0 and read_all(one) == []
    # exact shares: 0.3 * 20 = 6 of a, 14 of b, in every batch
    for batch in ref:
        counts = Counter(c for c, _ in batch)
        assert counts == {0: 6, 1: 14}
    for w in (2, 4):
        ranks = [read_all(weft.TrainLoader(r, world=weft.World(rank, w))) for rank in range(w)]
        for step in range(60):
            for rank in range(w):
                assert ranks[rank][step] == ref[step][rank::w], (w, rank, step)
    # a fresh resolution of the same recipe at the same commits is the same run
    assert weft.TrainLoader(r).run_id == one.run_id


def test_train_loader_batch_contents(robots):
    loader = weft.TrainLoader(recipe(robots, batch=10, weights=(1, 3), steps=5), world=weft.World(1, 2))
    for batch in loader:
        assert set(batch) == {"id", "name", "blob", "x", "emb", "_component", "_row"}
        assert batch["_component"].dtype == torch.int32 and batch["_row"].dtype == torch.int64
        assert torch.equal(batch["id"], batch["_row"])  # the tables' ids are their row ordinals
        assert batch["emb"].shape == (5, 4)
        assert batch["name"] == [f"row-{i}" for i in batch["id"].tolist()]
        assert all(isinstance(b, bytes) for b in batch["blob"])
    assert loader.state_dict()["step"] == 5


def test_resume_from_saved_state_on_other_world_after_commit(robots, tmp_path):
    r = recipe(robots, batch=20, steps=40)
    ref = read_all(weft.TrainLoader(r, world=weft.World(0, 1)))
    loader = weft.TrainLoader(r, world=weft.World(rank=1, world_size=2))
    got = []
    for step, batch in enumerate(loader):
        got.append(samples(batch))
        if step == 6:
            state = loader.state_dict()
            break
    assert got == [ref[s][1::2] for s in range(7)]
    assert state["step"] == 7 and state["run"] == loader.run_id
    torch.save(state, tmp_path / "loader.pt")

    robots.table("a").append(make_table(941, 500))  # the branch moves on
    assert weft.TrainLoader(r).run_id != loader.run_id, "the recipe resolved now is a new run"

    for w in (4, 1):
        for rank in range(w):
            resumed = weft.TrainLoader(r, world=weft.World(rank=rank, world_size=w))
            resumed.load_state_dict(torch.load(tmp_path / "loader.pt"))
            assert resumed.run_id == loader.run_id and len(resumed) == 40 - 7
            rest = read_all(resumed)
            assert rest == [ref[s][rank::w] for s in range(7, 40)], (w, rank)

    other = recipe(robots, batch=20, steps=40, weights=(0.5, 0.5))
    mismatched = weft.TrainLoader(other)
    own_run = mismatched.run_id
    with pytest.raises(weft.InvalidArgument, match="weights"):
        mismatched.load_state_dict(state)
    assert mismatched.run_id == own_run and mismatched.next_step == 0, "a rejected state changes nothing"
    with pytest.raises(weft.InvalidArgument, match="seed 7 \\(run: 2048\\)"):
        weft.TrainLoader(recipe(robots, seed=7, batch=20, steps=40)).load_state_dict(state)
    swapped = weft.Recipe(seed=2048, batch_size=20, steps=40, components=[
        weft.Component(robots.table("b"), weight=0.3), weft.Component(robots.table("a"), weight=0.7)])
    with pytest.raises(weft.InvalidArgument, match="component 0 is p/main/b \\(run: p/main/a\\)"):
        weft.TrainLoader(swapped).load_state_dict(state)
    same_ratio = recipe(robots, batch=20, steps=40, weights=(3, 7))
    weft.TrainLoader(same_ratio).load_state_dict(state)  # 3/7 is 0.3/0.7


def add_double(batch):
    """A transform_fn for the map workers (module level: picklable)."""
    ids = batch.column("id")
    return batch.append_column("double", pa.compute.multiply(ids, 2))


def fail_on_big(batch):
    if max(batch.column("id").to_pylist()) > 100:
        raise ZeroDivisionError("a row past 100")
    return batch


def test_map_workers_same_batches_and_errors(robots):
    r = recipe(robots, batch=20, steps=30)
    plain = [(samples(b), b["double"].tolist()) for b in weft.TrainLoader(r, transform_fn=add_double)]
    with weft.TrainLoader(r, transform_fn=add_double, map_workers=2) as pooled:
        mapped = [(samples(b), b["double"].tolist()) for b in pooled]
    assert mapped == plain and len(plain) == 30
    assert all(d == [2 * row for _, row in s] for s, d in plain)
    for workers in (0, 2):
        with weft.TrainLoader(r, transform_fn=fail_on_big, map_workers=workers) as loader:
            with pytest.raises(weft.TransformError) as err:
                list(loader)
        text = str(err.value)
        assert "ZeroDivisionError" in text and "a row past 100" in text and "fail_on_big" in text, text


def test_prefetch_reads_ahead(robots):
    loader = weft.TrainLoader(recipe(robots, batch=20, steps=30), prefetch=5)
    it = iter(loader)
    next(it)
    fetch = loader._active
    for _ in range(200):
        if fetch.out.qsize() == 5:
            break
        fetch.thread.join(0.01)
    assert fetch.out.qsize() == 5, "the background thread holds `prefetch` steps ready"
    assert fetch.next in (6, 7), "5 queued, maybe one more waiting to be queued"
    assert loader.state_dict()["step"] == 1
    it.close()
    assert not fetch.thread.is_alive()


def test_world_from_environment(robots, monkeypatch):
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "4")
    loader = weft.TrainLoader(recipe(robots, steps=3))
    assert loader.world == weft.World(1, 4)
    ref = read_all(weft.TrainLoader(recipe(robots, steps=3), world=weft.World(0, 1)))
    assert read_all(loader) == [b[1::4] for b in ref]


def test_restarted_server_mid_stream(flightd_bin, store, tmp_path):
    """kill -9 the server mid-iteration and start it again on the same
    address: the loader re-plans from its next step and the batches are the
    run's."""
    port = free_port()
    d = Flightd(flightd_bin, store, tmp_path, SMALL + ("--addr", f"127.0.0.1:{port}"))
    d.start()
    try:
        c = weft.Client(d.location)
        br = c.create_project("p").branch("main")
        br.table("a").append(make_table(0, 941))
        br.table("b").append(make_table(0, 2100))
        r = recipe(br, batch=20, steps=3000)  # ~6 MB: far more than gRPC buffers in flight
        ref = read_all(weft.TrainLoader(r))
        loader = weft.TrainLoader(r, prefetch=2, retries=5)
        got = []
        for step, batch in enumerate(loader):
            got.append(samples(batch))
            if step == 10:
                d.kill()
                d.start()
        assert loader._replans >= 1, "the stream was cut and planned again"
        assert got == ref
    finally:
        d.stop()


DIST_WORKER = HERE / "dist_worker.py"


def test_torch_distributed_gloo_two_processes(server, robots, tmp_path):
    """Two real processes joined by torch.distributed (gloo): each reads its
    rank (world from torch.distributed), and the gathered union is the W=1 run."""
    ref = read_all(weft.TrainLoader(recipe(robots, batch=20, steps=25), world=weft.World(0, 1)))
    port = free_port()
    out = tmp_path / "gathered.json"
    procs = []
    for rank in range(2):
        env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE="2",
                   PYTHONPATH=os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]))
        procs.append(subprocess.Popen([sys.executable, str(DIST_WORKER), server.location, "p", str(out)],
                                      env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT))
    logs = [p.communicate(timeout=120)[0].decode() for p in procs]
    assert [p.returncode for p in procs] == [0, 0], "\n".join(logs)
    gathered = json.loads(out.read_text())
    assert [g["rank"] for g in gathered] == [0, 1]
    assert all(g["world_size"] == 2 for g in gathered)
    assert gathered[0]["run"] == gathered[1]["run"]
    for step in range(25):
        union = [None] * 20
        for g in gathered:
            union[g["rank"]::2] = [tuple(s) for s in g["batches"][step]]
        assert union == ref[step], step


# ------------------------------------------------------------------ README


def readme_quickstart():
    text = (HERE.parents[1] / "README.md").read_text()
    section = text.split("## Python quickstart", 1)[1].split("\n## ", 1)[0]
    blocks = section.split("```python\n")[1:]
    assert blocks, "README's Python quickstart has a python block"
    return "\n".join(b.split("```", 1)[0] for b in blocks)


def test_readme_python_quickstart(server, tmp_path):
    """Runs the README's Python quickstart, as written, against a fresh
    server (only its address is changed), and checks what it prints."""
    code = readme_quickstart().replace("grpc://127.0.0.1:8815", server.location)
    script = tmp_path / "quickstart.py"
    script.write_text(code)
    run = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=180)
    assert run.returncode == 0, run.stdout + run.stderr
    lines = run.stdout.splitlines()
    expected = [l.split("# prints: ", 1)[1].strip() for l in code.splitlines() if "# prints: " in l]
    assert expected, "the quickstart says what it prints"
    for want in expected:
        assert any(want in line for line in lines), f"{want!r} not in output:\n{run.stdout}"


def test_cuda_device_pinned_copies(robots):
    """device="cuda": the same batches, on the GPU. Needs CUDA; this machine
    class has none, so it is skipped loudly there."""
    if not torch.cuda.is_available():
        msg = "no CUDA device here: the device='cuda' path (pinned memory, non_blocking copies) is NOT tested"
        print(f"\n*** SKIPPING {msg} ***", file=sys.stderr)
        pytest.skip(msg)
    r = recipe(robots, batch=20, steps=10)
    cpu = list(weft.TrainLoader(r))
    for want, got in zip(cpu, weft.TrainLoader(r, device="cuda")):
        assert got["_row"].is_cuda and got["emb"].is_cuda
        assert torch.equal(got["_row"].cpu(), want["_row"]) and torch.equal(got["emb"].cpu(), want["emb"])
        assert got["name"] == want["name"]
