#!/usr/bin/env python3
"""Rows/s of a 4-rank training mix read from 1, 2 and 3 flightd servers over
one MinIO bucket (`flightd serve --advertise`, docs/deploy.md), with each
server's CPU seconds. Every rank is read by its own process with plain
pyarrow.flight from its endpoint's first location, as a TrainLoader does.

    python bench/multi_server.py --flightd bin/flightd --out bench/multi-server-results.md

On a machine with few cores the servers share them: expect no gain in
rows/s from more servers, only the CPU spread over them.
"""

import argparse
import json
import multiprocessing as mp
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.flight as fl

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "python"))

import weft  # noqa: E402
from weft.testing import MinIO, die_with_parent, find_binary, free_port  # noqa: E402

W = 4
TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK  # utime + stime


def start(binary, env, workdir, port, advertise, cache):
    log = open(workdir / f"flightd-{port}.log", "wb")
    args = [binary, "serve", "--store", "s3://bench", "--addr", f"127.0.0.1:{port}", "--log-format", "json",
            "--log-level", "warn", "--cache-size", cache]
    if advertise:
        args += ["--advertise", ",".join(advertise)]
    p = subprocess.Popen(args, stdout=log, stderr=log, env=env, preexec_fn=die_with_parent)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            c = fl.connect(f"grpc://127.0.0.1:{port}")
            c.wait_for_available(timeout=1)
            list(c.list_actions())
            c.close()
            return p
        except Exception:  # noqa: BLE001 - not up yet
            if p.poll() is not None:
                raise RuntimeError((workdir / f"flightd-{port}.log").read_text())
            time.sleep(0.1)
    raise RuntimeError("flightd did not start")


def read_rank(args):
    location, ticket = args
    c = fl.connect(location)
    rows = 0
    for chunk in c.do_get(fl.Ticket(ticket)):
        rows += chunk.data.num_rows
    c.close()
    return rows


def table(start, n, rng):
    return pa.table({"id": pa.array(np.arange(start, start + n, dtype=np.int64)),
                     "x": pa.FixedSizeListArray.from_arrays(pa.array(rng.random(n * 16, dtype=np.float32)), 16),
                     "label": pa.array(rng.integers(0, 1000, n, dtype=np.int32))})


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--flightd", required=True)
    ap.add_argument("--rows", type=int, default=400_000, help="rows of each of the two tables")
    ap.add_argument("--batch", type=int, default=1024)
    ap.add_argument("--steps", type=int, default=3000)
    ap.add_argument("--cache", default="1GiB")
    ap.add_argument("--out")
    a = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="weft-multi-"))
    minio = MinIO(find_binary("minio"), work / "minio")
    minio.make_bucket("bench")
    env = minio.env()
    ports = [free_port() for _ in range(3)]
    locs = [f"grpc://127.0.0.1:{p}" for p in ports]

    # Data, written once through one server.
    p = start(a.flightd, env, work, ports[0], None, a.cache)
    client = weft.Client(locs[0])
    br = client.create_project("bench").branch("main")
    rng = np.random.default_rng(1)
    for name in ("a", "b"):
        br.table(name).append(table(0, a.rows, rng))
    recipe = weft.Recipe(seed=7, batch_size=a.batch, steps=a.steps, components=[
        weft.Component(br.table("a"), weight=0.3), weft.Component(br.table("b"), weight=0.7)])
    client.close()
    p.terminate()
    p.wait()

    results = []
    ctx = mp.get_context("spawn")
    for n in (1, 2, 3):
        procs = [start(a.flightd, env, work, ports[i], locs[:n], a.cache) for i in range(n)]
        try:
            client = weft.Client(locs[0])
            for label in ("cold", "warm"):
                info = client.command_info({"recipe": recipe.to_json(), "world_size": W}, "bench")
                jobs = [(ep.locations[0].uri.decode(), ep.ticket.ticket) for ep in info.endpoints]
                with ctx.Pool(W) as pool:
                    pool.map(time.sleep, [0.5] * W)  # the workers are up (spawned, pyarrow imported)
                    cpu0 = [cpu_seconds(p.pid) for p in procs]
                    t0 = time.perf_counter()
                    rows = sum(pool.map(read_rank, jobs, chunksize=1))
                    dt = time.perf_counter() - t0
                cpu = [cpu_seconds(p.pid) - c for p, c in zip(procs, cpu0)]
                r = {"servers": n, "pass": label, "rows": rows, "seconds": dt, "rows_per_s": rows / dt, "cpu_s": cpu}
                print(json.dumps(r), flush=True)
                results.append(r)
            client.close()
        finally:
            for p in procs:
                p.terminate()
                p.wait()
    minio.stop()

    if a.out:
        lines = ["# Many servers over one bucket: a 4-rank mix from 1, 2 and 3 flightd", "",
                 f"`python bench/multi_server.py --flightd bin/flightd --out {a.out}` on {platform.node()} "
                 f"({os.cpu_count()} CPUs, shared), {time.strftime('%Y-%m-%d')}. MinIO on the same machine; "
                 f"two tables of {a.rows:,} rows (int64 id, 16 float32, int32 label: 76 bytes a row), recipe "
                 f"0.3/0.7, batch {a.batch}, {a.steps} steps, W = {W}: each rank read by its own process with "
                 f"pyarrow.flight from its endpoint's first location (`--advertise` of the first N servers), "
                 f"--cache-size {a.cache}. Cold: fresh servers (empty block caches); warm: the same run again.", "",
                 "| servers | pass | rows | seconds | rows/s | CPU s per server | CPU s total | CPU µs per row |",
                 "| ---: | --- | ---: | ---: | ---: | --- | ---: | ---: |"]
        for r in results:
            tot = sum(r["cpu_s"])
            lines.append(f"| {r['servers']} | {r['pass']} | {r['rows']:,} | {r['seconds']:.2f} | {r['rows_per_s']:,.0f} | "
                         f"{' / '.join(f'{c:.2f}' for c in r['cpu_s'])} | {tot:.2f} | {tot / r['rows'] * 1e6:.2f} |")
        Path(a.out).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
