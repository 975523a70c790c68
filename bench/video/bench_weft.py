#!/usr/bin/env python3
"""bench_weft.py: Weft's windows/s on bench/video's episodes, the other side of bench_lerobot.py.

STATUS: written against /work/wt/VIDEO-CONTRACT.md (issue 13) before the
server and client support video windows; it has NOT been run. The calls it
makes that do not exist yet: ``Table.append(..., videos=, episode=,
timestamp=)``, ``weft.Windows``, ``weft.Video``, ``Component(windows=...)``.
Whoever lands issue 13 runs it and fixes what the real API names
differently (``--loader-kw`` passes extra TrainLoader arguments, e.g. the
decode pool's size, without editing the file: the pyvideo branch names it
``--loader-kw '{"decode_threads": 2}'``). Checked: against a flightd
without video support it connects, creates the project and stops at
``Table.append() got an unexpected keyword argument 'videos'``.

    go build -o bin/flightd ./cmd/flightd
    bin/flightd serve --addr 127.0.0.1:8815 ...            # fs or MinIO store
    PYTHONPATH=python /work/main/.venv/bin/python bench/video/bench_weft.py \
        --addr grpc://127.0.0.1:8815 [--flightd-pid PID] [--json out.json]

Per dataset of make_episodes.py (size x GOP) it imports, once, the moments
table with its per-episode MP4s (the same files LeRobot's dataset names,
hard-linked) into table ``episodes_{config}`` of project ``bench-video``:

    table.append(moments, videos={"cam": {ep: path, ...}},
                 episode="episode_index", timestamp="timestamp")

then for T in (16, 90) reads
``weft.TrainLoader(Recipe(seed, batch_size=8, components=[Component(table,
windows=Windows({"cam": Video(range(T))}))]))`` and prints the same columns
as bench_lerobot.py (its TreeSampler and GOP model are reused), plus the
peak RSS of flightd (``--flightd-pid``, or the process listening on the
address's port). Weft delivers uint8 [B, T, H, W, 3]; LeRobot float32
[B, T, 3, H, W] in [0, 1].
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from pathlib import Path
from urllib.parse import urlparse

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_lerobot import COLUMNS, DEFAULT_DATA, TreeSampler, decoded_model  # noqa: E402

PROJECT = "bench-video"
CAM = "cam"


def flightd_pid(addr: str, given: int | None) -> int | None:
    if given:
        return given
    import psutil

    port = urlparse(addr if "://" in addr else "grpc://" + addr).port
    try:
        for c in psutil.net_connections("tcp"):
            if c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == port and c.pid:
                return c.pid
    except psutil.Error:
        pass
    return None


class PidPeak:
    """Peak RSS of one process (flightd), sampled every 0.1 s."""

    def __init__(self, pid: int | None):
        import psutil

        self.proc = psutil.Process(pid) if pid else None
        self.peak = 0
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while self.proc is not None and not self._stop.wait(0.1):
            try:
                self.peak = max(self.peak, self.proc.memory_info().rss)
            except Exception:
                return

    def __enter__(self):
        self._t.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._t.join()

    def cpu(self) -> float:
        """flightd's CPU seconds so far (0 without a pid): it shares the
        host's cores with the trainer, so the totals count it."""
        if self.proc is None:
            return 0.0
        try:
            t = self.proc.cpu_times()
            return t.user + t.system
        except Exception:
            return 0.0


def import_episodes(client, root: Path, config: str):
    """The table of config's episodes, appended once (one commit: rows and MP4s)."""
    import pyarrow.parquet as pq

    import weft

    try:
        client.create_project(PROJECT)
    except weft.AlreadyExists:
        pass
    table = client.project(PROJECT).branch("main").table(f"episodes_{config}")
    moments = pq.read_table(root / "weft" / "moments.parquet")
    if client.tables(PROJECT).get((PROJECT, table.name)) == moments.num_rows:
        return table, 0.0
    spec = json.loads((root / "weft" / "videos.json").read_text())
    videos = {CAM: {int(ep): str(root / "weft" / name) for ep, name in spec[CAM].items()}}
    t0 = time.perf_counter()
    table.append(moments, videos=videos, episode="episode_index", timestamp="timestamp")
    return table, time.perf_counter() - t0


