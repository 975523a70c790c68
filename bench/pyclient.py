"""The Python client against a Go client, on the same run of the same server.

Writes the small-row tables of the mix benchmark (bench/README.md: `small_a`
and `small_b` of `id int64, features float32[32], label int64`, 144 B/row)
into a fresh flightd through `weft`, resolves the 0.3/0.7 mix with B = 256,
then alternates rounds of

- Go: `weftbench read-run` (arrow-go Flight client) draining the run, and
- Python: `weft.TrainLoader` iterating the same run to dicts of torch tensors,

and prints samples/s (median, min, max of the rounds) and their ratio; with
--out it writes the table as Markdown. Run by `make bench-python`:

    python bench/pyclient.py --flightd bin/flightd --weftbench bin/weftbench \
        [--rows 1000000,4000000] [--steps 8000] [--rounds 5] [--store fs|minio]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import torch

import weft

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "python" / "tests"))
from conftest import MinIO, Flightd, find_binary, fs_store  # noqa: E402  (the tests' process helpers)


def large_table(first: int, n: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    size = 100 << 10
    values = rng.integers(0, 256, n * size, dtype=np.uint8)
    offsets = pa.array(np.arange(0, (n + 1) * size, size, dtype=np.int32))
    images = pa.BinaryArray.from_buffers(pa.binary(), n, [None, offsets.buffers()[1], pa.py_buffer(values)])
    return pa.table({"id": np.arange(first, first + n, dtype=np.int64), "image": images})


def small_table(first: int, n: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    ids = np.arange(first, first + n, dtype=np.int64)
    features = pa.FixedSizeListArray.from_arrays(pa.array(rng.random(n * 32, dtype=np.float32)), 32)
    return pa.table({"id": ids, "features": features, "label": ids % 1000})


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def python_round(recipe: weft.Recipe, run: str, steps: int, prefetch: int) -> dict:
    loader = weft.TrainLoader(recipe, prefetch=prefetch)
    loader.load_state_dict({"run": run, "step": 0})
    t0, cpu0 = time.perf_counter(), time.process_time()
    samples = nbytes = 0
    first = None
    for batch in loader:
        if first is None:
            first = time.perf_counter() - t0
        samples += len(batch["_row"])
        nbytes += sum(v.numel() * v.element_size() if isinstance(v, torch.Tensor) else sum(map(len, v))
                      for v in batch.values())
    secs, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    loader.close()
    assert loader.next_step == steps, (loader.next_step, steps)
    return {"samples": samples, "secs": secs, "samples_per_s": samples / secs, "mb_per_s": nbytes / secs / 1e6,
            "first_batch_s": first, "cpu_us_per_sample": cpu / samples * 1e6}


def proc_cpu(pid: int) -> float:
    """CPU seconds (user + system) process pid has used."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def go_round(weftbench: str, addr: str, run: str, steps: int) -> dict:
    cpu0 = children_cpu()
    out = subprocess.run([weftbench, "read-run", "--addr", addr, "--cmd",
                          json.dumps({"run": run, "world_size": 1, "end_step": steps})],
                         check=True, capture_output=True, text=True)
    res = json.loads(out.stdout.strip().splitlines()[-1])
    assert res["steps"] == steps, res
    return {"samples": res["rows"], "secs": res["secs"], "samples_per_s": res["rows_per_s"],
            "mb_per_s": res["mb_per_s"], "first_batch_s": res["first_batch_s"],
            "cpu_us_per_sample": (children_cpu() - cpu0) / res["rows"] * 1e6}


