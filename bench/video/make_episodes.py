#!/usr/bin/env python3
"""make_episodes.py: the synthetic robot episodes of bench/video.

For every frame size and GOP it writes one LeRobot v3.0 dataset whose
videos are ONE MP4 PER EPISODE (LeRobot's format allows a file per
episode: each episode row names its file and from_timestamp 0), plus what
the Weft side imports: a moments table and the map episode -> MP4 (the very
same files, hard-linked), for
``table.append(moments, videos={"cam": {ep: path}})``.

    OUT/{size}_g{gop}/                         LeRobotDataset(repo_id, root=OUT/{size}_g{gop})
        meta/info.json  meta/tasks.parquet  meta/stats.json
        meta/episodes/chunk-000/file-000.parquet
        data/chunk-000/file-{ep:03d}.parquet
        videos/observation.images.cam/chunk-000/file-{ep:03d}.mp4
        weft/moments.parquet                   episode_index, frame_index, timestamp, state, action
        weft/ep_{ep:04d}.mp4                   hard links to the videos above
        weft/videos.json                       {"cam": {"0": "ep_0000.mp4", ...}} (paths relative to weft/)

Frames: a moving scene (gradient drifting per frame, a disc on a
per-episode Lissajous path, a scrolling textured band), so consecutive
frames differ and the codec has real work. State/action are the disc's
position and velocity.

Encoding is what LeRobot 0.4.4's ``encode_video_frames`` does by default:
libsvtav1, crf 30, preset 12, yuv420p, g=2 (here also g=30), moov at the
front; done with the ffmpeg program (Debian's ffmpeg 5.1 / SVT-AV1)
instead of LeRobot's PyAV (same encoder library, other build). ``--codec
libx264`` gives H.264 with the same g and crf instead.

Runs with any Python that has numpy and pyarrow (the project's .venv is
fine); needs ffmpeg and ffprobe on PATH. Idempotent: a dataset whose
``weft/done.json`` matches the arguments is kept.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

CAM = "observation.images.cam"  # LeRobot's key for the camera
WEFT_CAM = "cam"                # the Weft table's video column
STATE_DIM = 6
TASK = "grasp the disc"
DEFAULT_OUT = Path.home() / ".cache" / "weft" / "bench-video"


def frames(ep: int, n: int, size: int, rng_seed: int = 7) -> tuple[np.ndarray, np.ndarray]:
    """Episode ep's n frames (uint8 [n, size, size, 3]) and the disc's
    positions ([n, 2] in [0, 1])."""
    rng = np.random.default_rng(rng_seed * 1000 + ep)
    y, x = np.mgrid[0:size, 0:size].astype(np.float32) / size
    tex = rng.integers(0, 64, size=(size // 4 + 1, 2 * size), dtype=np.uint8)
    tex = np.repeat(np.repeat(tex, 4, axis=0), 1, axis=1)[:size // 4]
    ax, ay, ph = 1 + ep % 3, 2 + ep % 2, ep * 0.7
    t = np.arange(n, dtype=np.float32) / 30.0
    pos = np.stack([0.5 + 0.35 * np.sin(ax * t * 0.8 + ph), 0.5 + 0.35 * np.sin(ay * t * 0.8)], axis=1)
    out = np.empty((n, size, size, 3), dtype=np.uint8)
    r2 = (0.12) ** 2
    for k in range(n):
        f = out[k]
        f[..., 0] = ((x + 0.01 * k) % 1.0 * 200).astype(np.uint8)
        f[..., 1] = ((y * 0.7 + 0.13 * (ep % 7)) % 1.0 * 200).astype(np.uint8)
        f[..., 2] = (96 + 64 * np.sin(6.28 * (x + y) + 0.1 * k)).astype(np.uint8)
        band = np.roll(tex, -3 * k, axis=1)[:, :size]
        f[size - size // 4:, :, :] = band[..., None] + 96
        disc = (x - pos[k, 0]) ** 2 + (y - pos[k, 1]) ** 2 < r2
        f[disc] = (230, 40 + 20 * (ep % 5), 40)
    return out, pos


def encode(video: np.ndarray, path: Path, fps: int, gop: int, codec: str) -> None:
    n, h, w, _ = video.shape
    cmd = ["ffmpeg", "-y", "-hide_banner", "-loglevel", "error", "-f", "rawvideo", "-pix_fmt", "rgb24",
           "-s", f"{w}x{h}", "-r", str(fps), "-i", "-", "-c:v", codec, "-g", str(gop), "-crf", "30"]
    if codec == "libsvtav1":
        cmd += ["-preset", "12"]
    cmd += ["-pix_fmt", "yuv420p", "-movflags", "+faststart", str(path)]
    tmp = path.with_suffix(".tmp.mp4")
    cmd[-1] = str(tmp)
    subprocess.run(cmd, input=video.tobytes(), check=True, env={**os.environ, "SVT_LOG": "1"})
    os.replace(tmp, path)


def probe(path: Path) -> tuple[int, list[float], list[int]]:
    """(frames, pts seconds, keyframe indices) of path's video, from ffprobe's packets."""
    out = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries",
                          "packet=pts_time,flags", "-of", "csv=p=0", str(path)],
                         check=True, capture_output=True, text=True).stdout
    pts, keys = [], []
    rows = sorted((float(a), "K" in b) for a, b in (ln.split(",")[:2] for ln in out.split() if ln))
    for i, (p, k) in enumerate(rows):
        pts.append(p)
        if k:
            keys.append(i)
    return len(rows), pts, keys


def lerobot_info(n_eps: int, n_frames: int, fps: int, size: int, codec: str) -> dict:
    vcodec = {"libsvtav1": "av1", "libx264": "h264", "libx265": "hevc"}[codec]
    scalar = lambda dt: {"dtype": dt, "shape": [1], "names": None}  # noqa: E731
    return {
        "codebase_version": "v3.0", "robot_type": "synthetic", "total_episodes": n_eps,
        "total_frames": n_eps * n_frames, "total_tasks": 1, "chunks_size": 1000,
        "data_files_size_in_mb": 100, "video_files_size_in_mb": 200, "fps": fps,
        "splits": {"train": f"0:{n_eps}"},
        "data_path": "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet",
        "video_path": "videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4",
        "features": {
            CAM: {"dtype": "video", "shape": [size, size, 3], "names": ["height", "width", "channels"],
                  "info": {"video.height": size, "video.width": size, "video.codec": vcodec,
                           "video.pix_fmt": "yuv420p", "video.is_depth_map": False, "video.fps": fps,
                           "video.channels": 3, "has_audio": False}},
            "observation.state": {"dtype": "float32", "shape": [STATE_DIM], "names": None},
            "action": {"dtype": "float32", "shape": [STATE_DIM], "names": None},
            "timestamp": scalar("float32"), "frame_index": scalar("int64"), "episode_index": scalar("int64"),
            "index": scalar("int64"), "task_index": scalar("int64"),
        },
    }


def state_action(pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    vel = np.diff(pos, axis=0, append=pos[-1:])
    state = np.concatenate([pos, vel * 30, np.cos(pos * 6.28), ], axis=1).astype(np.float32)
    action = np.concatenate([pos + vel, vel * 30, np.sin(pos * 6.28)], axis=1).astype(np.float32)
    return state[:, :STATE_DIM], action[:, :STATE_DIM]


def fsl(a: np.ndarray) -> pa.FixedSizeListArray:
    return pa.FixedSizeListArray.from_arrays(pa.array(a.reshape(-1), pa.float32()), a.shape[1])


def make_dataset(root: Path, n_eps: int, n_frames: int, fps: int, size: int, gop: int, codec: str) -> dict:
    args = {"episodes": n_eps, "frames": n_frames, "fps": fps, "size": size, "gop": gop, "codec": codec}
    done = root / "weft" / "done.json"
    if done.exists() and json.loads(done.read_text()).get("args") == args:
        return json.loads(done.read_text())
    for d in ("meta/episodes/chunk-000", "data/chunk-000", f"videos/{CAM}/chunk-000", "weft"):
        (root / d).mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    ep_rows, moments, videos, keyframes, nbytes = [], [], {}, [], 0
    for ep in range(n_eps):
        video, pos = frames(ep, n_frames, size)
        mp4 = root / f"videos/{CAM}/chunk-000/file-{ep:03d}.mp4"
        encode(video, mp4, fps, gop, codec)
        n, pts, keys = probe(mp4)
        want = [k / fps for k in range(n_frames)]
        if n != n_frames or max(abs(a - b) for a, b in zip(pts, want)) > 1e-4:
            raise SystemExit(f"{mp4}: {n} frames, pts {pts[:4]}…; want {n_frames} frames at k/{fps} s")
        keyframes.append(keys)
        nbytes += mp4.stat().st_size
        link = root / "weft" / f"ep_{ep:04d}.mp4"
        if link.exists():
            link.unlink()
        os.link(mp4, link)
        videos[str(ep)] = link.name
        state, action = state_action(pos)
        first = ep * n_frames
        ts = np.arange(n_frames, dtype=np.float64) / fps
        data = pa.table({
            "observation.state": fsl(state), "action": fsl(action),
            "timestamp": pa.array(ts.astype(np.float32)),
            "frame_index": pa.array(np.arange(n_frames, dtype=np.int64)),
            "episode_index": pa.array(np.full(n_frames, ep, dtype=np.int64)),
            "index": pa.array(np.arange(first, first + n_frames, dtype=np.int64)),
            "task_index": pa.array(np.zeros(n_frames, dtype=np.int64)),
        })
        pq.write_table(data, root / f"data/chunk-000/file-{ep:03d}.parquet")
        moments.append(pa.table({
            "episode_index": pa.array(np.full(n_frames, ep, dtype=np.int64)),
            "frame_index": pa.array(np.arange(n_frames, dtype=np.int64)),
            "timestamp": pa.array(ts), "state": fsl(state), "action": fsl(action),
        }))
        ep_rows.append({
            "episode_index": ep, "tasks": [TASK], "length": n_frames,
            "data/chunk_index": 0, "data/file_index": ep,
            "dataset_from_index": first, "dataset_to_index": first + n_frames,
            f"videos/{CAM}/chunk_index": 0, f"videos/{CAM}/file_index": ep,
            f"videos/{CAM}/from_timestamp": 0.0, f"videos/{CAM}/to_timestamp": n_frames / fps,
            "meta/episodes/chunk_index": 0, "meta/episodes/file_index": 0,
        })
    pq.write_table(pa.Table.from_pylist(ep_rows), root / "meta/episodes/chunk-000/file-000.parquet")
    # LeRobot reads tasks with pandas: the task string is the index.
    pq.write_table(pa.table({"task_index": pa.array([0], pa.int64()), "__index_level_0__": [TASK]},
                            metadata={b"pandas": json.dumps({
                                "index_columns": ["__index_level_0__"], "column_indexes": [],
                                "columns": [{"name": "task_index", "field_name": "task_index",
                                             "pandas_type": "int64", "numpy_type": "int64", "metadata": None},
                                            {"name": None, "field_name": "__index_level_0__",
                                             "pandas_type": "unicode", "numpy_type": "object", "metadata": None}],
                                "pandas_version": "2.2.3"}).encode()}),
                   root / "meta/tasks.parquet")
    all_m = pa.concat_tables(moments)
    pq.write_table(all_m, root / "weft/moments.parquet")
    st = np.stack(all_m["state"].to_numpy(zero_copy_only=False))
    ac = np.stack(all_m["action"].to_numpy(zero_copy_only=False))
    stats = {k: {"min": v.min(0).tolist(), "max": v.max(0).tolist(), "mean": v.mean(0).tolist(),
                 "std": v.std(0).tolist(), "count": [len(v)]}
             for k, v in (("observation.state", st), ("action", ac))}
    (root / "meta/stats.json").write_text(json.dumps(stats, indent=1))
    (root / "meta/info.json").write_text(json.dumps(lerobot_info(n_eps, n_frames, fps, size, codec), indent=4))
    (root / "weft/videos.json").write_text(json.dumps({WEFT_CAM: videos}, indent=1))
    gaps = [b - a for keys in keyframes for a, b in zip(keys, keys[1:])]
    summary = {"args": args, "root": str(root), "mp4_bytes": nbytes,
               "keyframe_interval": {"min": min(gaps), "max": max(gaps)} if gaps else None,
               "keyframes": keyframes, "seconds": round(time.monotonic() - t0, 1)}
    done.write_text(json.dumps(summary))
    return summary


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--episodes", type=int, default=20)
    ap.add_argument("--frames", type=int, default=300)
    ap.add_argument("--fps", type=int, default=30)
    ap.add_argument("--sizes", default="96,224")
    ap.add_argument("--gops", default="2,30")
    ap.add_argument("--codec", default="libsvtav1", choices=["libsvtav1", "libx264", "libx265"])
    a = ap.parse_args()
    for size in map(int, a.sizes.split(",")):
        for gop in map(int, a.gops.split(",")):
            name = f"{size}_g{gop}" + ("" if a.codec == "libsvtav1" else "_" + a.codec.removeprefix("lib"))
            s = make_dataset(a.out / name, a.episodes, a.frames, a.fps, size, gop, a.codec)
            print(f"{name}: {a.episodes} episodes x {a.frames} frames, {s['mp4_bytes'] / 1e6:.2f} MB of MP4, "
                  f"keyframe every {s['keyframe_interval']} frames, {s['seconds']} s -> {s['root']}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
