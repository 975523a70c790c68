"""The "weft" Spark data source (python/weft/_spark.py) on a local Spark
(local[2]) against a real flightd, fs and MinIO: the rows of a scan (one
partition per endpoint) and of a run (one per rank and step range) are
exactly the rows pyarrow reads from the same endpoints."""

import json
import os
import shutil
import sys

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.flight as fl
import pytest

import weft

pytest.importorskip("pyspark", reason="pyspark is in python/requirements-test.txt: run `make venv`")
if shutil.which("java") is None:
    msg = "no java on PATH: the Spark tests need a JRE 17+ (apt-get install default-jre-headless)"
    if os.environ.get("CI") == "true":
        raise RuntimeError(msg)
    pytest.skip(msg, allow_module_level=True)

from test_duckdb import episodes_table, rank_steps, recipe  # noqa: E402

ROWS = 4001


@pytest.fixture(scope="module")
def spark():
    from pyspark.sql import SparkSession

    os.environ["PYSPARK_PYTHON"] = sys.executable  # workers import this weft and pyarrow
    s = (SparkSession.builder.master("local[2]").appName("weft-tests")
         .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2")
         .config("spark.driver.memory", "1g").config("spark.python.worker.reuse", "true").getOrCreate())
    s.sparkContext.setLogLevel("ERROR")
    s.dataSource.register(weft.WeftDataSource)
    yield s
    s.stop()


@pytest.fixture
def branch(server):
    c = weft.Client(server.location)
    br = c.create_project("robotics").branch("main")
    br.table("grasps").append(episodes_table(0, ROWS).to_batches(max_chunksize=900))
    br.table("other").append(episodes_table(100000, 1500).to_batches(max_chunksize=700))
    yield br
    c.close()


def flight_scan(server, cmd):
    c = fl.connect(server.location)
    try:
        info = c.get_flight_info(fl.FlightDescriptor.for_command(json.dumps(cmd).encode()))
        return info, pa.concat_tables([c.do_get(ep.ticket).read_all() for ep in info.endpoints])
    finally:
        c.close()


def rows(t):
    """A table's rows as a sorted list of tuples (lists made tuples)."""
    def fix(v):
        return tuple(v) if isinstance(v, list) else v
    return sorted(tuple(fix(v) for v in r.values()) for r in t.to_pylist())


def test_scan(spark, server, branch):
    cmd = {"scan": {"project": "robotics", "ref": "main", "table": "grasps"}}
    info, want = flight_scan(server, cmd)
    df = spark.read.format("weft").option("uri", server.location).option("table", "robotics/main/grasps").load()
    assert df.columns == want.schema.names
    assert dict(df.dtypes) == {"id": "bigint", "episode": "bigint", "reward": "double", "task": "string",
                               "obs": "array<float>"}
    assert df.rdd.getNumPartitions() == len(info.endpoints) > 1, "one partition per endpoint"
    got = df.toArrow()
    assert got.num_rows == ROWS
    assert rows(got) == rows(want)

    # an aggregate in Spark equals pyarrow's over the same rows
    agg = {r["episode"]: (r["n"], r["s"]) for r in
           df.groupBy("episode").agg({"*": "count", "reward": "sum"})
           .withColumnsRenamed({"count(1)": "n", "sum(reward)": "s"}).collect()}
    expect = want.group_by("episode").aggregate([("reward", "count"), ("reward", "sum")])
    assert agg == {e: (n, s) for e, n, s in zip(expect.column("episode").to_pylist(),
                                                expect.column("reward_count").to_pylist(),
                                                expect.column("reward_sum").to_pylist())}


def test_scan_projection(spark, server, branch):
    cmd = {"scan": {"project": "robotics", "ref": "main", "table": "grasps", "columns": ["task", "id"]}}
    _, want = flight_scan(server, cmd)
    base = spark.read.format("weft").option("uri", server.location).option("table", "robotics/main/grasps")
    df = base.option("columns", "task,id").load()
    assert df.columns == ["task", "id"]
    assert rows(df.toArrow()) == rows(want)
    # a schema naming some columns is a projection too
    df2 = base.schema("id long, task string").load()
    assert df2.columns == ["id", "task"]
    assert rows(df2.toArrow().select(["task", "id"])) == rows(want)
    # at a commit: the rows of that commit, whatever the branch did since
    head = branch.head()
    branch.table("grasps").append(episodes_table(ROWS, 10))
    at = (spark.read.format("weft").option("uri", server.location)
          .option("table", f"robotics/{head}/grasps").option("columns", "id").load())
    assert at.count() == ROWS
    assert base.option("columns", "id").load().count() == ROWS + 10


@pytest.mark.parametrize("world_size,per", [(1, None), (2, 3)])
def test_run(spark, server, branch, world_size, per):
    loader = weft.TrainLoader(recipe(branch))
    run, steps = loader.run_id, loader.steps
    loader.close()
    want = []
    for rank in range(world_size):
        info, batches = rank_steps(server, {"run": run, "world_size": world_size}, rank)
        assert len(batches) == steps
        for step, b in enumerate(batches):
            t = pa.Table.from_batches([b]).select(["id", "reward", "_component", "_row"])
            want.extend(tuple(r.values()) + (step,) for r in t.to_pylist())
    reader = (spark.read.format("weft").option("uri", server.location).option("run", run[:12])
              .option("world_size", str(world_size)).option("columns", "id,reward"))
    if per:
        reader = reader.option("steps_per_partition", str(per))
    df = reader.load()
    assert df.columns == ["id", "reward", "_component", "_row", "_step"]
    assert df.rdd.getNumPartitions() == world_size * (-(-steps // per) if per else 1)
    got = [tuple(r) for r in df.collect()]
    assert len(got) == steps * 64
    assert sorted(got) == sorted(want), "every rank's rows of every step, exactly"

    # a step range: just its steps
    part = (spark.read.format("weft").option("uri", server.location).option("run", run)
            .option("start_step", "2").option("end_step", "5").load())
    counts = {r["_step"]: r["count"] for r in part.groupBy("_step").count().collect()}
    assert counts == {2: 64, 3: 64, 4: 64}


def test_errors(spark, server, branch):
    with pytest.raises(Exception, match="PROJECT/REF/TABLE"):
        spark.read.format("weft").option("uri", server.location).option("table", "robotics/grasps").load()
    with pytest.raises(Exception, match="exactly one"):
        spark.read.format("weft").option("uri", server.location).load()
    with pytest.raises(Exception, match="nope"):
        spark.read.format("weft").option("uri", server.location).option("table", "robotics/main/nope").load()