def summary(rounds: list[dict], key: str = "samples_per_s") -> tuple[float, float, float]:
    vals = [r[key] for r in rounds]
    return statistics.median(vals), min(vals), max(vals)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--flightd", default=str(REPO / "bin" / "flightd"))
    ap.add_argument("--weftbench", default=str(REPO / "bin" / "weftbench"))
    ap.add_argument("--workload", choices=["small", "large"], default="small",
                    help="small: 144 B rows, B = 256; large: 100 KiB binary rows, B = 64")
    ap.add_argument("--rows", help="rows of the two tables (default 1000000,4000000 small; 1500,1500 large)")
    ap.add_argument("--steps", type=int, help="steps read per round (default 8000 small, 300 large)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--prefetch", type=int, default=4)
    ap.add_argument("--store", choices=["fs", "minio"], default="fs")
    ap.add_argument("--out", help="write the results as Markdown here")
    args = ap.parse_args()
    large = args.workload == "large"
    rows = [int(x) for x in (args.rows or ("1500,1500" if large else "1000000,4000000")).split(",")]
    args.steps = args.steps or (300 if large else 8000)
    batch = 64 if large else 256
    make, chunk = (large_table, 500) if large else (small_table, 1_000_000)

    work = Path(tempfile.mkdtemp(prefix="weft-pyclient-"))
    minio = None
    try:
        if args.store == "fs":
            store = fs_store(work / "store")
        else:
            binary = find_binary("minio")
            if binary is None:
                sys.exit("minio not found: run `make tools`")
            minio = MinIO(binary, work)
            store = minio.store(minio.new_bucket())
        server = Flightd(args.flightd, store, work, ["--row-group-size", "8MiB"] if large else []).start()
        log(f"flightd on {server.addr}, {args.store} store")
        client = weft.Client(server.location)
        br = client.create_project("bench").branch("main")
        names = [f"{args.workload}_a", f"{args.workload}_b"]
        for name, n, seed in ((names[0], rows[0], 1), (names[1], rows[1], 2)):
            t0 = time.perf_counter()
            for first in range(0, n, chunk):
                br.table(name).append(make(first, min(chunk, n - first), seed * 1000 + first))
            log(f"wrote {name}: {n:,} rows in {time.perf_counter() - t0:.1f}s")
        recipe = weft.Recipe(seed=2048, batch_size=batch, steps=args.steps, components=[
            weft.Component(br.table(names[0]), weight=0.3), weft.Component(br.table(names[1]), weight=0.7)])
        run = weft.TrainLoader(recipe).run_id
        log(f"run {run[:16]}…, {args.steps} steps of {batch}; warming the server's cache with one Go pass")
        go_round(args.weftbench, server.addr, run, args.steps)

        go, py = [], []
        pid = server.proc.pid
        for i in range(args.rounds):
            for rounds, measure in ((go, lambda: go_round(args.weftbench, server.addr, run, args.steps)),
                                    (py, lambda: python_round(recipe, run, args.steps, args.prefetch))):
                cpu0 = proc_cpu(pid)
                r = measure()
                r["server_cpu_us_per_sample"] = (proc_cpu(pid) - cpu0) / r["samples"] * 1e6
                rounds.append(r)
            log(f"round {i + 1}/{args.rounds}: Go {go[-1]['samples_per_s']:,.0f} samples/s, "
                f"Python {py[-1]['samples_per_s']:,.0f} samples/s ({py[-1]['samples_per_s'] / go[-1]['samples_per_s']:.0%})")
        server.stop()

        g, p = summary(go), summary(py)
        ratio = p[0] / g[0]
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        table = [
            "| client | samples/s median | min | max | MB/s median | first batch (median) | client CPU per sample (median) | flightd CPU per sample (median) |",
            "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
            f"| Go (arrow-go Flight, `weftbench read-run`) | {g[0]:,.0f} | {g[1]:,.0f} | {g[2]:,.0f} | "
            f"{summary(go, 'mb_per_s')[0]:,.0f} | {summary(go, 'first_batch_s')[0] * 1e3:.1f} ms | "
            f"{summary(go, 'cpu_us_per_sample')[0]:.2f} µs | {summary(go, 'server_cpu_us_per_sample')[0]:.2f} µs |",
            f"| Python (`weft.TrainLoader` → torch tensors, prefetch {args.prefetch}) | {p[0]:,.0f} | {p[1]:,.0f} | "
            f"{p[2]:,.0f} | {summary(py, 'mb_per_s')[0]:,.0f} | {summary(py, 'first_batch_s')[0] * 1e3:.1f} ms | "
            f"{summary(py, 'cpu_us_per_sample')[0]:.2f} µs | {summary(py, 'server_cpu_us_per_sample')[0]:.2f} µs |",
        ]
        print("\n".join(table))
        print(f"Python / Go: {ratio:.0%} (goal ≥ 75%); Python process peak RSS {rss:,.0f} MiB")
        if args.out:
            machine = f"{os.cpu_count()} cores, {os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2**30:.0f} GiB, {platform.platform()}"
            text = [
                "# Python client vs Go client (`make bench-python`)",
                "",
                f"Written by `bench/pyclient.py` on {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; machine: {machine}; "
                f"torch {torch.__version__}, pyarrow {pa.__version__}.",
                "",
                (f"Small-row mix of issue 5 (`small_a` {rows[0]:,} + `small_b` {rows[1]:,} rows of id int64, features "
                 f"float32[32], label int64; 0.3/0.7, B = 256, W = 1)" if not large else
                 f"Large-row mix (`large_a` {rows[0]:,} + `large_b` {rows[1]:,} rows of id int64, image binary of "
                 f"100 KiB; 8 MiB row groups; 0.3/0.7, B = 64, W = 1; images as Python lists of bytes)") + f" served by one `flightd` on the {args.store} store, "
                f"{args.steps:,} steps ({args.steps * batch:,} samples) per round, {args.rounds} rounds alternating Go and Python "
                "after one warm-up pass (every block cached in the server). The Go client and the Python client read "
                "the same run id from the same server. The Python figure is to torch tensors (one copy out of Arrow, "
                "`_component` and `_row` included) in the trainer process.",
                "",
                *table,
                "",
                f"**Python / Go = {ratio:.0%}** (goal ≥ 75 %). Peak RSS of the Python process: {rss:,.0f} MiB.",
                "",
                "Both clients are bound by the server here (one `flightd` on the same 2 cores gathers 256 random rows "
                "per step); the CPU column is what each client spends per sample (Go: the `weftbench` process; "
                "Python: the trainer process, incl. its prefetch thread and the conversion to tensors), so it shows "
                "where a faster server would leave each client.",
                "",
                "Reproduce: `make bench-python` (or `make flightd && go build -o bin/weftbench ./bench/cmd/weftbench && "
                ".venv/bin/python bench/pyclient.py --out bench/pyclient-results.md`).",
                "",
            ]
            Path(args.out).write_text("\n".join(text))
            log(f"wrote {args.out}")
        return 0
    finally:
        if minio is not None:
            minio.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
