"""The seed's scan loaders (python/weft/_scan.py) against a real flightd:
one pass is every row once, resume at the sample with another batch size
and world size is the uninterrupted run's samples, ranks are balanced."""

import os

import pyarrow as pa
import pytest
import torch
from torch.utils.data import DataLoader

import weft
from weft import ShuffleConfig, World

from weftflight import make_table

ROWS = 3001  # not a multiple of any batch or step size


@pytest.fixture
def wc(server):
    c = weft.Client(server.location)
    yield c
    c.close()


@pytest.fixture
def scan(wc):
    br = wc.create_project("p").branch("main")
    br.table("t").append(make_table(0, ROWS).to_batches(max_chunksize=700))
    return br.table("t").scan_request(["id", "x"])


def rows(batches):
    out = []
    for b in batches:
        assert torch.equal(b["id"], b["_row"]), "a row's id is its ordinal"
        out.extend(b["_row"].tolist())
    return out


def tokenizer_fn(rb: pa.RecordBatch):
    # a CPU-bound batch transform (module level: map workers import it)
    return rb.append_column("twice", pa.compute.multiply(rb.column("id"), 2))


def test_one_pass_every_row_once(scan):
    loader = scan.to_data_loader(seed=42, batch_size=32)
    assert len(loader) == -(-ROWS // 32)
    got = rows(loader)
    assert sorted(got) == list(range(ROWS))
    assert got != list(range(ROWS)), "seeded order"
    assert rows(scan.to_data_loader(seed=42, batch_size=5)) == got, "the order does not depend on the batch size"
    assert rows(scan.to_data_loader(seed=7, batch_size=32)) != got
    assert len(loader) == 0 and list(loader) == []


@pytest.mark.parametrize("new_batch,world_size", [(32, 1), (8, 4), (3, 7), (64, 2)])
def test_resume_at_the_sample(scan, new_batch, world_size):
    whole = rows(scan.to_data_loader(seed=42, batch_size=2))
    # the seed's example: batch 2, checkpoint at i == 3, then batch 32
    loader = scan.to_data_loader(batch_size=2, seed=42)
    checkpoint = None
    for i, batch in enumerate(loader):
        if i == 3:
            checkpoint = loader.state_dict()
            break
    k = checkpoint["sample"]
    assert k == 8
    if world_size == 1:
        resumed = scan.resume_data_loader(checkpoint, batch_size=new_batch)
        got = [b["_row"].tolist() for b in resumed]
        assert all(len(b) == new_batch for b in got[:-1])
        assert sum(got, []) == whole[k:]
        return
    # W = 1 → world_size: global batch n is the union of every rank's batch n
    per_rank = [[b["_row"].tolist() for b in scan.resume_data_loader(
        checkpoint, batch_size=new_batch, world=World(rank=r, world_size=world_size))]
        for r in range(world_size)]
    per = world_size * new_batch
    for n in range(max(len(x) for x in per_rank)):
        union = sorted(sum((x[n] for x in per_rank if n < len(x)), []))
        assert union == sorted(whole[k + n * per:k + (n + 1) * per]), f"global batch {n}"
    for r, x in enumerate(per_rank):
        first = k + (r - k) % world_size
        assert sum(x, []) == whole[first::world_size], f"rank {r}: samples p ≡ r (mod W), in order"
    counts = [len(sum(x, [])) for x in per_rank]
    assert max(counts) - min(counts) <= 1


def test_distributed_checkpoint_then_fewer_ranks(scan):
    whole = rows(scan.to_data_loader(seed=3, batch_size=10))
    loaders = [scan.to_distributed_data_loader(world=World(r, 4), seed=3, batch_size=10) for r in range(4)]
    its = [iter(x) for x in loaders]
    seen = []
    for _ in range(5):
        for it in its:
            seen.extend(next(it)["_row"].tolist())
    states = [x.state_dict() for x in loaders]
    assert all(s["sample"] == 200 for s in states), "every rank saves the same position"
    assert sorted(seen) == sorted(whole[:200])
    rest = rows(scan.resume_data_loader(states[0], batch_size=100, world=World(0, 1)))
    assert rest == whole[200:]


def test_distributed_drop_last_is_lockstep(scan):
    counts = []
    for r in range(4):
        x = scan.to_distributed_data_loader(world=World(r, 4), seed=1, batch_size=32, drop_last=True)
        got = [len(b["_row"]) for b in x]
        assert all(n == 32 for n in got)
        counts.append(len(got))
    assert counts == [ROWS // 128] * 4


def test_world_from_environment(scan, monkeypatch):
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "3")
    loader = scan.to_distributed_data_loader(seed=42, batch_size=32)
    assert loader.world == World(1, 3)
    whole = rows(scan.to_data_loader(seed=42, batch_size=32))
    assert rows(loader) == whole[1::3]


def test_transform_per_batch_in_map_workers(scan):
    plain = scan.to_data_loader(seed=42, batch_size=64, transform_fn=tokenizer_fn)
    pooled = scan.to_data_loader(seed=42, batch_size=64, transform_fn=tokenizer_fn, map_workers=2)
    try:
        a, b = list(plain), list(pooled)
    finally:
        pooled.close()
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert torch.equal(x["twice"], x["id"] * 2)
        assert torch.equal(x["_row"], y["_row"]) and torch.equal(x["twice"], y["twice"])


def test_iterable_dataset_workers(scan):
    ds = scan.to_iterable_dataset(shuffle=ShuffleConfig(seed=42, buffer_size=8192))
    assert len(ds) == ROWS
    got = []
    for batch in DataLoader(ds, batch_size=32, num_workers=2):
        assert torch.equal(batch["id"], batch["_row"])
        got.extend(batch["_row"].tolist())
    assert sorted(got) == list(range(ROWS))


def test_bad_input(scan, wc):
    with pytest.raises(weft.InvalidArgument, match="batch_size"):
        scan.to_data_loader(batch_size=0)
    with pytest.raises(weft.InvalidArgument, match="not a scan loader"):
        scan.resume_data_loader({"run": "x"})
    other = wc.project("p").branch("main").table("t").scan_request(["id"])
    state = scan.to_data_loader(seed=1).state_dict()
    with pytest.raises(weft.InvalidArgument, match="another scan"):
        other.resume_data_loader(state)
    with pytest.raises(weft.InvalidArgument, match="ShuffleConfig"):
        ShuffleConfig(buffer_rows=10, buffer_size=20)


def seed_block(path):
    """The python block after the "seed-examples" marker of a doc file."""
    text = open(os.path.join(os.path.dirname(__file__), "..", "..", path)).read()
    after = text.split("<!-- seed-examples -->", 1)[1]
    return after.split("```python\n", 1)[1].split("```", 1)[0]


def test_seed_examples_as_written(scan, wc):
    """The seed's examples in Weft's names run as written: the block of
    docs/python.md ("Scan loaders"), which README.md shows too, with
    ``client`` a weft.Client on a server with table p/main/t."""
    block = seed_block("docs/python.md")
    assert seed_block("README.md") == block, "README.md and docs/python.md show the same examples"
    ns = {"client": wc}
    exec(compile(block, "docs/python.md", "exec"), ns)
    assert ns["checkpoint"]["sample"] == 8
    assert len(list(ns["loader"])) == -(-(ROWS - 8) // 32)
    assert sum(len(b["_row"]) for b in ns["data_loader"]) == len(range(0, ROWS, 64))  # rank 0 of 64
    assert sum(len(b["_row"]) for b in ns["iterable_loader"]) == ROWS


@pytest.mark.parametrize("make", ["to_data_loader", "to_distributed_data_loader", "to_iterable_dataset"])
def test_shards_refused_with_the_reason(scan, make):
    """A scan loader is one run that already gives every rank its share;
    shards= is refused, and the message says why and what takes them."""
    with pytest.raises(weft.InvalidArgument, match=r"(?s)ranks already differ by at most one row.*weft.ScanDataset"):
        getattr(scan, make)(shards=scan.shards())
