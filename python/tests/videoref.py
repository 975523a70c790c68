"""A reference producer for video window tests: clips made by the ffmpeg
program, segments cut from them with PyAV's demuxer (what the server's Go
planner sends, built independently here), ffmpeg's own decode of the whole
file, and a float64 reference YUV → RGB conversion."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence

import numpy as np
import pyarrow as pa

FFMPEG = shutil.which("ffmpeg")

_SRC = ["-f", "lavfi", "-i", "testsrc2=size={w}x{h}:rate=30"]

# name → (ffmpeg output args, size, seconds, extra inputs)
CLIPS: dict[str, tuple[list[str], tuple[int, int], float, list[str]]] = {
    # H.264 High, 3 B-frames: the muxer writes an edit list for the reorder delay.
    "h264_bframes": (["-c:v", "libx264", "-profile:v", "high", "-bf", "3", "-g", "12", "-pix_fmt", "yuv420p",
                      "-movflags", "+faststart"], (64, 96), 2.0, []),
    # HEVC, open GOPs: CRA keyframes with leading (RASL) pictures.
    "hevc_open_gop": (["-c:v", "libx265", "-tag:v", "hvc1", "-x265-params",
                       "log-level=error:open-gop=1:keyint=12:min-keyint=12:bframes=3:scenecut=0",
                       "-pix_fmt", "yuv420p", "-movflags", "+faststart"], (64, 96), 2.0, []),
    "av1": (["-c:v", "libaom-av1", "-cpu-used", "8", "-g", "12", "-pix_fmt", "yuv420p", "-movflags", "+faststart"],
            (64, 96), 1.0, []),
    "av1_10bit": (["-c:v", "libaom-av1", "-cpu-used", "8", "-g", "12", "-pix_fmt", "yuv420p10le", "-movflags", "+faststart"],
                  (64, 96), 1.0, []),
    # SVT-AV1 (LeRobot's encoder).
    "av1_svt": (["-c:v", "libsvtav1", "-preset", "12", "-g", "10", "-pix_fmt", "yuv420p", "-movflags", "+faststart"],
                (64, 96), 1.0, []),
    "hevc_10bit": (["-c:v", "libx265", "-tag:v", "hvc1", "-x265-params", "log-level=error:keyint=10:bframes=2",
                    "-pix_fmt", "yuv420p10le", "-movflags", "+faststart"], (64, 96), 1.0, []),
    # Irregular timestamps (ms): gaps of 9..57 ms, kept as they are.
    "vfr": (["-vf", "setpts='(N*33+mod(N*N\\,7)*4)/1000/TB'", "-fps_mode", "vfr", "-video_track_timescale", "1000",
             "-c:v", "libx264", "-bf", "2", "-g", "10", "-pix_fmt", "yuv420p", "-movflags", "+faststart"],
            (64, 96), 1.5, []),
    # moov at the end (ffmpeg's default without +faststart).
    "moov_at_end": (["-c:v", "libx264", "-g", "15", "-pix_fmt", "yuv420p"], (64, 96), 1.0, []),
    "with_audio": (["-map", "0:v", "-map", "1:a", "-c:v", "libx264", "-g", "15", "-pix_fmt", "yuv420p",
                    "-c:a", "aac", "-shortest"], (64, 96), 1.0, ["-f", "lavfi", "-i", "sine=frequency=440:duration=1"]),
    # Tagged BT.709, full range: the RGB rule must read both from the stream.
    "h264_bt709_full": (["-c:v", "libx264", "-g", "15", "-pix_fmt", "yuv420p", "-colorspace", "bt709",
                         "-color_primaries", "bt709", "-color_trc", "bt709", "-color_range", "pc"],
                        (64, 96), 1.0, []),
}


# Clips the generic tests (every clip of CLIPS, windows without a size) must not take: made by name only.
ODD_CLIPS: dict[str, tuple[list[str], tuple[int, int], float, list[str]]] = {
    # SVT-AV1 with reference scaling (resize-mode=1): its frames change size within the sequence (key
    # frames 64x64, the others 32x32), so a window without a size= mixes frame sizes (refused on the CPU
    # path), and NVDEC (the fake) refuses it mid-decode.
    "av1_svt_resize": (["-c:v", "libsvtav1", "-preset", "12", "-g", "10",
                        "-svtav1-params", "resize-mode=1:resize-denom=16",
                        "-pix_fmt", "yuv420p", "-movflags", "+faststart"], (64, 64), 1.0, []),
}


def make_clip(name: str, out_dir: Path, size: Optional[tuple[int, int]] = None, seconds: Optional[float] = None) -> Path:
    args, (h, w), secs, extra = CLIPS[name] if name in CLIPS else ODD_CLIPS[name]
    if size is not None:
        h, w = size
    path = out_dir / f"{name}_{h}x{w}.mp4"
    if path.exists():
        return path
    src = [a.format(w=w, h=h) for a in _SRC]
    cmd = [FFMPEG, "-v", "error", "-y", *src, *extra, "-t", str(seconds or secs), *args, str(path)]
    subprocess.run(cmd, check=True, capture_output=True)
    return path


@dataclass
class Unit:
    data: bytes
    pts: int
    dts: int
    key: bool


@dataclass
class Clip:
    path: Path
    codec: str
    config: bytes
    width: int
    height: int
    timescale: int
    pix_fmt: str
    units: list[Unit]  # decode order

    @property
    def frame_pts(self) -> list[int]:
        """Presentation order."""
        return sorted(u.pts for u in self.units)


def demux(path: Path) -> Clip:
    import av

    with av.open(str(path)) as c:
        s = c.streams.video[0]
        cc = s.codec_context
        tb = s.time_base
        assert tb.numerator == 1, tb
        units = [Unit(bytes(p), p.pts, p.dts, bool(p.is_keyframe)) for p in c.demux(s) if p.size]
        name = {"h264": "h264", "hevc": "hevc", "av1": "av1", "libdav1d": "av1"}[cc.name]
        return Clip(path, name, bytes(cc.extradata or b""), cc.width, cc.height, tb.denominator, cc.format.name, units)


def decode_range(clip: Clip, want: Sequence[int]) -> tuple[int, int]:
    """[start, end) in decode order holding what a decoder needs for the
    pts ``want``: from the last keyframe at or before the first needed unit
    whose pts is ≤ every wanted pts (so open-GOP leading pictures start at
    the previous keyframe), through the last needed unit."""
    pos = {u.pts: i for i, u in enumerate(clip.units)}
    idx = [pos[p] for p in want]
    first, last = min(idx), max(idx)
    lo = min(want)
    start = max(i for i, u in enumerate(clip.units) if u.key and i <= first and u.pts <= lo)
    return start, last + 1


def segment_dict(clip: Clip, start: int, end: int, size: Optional[tuple[int, int]] = None,
                 norm: Optional[tuple] = None) -> dict:
    """``norm``: (mean, std, dtype) of a normalised window, or None."""
    us = clip.units[start:end]
    mean, std, dtype = norm if norm is not None else (None, None, None)
    return {"media": "f" * 64, "codec": clip.codec, "config": clip.config, "width": clip.width, "height": clip.height,
            "timescale": clip.timescale, "units": [u.data for u in us], "dts": [u.dts for u in us],
            "unit_pts": [u.pts for u in us], "size": None if size is None else list(size),
            "mean": None if mean is None else list(mean), "std": None if std is None else list(std), "dtype": dtype}


SEGMENT_TYPE = pa.struct([
    pa.field("media", pa.utf8()), pa.field("codec", pa.utf8()), pa.field("config", pa.binary()),
    pa.field("width", pa.int32()), pa.field("height", pa.int32()), pa.field("timescale", pa.int32()),
    pa.field("units", pa.list_(pa.binary())), pa.field("dts", pa.list_(pa.int64())),
    pa.field("unit_pts", pa.list_(pa.int64())), pa.field("size", pa.list_(pa.int32(), 2)),
    pa.field("mean", pa.list_(pa.float32(), 3)), pa.field("std", pa.list_(pa.float32(), 3)),
    pa.field("dtype", pa.utf8()),
])


def window_type(t: int) -> pa.DataType:
    return pa.struct([pa.field("segment", pa.list_(pa.int32(), t)), pa.field("pts", pa.list_(pa.int64(), t)),
                      pa.field("segments", pa.list_(SEGMENT_TYPE))])


def build_windows(clip: Clip, windows: Sequence[Sequence[int]], size: Optional[tuple[int, int]] = None,
                  merge: bool = True, norm: Optional[tuple] = None) -> tuple[pa.StructArray, int]:
    """The wire form of ``windows`` (each a list of pts) as the contract's
    planner would send it: per sample, the segments it introduces, with
    overlapping decode ranges of the whole batch merged into one segment.
    ``merge=False`` gives each window its own segment (as windows of
    different episodes get). Returns the column and the number of segments."""
    ranges = sorted(decode_range(clip, w) + (i,) for i, w in enumerate(windows))
    merged: list[list] = []  # [start, end, [window indexes]]
    for s, e, i in ranges:
        if merge and merged and s < merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], e)
            merged[-1][2].append(i)
        else:
            merged.append([s, e, [i]])
    owner = {}  # window → merged range
    for m, (_, _, ws) in enumerate(merged):
        for w in ws:
            owner[w] = m
    # Segments numbered in row order: a range is introduced by its first sample.
    index: dict[int, int] = {}
    rows = []
    for i, w in enumerate(windows):
        m = owner[i]
        intro = []
        if m not in index:
            index[m] = len(index)
            intro.append(segment_dict(clip, merged[m][0], merged[m][1], size, norm))
        rows.append({"segment": [index[m]] * len(w), "pts": list(w), "segments": intro})
    return pa.array(rows, window_type(len(windows[0]))), len(index)


def ffmpeg_frames(path: Path, pix_fmt: str, width: int, height: int) -> list[np.ndarray]:
    """ffmpeg's decode of the whole file, every frame in presentation order,
    as raw planes in ``pix_fmt``: a list of 1-D byte arrays."""
    out = subprocess.run([FFMPEG, "-v", "error", "-i", str(path), "-map", "0:v:0", "-fps_mode", "passthrough",
                          "-f", "rawvideo", "-pix_fmt", pix_fmt, "-"], check=True, capture_output=True).stdout
    bps = 2 if pix_fmt.endswith("le") else 1
    cw, ch = -(-width // 2), -(-height // 2)
    size = (width * height + 2 * cw * ch) * bps
    assert len(out) % size == 0, (len(out), size)
    buf = np.frombuffer(out, np.uint8)
    return [buf[i:i + size] for i in range(0, len(buf), size)]


def split_planes(raw: np.ndarray, pix_fmt: str, width: int, height: int) -> list[np.ndarray]:
    dt = np.dtype("<u2") if pix_fmt.endswith("le") else np.dtype(np.uint8)
    a = raw.view(dt)
    cw, ch = -(-width // 2), -(-height // 2)
    y = a[:width * height].reshape(height, width)
    u = a[width * height:width * height + cw * ch].reshape(ch, cw)
    v = a[width * height + cw * ch:].reshape(ch, cw)
    return [y, u, v]


KR_KB = {"bt601": (0.299, 0.114), "bt709": (0.2126, 0.0722)}


def reference_rgb(planes: Sequence[np.ndarray], bits: int, matrix: str, full: bool) -> np.ndarray:
    """float64 BT.601/BT.709 YCbCr → RGB (ITU-R BT.601-7 / BT.709-6 with
    the H.273 quantisation), chroma by nearest upsampling, rounded."""
    kr, kb = KR_KB[matrix]
    kg = 1 - kr - kb
    y, u, v = (p.astype(np.float64) for p in planes)
    h, w = y.shape
    u = np.repeat(np.repeat(u, 2, 0), 2, 1)[:h, :w]
    v = np.repeat(np.repeat(v, 2, 0), 2, 1)[:h, :w]
    n = 2 ** bits - 1
    if full:
        ey, cb, cr = y / n, (u - 2 ** (bits - 1)) / n, (v - 2 ** (bits - 1)) / n
    else:
        s = 2 ** (bits - 8)
        ey, cb, cr = (y - 16 * s) / (219 * s), (u - 128 * s) / (224 * s), (v - 128 * s) / (224 * s)
    r = ey + 2 * (1 - kr) * cr
    b = ey + 2 * (1 - kb) * cb
    g = (ey - kr * r - kb * b) / kg
    return np.clip(np.round(np.stack([r, g, b], -1) * 255), 0, 255)
