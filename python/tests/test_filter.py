"""Filters and balanced shards against a real flightd: filtered scans give
the same rows as pyarrow's own evaluation of the equivalent expression
(nulls and NaN included), bad filters are InvalidArgument with the byte
position, and balanced shards spread a selective filter's matches over
ranks × DataLoader workers evenly (within one), every row exactly once."""

import datetime as dt
import random
from collections import Counter

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pytest
from torch.utils.data import DataLoader

import weft
from conftest import Flightd


def mixed_table(n=3000, seed=7):
    """rid (row index) and nullable columns of every kind filters support,
    with NaN, -0.0, empty strings and values on either side of the cases'
    literals."""
    rng = random.Random(seed)

    def maybe(v, p=0.1):
        return None if rng.random() < p else v

    base = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)
    return pa.table({
        "rid": pa.array(range(n), pa.int64()),
        "i": pa.array([maybe(rng.randrange(-50, 150)) for _ in range(n)], pa.int64()),
        "small": pa.array([maybe(rng.randrange(-128, 128)) for _ in range(n)], pa.int8()),
        "u": pa.array([maybe(rng.randrange(0, 1000)) for _ in range(n)], pa.uint32()),
        "f": pa.array([maybe(rng.choice([float("nan"), -0.0, 0.0, 1.5, rng.uniform(-10, 10)])) for _ in range(n)],
                      pa.float64()),
        "f32": pa.array([maybe(rng.choice([float("nan"), rng.uniform(-1, 1)])) for _ in range(n)], pa.float32()),
        "s": pa.array([maybe(rng.choice(["", "abc", "abd", "ab", "b", "grasp-%d" % rng.randrange(20)])) for _ in range(n)],
                      pa.string()),
        "ok": pa.array([maybe(rng.random() < 0.5) for _ in range(n)], pa.bool_()),
        "d": pa.array([maybe(dt.date(2024, 1, 1) + dt.timedelta(days=rng.randrange(-20, 20))) for _ in range(n)],
                      pa.date32()),
        "t": pa.array([maybe(base + dt.timedelta(milliseconds=rng.randrange(-10**7, 10**7))) for _ in range(n)],
                      pa.timestamp("ms", tz="UTC")),
    })


F = pc.field
T0 = pa.scalar(dt.datetime(2024, 1, 1, 1, 0, 0, tzinfo=dt.timezone.utc), pa.timestamp("ms", tz="UTC"))
D0 = pa.scalar(dt.date(2024, 1, 5), pa.date32())

# (weft filter, the equivalent pyarrow expression). pyarrow's is_in is
# false (not null) on a null value, so IN is written with is_valid for
# SQL's "NULL IN (…) is unknown"; everything else is pyarrow's own.
CASES = [
    ("i = 7", F("i") == 7),
    ("i != 7", F("i") != 7),
    ("i < 0", F("i") < 0),
    ("i <= 0", F("i") <= 0),
    ("i > 100", F("i") > 100),
    ("100 <= i", F("i") >= 100),
    ("i > 10.5", F("i") > 10.5),
    ("i BETWEEN 10 AND 20", (F("i") >= 10) & (F("i") <= 20)),
    ("i NOT BETWEEN 10 AND 20", ~((F("i") >= 10) & (F("i") <= 20))),
    ("i IN (1, 2, 3, 140)", F("i").isin([1, 2, 3, 140]) & F("i").is_valid()),
    ("i NOT IN (1, 2, 3)", ~F("i").isin([1, 2, 3]) & F("i").is_valid()),
    ("i IS NULL", F("i").is_null()),
    ("i IS NOT NULL", F("i").is_valid()),
    ("small < -100 OR small >= 120", (F("small") < -100) | (F("small") >= 120)),
    ("u >= 500 AND u < 510", (F("u") >= 500) & (F("u") < 510)),
    ("f > 1", F("f") > 1),
    ("f = 0", F("f") == 0),
    ("f != 1.5", F("f") != 1.5),
    ("NOT f > 1", ~(F("f") > 1)),
    ("f IS NULL", F("f").is_null()),
    ("f BETWEEN -1 AND 1.5", (F("f") >= -1) & (F("f") <= 1.5)),
    ("f32 < 0.25", F("f32") < 0.25),
    ("NOT f32 >= 0", ~(F("f32") >= 0)),
    ("s = 'abc'", F("s") == "abc"),
    ("s != ''", F("s") != ""),
    ("s < 'ab'", F("s") < "ab"),
    ("s LIKE 'ab%'", pc.starts_with(F("s"), "ab")),
    ("starts_with(s, 'grasp-1')", pc.starts_with(F("s"), "grasp-1")),
    ("s NOT LIKE 'ab%'", ~pc.starts_with(F("s"), "ab")),
    ("s IN ('b', 'abd')", F("s").isin(["b", "abd"]) & F("s").is_valid()),
    ("ok", F("ok") == True),  # noqa: E712
    ("NOT ok", ~(F("ok") == True)),  # noqa: E712
    ("ok = false AND i >= 100", (F("ok") == False) & (F("i") >= 100)),  # noqa: E712
    ("ok = FALSE OR i IS NULL", (F("ok") == False) | F("i").is_null()),  # noqa: E712
    ("d = DATE '2024-01-05'", F("d") == D0),
    ("d >= '2024-01-05'", F("d") >= D0),
    ("t < TIMESTAMP '2024-01-01 01:00:00'", F("t") < T0),
    ("t >= TIMESTAMP '2024-01-01T02:00:00+01:00'", F("t") >= T0),
    ("(i > 50 OR f < 0) AND NOT (s = 'b' OR ok)", ((F("i") > 50) | (F("f") < 0)) & ~((F("s") == "b") | (F("ok") == True))),  # noqa: E712
    ("NOT (i IS NULL OR i < 0) AND f IS NOT NULL", ~(F("i").is_null() | (F("i") < 0)) & F("f").is_valid()),
]


