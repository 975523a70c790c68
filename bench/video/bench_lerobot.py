#!/usr/bin/env python3
"""bench_lerobot.py: LeRobot's windows/s on bench/video's episodes (issue 13's anchor).

Runs in the LeRobot venv (bench/video/setup-lerobot.sh), never in CI:

    PY=$(bench/video/setup-lerobot.sh)
    /work/main/.venv/bin/python bench/video/make_episodes.py          # once
    HF_HUB_OFFLINE=1 $PY bench/video/bench_lerobot.py [--json out.json]

For every dataset (size x GOP) and window length T it builds
``LeRobotDataset(repo_id, root=..., delta_timestamps={cam: [k/fps for k in
range(T)]})`` with LeRobot's default video backend (torchcodec when it is
installed, as here) and reads it through
``DataLoader(num_workers=2, shuffle=True, batch_size=8)``, each config in a
fresh process. Columns:

- windows/s, frames/s: samples (and samples x T frames) per second over the
  timed batches, after ``--warmup`` batches; at least ``--batches`` batches
  and ``--min-seconds`` seconds, at most ``--max-batches``.
- first batch: seconds from ``iter(loader)`` to the first batch (worker
  start, dataset load in the workers, first decodes).
- peak RSS / PSS: the trainer process plus its DataLoader workers, summed,
  sampled every 0.1 s (RSS counts torch's shared pages once per process;
  PSS splits them, so it is the honest total).
- CPU-s/kframe: CPU seconds of the trainer and its workers per 1000 frames
  delivered in the timed part (compare with limit_pyav.py's per-core rate).
- dec/deliv: frames decoded per frame delivered, a MODEL (torchcodec's
  decode loop is not observable from Python): a window needs its unique
  frames f..min(f+T-1, last); a decoder seeks to the keyframe at or before
  f and decodes through the window's last frame, so decoded = last - kf(f)
  + 1 per window, over the window's distinct frames last - f + 1 (padding
  repeats the edge frame without decoding it again, so pads count in
  neither). 1.0 means no GOP overhead. The keyframes are the encoded
  files' (ffprobe).

LeRobot delivers float32 [B, T, 3, H, W] in [0, 1] (its default; the
conversion is part of its cost); Weft delivers uint8 [B, T, H, W, 3].
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

CAM = "observation.images.cam"
DEFAULT_DATA = Path.home() / ".cache" / "weft" / "bench-video"


class TreeSampler:
    """Peak RSS and PSS of this process plus its descendants, and their CPU time."""

    def __init__(self, interval: float = 0.1):
        import psutil

        self.psutil, self.interval = psutil, interval
        self.me = psutil.Process()
        self.peak_rss = self.peak_pss = 0
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)

    def procs(self):
        try:
            return [self.me] + self.me.children(recursive=True)
        except self.psutil.Error:
            return [self.me]

    @staticmethod
    def _pss(pid: int) -> int:
        try:
            with open(f"/proc/{pid}/smaps_rollup") as f:
                for line in f:
                    if line.startswith("Pss:"):
                        return int(line.split()[1]) * 1024
        except OSError:
            pass
        return 0

    def sample(self) -> None:
        rss = pss = 0
        for p in self.procs():
            try:
                rss += p.memory_info().rss
            except self.psutil.Error:
                continue
            pss += self._pss(p.pid)
        self.peak_rss, self.peak_pss = max(self.peak_rss, rss), max(self.peak_pss, pss)

    def cpu(self) -> float:
        total = 0.0
        for p in self.procs():
            try:
                t = p.cpu_times()
                total += t.user + t.system
            except self.psutil.Error:
                pass
        return total

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.sample()

    def __enter__(self):
        self._t.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._t.join()


def decoded_model(batch, T: int, length: int, keyframes: list[list[int]]) -> tuple[int, int]:
    """(frames decoded, distinct frames needed) for a batch's windows, per the model in the module doc."""
    import bisect

    dec = need = 0
    eps, starts = batch["episode_index"].tolist(), batch["frame_index"].tolist()
    for ep, f in zip(eps, starts):
        last = min(f + T - 1, length - 1)
        keys = keyframes[ep]
        kf = keys[bisect.bisect_right(keys, f) - 1]
        dec += last - kf + 1
        need += last - f + 1
    return dec, need


