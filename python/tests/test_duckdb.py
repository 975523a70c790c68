"""DuckDB over weft's Arrow readers (python/weft/_arrow.py), against a real
flightd on fs and MinIO: ``scan.to_arrow_reader()`` and a rank's
``loader.to_arrow_reader()`` queried in DuckDB give exactly what pyarrow's
own read of the same endpoints gives."""

import json

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.flight as fl
import pytest

import weft

duckdb = pytest.importorskip("duckdb", reason="duckdb is in python/requirements-test.txt: run `make venv`")

ROWS = 4001
EPISODES = 37


def episodes_table(start, n):
    ids = pa.array(range(start, start + n), pa.int64())
    return pa.table({
        "id": ids,
        "episode": pc.divide(ids, 113),  # integer division: runs of 113 rows
        "reward": pc.multiply(pc.cast(pc.bit_wise_and(ids, 15), pa.float64()), 0.25),  # exact in binary
        "task": pa.array([f"task-{i % EPISODES}" for i in range(start, start + n)]),
        "obs": pa.array([[float(i), i + 0.5] for i in range(start, start + n)], pa.list_(pa.float32(), 2)),
    })


@pytest.fixture
def wc(server):
    c = weft.Client(server.location)
    yield c
    c.close()


@pytest.fixture
def branch(wc):
    br = wc.create_project("robotics").branch("main")
    br.table("grasps").append(episodes_table(0, ROWS).to_batches(max_chunksize=900))
    br.table("other").append(episodes_table(100000, 1500).to_batches(max_chunksize=700))
    return br


def flight_read(server, cmd):
    """pyarrow's own read: GetFlightInfo, then DoGet of every endpoint in order."""
    c = fl.connect(server.location)
    try:
        info = c.get_flight_info(fl.FlightDescriptor.for_command(json.dumps(cmd).encode()))
        tables = [c.do_get(ep.ticket).read_all() for ep in info.endpoints]
        return info, tables
    finally:
        c.close()


def by_episode(t):
    return t.group_by("episode").aggregate([("reward", "sum"), ("reward", "count"), ("id", "max")]) \
        .sort_by("episode")


def test_scan_reader_in_duckdb(server, branch):
    scan = branch.table("grasps").scan_request(["id", "episode", "reward", "task", "obs"])
    info, tables = flight_read(server, scan.command())
    assert len(info.endpoints) > 1, "several endpoints: the reader chains them"
    want = pa.concat_tables(tables)

    reader = scan.to_arrow_reader()
    assert isinstance(reader, pa.RecordBatchReader)
    assert reader.schema.equals(info.schema)
    got = duckdb.sql("select episode, sum(reward) as s, count(*) as n, max(id) as m "
                     "from reader group by 1 order by 1").to_arrow_table()
    expect = by_episode(want)
    assert got.num_rows == -(-ROWS // 113)
    assert got.column("episode").to_pylist() == expect.column("episode").to_pylist()
    assert got.column("s").to_pylist() == expect.column("reward_sum").to_pylist()
    assert got.column("n").to_pylist() == expect.column("reward_count").to_pylist()
    assert got.column("m").to_pylist() == expect.column("id_max").to_pylist()

    # every row and column, in ordinal order, as pyarrow read them
    whole = scan.to_arrow_reader().read_all()
    assert whole.equals(want)
    rows = duckdb.sql("select * from (select id, task, obs from whole) order by id").to_arrow_table()
    assert rows.equals(want.select(["id", "task", "obs"]).cast(rows.schema))


def test_scan_reader_projection(branch):
    reader = branch.table("grasps").scan_request(["task", "reward"]).to_arrow_reader()
    assert reader.schema.names == ["task", "reward"]
    got = duckdb.sql("select task, count(*) as n from reader group by 1 order by 1").fetchall()
    want = {}
    for i in range(ROWS):
        want[f"task-{i % EPISODES}"] = want.get(f"task-{i % EPISODES}", 0) + 1
    assert got == sorted(want.items())



def recipe(br, batch=64, seed=7):
    return weft.Recipe(seed=seed, batch_size=batch, components=[
        weft.Component(br.table("grasps"), columns=["id", "episode", "reward"], weight=3.0),
        weft.Component(br.table("other"), columns=["id", "episode", "reward"], weight=1.0)])


def rank_steps(server, cmd, rank):
    """pyarrow's own read of one rank's endpoint: its messages, one per step here."""
    c = fl.connect(server.location)
    try:
        info = c.get_flight_info(fl.FlightDescriptor.for_command(json.dumps(cmd).encode()))
        reader = c.do_get(info.endpoints[rank].ticket)
        out = []
        while True:
            try:
                chunk = reader.read_chunk()
            except StopIteration:
                return info, out
            assert json.loads(chunk.app_metadata.to_pybytes())["step"] == cmd.get("start_step", 0) + len(out)
            out.append(chunk.data)
    finally:
        c.close()


@pytest.mark.parametrize("world_size", [1, 2])
def test_train_loader_reader_in_duckdb(server, branch, world_size):
    first = weft.TrainLoader(recipe(branch))
    run, steps = first.run_id, first.steps
    first.close()
    for rank in range(world_size):
        loader = weft.TrainLoader(recipe(branch), world=weft.World(rank, world_size))
        loader.load_state_dict({"run": run, "step": 0})
        info, batches = rank_steps(server, {"run": run, "world_size": world_size}, rank)
        assert len(batches) == steps

        reader = loader.to_arrow_reader(step_column="_step")
        assert reader.schema.names == info.schema.names + ["_step"]
        got = duckdb.sql("select _step, _component, count(*) as n, sum(reward) as s, min(_row) as lo "
                         "from reader group by all order by all").to_arrow_table()
        assert loader.state_dict()["step"] == steps, "reading moved the loader to the run's end"
        expect = {}
        for step, b in enumerate(batches):
            assert b.num_rows == 64 // world_size
            for comp in set(b.column("_component").to_pylist()):
                part = b.filter(pc.equal(b.column("_component"), comp))
                expect[(step, comp)] = (part.num_rows, pc.sum(part.column("reward")).as_py(),
                                        pc.min(part.column("_row")).as_py())
        assert {(r["_step"], r["_component"]): (r["n"], r["s"], r["lo"]) for r in got.to_pylist()} == expect

        # resumed mid-run: exactly the rest of the rank's steps, batch for batch
        loader.load_state_dict({"run": run, "step": 3})
        rest = list(loader.to_arrow_reader())
        assert len(rest) == steps - 3
        assert all(x.equals(y) for x, y in zip(rest, batches[3:]))
        assert loader.state_dict()["step"] == steps
        loader.close()


def test_scan_loader_reader(server, branch):
    scan = branch.table("grasps").scan_request(["id", "reward"])
    loader = scan.to_data_loader(seed=5, batch_size=100)
    reader = loader.to_arrow_reader()
    got = duckdb.sql("select count(*), count(distinct _row), min(_row), max(_row), sum(id - _row) "
                     "from reader").fetchall()[0]
    assert got == (ROWS, ROWS, 0, ROWS - 1, 0), "one pass: every row once, id is the ordinal"
    assert loader.state_dict()["sample"] == ROWS
