"""Filtered scans: Weft against pyarrow.dataset on the same Parquet files.

Writes one table through `weft` into a fresh flightd on the fs store, then,
for each filter, alternates rounds of

- Weft: `table.scan_request(columns, filter=…).read()` (plan, then every
  endpoint streamed over Flight to a pyarrow Table in this process), and
- pyarrow: `pyarrow.dataset.dataset(files).to_table(columns, filter=expr)`
  on the very data files the table's manifest names (read in this process),

and prints input rows/s (table rows ÷ seconds, median of the rounds) and
the CPU seconds each used (flightd and client together for Weft), and
the bytes each read: /proc/PID/io `rchar` of flightd for Weft (its reads of
data files; the Flight messages it sends are writes) and of this process
for pyarrow. Both run warm (the files in the page cache). Run:

    python bench/filter_bench.py --flightd bin/flightd [--rows 4000000] [--rounds 5] [--out bench/filter-results.md]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

import weft

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "python" / "tests"))
from conftest import Flightd, fs_store  # noqa: E402  (the tests' process helpers)

F = pc.field


def table(first: int, n: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    ids = np.arange(first, first + n, dtype=np.int64)
    x = rng.standard_normal(n)
    x[rng.random(n) < 0.01] = np.nan
    return pa.table({
        "id": ids,                                          # sorted: row groups prune on it
        "k": rng.integers(0, 1_000_000, n, dtype=np.int64),  # random: nothing prunes
        "x": pa.array(x, mask=rng.random(n) < 0.05),         # nulls and NaN
        "label": pa.array(np.char.add("grasp-", (ids % 977).astype(str))),
        "features": pa.FixedSizeListArray.from_arrays(pa.array(rng.random(n * 8, dtype=np.float32)), 8),
    })


def rchar(pid: int) -> int:
    for line in Path(f"/proc/{pid}/io").read_text().splitlines():
        if line.startswith("rchar:"):
            return int(line.split()[1])
    return 0


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process pid so far."""
    f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--flightd", default=str(REPO / "bin" / "flightd"))
    ap.add_argument("--rows", type=int, default=4_000_000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--out")
    args = ap.parse_args()
    n = args.rows
    cases = [
        ("0.1 % on the sorted column (row groups prune)", f"id >= {n // 2} AND id < {n // 2 + n // 1000}",
         (F("id") >= n // 2) & (F("id") < n // 2 + n // 1000)),
        ("0.1 % on a random column (nothing prunes)", "k < 1000", F("k") < 1000),
        ("~50 % (x > 0, nulls and NaN)", "x > 0", F("x") > 0),
        ("string prefix and IN", "label LIKE 'grasp-97%' AND k IN (1, 2, 3, 500000) OR id < 1000",
         (pc.starts_with(F("label"), "grasp-97") & F("k").isin([1, 2, 3, 500000])) | (F("id") < 1000)),
    ]
    columns = ["id", "k", "x", "label", "features"]
    work = Path(tempfile.mkdtemp(prefix="weft-filter-"))
    server = Flightd(args.flightd, fs_store(work / "store"), work, []).start()
    client = weft.Client(server.location)
    try:
        br = client.create_project("bench").branch("main")
        t0 = time.perf_counter()
        for first in range(0, n, 1_000_000):
            br.table("t").append(table(first, min(1_000_000, n - first), first))
        print(f"wrote {n:,} rows in {time.perf_counter() - t0:.1f}s", file=sys.stderr)
        files = sorted(str(p) for p in (work / "store").rglob("*.parquet"))
        dataset = ds.dataset(files, format="parquet")
        assert dataset.count_rows() == n
        rows = []
        for name, text, expr in cases:
            scan = br.table("t").scan_request(columns, filter=text)
            want = dataset.to_table(columns=columns, filter=expr)
            got = scan.read()
            # The same rows (pyarrow reads the files in name order, Weft in row order).
            assert got.num_rows == want.num_rows, name
            assert sorted(got.column("id").to_pylist()) == sorted(want.column("id").to_pylist()), name
            w, p = [], []
            pid = server.proc.pid
            for _ in range(args.rounds):
                b0, c0, t0 = rchar(pid), cpu_seconds(pid) + time.process_time(), time.perf_counter()
                scan.read()
                w.append((time.perf_counter() - t0, rchar(pid) - b0, cpu_seconds(pid) + time.process_time() - c0))
                b0, c0, t0 = rchar(os.getpid()), time.process_time(), time.perf_counter()
                dataset.to_table(columns=columns, filter=expr)
                p.append((time.perf_counter() - t0, rchar(os.getpid()) - b0, time.process_time() - c0))
            ws, ps = statistics.median(x[0] for x in w), statistics.median(x[0] for x in p)
            wb, pb = statistics.median(x[1] for x in w), statistics.median(x[1] for x in p)
            wc, pcpu = statistics.median(x[2] for x in w), statistics.median(x[2] for x in p)
            rows.append(f"| {name} | `{text}` | {want.num_rows:,} | {n / ws / 1e6:,.1f} M | {n / ps / 1e6:,.1f} M | "
                        f"{ps / ws:.2f}× | {wc:.2f} s | {pcpu:.2f} s | {wb / 2**20:,.1f} MiB | {pb / 2**20:,.1f} MiB |")
            print(rows[-1], file=sys.stderr)
        size = sum(os.path.getsize(f) for f in files)
        machine = f"{os.cpu_count()} cores, {platform.platform()}"
        text = [
            "# Filtered scans: Weft vs pyarrow.dataset (`bench/filter_bench.py`)",
            "",
            f"Written on {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; machine: {machine} (shared with other "
            f"jobs: numbers are indicative); pyarrow {pa.__version__}. One table of {n:,} rows (id int64 sorted, k int64 "
            f"random, x float64 with 5 % nulls and 1 % NaN, label string, features float32[8]) in {len(files)} Parquet "
            f"files ({size / 2**20:,.0f} MiB, row groups of 65,536 rows, zstd) written by flightd on the fs store. Both "
            "read the same files with the same filter and all five columns, warm (page cache), median of "
            f"{args.rounds} rounds alternating the two. Weft: `scan_request(columns, filter=…).read()` — planning, "
            "flightd reading and filtering, and every matching row sent over Flight (loopback) into a pyarrow Table "
            "in the client. pyarrow: `dataset(files).to_table(columns, filter=expr)` in-process, all cores. Rows/s "
            "counts table rows (input). CPU: user + system seconds of one round, flightd's and the client's "
            "together for Weft, the benchmark process's for pyarrow (what a scan costs, whatever else runs on the "
            "machine). Bytes read: `rchar` of flightd (Weft) and of the benchmark process (pyarrow) over one round.",
            "",
            "| filter | text | matching rows | Weft rows/s | pyarrow rows/s | Weft / pyarrow | Weft CPU | pyarrow CPU "
            "| Weft bytes read | pyarrow bytes read |",
            "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
            *rows,
            "",
        ]
        print("\n".join(text))
        if args.out:
            Path(args.out).write_text("\n".join(text))
    finally:
        client.close()
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