@pytest.fixture
def wc(server):
    c = weft.Client(server.location)
    yield c
    c.close()


@pytest.fixture
def mixed(wc):
    br = wc.create_project("flt").branch("main")
    t = mixed_table()
    br.table("m").append(t)
    return br.table("m"), t


def test_filters_match_pyarrow(mixed):
    table, data = mixed
    dataset = ds.dataset(data)
    assert len(CASES) >= 25
    for text, expr in CASES:
        want = sorted(dataset.to_table(filter=expr, columns=["rid"])["rid"].to_pylist())
        also = sorted(data.filter(expr)["rid"].to_pylist())
        assert want == also, text
        got = table.scan_request(["rid"], filter=text).read()["rid"].to_pylist()
        assert got == want, f"{text}: {len(got)} rows, pyarrow {len(want)}"
        # Balanced shards of the same filter: the same rows, in order.
        sh = table.scan_request(["rid"], filter=text).shards(3)
        assert sh.total_records == len(want) and len(sh) == 3
        assert max(s.rows for s in sh) - min(s.rows for s in sh) <= 1
        assert sh.read()["rid"].to_pylist() == want, text


def test_bad_filters(mixed):
    table, _ = mixed
    for text, msg in [("i = ", "at byte 4: expected a literal"),
                      ("i >= 1 AND", "at byte 10: expected a column"),
                      ("nope = 1", 'at byte 0: "nope" is not a column'),
                      ("s = 3", "at byte 4: column \"s\" is utf8; expected a 'string'"),
                      ("s LIKE '%x'", "at byte 7: expected a prefix pattern"),
                      ("i = NULL", "write column IS NULL")]:
        with pytest.raises(weft.InvalidArgument, match="at byte") as e:
            table.scan_request(["rid"], filter=text).read()
        assert msg in str(e.value), str(e.value)
    with pytest.raises(weft.InvalidArgument, match="filter is a int"):
        table.scan_request(["rid"], filter=3)


@pytest.fixture
def big_server(flightd_bin, store, tmp_path):
    d = Flightd(flightd_bin, store, tmp_path, ("--row-group-rows", "50000"))
    d.start()
    yield d
    d.stop()


