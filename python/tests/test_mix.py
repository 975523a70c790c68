"""Training runs over Flight (DESIGN.md, "Sampler: the determinism contract"
and the `recipe` / `run` rows of "Flight protocol"), driven with
pyarrow.flight against a real flightd, on the fs store and on MinIO."""

import json
import signal
from collections import Counter

import pyarrow as pa
import pyarrow.flight as fl
import pytest

from test_flight import expect
from weftflight import action, make_table, put


def cmd(client, body):
    return client.get_flight_info(fl.FlightDescriptor.for_command(json.dumps(body).encode()))


def recipe(project="p", seed=2048, batch=64, weights=(0.3, 0.7), **extra):
    r = {"seed": seed, "batch_size": batch, "components": [
        {"project": project, "table": "a", "weight": weights[0]},
        {"project": project, "table": "b", "weight": weights[1]},
    ]}
    r.update(extra)
    return r


def read_rank(client, endpoint):
    """One rank's stream: [(run, step, [(component, row)])], checking that
    every row's id is its _row (the test tables number their rows)."""
    out = []
    for chunk in client.do_get(endpoint.ticket):
        meta = json.loads(chunk.app_metadata.to_pybytes())
        batch = chunk.data
        comps = batch.column("_component").to_pylist()
        rows = batch.column("_row").to_pylist()
        assert batch.column("id").to_pylist() == rows, "a row is the row its _row names"
        assert batch.schema.field("_component").type == pa.int32()
        assert batch.schema.field("_row").type == pa.int64()
        out.append((meta["run"], meta["step"], list(zip(comps, rows))))
    return out


def read_run(client, info):
    """Every rank of info: per rank, per step, the samples."""
    return [read_rank(client, ep) for ep in info.endpoints]


@pytest.fixture
def tables(client):
    action(client, "create_project", {"project": "p"})
    put(client, ["p", "main", "a"], make_table(0, 941), batch_rows=400)
    put(client, ["p", "main", "b"], make_table(0, 2100), batch_rows=700)


def test_recipe_run_ranks_and_resume(client, server, store, tables):
    info = cmd(client, {"recipe": recipe(), "world_size": 1})
    rec = json.loads(info.app_metadata)
    assert sorted(rec) == ["batch_size", "components", "format", "run", "seed", "shuffle", "steps"]
    assert rec["format"] == 1 and len(rec["run"]) == 64 and rec["seed"] == 2048
    assert rec["steps"] == (941 + 2100 + 63) // 64
    a, b = rec["components"]
    assert (a["table"], a["ref"], a["rows"], a["weight"]) == ("a", "main", 941, 0.3)
    assert sum(a["blocks"]) == 941 and len(a["commit"]) == 64
    assert info.schema.names == ["id", "name", "blob", "x", "emb", "_component", "_row"]
    assert info.total_records == rec["steps"] * 64 and len(info.endpoints) == 1

    [w1] = read_run(client, info)
    assert [s[1] for s in w1] == list(range(rec["steps"]))
    for run, step, samples in w1:
        assert run == rec["run"]
        n = Counter(c for c, _ in samples)
        assert n[0] in (19, 20) and n[1] in (44, 45) and len(samples) == 64, (step, n)
    w1 = [s[2] for s in w1]

    # W = 2, 4, 8: rank r's rows at each step are positions r, r+W, … of the W = 1 batch.
    for w in (2, 4, 8):
        info = cmd(client, {"recipe": recipe(), "world_size": w})
        assert json.loads(info.app_metadata)["run"] == rec["run"]
        assert len(info.endpoints) == w
        for r, rank in enumerate(read_run(client, info)):
            assert len(rank) == len(w1)
            for step, (_, _, samples) in enumerate(rank):
                assert samples == w1[step][r::w], (w, r, step)

    # Resume by run id from any step on any W; also on a NEW process after kill -9.
    info = cmd(client, {"run": rec["run"], "world_size": 4, "start_step": 30})
    stream = client.do_get(info.endpoints[2].ticket)
    stream.read_chunk()  # mid-stream …
    assert server.kill() == -signal.SIGKILL  # … the server dies
    server.start()
    fresh = server.client()
    try:
        for start, w in ((30, 8), (0, 2), (rec["steps"] - 1, 4)):
            info = cmd(fresh, {"run": rec["run"], "world_size": w, "start_step": start})
            assert info.total_records == (rec["steps"] - start) * 64
            for r, rank in enumerate(read_run(fresh, info)):
                assert [s[1] for s in rank] == list(range(start, rec["steps"]))
                for k, (_, _, samples) in enumerate(rank):
                    assert samples == w1[start + k][r::w]
        # An end step.
        info = cmd(fresh, {"run": rec["run"], "world_size": 2, "start_step": 3, "end_step": 5})
        assert [s[1] for s in read_rank(fresh, info.endpoints[1])] == [3, 4]

        # Appending rows mid-run changes nothing in the run; the recipe resolved
        # afterwards is a new run.
        put(fresh, ["p", "main", "a"], make_table(941, 100))
        [after] = read_run(fresh, cmd(fresh, {"run": rec["run"], "world_size": 1}))
        assert [s[2] for s in after] == w1
        again = json.loads(cmd(fresh, {"recipe": recipe(), "world_size": 1}).app_metadata)
        assert again["run"] != rec["run"] and again["components"][0]["rows"] == 1041
    finally:
        fresh.close()