def run_one(a) -> dict:
    import torch
    from torch.utils.data import DataLoader

    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    root = Path(a.data) / a.config
    done = json.loads((root / "weft" / "done.json").read_text())
    fps, length, keyframes = done["args"]["fps"], done["args"]["frames"], done["keyframes"]
    with TreeSampler() as mem:
        t_load = time.perf_counter()
        ds = LeRobotDataset(f"weft/bench_{a.config}", root=root, video_backend=a.backend,
                            delta_timestamps={CAM: [k / fps for k in range(a.T)]})
        t_load = time.perf_counter() - t_load
        loader = DataLoader(ds, batch_size=a.batch_size, shuffle=True, num_workers=a.workers,
                            generator=torch.Generator().manual_seed(a.seed))
        t0 = time.perf_counter()
        it = iter(loader)
        b = next(it)
        first = time.perf_counter() - t0
        shape = list(b[CAM].shape)
        dtype = str(b[CAM].dtype)
        for _ in range(a.warmup - 1):
            next(it)
        cpu0, t0 = mem.cpu(), time.perf_counter()
        n = dec = deliv = 0
        while n < a.max_batches and (n < a.batches or time.perf_counter() - t0 < a.min_seconds):
            b = next(it)
            d, v = decoded_model(b, a.T, length, keyframes)
            dec, deliv, n = dec + d, deliv + v, n + 1
        dt = time.perf_counter() - t0
        cpu = mem.cpu() - cpu0
        mem.sample()
        del it
    windows = n * a.batch_size
    return {
        "config": a.config, "T": a.T, "size": done["args"]["size"], "gop": done["args"]["gop"],
        "codec": done["args"]["codec"], "backend": ds.video_backend, "batch_size": a.batch_size,
        "workers": a.workers, "batches": n, "seconds": round(dt, 3),
        "windows_s": round(windows / dt, 2), "frames_s": round(windows * a.T / dt, 1),
        "first_batch_s": round(first, 3), "dataset_open_s": round(t_load, 3),
        "peak_rss_mb": round(mem.peak_rss / 2**20), "peak_pss_mb": round(mem.peak_pss / 2**20),
        "cpu_s_per_kframe": round(cpu / (windows * a.T) * 1000, 3),
        "decoded_per_delivered": round(dec / deliv, 3), "batch_shape": shape, "dtype": dtype,
        "loadavg_1m": round(os.getloadavg()[0], 2),
    }


COLUMNS = [("config", "config"), ("T", "T"), ("windows_s", "windows/s"), ("frames_s", "frames/s"),
           ("first_batch_s", "first batch s"), ("peak_rss_mb", "peak RSS MB"), ("peak_pss_mb", "peak PSS MB"),
           ("cpu_s_per_kframe", "CPU-s/kframe"), ("decoded_per_delivered", "dec/deliv (model)"),
           ("loadavg_1m", "load 1m")]


def table(rows: list[dict], columns=COLUMNS) -> str:
    out = ["| " + " | ".join(h for _, h in columns) + " |", "|" + "---|" * len(columns)]
    for r in rows:
        out.append("| " + " | ".join(str(r.get(k, "")) for k, _ in columns) + " |")
    return "\n".join(out)


def merge(paths: list[str]) -> str:
    """One row per (config, T) over the runs of several --json files: the best
    run's columns, the range of windows/s, the median CPU-s/kframe, the runs."""
    import statistics

    groups: dict[tuple, list[dict]] = {}
    for p in paths:
        for r in json.loads(Path(p).read_text())["runs"]:
            groups.setdefault((r["config"], r["T"]), []).append(r)
    rows = []
    for _, rs in groups.items():
        best = dict(max(rs, key=lambda r: r["windows_s"]))
        best["range"] = f"{min(r['windows_s'] for r in rs)}–{max(r['windows_s'] for r in rs)}"
        best["cpu_med"] = round(statistics.median(r["cpu_s_per_kframe"] for r in rs), 3)
        best["n"] = len(rs)
        rows.append(best)
    cols = COLUMNS[:5] + [("range", "windows/s range"), ("peak_rss_mb", "peak RSS MB"), ("peak_pss_mb", "peak PSS MB"),
                          ("cpu_med", "CPU-s/kframe (median)"), ("decoded_per_delivered", "dec/deliv (model)"),
                          ("loadavg_1m", "load 1m (best)"), ("n", "runs")]
    return table(rows, cols)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=str(DEFAULT_DATA))
    ap.add_argument("--configs", default="96_g2,96_g30,224_g2,224_g30")
    ap.add_argument("--T", default="16,90")
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--warmup", type=int, default=3, help="batches before timing (the first one included)")
    ap.add_argument("--batches", type=int, default=20)
    ap.add_argument("--min-seconds", type=float, default=8.0)
    ap.add_argument("--max-batches", type=int, default=300)
    ap.add_argument("--backend", default=None, help="LeRobot video_backend (None: its default)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeat", type=int, default=1, help="runs per config; the table keeps the best windows/s")
    ap.add_argument("--json", help="write all runs here")
    ap.add_argument("--merge", nargs="+", metavar="JSON", help="print one table over the runs of these --json files")
    ap.add_argument("--one", help=argparse.SUPPRESS)  # child: CONFIG:T
    a = ap.parse_args()
    if a.merge:
        print(merge(a.merge))
        return 0
    if a.one:
        a.config, t = a.one.split(":")
        a.T = int(t)
        print("RESULT " + json.dumps(run_one(a)), flush=True)
        return 0
    runs, best = [], []
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TQDM_DISABLE": "1"}
    for config in a.configs.split(","):
        for T in map(int, a.T.split(",")):
            got = []
            for _ in range(a.repeat):
                cmd = [sys.executable, __file__, "--one", f"{config}:{T}"] + [
                    x for k, v in vars(a).items()
                    if k not in ("one", "configs", "T", "json", "repeat", "merge") and v is not None
                    for x in (f"--{k.replace('_', '-')}", str(v))]
                p = subprocess.run(cmd, capture_output=True, text=True, env=env)
                line = [ln for ln in p.stdout.splitlines() if ln.startswith("RESULT ")]
                if p.returncode or not line:
                    print(f"{config} T={T}: failed ({p.returncode})\n{p.stderr[-3000:]}", file=sys.stderr)
                    continue
                r = json.loads(line[0][7:])
                got.append(r)
                print(json.dumps(r), file=sys.stderr, flush=True)
            runs += got
            if got:
                best.append(max(got, key=lambda r: r["windows_s"]))
    print(table(best))
    if a.json:
        Path(a.json).write_text(json.dumps({"runs": runs, "best": best}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
