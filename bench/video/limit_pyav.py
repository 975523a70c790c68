#!/usr/bin/env python3
"""limit_pyav.py: the physical limit of bench/video, PyAV decoding the clips sequentially.

    /work/main/.venv/bin/python bench/video/limit_pyav.py            # av 18.1.0 (Weft's client)
    ~/.cache/weft/lerobot-venv/bin/python bench/video/limit_pyav.py  # av 15.1.0 (LeRobot's pin)
    ... --ffmpeg    # also Debian's ffmpeg 5.1 (the FFmpeg torchcodec loads), -threads 1

For each dataset of make_episodes.py it opens every episode's MP4 and
decodes all its frames in order, once per mode:

- default: the codec context as PyAV opens it (thread_type SLICE,
  thread_count 0 = FFmpeg's automatic count; libdav1d then uses every core);
- single: thread_count = 1 (one decoding thread);
- auto: thread_type AUTO (frame + slice threads), thread_count 0.

and reports, for decode alone, for decode + ``frame.to_ndarray(format="rgb24")``
(what a trainer needs) and for decode + the same conversion through one
``VideoReformatter`` shared by the clip's frames (rgb24-shared): frames/s
of wall time and frames per CPU-second
(process CPU time of all threads), i.e. frames/s per core. Every file is
read once before timing, so the page cache holds it.

Found with it (2026-11-30): in av 18.1.0, ``to_ndarray(format="rgb24")``
on each new decoded frame builds a new swscale context per frame, 2-3x
the cost of a shared ``VideoReformatter``; av 15.1.0 does not have this
cost. A decoder should keep one reformatter per stream.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import av

DEFAULT_DATA = Path.home() / ".cache" / "weft" / "bench-video"


def clips(root: Path) -> list[Path]:
    return sorted((root / "weft").glob("ep_*.mp4"))


def decode(paths: list[Path], mode: str, rgb: str) -> tuple[int, float, float]:
    from av.video.reformatter import VideoReformatter

    n = 0
    w0, c0 = time.perf_counter(), time.process_time()
    for p in paths:
        with av.open(str(p)) as c:
            s = c.streams.video[0]
            if mode == "single":
                s.codec_context.thread_count = 1
            elif mode == "auto":
                s.thread_type = "AUTO"
            shared = VideoReformatter()
            for frame in c.decode(s):
                if rgb == "rgb24":
                    frame.to_ndarray(format="rgb24")
                elif rgb == "rgb24-shared":
                    shared.reformat(frame, format="rgb24").to_ndarray()
                n += 1
    return n, time.perf_counter() - w0, time.process_time() - c0


def ffmpeg_cli(paths: list[Path]) -> tuple[int, float, float]:
    """Debian's ffmpeg, -threads 1, decode to null: (frames, wall, utime+stime)."""
    n, wall, cpu = 0, 0.0, 0.0
    for p in paths:
        out = subprocess.run(["ffmpeg", "-hide_banner", "-nostats", "-benchmark", "-threads", "1", "-i", str(p),
                              "-f", "null", "-"], capture_output=True, text=True, check=True).stderr
        m = re.search(r"utime=([\d.]+)s stime=([\d.]+)s rtime=([\d.]+)s", out)
        f = re.findall(r"frame=\s*(\d+)", out)
        n += int(f[-1]) if f else 0
        cpu += float(m.group(1)) + float(m.group(2))
        wall += float(m.group(3))
    return n, wall, cpu


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=str(DEFAULT_DATA))
    ap.add_argument("--configs", default="96_g2,96_g30,224_g2,224_g30")
    ap.add_argument("--modes", default="default,single,auto")
    ap.add_argument("--repeat", type=int, default=2, help="best of N")
    ap.add_argument("--ffmpeg", action="store_true", help="also time Debian's ffmpeg program, -threads 1")
    ap.add_argument("--json")
    a = ap.parse_args()
    rows = []
    env = f"av {av.__version__} (libavcodec {'.'.join(map(str, av.library_versions['libavcodec']))})"
    for config in a.configs.split(","):
        paths = clips(Path(a.data) / config)
        if not paths:
            raise SystemExit(f"{Path(a.data) / config}: no clips; run make_episodes.py first")
        for p in paths:
            p.read_bytes()
        with av.open(str(paths[0])) as c:
            codec = c.streams.video[0].codec_context.name
        cases = [(m, rgb) for m in a.modes.split(",") for rgb in ("", "rgb24", "rgb24-shared")]
        for mode, rgb in cases:
            best = None
            for _ in range(a.repeat):
                n, wall, cpu = decode(paths, mode, rgb)
                if best is None or wall < best[1]:
                    best = (n, wall, cpu)
            n, wall, cpu = best
            rows.append({"config": config, "decoder": f"{env} {codec}", "mode": mode,
                         "work": "decode+" + rgb if rgb else "decode", "frames": n,
                         "fps": round(n / wall), "fps_per_core": round(n / cpu) if cpu else None,
                         "loadavg_1m": round(os.getloadavg()[0], 2)})
            print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
        if a.ffmpeg:
            best = min((ffmpeg_cli(paths) for _ in range(a.repeat)), key=lambda r: r[1])
            n, wall, cpu = best
            ver = subprocess.run(["ffmpeg", "-version"], capture_output=True, text=True).stdout.split()[2]
            rows.append({"config": config, "decoder": f"ffmpeg {ver} (program)", "mode": "threads 1",
                         "work": "decode", "frames": n, "fps": round(n / wall),
                         "fps_per_core": round(n / cpu) if cpu else None,
                         "loadavg_1m": round(os.getloadavg()[0], 2)})
            print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    cols = ["config", "decoder", "mode", "work", "frames", "fps", "fps_per_core", "loadavg_1m"]
    print("| " + " | ".join(cols) + " |\n|" + "---|" * len(cols))
    for r in rows:
        print("| " + " | ".join(str(r[c]) for c in cols) + " |")
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