def test_first_epoch(client):
    """A component's first epoch has no repeated row, covers every row, and
    is shuffled, also for a table of a few thousand rows in one row group."""
    action(client, "create_project", {"project": "p"})
    n = 4000
    put(client, ["p", "main", "one"], make_table(0, n), batch_rows=n)  # server: row groups of 500
    r = {"seed": 7, "batch_size": 100, "shuffle": {"buffer_rows": 8192},
         "components": [{"project": "p", "table": "one", "columns": ["id"]}]}
    info = cmd(client, {"recipe": r, "world_size": 4})
    order = []
    for step in zip(*read_run(client, info)):  # ranks side by side
        batch = [None] * 100
        for rank, (_, _, samples) in enumerate(step):
            batch[rank::4] = samples
        order += [row for _, row in batch]
    assert len(order) == n
    assert sorted(order) == list(range(n)), "the first epoch is a permutation of the rows"
    # Shuffled: rows come in no order related to their ordinals.
    mean = (n - 1) / 2
    cov = sum((i - mean) * (v - mean) for i, v in enumerate(order)) / n
    var = sum((i - mean) ** 2 for i in range(n)) / n
    assert abs(cov / var) < 0.1
    assert sum(1 for i in range(1, n) if order[i] == order[i - 1] + 1) < n / 20


BAD = [
    ("zero weight", "InvalidArgument", "component 1 (p/b): weight 0",
     {"recipe": recipe(weights=(1, 0)), "world_size": 1}),
    ("negative weight", "InvalidArgument", "weight -1", {"recipe": recipe(weights=(-1, 1))}),
    ("zero batch", "InvalidArgument", "batch_size 0", {"recipe": recipe(batch=0)}),
    ("unknown recipe field", "InvalidArgument", 'unknown field "sed"', {"recipe": recipe(sed=1)}),
    ("unknown command field", "InvalidArgument", 'unknown field "world"', {"recipe": recipe(), "world": 2}),
    ("world size zero", "InvalidArgument", "world_size 0", {"recipe": recipe(), "world_size": 0}),
    ("world size not dividing", "InvalidArgument", "world_size 3 does not divide batch_size 64",
     {"recipe": recipe(), "world_size": 3}),
    ("unknown project", "NotFound", "nope", {"recipe": recipe(project="nope")}),
    ("unknown table", "NotFound", '"c"',
     {"recipe": {"seed": 1, "batch_size": 8, "components": [{"project": "p", "table": "c"}]}}),
    ("unknown ref", "NotFound", "nope",
     {"recipe": {"seed": 1, "batch_size": 8, "components": [{"project": "p", "ref": "nope", "table": "a"}]}}),
    ("unknown column", "InvalidArgument", '"nope" is not a column',
     {"recipe": {"seed": 1, "batch_size": 8, "components": [{"project": "p", "table": "a", "columns": ["nope"]}]}}),
    ("column type differs", "InvalidArgument", 'component 1 (p/s): column "id" is utf8 there but int64 in component 0',
     {"recipe": {"seed": 1, "batch_size": 8, "components": [
         {"project": "p", "table": "a", "columns": ["id"]}, {"project": "p", "table": "s"}]}}),
    ("unknown run", "NotFound", "no run 0000", {"run": "0" * 64, "world_size": 1}),
    ("malformed run id", "InvalidArgument", "64 lowercase hex digits", {"run": "abc"}),
    ("start step past the end", "InvalidArgument", "start_step 99 is not in 0..",
     lambda run: {"run": run, "start_step": 99}),
    ("negative start step", "InvalidArgument", "start_step -1", lambda run: {"run": run, "start_step": -1}),
]