def test_selective_filter_balanced_over_ranks_and_workers(big_server):
    """1 M rows, a filter matching 0.1 % (clustered in a few row groups,
    plus some scattered), 8 ranks × 2 DataLoader workers: every matching
    row once, each rank's count within one of the others."""
    c = weft.Client(big_server.location)
    try:
        br = c.create_project("big").branch("main")
        n = 1_000_000
        ids = pa.array(range(n), pa.int64())
        tag = pc.if_else(pc.equal(pc.bit_wise_and(ids, 4095), 17), pa.scalar("hit"), pa.scalar("miss"))
        br.table("t").append(pa.table({"id": ids, "tag": tag}))
        filt = "(id >= 500000 AND id < 500750) OR (tag = 'hit' AND id < 250000)"
        want = [i for i in range(500000, 500750)] + [i for i in range(250000) if i & 4095 == 17]
        want.sort()
        assert len(want) == 750 + 62 and abs(len(want) - n // 1000) < 200
        scan = br.table("t").scan_request(["id"], filter=filt)
        ranks, workers = 8, 2
        shards = weft.compute_shards(scan, ranks * workers)
        assert len(shards) == 16 and shards.total_records == len(want)
        seen, per_rank = Counter(), []
        for rank in range(ranks):
            dset = weft.ScanDataset(scan, batch_size=16, world=weft.World(rank=rank, world_size=ranks), shards=shards)
            count = 0
            for batch in DataLoader(dset, batch_size=None, num_workers=workers, timeout=120):
                seen.update(batch["id"].tolist())
                count += len(batch["id"])
            per_rank.append(count)
        assert sorted(seen) == want and set(seen.values()) == {1}
        assert max(per_rank) - min(per_rank) <= 1, per_rank
        # shards= as a count, and as the server's choice
        d = weft.ScanDataset(scan, batch_size=1000, shards=4)
        assert [len(b["id"]) for b in d] == [len(want)]  # one reader takes all four
        assert scan.shards().total_records == len(want)
        with pytest.raises(weft.InvalidArgument, match="do not split evenly"):
            list(weft.ScanDataset(scan, world=weft.World(rank=0, world_size=3), shards=shards))
    finally:
        c.close()


def test_recipe_with_filtered_component(mixed):
    """Component(table, filter=…): every sample of that component matches;
    exact shares; W = 1 and W = 4 see the same batches; a saved state
    resumes with the same samples; the filter is in the run record."""


    table, data = mixed
    text = "ok = false AND i >= 100"
    match = set(data.filter((F("ok") == False) & (F("i") >= 100))["rid"].to_pylist())  # noqa: E712
    r = weft.Recipe(seed=5, batch_size=8, steps=40, components=[
        weft.Component(table, weight=1, columns=["rid"]),
        weft.Component(table, weight=3, columns=["rid"], filter=text)])

    def read(loader):
        return [list(zip(b["_component"].tolist(), b["_row"].tolist(), b["rid"].tolist())) for b in loader]

    one = weft.TrainLoader(r, world=weft.World(0, 1))
    ref = read(one)
    assert len(ref) == 40
    seen = set()
    for batch in ref:
        assert Counter(c for c, _, _ in batch) == {0: 2, 1: 6}
        for c, row, rid in batch:
            assert row == rid
            if c == 1:
                assert rid in match
                seen.add(rid)
    assert len(match) > 240 and len(seen) == 240  # 240 draws within one epoch: no row twice
    rec = one.run_record
    assert rec["components"][1]["filter"] == "ok = FALSE AND i >= 100" and rec["components"][1]["matches"] == len(match)
    w4 = [read(weft.TrainLoader(r, world=weft.World(rank, 4))) for rank in range(4)]
    for step in range(40):
        for rank in range(4):
            assert w4[rank][step] == ref[step][rank::4]
    loader = weft.TrainLoader(r, world=weft.World(0, 2))
    for step, _ in enumerate(loader):
        if step == 9:
            state = loader.state_dict()
            break
    resumed = weft.TrainLoader(r, world=weft.World(1, 4))
    resumed.load_state_dict(state)
    assert read(resumed) == [ref[s][1::4] for s in range(10, 40)]
    # A different filter is a different run.
    other = weft.Recipe(seed=5, batch_size=8, steps=40, components=[
        weft.Component(table, weight=1, columns=["rid"]),
        weft.Component(table, weight=3, columns=["rid"], filter="ok = true")])
    assert weft.TrainLoader(other).run_id != one.run_id
    with pytest.raises(weft.InvalidArgument, match="at byte 5"):
        weft.TrainLoader(weft.Recipe(seed=5, batch_size=8, components=[weft.Component(table, filter="i >= ")])).run_id


def test_scan_loader_of_filtered_scan(mixed):
    """The seed's scan loader over a filtered scan: one pass gives every
    matching row once (the filter rides in the one-component recipe)."""
    table, data = mixed
    text = "s LIKE 'ab%' AND f IS NOT NULL"
    match = sorted(data.filter(pc.starts_with(F("s"), "ab") & F("f").is_valid())["rid"].to_pylist())
    loader = table.scan_request(["rid"], filter=text).to_data_loader(seed=3, batch_size=50)
    got = [r for batch in loader for r in batch["rid"].tolist()]
    assert sorted(got) == match and got != match  # shuffled, every match once