def run_one(a, client, table, root: Path, T: int, fd_pid: int | None) -> dict:
    import weft

    done = json.loads((root / "weft" / "done.json").read_text())
    length, keyframes = done["args"]["frames"], done["keyframes"]
    steps = a.warmup + a.max_batches + 1
    recipe = weft.Recipe(seed=a.seed, batch_size=a.batch_size, steps=steps, components=[
        weft.Component(table, windows=weft.Windows({CAM: weft.Video(range(T))}),
                       columns=["episode_index", "frame_index", "timestamp", "state", "action"])])
    with TreeSampler() as mem, PidPeak(fd_pid) as fd:
        t0 = time.perf_counter()
        loader = weft.TrainLoader(recipe, **json.loads(a.loader_kw))
        it = iter(loader)
        b = next(it)
        first = time.perf_counter() - t0
        shape, dtype = list(b[CAM].shape), str(b[CAM].dtype)
        for _ in range(a.warmup - 1):
            next(it)
        cpu0, fcpu0, t0 = mem.cpu(), fd.cpu(), time.perf_counter()
        n = dec = need = 0
        while n < a.max_batches and (n < a.batches or time.perf_counter() - t0 < a.min_seconds):
            b = next(it)
            d, v = decoded_model(b, T, length, keyframes)
            dec, need, n = dec + d, need + v, n + 1
        dt = time.perf_counter() - t0
        cpu = mem.cpu() - cpu0
        fcpu = fd.cpu() - fcpu0
        mem.sample()
        del it, loader
    windows = n * a.batch_size
    return {
        "config": root.name, "T": T, "size": done["args"]["size"], "gop": done["args"]["gop"],
        "codec": done["args"]["codec"], "batch_size": a.batch_size, "batches": n, "seconds": round(dt, 3),
        "windows_s": round(windows / dt, 2), "frames_s": round(windows * T / dt, 1),
        "first_batch_s": round(first, 3), "peak_rss_mb": round(mem.peak_rss / 2**20),
        "peak_pss_mb": round(mem.peak_pss / 2**20), "flightd_peak_rss_mb": round(fd.peak / 2**20) if fd_pid else None,
        "cpu_s_per_kframe": round(cpu / (windows * T) * 1000, 3),
        "cpu_s_per_kframe_with_flightd": round((cpu + fcpu) / (windows * T) * 1000, 3),
        "decoded_per_delivered": round(dec / need, 3), "batch_shape": shape, "dtype": dtype,
        "loadavg_1m": round(os.getloadavg()[0], 2),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--addr", required=True, help="a running flightd, grpc://HOST:PORT")
    ap.add_argument("--flightd-pid", type=int)
    ap.add_argument("--data", default=str(DEFAULT_DATA))
    ap.add_argument("--configs", default="96_g2,96_g30,224_g2,224_g30")
    ap.add_argument("--T", default="16,90")
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--batches", type=int, default=20)
    ap.add_argument("--min-seconds", type=float, default=8.0)
    ap.add_argument("--max-batches", type=int, default=300)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--loader-kw", default="{}", help="JSON of extra weft.TrainLoader arguments")
    ap.add_argument("--json")
    a = ap.parse_args()

    import weft

    client = weft.Client(a.addr)
    fd_pid = flightd_pid(a.addr, a.flightd_pid)
    rows = []
    for config in a.configs.split(","):
        root = Path(a.data) / config
        table, secs = import_episodes(client, root, config)
        if secs:
            print(f"{config}: imported in {secs:.1f} s", file=sys.stderr)
        for T in map(int, a.T.split(",")):
            r = run_one(a, client, table, root, T, fd_pid)
            rows.append(r)
            print(json.dumps(r), file=sys.stderr, flush=True)
    cols = COLUMNS[:-1] + [("cpu_s_per_kframe_with_flightd", "CPU-s/kframe incl. flightd"),
                           ("flightd_peak_rss_mb", "flightd peak RSS MB"), ("loadavg_1m", "load 1m")]
    print("| " + " | ".join(h for _, h in cols) + " |\n|" + "---|" * len(cols))
    for r in rows:
        print("| " + " | ".join(str(r.get(k, "")) for k, _ in cols) + " |")
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
