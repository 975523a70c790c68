"""Weft's Flight protocol (DESIGN.md, "Flight protocol"), driven with
pyarrow.flight against a real flightd, on the fs store and on MinIO."""

import json
import threading

import pyarrow as pa
import pyarrow.flight as fl
import pytest

from weftflight import CODES, action, info_commit, make_table, put, read, rows, scan_info


def test_list_actions(client):
    actions = {a.type: a.description for a in client.list_actions()}
    assert list(actions) == ["create_project", "create_branch", "list_branches", "log", "stat_media", "read_media", "import"]
    for name, desc in actions.items():
        assert desc and "\n" not in desc, name


def test_projects_branches_log(client):
    created = action(client, "create_project", {"project": "robotics"})
    assert sorted(created) == ["branch", "commit", "project"]
    assert created["project"] == "robotics" and created["branch"] == "main"
    root = created["commit"]
    assert len(root) == 64

    res = put(client, ["robotics", "main", "grasps"], make_table(0, 10))
    assert action(client, "create_branch", {"project": "robotics", "branch": "exp", "from": root[:8]}) == \
        {"branch": "exp", "commit": root}
    assert action(client, "list_branches", {"project": "robotics"}) == [
        {"branch": "exp", "commit": root},
        {"branch": "main", "commit": res["commit"]},
    ]
    log = action(client, "log", {"project": "robotics", "ref": "main"})
    assert [c["commit"] for c in log] == [res["commit"], root]
    assert sorted(log[0]) == ["commit", "message", "parent", "tables", "time"]
    assert log[0]["parent"] == root and log[1]["parent"] is None
    assert list(log[0]["tables"]) == ["grasps"] and log[1]["tables"] == {}
    assert action(client, "log", {"project": "robotics", "ref": "main", "limit": 1})[0]["commit"] == res["commit"]
    assert [c["commit"] for c in action(client, "log", {"project": "robotics", "ref": "exp"})] == [root]


