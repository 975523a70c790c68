"""Several flightd over one bucket (docs/deploy.md): `serve --advertise`
spreads a run's ranks over the servers as endpoint locations, any server
serves any ticket, the TrainLoader fails over to an endpoint's next location
when its server is killed, and concurrent writers through different servers
lose no commit. Real flightd processes over a real MinIO."""

import json
import threading
from collections import Counter

import pyarrow as pa
import pyarrow.flight as fl
import pytest

import weft
from conftest import SMALL, Flightd, free_port
from weftflight import make_table

W = 4


@pytest.fixture
def fleet(flightd_bin, minio, tmp_path):
    """Planner A and servers B, C, D over one MinIO bucket; every one is
    started with --advertise B,C,D (A plans, B, C and D stream)."""
    store = minio.store(minio.new_bucket())
    ports = [free_port() for _ in range(4)]
    advertise = ",".join(f"grpc://127.0.0.1:{p}" for p in ports[1:])
    servers = []
    try:
        for name, port in zip("ABCD", ports):
            (tmp_path / name).mkdir()
            d = Flightd(flightd_bin, store, tmp_path / name, SMALL + ("--addr", f"127.0.0.1:{port}",
                                                                       "--advertise", advertise))
            servers.append(d.start())
        yield servers
    finally:
        for d in servers:
            d.stop()
        for d in servers:
            print(d.log_text()[-5000:])  # shown by pytest only when the test fails


def project(a, name="p", rows_b=2100):
    br = weft.Client(a.location).create_project(name).branch("main")
    br.table("a").append(make_table(0, 941))
    br.table("b").append(make_table(0, rows_b))
    return br


def recipe(br, batch=20, steps=None):
    return weft.Recipe(seed=2048, batch_size=batch, steps=steps, components=[
        weft.Component(br.table("a"), weight=0.3), weft.Component(br.table("b"), weight=0.7)])


def samples(batch):
    return list(zip(batch["_component"].tolist(), batch["_row"].tolist(), batch["id"].tolist()))


def reference(server, run, rank):
    """Rank ``rank`` of ``run`` read from one server with plain pyarrow
    (ignoring the endpoints' locations): [[(component, row, id)]] per step."""
    c = fl.connect(server.location)
    try:
        info = c.get_flight_info(fl.FlightDescriptor.for_command(json.dumps({"run": run, "world_size": W}).encode()))
        steps = []
        for chunk in c.do_get(info.endpoints[rank].ticket):
            b = chunk.data
            steps.append(list(zip(b.column("_component").to_pylist(), b.column("_row").to_pylist(),
                                  b.column("id").to_pylist())))
        return steps
    finally:
        c.close()


def doget_calls(server):
    """DoGet calls in the server's log, by gRPC code."""
    out = Counter()
    for line in server.log_text().splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if rec.get("msg") == "call" and rec.get("method", "").endswith("/DoGet"):
            out[rec.get("code")] += 1
    return out


def test_ranks_spread_over_servers(fleet):
    """Resolve on A; rank r's endpoint lists B, C, D starting at r mod 3; the
    TrainLoader of each rank reads from that server, and its batches are the
    ones A serves for the rank."""
    a, servers = fleet[0], fleet[1:]
    br = project(a)
    r = recipe(br, steps=40)
    info = weft.Client(a.location).command_info({"recipe": r.to_json(), "world_size": W}, "test")
    run = json.loads(info.app_metadata)["run"]
    for rank, ep in enumerate(info.endpoints):
        got = [loc.uri.decode() for loc in ep.locations]
        assert got == [servers[(rank + k) % 3].location for k in range(3)], f"rank {rank}"
    before = [doget_calls(s)["OK"] for s in servers]
    for rank in range(W):
        loader = weft.TrainLoader(r, world=weft.World(rank, W))
        assert [samples(b) for b in loader] == reference(a, run, rank), f"rank {rank}"
        assert loader.run_id == run
    after = [doget_calls(s)["OK"] for s in servers]
    # Ranks 0..3 start on B, C, D, B.
    assert [x - y for x, y in zip(after, before)] == [2, 1, 1]
    assert doget_calls(a)["OK"] == W, "A served only the reference reads"


def test_kill_a_server_mid_run(fleet):
    """kill -9 the server a rank streams from: the loader re-plans on A and
    continues from its next step on the endpoint's next location, with the
    batches of an uninterrupted run."""
    a, b, c, d = fleet
    br = project(a)
    r = recipe(br, batch=20, steps=3000)  # far more than gRPC buffers in flight
    rank = 1  # starts on C, fails over to D
    loader = weft.TrainLoader(r, world=weft.World(rank, W), prefetch=2, retries=5)
    ref = reference(a, loader.run_id, rank)
    got = []
    for step, batch in enumerate(loader):
        got.append(samples(batch))
        if step == 10:
            c.kill()
    assert loader._replans >= 1, "the stream was cut and planned again"
    assert got == ref
    assert doget_calls(d)["OK"] >= 1, "the rest of the run came from D"
    assert doget_calls(b)["OK"] == 0


def test_kill_the_planner(fleet):
    """With A gone too, the loader plans on an advertised server."""
    a, b, c, d = fleet
    br = project(a)
    r = recipe(br, batch=20, steps=3000)
    rank = 2  # starts on D
    loader = weft.TrainLoader(r, world=weft.World(rank, W), prefetch=2, retries=5)
    ref = reference(a, loader.run_id, rank)
    got = []
    for step, batch in enumerate(loader):
        got.append(samples(batch))
        if step == 10:
            a.kill()
            d.kill()
    assert got == ref
    assert loader._planner.uri != a.location


def test_concurrent_writers_through_servers(fleet):
    """Four writers append to one branch through four servers at once: every
    commit lands (rows and commits counted)."""
    br = weft.Client(fleet[0].location).create_project("w").branch("main")
    br.table("t").append(make_table(0, 10))
    writers, appends, rows = len(fleet), 8, 25
    errors = []

    def write(i, server):
        try:
            t = weft.Client(server.location).project("w").branch("main").table("t")
            for k in range(appends):
                start = 10 + (i * appends + k) * rows
                t.append(make_table(start, rows))
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=write, args=(i, s)) for i, s in enumerate(fleet)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for s in fleet:  # every server sees the same branch
        table = weft.Client(s.location).project("w").branch("main").table("t").read(["id"])
        ids = sorted(table.column("id").to_pylist())
        assert ids == list(range(10 + writers * appends * rows))
    log = br.log()
    assert len(log) == 2 + writers * appends, "create_project, the first append, then every writer's appends"
