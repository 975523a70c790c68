"""Spark count over a 1 M-row weft scan next to pyarrow.dataset reading the
same Parquet files, in the same run (issue 18's benchmark).

Writes ROWS rows into a fresh flightd on the fs store, then times, warm
(best of --repeat after one untimed pass):

- pyarrow.dataset over the table's Parquet files in the store: count_rows()
  (footers only) and to_table() (every column decoded);
- DuckDB over scan.to_arrow_reader(): select count(*) (the whole scan
  streamed over Flight);
- Spark local[N]: spark.read.format("weft") … .count() (the executors DoGet
  every endpoint: a Python data source has no count pushdown), and the same
  with .option("columns", "id");
- Spark local[N] reading the same Parquet files natively (spark.read.parquet).

    python bench/spark.py --flightd bin/flightd --out bench/spark-results.md
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

import weft

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "python" / "tests"))
from conftest import Flightd, fs_store  # noqa: E402  (the tests' process helpers)


def table(first: int, n: int) -> pa.Table:
    ids = pa.array(range(first, first + n), pa.int64())
    return pa.table({
        "id": ids,
        "episode": pc.divide(ids, 1000),
        "reward": pc.multiply(pc.cast(pc.bit_wise_and(pc.multiply(ids, 2654435761), 0xFFFFFF), pa.float64()), 0.5),
        "task": pc.binary_join_element_wise("task-", pc.cast(pc.bit_wise_and(ids, 63), pa.string()), ""),
        "obs": pa.FixedSizeListArray.from_arrays(pc.cast(pc.bit_wise_and(
            pa.array(range(4 * first, 4 * (first + n)), pa.int64()), 1023), pa.float32()), 4),
    })


def best(fn, repeat: int) -> tuple[float, object]:
    fn()  # warm: page cache, JIT, Python workers
    times, out = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return min(times), out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--flightd", default=str(REPO / "bin" / "flightd"))
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--endpoint-size", default="1MiB", help="flightd --scan-endpoint-size: Spark's partitions")
    ap.add_argument("--out", default=str(REPO / "bench" / "spark-results.md"))
    args = ap.parse_args()

    import duckdb
    from pyspark.sql import SparkSession

    work = Path(tempfile.mkdtemp(prefix="weft-spark-bench-"))
    store = fs_store(work / "store")
    server = Flightd(args.flightd, store, work, ["--scan-endpoint-size", args.endpoint_size]).start()
    try:
        c = weft.Client(server.location)
        br = c.create_project("bench").branch("main")
        t0 = time.perf_counter()
        step = 250_000
        for first in range(0, args.rows, step):
            br.table("t").append(table(first, min(step, args.rows - first)))
        write_s = time.perf_counter() - t0
        files = sorted(str(p) for p in (work / "store").rglob("*.parquet"))
        size = sum(os.path.getsize(f) for f in files)
        scan = br.table("t").scan_request()
        endpoints = len(scan.plan().tickets)
        print(f"{args.rows} rows in {len(files)} Parquet files ({size / 1e6:.1f} MB), {endpoints} scan endpoints; "
              f"written in {write_s:.1f} s", file=sys.stderr)

        results: list[tuple[str, float, int]] = []

        def record(name, fn):
            s, n = best(fn, args.repeat)
            assert n == args.rows, f"{name}: counted {n}, not {args.rows}"
            results.append((name, s, n))
            print(f"{name}: {s:.3f} s ({n / s / 1e6:.2f} M rows/s)", file=sys.stderr)

        dataset = ds.dataset(files, format="parquet")
        record("pyarrow.dataset count_rows() (Parquet footers)", lambda: dataset.count_rows())
        record("pyarrow.dataset to_table() (all columns decoded)", lambda: dataset.to_table().num_rows)
        record("DuckDB count(*) over scan.to_arrow_reader() (Flight)",
               lambda: duckdb.sql("select count(*) from r").fetchall()[0][0]
               if (r := scan.to_arrow_reader()) is not None else 0)

        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        t0 = time.perf_counter()
        spark = (SparkSession.builder.master(f"local[{args.cores}]").appName("weft-bench")
                 .config("spark.ui.enabled", "false").config("spark.driver.memory", "2g")
                 .config("spark.python.worker.reuse", "true").getOrCreate())
        spark.sparkContext.setLogLevel("ERROR")
        start_s = time.perf_counter() - t0
        spark.dataSource.register(weft.WeftDataSource)
        weft_df = spark.read.format("weft").option("uri", server.location).option("table", "bench/main/t")
        parts = weft_df.load().rdd.getNumPartitions()
        record(f"Spark local[{args.cores}] weft count() ({parts} partitions, all columns)",
               lambda: weft_df.load().count())
        record(f"Spark local[{args.cores}] weft count(), columns=id", lambda: weft_df.option("columns", "id").load().count())
        record(f"Spark local[{args.cores}] read.parquet(same files).count()", lambda: spark.read.parquet(*files).count())
        spark.stop()
    finally:
        server.stop()

    lines = [
        "# Spark and DuckDB over a weft scan, next to pyarrow.dataset on the same Parquet",
        "",
        f"`python bench/spark.py` on {platform.node() or 'this machine'}: {os.cpu_count()} cores, "
        f"Python {platform.python_version()}, pyarrow {pa.__version__}, duckdb {duckdb.__version__}, "
        f"pyspark {__import__('pyspark').__version__}, fs store (page cache warm).",
        "",
        f"Table: {args.rows:,} rows (id, episode int64; reward float64; task string; obs float32[4]) in "
        f"{len(files)} Parquet files, {size / 1e6:.1f} MB (zstd); {endpoints} scan endpoints "
        f"(`--scan-endpoint-size {args.endpoint_size}`), so {endpoints} Spark partitions. "
        f"Best of {args.repeat} after one warm-up pass; SparkSession start {start_s:.1f} s not included.",
        "",
        "| reader | seconds | M rows/s |",
        "| --- | ---: | ---: |",
    ]
    for name, s, n in results:
        lines.append(f"| {name} | {s:.3f} | {n / s / 1e6:.2f} |")
    lines += [
        "",
        "Spark's count over the weft source reads every endpoint over Flight into Python workers and hands the "
        "batches to the JVM as Arrow (a Python data source has no count or column pushdown beyond the "
        "`columns` option); `read.parquet` is Spark's own vectorized reader on local files, the ceiling for "
        "a Spark that could see the bucket. pyarrow's count_rows() reads only the Parquet footers.",
        "",
    ]
    Path(args.out).write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