@pytest.mark.parametrize("name,code,names,body", BAD, ids=[b[0] for b in BAD])
def test_bad_input(client, store, name, code, names, body):
    """Each bad input gets its gRPC code with a message naming the problem,
    and leaves the store as it was."""
    action(client, "create_project", {"project": "p"})
    put(client, ["p", "main", "a"], make_table(0, 300))
    put(client, ["p", "main", "b"], make_table(0, 300))
    put(client, ["p", "main", "s"], pa.table({"id": pa.array(["x"], pa.string())}))
    run = json.loads(cmd(client, {"recipe": recipe(), "world_size": 1}).app_metadata)["run"]
    if callable(body):
        body = body(run)
    before = store.snapshot()
    message = expect(code, lambda: cmd(client, body))
    assert names in message, message
    assert store.snapshot() == before, "a rejected call changed the store"


def test_wide_rows(client, tables):
    """Steps far above gRPC's 4 MiB default come as several messages, which
    weft's reader (TrainLoader's) joins into whole steps."""
    from weft._torch import read_steps

    big = pa.table({"id": pa.array(range(200), pa.int64()),
                    "img": pa.array([bytes([i % 251]) * (100 << 10) for i in range(200)], pa.binary())})
    put(client, ["p", "main", "imgs"], big, batch_rows=50)
    r = {"seed": 1, "batch_size": 64, "components": [{"project": "p", "table": "imgs"}]}
    info = cmd(client, {"recipe": r, "world_size": 1})
    n = 0
    for _, batch in read_steps(client.do_get(info.endpoints[0].ticket), 0):
        assert batch.num_rows == 64 and batch.nbytes > 6 << 20
        for i, row in zip(batch.column("id").to_pylist(), batch.column("img").to_pylist()):
            assert row == bytes([i % 251]) * (100 << 10)
        n += 1
    assert n == json.loads(info.app_metadata)["steps"]


def test_big_steps_in_parts(client, tables):
    """A step of 64 rows of 1 MiB (64 MiB) comes as several messages of at
    most ~3 MiB, each {"run","step","part","parts"}; weft reassembles them
    (the reader TrainLoader uses) into exactly the step's rows."""
    from weft._torch import read_steps

    blob = (1 << 20) + 17
    n = 96
    ids = pa.array(range(n), pa.int64())
    blobs = pa.array([bytes([i % 251]) * blob + i.to_bytes(8, "little") for i in range(n)], pa.binary())
    put(client, ["p", "main", "big"], pa.table({"id": ids, "blob": blobs}), batch_rows=16)
    info = cmd(client, {"recipe": {"seed": 1, "batch_size": 64, "components": [{"project": "p", "table": "big"}]},
                        "world_size": 1})
    # The raw stream: parts in order, every message under 4 MiB.
    metas, sizes = [], []
    for chunk in client.do_get(info.endpoints[0].ticket):
        metas.append(json.loads(chunk.app_metadata.to_pybytes()))
        sizes.append(chunk.data.nbytes)
    assert max(sizes) < 4 << 20
    assert all("parts" in m for m in metas), metas[:3]
    first = [m for m in metas if m["step"] == 0]
    assert [m["part"] for m in first] == list(range(first[0]["parts"]))
    assert first[0]["parts"] > 16
    # Reassembled: whole steps, the rows' values exact.
    steps = list(read_steps(client.do_get(info.endpoints[0].ticket), 0))
    assert [s for s, _ in steps] == [0, 1]
    seen = []
    for _, batch in steps:
        assert batch.num_rows == 64
        got_ids = batch.column("id").to_pylist()
        assert batch.column("_row").to_pylist() == got_ids
        for i, v in zip(got_ids, batch.column("blob").to_pylist()):
            assert v == blobs[i].as_py(), f"row {i}"
        seen += got_ids
    assert sorted(seen[:64]) == sorted(set(seen[:64]))
