"""The video part of `make demo`: robot episodes with a wrist camera.

Starts `flightd serve` on a fresh local-directory store, writes two tables
of grasp moments (failed and nominal episodes) with their wrist-camera MP4s
(checked into testdata/video; this demo never runs ffmpeg), trains the
seed's 0.3/0.7 mix with windows of frames and action chunks, and writes a
PNG contact sheet of one batch: one row per sample, one column per frame of
its window. Usage (make demo runs it):

    python python/examples/video_demo.py --flightd bin/flightd --clips testdata/video
"""

from __future__ import annotations

import argparse
import os
import re
import struct
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path

import numpy as np
import pyarrow as pa

import weft
from weft.testing import die_with_parent, free_port

FPS = 30
FRAMES = 90  # every demo clip: 3 s at 30 fps


def moments(episodes: list[int], seed: int) -> pa.Table:
    """One row per frame of each episode: what a robot logs at 30 Hz."""
    rng = np.random.default_rng(seed)
    ep = np.repeat(np.asarray(episodes, dtype=np.int64), FRAMES)
    k = np.tile(np.arange(FRAMES, dtype=np.int64), len(episodes))
    t = k / FPS
    state = rng.normal(size=(len(ep), 6)).astype(np.float32)
    action = rng.normal(size=(len(ep), 6)).astype(np.float32)
    return pa.table({
        "episode_index": ep,
        "frame_index": k,
        "timestamp": t,
        "state": pa.FixedSizeListArray.from_arrays(pa.array(state.ravel()), 6),
        "action": pa.FixedSizeListArray.from_arrays(pa.array(action.ravel()), 6),
    })


def write_png(path: Path, rgb: np.ndarray) -> None:
    """A minimal PNG writer (8-bit RGB, no filter), so the demo needs no
    imaging library."""
    h, w, _ = rgb.shape
    raw = b"".join(b"\x00" + rgb[y].tobytes() for y in range(h))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
                     + chunk(b"IDAT", zlib.compress(raw, 6)) + chunk(b"IEND", b""))


COLORS = {0: (230, 120, 30), 1: (40, 170, 90)}  # component 0 failed (orange), 1 nominal (green)


def contact_sheet(frames: np.ndarray, pad: np.ndarray, component: np.ndarray, scale: int = 2) -> np.ndarray:
    """frames [B,T,H,W,3] uint8 -> one picture: a row per sample led by its
    component's color, a column per window frame; padded frames (repeats at
    an episode's edge) are dimmed and crossed out."""
    b, t, h, w, _ = frames.shape
    gap, bar = 2, 8
    H, W = h * scale, w * scale
    out = np.full((b * (H + gap) + gap, bar + gap + t * (W + gap) + gap, 3), 255, np.uint8)
    for i in range(b):
        y = gap + i * (H + gap)
        out[y:y + H, gap:gap + bar] = COLORS.get(int(component[i]), (128, 128, 128))
        for j in range(t):
            x = bar + 2 * gap + j * (W + gap)
            img = frames[i, j].repeat(scale, 0).repeat(scale, 1)
            if pad[i, j]:
                img = (img // 3 + 160).astype(np.uint8)
                d = np.arange(min(H, W))
                img[d, d] = (200, 0, 0)
                img[d, W - 1 - d] = (200, 0, 0)
            out[y:y + H, x:x + W] = img
    return out


def start_flightd(binary: str, store: Path, *args: str) -> tuple[subprocess.Popen, str]:
    """`flightd serve` on store (more flags in args), once it answers."""
    port = free_port()
    log = open(store.parent / "flightd.log", "ab")
    proc = subprocess.Popen([binary, "serve", "--store", str(store), "--addr", f"127.0.0.1:{port}", *args],
                            stdin=subprocess.DEVNULL, stdout=log, stderr=log, preexec_fn=die_with_parent)
    uri = f"grpc://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            weft.Client(uri).tables()
            return proc, uri
        except Exception:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                sys.exit(f"flightd did not start; see {store.parent / 'flightd.log'}")
            time.sleep(0.1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--flightd", default="bin/flightd")
    ap.add_argument("--clips", default="testdata/video")
    ap.add_argument("--dir", default=None, help="where the store and the contact sheet go (default: a new temp dir)")
    args = ap.parse_args()
    clips = Path(args.clips)
    work = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="weft-demo-video-"))
    work.mkdir(parents=True, exist_ok=True)
    store = work / "store"
    proc, uri = start_flightd(args.flightd, store)
    try:
        run(uri, clips, work)
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def episode_files(clips: Path, prefix: str) -> dict[int, str]:
    files = {}
    for p in sorted(clips.glob(f"{prefix}_*.mp4")):
        m = re.fullmatch(rf"{prefix}_(\d+)\.mp4", p.name)
        if m:
            files[int(m.group(1))] = str(p)
    if not files:
        sys.exit(f"no {prefix}_N.mp4 clips in {clips}")
    return files


def run(uri: str, clips: Path, work: Path) -> None:
    client = weft.Client(uri)
    robots = client.create_project("robotics").branch("main")
    print("== video: robot episodes with a wrist camera")
    tables = {}
    for name, prefix, seed in (("failed_grasps", "failed", 1), ("nominal_grasps", "nominal", 2)):
        files = episode_files(clips, prefix)
        table = robots.table(name)
        t0 = time.perf_counter()
        commit = table.append(moments(sorted(files), seed), videos={"wrist_camera": files})
        size = sum(os.path.getsize(f) for f in files.values())
        print(f"   {name}: {len(files)} episodes x {FRAMES} moments + {len(files)} MP4s ({size / 1024:.0f} KiB), "
              f"one commit {commit[:12]} in {time.perf_counter() - t0:.2f}s")
        tables[name] = table

    window = weft.Windows({"wrist_camera": weft.Video(range(-12, 13, 4)), "action": weft.Rows(range(8))})
    recipe = weft.Recipe(seed=2048, batch_size=8, components=[
        weft.Component(tables["failed_grasps"], windows=window, weight=0.3, columns=["episode_index", "frame_index"]),
        weft.Component(tables["nominal_grasps"], windows=window, weight=0.7, columns=["episode_index", "frame_index"]),
    ])
    print("   recipe: 0.3 failed_grasps + 0.7 nominal_grasps, batch 8, windows "
          "wrist_camera=Video(range(-12, 13, 4)) (7 frames, 0.8 s around each moment), action=Rows(range(8))")
    loader = weft.TrainLoader(recipe, world=weft.World(rank=0, world_size=1))
    t0 = time.perf_counter()
    batch = next(iter(loader))
    first = time.perf_counter() - t0
    frames = batch["wrist_camera"].numpy()
    pad = batch["wrist_camera_is_pad"].numpy()
    comp = batch["_component"].numpy()
    print(f"   run {loader.run_id[:12]}: step 0 in {first:.2f}s -> wrist_camera {tuple(frames.shape)} uint8, "
          f"action {tuple(batch['action'].shape)}, {int(pad.sum())} padded frames (episode edges)")
    for i in range(len(comp)):
        name = "failed " if comp[i] == 0 else "nominal"
        print(f"     sample {i}: {name} episode {int(batch['episode_index'][i])} frame {int(batch['frame_index'][i]):2d} "
              f"pad {''.join('x' if p else '.' for p in pad[i])}")
    sheet = work / "contact-sheet.png"
    write_png(sheet, contact_sheet(frames, pad, comp))
    print(f"   contact sheet (a row per sample: orange failed, green nominal; crossed frames are padding): {sheet}")
    loader.close()


if __name__ == "__main__":
    main()