def test_put_batches_one_commit_and_scan_back(client, server):
    root = action(client, "create_project", {"project": "p"})["commit"]
    table = make_table(0, 2600)
    res = put(client, ["p", "main", "t"], table, batch_rows=300)  # 9 batches
    assert res == {"commit": res["commit"], "rows": 2600}
    log = action(client, "log", {"project": "p", "ref": "main"})
    assert [c["commit"] for c in log] == [res["commit"], root], "all batches of one DoPut are one commit"

    flights = list(client.list_flights(b"p"))
    assert [f.descriptor.path for f in flights] == [[b"p", b"main", b"t"]]
    assert flights[0].total_records == 2600
    assert [f.descriptor.path for f in client.list_flights()] == [[b"p", b"main", b"t"]]

    assert client.get_schema(fl.FlightDescriptor.for_path("p", "main", "t")).schema.equals(table.schema)

    info = scan_info(client, "p", "main", "t")
    assert info.total_records == 2600
    assert info.schema.equals(table.schema)
    assert info_commit(info) == res["commit"]
    assert len(info.endpoints) == 6  # row groups of 500 rows, one endpoint each (server flags)
    got = read(client, info)
    assert got.equals(table), "values and order survive the round trip"

    # Several clients read the endpoints in parallel; in endpoint order they are the table.
    parts = [None] * len(info.endpoints)

    def fetch(i, ep):
        c = server.client()
        try:
            parts[i] = c.do_get(ep.ticket).read_all()
        finally:
            c.close()

    threads = [threading.Thread(target=fetch, args=(i, ep)) for i, ep in enumerate(info.endpoints)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert pa.concat_tables(parts).equals(table)


def test_scan_command_with_projection(client):
    action(client, "create_project", {"project": "p"})
    table = make_table(0, 1200)
    res = put(client, ["p", "main", "t"], table, batch_rows=400)
    put(client, ["p", "main", "t"], make_table(1200, 100))

    info = scan_info(client, "p", res["commit"][:12], "t", columns=["blob", "id"])
    assert info.total_records == 1200
    assert info.schema.names == ["blob", "id"]
    assert info_commit(info) == res["commit"]
    got = read(client, info)
    assert got.equals(table.select(["blob", "id"]))
    cmd = json.dumps({"scan": {"project": "p", "ref": "main", "table": "t", "columns": ["x"]}}).encode()
    assert client.get_schema(fl.FlightDescriptor.for_command(cmd)).schema.names == ["x"]


def test_pinned_commit_unchanged_by_later_put(client):
    action(client, "create_project", {"project": "p"})
    first = put(client, ["p", "main", "t"], make_table(0, 700), batch_rows=200)
    pinned = scan_info(client, "p", "main", "t")

    put(client, ["p", "main", "t"], make_table(700, 300))
    assert rows(read(client, pinned)) == list(range(700)), "an issued FlightInfo stays at its commit"
    at_commit = scan_info(client, "p", first["commit"], "t")
    assert at_commit.total_records == 700 and rows(read(client, at_commit)) == list(range(700))
    latest = scan_info(client, "p", "main", "t")
    assert latest.total_records == 1000 and rows(read(client, latest)) == list(range(1000))


def test_branch_write_leaves_main_unchanged(client):
    action(client, "create_project", {"project": "p"})
    base = put(client, ["p", "main", "t"], make_table(0, 600))
    assert action(client, "create_branch", {"project": "p", "branch": "exp", "from": "main"})["commit"] == base["commit"]
    put(client, ["p", "exp", "t"], make_table(5000, 50))
    on_exp = put(client, ["p", "exp", "new"], make_table(0, 5))

    main = scan_info(client, "p", "main", "t")
    assert info_commit(main) == base["commit"]
    assert rows(read(client, main)) == list(range(600))
    exp = scan_info(client, "p", "exp", "t")
    assert info_commit(exp) == on_exp["commit"]
    assert rows(read(client, exp)) == list(range(600)) + list(range(5000, 5050))
    assert [f.descriptor.path[2] for f in client.list_flights(b"p")] == [b"t"], "ListFlights lists main"
    with pytest.raises(CODES["NotFound"][0], match="not found"):
        scan_info(client, "p", "main", "new")


def test_big_rows_with_default_grpc_limits(client):
    """An 8 MiB put batch is accepted (the server takes 256 MiB messages), and a
    default client (4 MiB receive limit) reads 1 KiB rows in 64 MiB row groups."""
    action(client, "create_project", {"project": "p"})
    n = 24 * 1024
    table = pa.table({"id": pa.array(range(n), pa.int64()),
                      "blob": pa.array([bytes([i % 251]) * 1024 for i in range(n)], pa.binary())})
    put(client, ["p", "main", "t"], table, batch_rows=8192)  # 8 MiB messages
    info = scan_info(client, "p", "main", "t")
    reader = client.do_get(info.endpoints[0].ticket)
    got = pa.concat_tables([read(client, info)])
    assert got.equals(table)
    del reader


def expect(code, fn):
    cls, text = CODES[code]
    with pytest.raises(cls) as exc:
        fn()
    assert text in str(exc.value), str(exc.value)
    return str(exc.value)


def _schema_mismatch(c):
    put(c, ["p", "main", "t"], pa.table({"id": pa.array([1, 2], pa.int32())}))


def _nulls_midway(c):
    """Two good batches, then one with nulls in the non-nullable id."""
    good = make_table(100, 20).to_batches()[0]
    bad = pa.RecordBatch.from_arrays([pa.array([None] * 20, pa.int64())] + good.columns[1:], schema=good.schema)
    writer, reader = c.do_put(fl.FlightDescriptor.for_path("p", "main", "t"), good.schema)
    with writer:
        writer.write_batch(good)
        writer.write_batch(good)
        writer.write_batch(bad)
        writer.done_writing()
        reader.read()


def _empty_put(c):
    writer, reader = c.do_put(fl.FlightDescriptor.for_path("p", "main", "t2"), make_table(0, 1).schema)
    with writer:
        writer.done_writing()
        reader.read()


def _get(c, ticket):
    c.do_get(fl.Ticket(ticket)).read_all()


def _info(c, *path):
    c.get_flight_info(fl.FlightDescriptor.for_path(*path))


def _cmd(c, cmd):
    c.get_flight_info(fl.FlightDescriptor.for_command(cmd if isinstance(cmd, bytes) else json.dumps(cmd).encode()))


def _act(c, name, body):
    list(c.do_action(fl.Action(name, body if isinstance(body, bytes) else json.dumps(body).encode())))


BAD = [
    ("bad json", "InvalidArgument", "JSON", lambda c, t: _act(c, "create_project", b'{"project":')),
    ("unknown field", "InvalidArgument", "projet", lambda c, t: _act(c, "create_project", {"projet": "x"})),
    ("bad project name", "InvalidArgument", "a/b", lambda c, t: _act(c, "create_project", {"project": "a/b"})),
    ("bad branch name", "InvalidArgument", "x y", lambda c, t: _act(c, "create_branch", {"project": "p", "branch": "x y"})),
    ("unknown action", "InvalidArgument", "drop_table", lambda c, t: _act(c, "drop_table", {})),
    ("project exists", "AlreadyExists", '"p"', lambda c, t: _act(c, "create_project", {"project": "p"})),
    ("branch exists", "AlreadyExists", '"main"', lambda c, t: _act(c, "create_branch", {"project": "p", "branch": "main"})),
    ("missing project", "NotFound", "nope", lambda c, t: _act(c, "list_branches", {"project": "nope"})),
    ("missing ref", "NotFound", "nope", lambda c, t: _act(c, "log", {"project": "p", "ref": "nope"})),
    ("short path", "InvalidArgument", "[project, ref, table]", lambda c, t: _info(c, "p", "main")),
    ("missing table", "NotFound", "nope", lambda c, t: _info(c, "p", "main", "nope")),
    ("missing branch", "NotFound", "nope", lambda c, t: _info(c, "p", "nope", "t")),
    ("unknown column", "InvalidArgument", "nope",
     lambda c, t: _cmd(c, {"scan": {"project": "p", "ref": "main", "table": "t", "columns": ["nope"]}})),
    ("bad command json", "InvalidArgument", "JSON", lambda c, t: _cmd(c, b"{scan")),
    ("unknown command", "InvalidArgument", "sample", lambda c, t: _cmd(c, {"sample": {}})),
    ("recipe without seed", "InvalidArgument", '"seed" is missing', lambda c, t: _cmd(c, {"recipe": {}, "world_size": 2})),
    ("malformed run id", "InvalidArgument", '"x" must be 64 lowercase hex digits',
     lambda c, t: _cmd(c, {"run": "x", "world_size": 2, "start_step": 0})),
    ("forged ticket", "InvalidArgument", "ticket", lambda c, t: _get(c, b"weft\x01\x01{}" + b"\x00" * 8)),
    ("garbage ticket", "InvalidArgument", "ticket", lambda c, t: _get(c, b"\xff" * 40)),
    ("truncated ticket", "InvalidArgument", "ticket", lambda c, t: _get(c, t[:-3])),
    ("altered ticket", "InvalidArgument", "ticket", lambda c, t: _get(c, t[:20] + bytes([t[20] ^ 1]) + t[21:])),
    ("put short path", "InvalidArgument", "[project, branch, table]",
     lambda c, t: put(c, ["p", "main"], make_table(0, 3))),
    ("put bad table name", "InvalidArgument", "no/slash", lambda c, t: put(c, ["p", "main", "no/slash"], make_table(0, 3))),
    ("put missing project", "NotFound", "nope", lambda c, t: put(c, ["nope", "main", "t"], make_table(0, 3))),
    ("put missing branch", "NotFound", "nope", lambda c, t: put(c, ["p", "nope", "t"], make_table(0, 3))),
    ("put schema mismatch", "InvalidArgument", "schema mismatch", lambda c, t: _schema_mismatch(c)),
    ("put nulls midway", "InvalidArgument", "not nullable", lambda c, t: _nulls_midway(c)),
    ("put no rows", "InvalidArgument", "no rows", lambda c, t: _empty_put(c)),
]


@pytest.mark.parametrize("name,code,names,call", BAD, ids=[b[0] for b in BAD])
def test_bad_input(client, store, name, code, names, call):
    """Each bad input gets its gRPC code, as pyarrow.flight raises it, with a
    message naming the problem, and leaves the store exactly as it was."""
    action(client, "create_project", {"project": "p"})
    put(client, ["p", "main", "t"], make_table(0, 50))
    ticket = scan_info(client, "p", "main", "t").endpoints[0].ticket.ticket
    before = store.snapshot()
    message = expect(code, lambda: call(client, ticket))
    assert names in message
    assert store.snapshot() == before, "a rejected call changed the store"
    assert rows(read(client, scan_info(client, "p", "main", "t"))) == list(range(50))
