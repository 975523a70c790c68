"""CPU decoding of video windows (issue 13, contract section 5).

A step's video window column ``K`` is a struct per sample::

    struct<segment: fixed_size_list<int32>[T],   -- step-global segment of frame t
           pts: fixed_size_list<int64>[T],       -- PTS of frame t (track timescale)
           segments: list<struct<media, codec, config, width, height, timescale,
                                 units: list<binary>, dts: list<int64>, unit_pts: list<int64>,
                                 size: fixed_size_list<int32>[2]?,
                                 mean: fixed_size_list<float32>[3]?, std: fixed_size_list<float32>[3]?,
                                 dtype: utf8?>>>

Segments are numbered in row order across the step. Each segment is
decoded once (a new PyAV decoder: codec by name, extradata = the
avcC/hvcC/av1C body, units fed with their pts/dts, then flushed), keeping the
frames whose pts some sample asks for. Pictures become RGB here, in numpy,
by the rule in docs/python.md ("Video windows"): the matrix and range come
from the decoded frame, chroma is upsampled by replication, and 10-bit
input is scaled to 8 bits by the same formula. An optional size resizes the
RGB frames (bilinear with antialiasing, a triangle filter as wide as the
scale factor, as PIL's BILINEAR). An optional normalisation (mean, std,
dtype: a window's ``normalize=``) then makes them floats, by the exact rule
of ``normalize`` (docs/python.md).

``decode_windows(batch)`` turns every video window column of a record
batch into ``uint8 [B, T, H, W, 3]`` (or the window's float dtype;
bfloat16 as its uint16 bits, numpy having no bfloat16: ``VideoDecoder.frames``
says which, and ``_convert`` views them as ``torch.bfloat16``);
``VideoDecoder`` runs the segments of a step in a thread pool.
"""

from __future__ import annotations

import concurrent.futures as cf
import functools
import os
import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Iterable, Optional, Sequence

import numpy as np
import pyarrow as pa

from ._errors import InvalidArgument, WeftError

# A video window column's struct fields (contract section 5).
_WINDOW_FIELDS = ("segment", "pts", "segments")

# Kr, Kb of the YCbCr matrices (ITU-R BT.601, BT.709, BT.2020, SMPTE 240M, FCC).
MATRICES = {
    "bt601": (0.299, 0.114),
    "bt709": (0.2126, 0.0722),
    "bt2020": (0.2627, 0.0593),
    "smpte240m": (0.212, 0.087),
    "fcc": (0.30, 0.11),
}

# AVColorSpace values (libavutil/pixfmt.h) → matrix.
_COLORSPACE = {1: "bt709", 4: "fcc", 5: "bt601", 6: "bt601", 7: "smpte240m", 9: "bt2020", 10: "bt2020"}
_AVCOL_RANGE_JPEG = 2

_PIX_FMT = re.compile(r"^yuv(j?)(420|422|444)p(?:(9|10|12|14|16)le)?$")


def is_video_window(t: pa.DataType) -> bool:
    """Whether ``t`` is the wire type of a video window (contract section 5)."""
    if not pa.types.is_struct(t):
        return False
    names = [t.field(i).name for i in range(t.num_fields)]
    return all(n in names for n in _WINDOW_FIELDS)


@dataclass
class Segment:
    """One decode range of one media object: access units in decode order."""

    media: str
    codec: str
    config: bytes
    width: int
    height: int
    timescale: int
    units: list
    dts: list
    unit_pts: list
    size: Optional[tuple[int, int]] = None
    # The normalisation (float32 mean and std, R G B) and its dtype; None: uint8 frames.
    mean: Optional[tuple[float, float, float]] = None
    std: Optional[tuple[float, float, float]] = None
    dtype: Optional[str] = None


@dataclass
class Picture:
    """A decoded picture: its planes as the decoder wrote them (Y, U, V;
    uint8, or uint16 for more than 8 bits), and how to read them."""

    planes: tuple[np.ndarray, ...]
    pix_fmt: str
    colorspace: int
    color_range: int
    width: int
    height: int


# ------------------------------------------------------------------ decoding

_DECODERS = {"h264": ("h264",), "hevc": ("hevc",), "av1": ("libdav1d", "libaom-av1", "av1")}


def _decoder_name(codec: str) -> str:
    import av

    names = _DECODERS.get(codec)
    if names is None:
        raise InvalidArgument(f"video codec {codec!r} is not one weft decodes (h264, hevc, av1)")
    for n in names:
        if n in av.codecs_available:
            return n
    raise WeftError(f"this PyAV build has no {codec} decoder (tried {', '.join(names)}); "
                    "install PyAV from PyPI (pip install 'av>=12'), whose wheels have them")


def decode_segment(seg: Segment, want: Optional[Iterable[int]] = None, *, threads: int = 0,
                   thread_type: str = "SLICE") -> dict[int, Picture]:
    """Decodes ``seg`` once; the pictures whose pts is in ``want`` (all when
    None), by pts. ``threads``/``thread_type``: the codec's own threads
    (0: FFmpeg picks)."""
    import av

    wanted = None if want is None else set(want)
    ctx: Any = av.CodecContext.create(_decoder_name(seg.codec), "r")  # a VideoCodecContext
    if seg.config:
        ctx.extradata = bytes(seg.config)
    ctx.width, ctx.height = seg.width, seg.height
    tb = Fraction(1, seg.timescale)  # on the packets: PyAV ≥ 14 refuses a decoder's time_base
    ctx.thread_type = thread_type
    ctx.thread_count = threads
    out: dict[int, Picture] = {}

    def keep(frames: Iterable[Any]) -> None:
        for f in frames:
            if f.pts is None:
                raise WeftError(f"media {seg.media[:12]}: the {seg.codec} decoder gave a frame without pts")
            if wanted is None or f.pts in wanted:
                out[f.pts] = _picture(f)

    try:
        for unit, dts, pts in zip(seg.units, seg.dts, seg.unit_pts):
            pkt = av.Packet(unit)
            pkt.pts, pkt.dts, pkt.time_base = pts, dts, tb
            keep(ctx.decode(pkt))
        keep(ctx.decode(None))
    except av.error.FFmpegError as e:
        raise WeftError(f"media {seg.media[:12]}: decoding {seg.codec} ({seg.width}x{seg.height}, "
                        f"{len(seg.units)} units) failed: {e}") from e
    if wanted is not None and len(out) < len(wanted):
        missing = sorted(wanted - set(out))
        raise WeftError(f"media {seg.media[:12]}: the segment decoded no frame with pts {missing[:8]}"
                        f"{' …' if len(missing) > 8 else ''} ({len(seg.units)} units from dts {seg.dts[:1]}); "
                        "the server's plan and the stream disagree")
    return out


def _picture(frame: Any) -> Picture:
    fmt = frame.format.name
    m = _PIX_FMT.match(fmt)
    if not m:
        raise WeftError(f"decoded pixel format {fmt!r} is not a planar YUV format weft converts "
                        "(yuv420p/422p/444p, 8 to 16 bits)")
    dtype = np.dtype("<u2") if m.group(3) else np.dtype(np.uint8)
    planes = []
    for p in frame.planes:
        rows = np.frombuffer(p, np.uint8).reshape(p.height, p.line_size)
        a = rows[:, :p.width * dtype.itemsize]
        planes.append(np.ascontiguousarray(a).view(dtype) if dtype.itemsize > 1 else a.copy())
    return Picture(tuple(planes), fmt, int(frame.colorspace), int(frame.color_range), frame.width, frame.height)


# ------------------------------------------------------------------ colour


def color_rule(pic: Picture) -> tuple[str, bool, int]:
    """(matrix, full range, bits) the RGB conversion of ``pic`` uses: the
    frame's matrix (unspecified: BT.601 below 720 lines, else BT.709) and
    range (unspecified: limited; yuvj formats are full)."""
    m = _PIX_FMT.match(pic.pix_fmt)
    assert m is not None
    bits = int(m.group(3) or 8)
    matrix = _COLORSPACE.get(pic.colorspace) or ("bt601" if pic.height < 720 else "bt709")
    full = bool(m.group(1)) or pic.color_range == _AVCOL_RANGE_JPEG
    return matrix, full, bits


# Fixed point of the RGB conversion: each term is a table lookup in units
# of 1/32 (rounded), so the sum is within 3/64 of the exact value before
# the final rounding; int16 holds every sum (|x| < 2^15 for 8 to 10 bits).
_FRAC = 5


@functools.lru_cache(maxsize=32)
def _tables(matrix: str, full: bool, bits: int) -> tuple[np.ndarray, ...]:
    """int16 lookup tables (y, r←Cr, g←Cb, g←Cr, b←Cb), in 1/32 of an
    8-bit RGB step: R = y[Y] + rv[Cr], G = y[Y] + gu[Cb] + gv[Cr],
    B = y[Y] + bu[Cb], each then floor(x / 32) (y carries the + 1/2)."""
    kr, kb = MATRICES[matrix]
    kg = 1.0 - kr - kb
    n = 1 << bits
    d = np.arange(n, dtype=np.float64)
    if full:
        ey = d / (n - 1) * 255.0
        c = (d - n / 2) / (n - 1) * 255.0
    else:
        s = n / 256
        ey = (d - 16 * s) / (219 * s) * 255.0
        c = (d - 128 * s) / (224 * s) * 255.0
    one = float(1 << _FRAC)

    def q(x: np.ndarray) -> np.ndarray:
        return np.round(x * one).astype(np.int16)

    return (q(ey + 0.5), q(2 * (1 - kr) * c), q(-2 * kb * (1 - kb) / kg * c), q(-2 * kr * (1 - kr) / kg * c),
            q(2 * (1 - kb) * c))


def to_rgb(pics: Sequence[Picture]) -> np.ndarray:
    """``uint8 [N, H, W, 3]`` RGB of pictures of one size and format."""
    first = pics[0]
    ylut, rv, gu, gv, bu = _tables(*color_rule(first))
    h, w = first.height, first.width
    y = np.take(ylut, np.stack([p.planes[0][:h, :w] for p in pics]))
    u = np.stack([p.planes[1] for p in pics])
    v = np.stack([p.planes[2] for p in pics])
    sy, sx = -(-h // u.shape[1]), -(-w // u.shape[2])
    out = np.empty((len(pics), h, w, 3), np.uint8)
    chroma = (np.take(rv, v), np.take(gu, u) + np.take(gv, v), np.take(bu, u))
    if h == u.shape[1] * sy and w == u.shape[2] * sx:
        # Each chroma sample broadcast over its sy x sx block of luma: no
        # replicated copy of the chroma planes.
        n = len(pics)
        yb = y.reshape(n, h // sy, sy, w // sx, sx)
        ob = out.reshape(n, h // sy, sy, w // sx, sx, 3)
        tmp = np.empty_like(yb)
        for i, c in enumerate(chroma):
            np.add(yb, c[:, :, None, :, None], out=tmp)
            tmp >>= _FRAC
            np.clip(tmp, 0, 255, out=tmp)
            ob[..., i] = tmp
        return out
    tmp = np.empty_like(y)
    for i, c in enumerate(chroma):
        # Chroma at its own resolution, replicated to the picture's (nearest).
        if sy > 1:
            c = np.repeat(c, sy, axis=1)
        if sx > 1:
            c = np.repeat(c, sx, axis=2)
        np.add(y, c[:, :h, :w], out=tmp)
        tmp >>= _FRAC
        np.clip(tmp, 0, 255, out=tmp)
        out[..., i] = tmp
    return out


# ------------------------------------------------------------------ resize


def _weights(n_in: int, n_out: int) -> np.ndarray:
    """[n_out, n_in] bilinear weights with antialiasing: a triangle filter
    of radius max(1, n_in/n_out) input pixels around each output pixel's
    centre, normalised (PIL's BILINEAR)."""
    scale = n_in / n_out
    support = max(scale, 1.0)
    centre = (np.arange(n_out, dtype=np.float64) + 0.5) * scale
    x = (np.arange(n_in, dtype=np.float64)[None, :] + 0.5 - centre[:, None]) / support
    wts = np.clip(1.0 - np.abs(x), 0.0, None)
    wts /= wts.sum(axis=1, keepdims=True)
    return wts.astype(np.float32)


def resize(rgb: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """``uint8 [N, h, w, 3]`` of ``uint8 [N, H, W, 3]``: separable bilinear
    with antialiasing (``_weights``) in float32, rounded to nearest."""
    n, h, w, _ = rgb.shape
    oh, ow = size
    if (h, w) == (oh, ow):
        return rgb
    x = rgb.transpose(0, 3, 1, 2).astype(np.float32)  # N,3,H,W
    x = _weights(h, oh) @ x @ _weights(w, ow).T
    np.rint(x, out=x)
    np.clip(x, 0.0, 255.0, out=x)
    return np.ascontiguousarray(x.transpose(0, 2, 3, 1)).astype(np.uint8)


# ------------------------------------------------------------------ normalise

# numpy storage of each frame dtype (bfloat16: its bits, numpy has none).
STORAGE: dict[str, np.dtype] = {"uint8": np.dtype(np.uint8), "float32": np.dtype("<f4"), "float16": np.dtype("<f2"),
                                "bfloat16": np.dtype("<u2")}


def bfloat16_bits(f32: np.ndarray) -> np.ndarray:
    """uint16 bfloat16 bits of float32 values: the top 16 bits rounded to
    nearest even (overflow → inf); a NaN stays a (quiet) NaN."""
    b = np.ascontiguousarray(f32, np.float32).view(np.uint32)
    r = ((b + (np.uint32(0x7FFF) + ((b >> np.uint32(16)) & np.uint32(1)))) >> np.uint32(16)).astype(np.uint16)
    nan = (b & np.uint32(0x7FFFFFFF)) > np.uint32(0x7F800000)
    if nan.any():
        r[nan] = ((b[nan] >> np.uint32(16)) | np.uint32(0x40)).astype(np.uint16)
    return r


def normalize(rgb: np.ndarray, mean: Sequence[float], std: Sequence[float], dtype: str) -> np.ndarray:
    """The normalised frames of ``uint8 [..., 3]`` RGB: per value
    ``y = (float32(x) / 255 - mean32[c]) / std32[c]`` in IEEE float32, one
    rounding per operation (no fused multiply-add), then rounded to
    ``dtype`` to nearest even: float32 as is, float16 by numpy (IEEE half,
    overflow → inf), bfloat16 by ``bfloat16_bits`` (returned as uint16)."""
    if dtype not in ("float32", "float16", "bfloat16"):
        raise InvalidArgument(f"normalize: dtype {dtype!r} is not float32, float16 or bfloat16")
    m = np.asarray(mean, np.float32)
    s = np.asarray(std, np.float32)
    x = rgb.astype(np.float32)
    with np.errstate(over="ignore"):
        np.divide(x, np.float32(255.0), out=x)
        np.subtract(x, m, out=x)
        np.divide(x, s, out=x)
        if dtype == "float16":
            return x.astype(np.float16)
    if dtype == "bfloat16":
        return bfloat16_bits(x)
    return x


# ------------------------------------------------------------------ windows


def decode_rgb(seg: Segment, want: Sequence[int], threads: int = 0, thread_type: str = "SLICE") -> dict[int, np.ndarray]:
    """{pts: uint8 [H, W, 3]} of the wanted frames of ``seg`` (resized to
    ``seg.size`` when set, normalised to ``seg.dtype`` when set). One task
    of the decode pool."""
    pics = decode_segment(seg, want, threads=threads, thread_type=thread_type)
    order = sorted(pics)
    groups: dict[tuple, list[int]] = {}
    for pts in order:
        pic = pics[pts]
        groups.setdefault((pic.pix_fmt, pic.width, pic.height, pic.colorspace, pic.color_range), []).append(pts)
    out: dict[int, np.ndarray] = {}
    for ptss in groups.values():
        rgb = to_rgb([pics[p] for p in ptss])
        if seg.size is not None:
            rgb = resize(rgb, seg.size)
        if seg.dtype is not None:
            assert seg.mean is not None and seg.std is not None
            rgb = normalize(rgb, seg.mean, seg.std, seg.dtype)
        for i, p in enumerate(ptss):
            out[p] = rgb[i]
    return out


def _flat(arr: pa.Array, name: str) -> pa.Array:
    if arr.null_count:
        raise WeftError(f"video window {name!r}: the server sent nulls")
    return arr.flatten()


def parse_window(name: str, arr: pa.Array) -> tuple[np.ndarray, np.ndarray, list[Segment]]:
    """(segment [B, T] int64, pts [B, T] int64, segments) of a video window column."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    t = arr.type
    fields = dict(zip([t.field(i).name for i in range(t.num_fields)], arr.flatten()))
    b = len(arr)
    seg_col, pts_col = fields["segment"], fields["pts"]
    tlen = seg_col.type.list_size
    segment = _flat(seg_col, name).to_numpy(zero_copy_only=False).astype(np.int64).reshape(b, tlen)
    pts = _flat(pts_col, name).to_numpy(zero_copy_only=False).astype(np.int64).reshape(b, tlen)
    segs_arr = fields["segments"]
    segs_flat = segs_arr.flatten() if len(segs_arr) else pa.array([], segs_arr.type.value_type)
    segments: list[Segment] = []
    if len(segs_flat):
        sf = dict(zip([segs_flat.type.field(i).name for i in range(segs_flat.type.num_fields)], segs_flat.flatten()))
        cols = {k: sf[k].to_pylist() for k in ("media", "codec", "config", "width", "height", "timescale",
                                               "units", "dts", "unit_pts")}
        none = [None] * len(segs_flat)
        sizes = sf["size"].to_pylist() if "size" in sf else none
        means = sf["mean"].to_pylist() if "mean" in sf else none
        stds = sf["std"].to_pylist() if "std" in sf else none
        dtypes = sf["dtype"].to_pylist() if "dtype" in sf else none
        for i in range(len(segs_flat)):
            size, mean, std, dtype = sizes[i], means[i], stds[i], dtypes[i]
            if dtype is not None and (dtype not in STORAGE or dtype == "uint8" or mean is None or std is None
                                      or len(mean) != 3 or len(std) != 3):
                raise WeftError(f"video window {name!r}: segment {len(segments)} has dtype {dtype!r}, mean {mean!r}, "
                                f"std {std!r}; this client normalises to float32, float16 or bfloat16 with 3 "
                                "means and 3 stds (a newer server?)")
            segments.append(Segment(cols["media"][i], cols["codec"][i], cols["config"][i] or b"", cols["width"][i],
                                    cols["height"][i], cols["timescale"][i], cols["units"][i], cols["dts"][i],
                                    cols["unit_pts"][i], None if size is None else (int(size[0]), int(size[1])),
                                    tuple(mean) if dtype is not None and mean is not None else None,
                                    tuple(std) if dtype is not None and std is not None else None, dtype))
    if b and (segment.min() < 0 or segment.max() >= len(segments)):
        raise WeftError(f"video window {name!r}: a frame names segment {int(segment.max())} of the "
                        f"{len(segments)} this batch carries (a batch sliced after the server sent it? "
                        "decode the whole step)")
    return segment, pts, segments


def window_pictures(name: str, arr: pa.Array) -> list[list[Picture]]:
    """The decoded pictures ``[B][T]`` of a video window column, before any
    RGB conversion (planes as the decoder wrote them): each segment decoded
    once, frames picked by segment and pts as ``VideoDecoder.window`` does.
    For tests and tools that compare YUV."""
    segment, pts, segments = parse_window(name, arr)
    want: dict[int, set[int]] = {}
    for s, p in zip(segment.ravel().tolist(), pts.ravel().tolist()):
        want.setdefault(s, set()).add(p)
    pics = {s: decode_segment(segments[s], w) for s, w in want.items()}
    return [[pics[s][p] for s, p in zip(srow, prow)] for srow, prow in zip(segment.tolist(), pts.tolist())]


class VideoDecoder:
    """Decodes the video windows of steps, each segment once, in ``threads``
    threads (0 or 1: in the calling thread). ``codec_threads`` and
    ``thread_type`` are PyAV's per-decoder threading."""

    def __init__(self, threads: Optional[int] = None, codec_threads: int = 1, thread_type: str = "SLICE"):
        self.threads = (os.cpu_count() or 1) if threads is None else threads
        self.codec_threads, self.thread_type = codec_threads, thread_type
        self._pool: Optional[cf.ThreadPoolExecutor] = None

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None

    def _map(self, tasks: list[tuple[Segment, list[int]]]) -> list[dict[int, np.ndarray]]:
        if self.threads <= 1 or len(tasks) <= 1:
            return [decode_rgb(s, w, self.codec_threads, self.thread_type) for s, w in tasks]
        if self._pool is None:
            self._pool = cf.ThreadPoolExecutor(self.threads, thread_name_prefix="weft-decode")
        return list(self._pool.map(lambda t: decode_rgb(t[0], t[1], self.codec_threads, self.thread_type), tasks))

    def window(self, name: str, arr: pa.Array) -> np.ndarray:
        """``uint8 [B, T, H, W, 3]`` of a video window column (its dtype's
        storage when normalised: ``frames``)."""
        return self.frames(name, arr)[0]

    def frames(self, name: str, arr: pa.Array) -> tuple[np.ndarray, str]:
        """(``[B, T, H, W, 3]`` frames, dtype) of a video window column:
        dtype "uint8", or the window's normalised "float32", "float16" or
        "bfloat16" (the array then holds its bits as uint16)."""
        segment, pts, segments = parse_window(name, arr)
        b, tlen = segment.shape
        want: dict[int, set[int]] = {}
        for s, p in zip(segment.ravel().tolist(), pts.ravel().tolist()):
            want.setdefault(s, set()).add(p)
        order = sorted(want)
        frames = dict(zip(order, self._map([(segments[s], sorted(want[s])) for s in order])))
        shapes = {f.shape for fr in frames.values() for f in fr.values()}
        if len(shapes) > 1:
            raise InvalidArgument(f"video window {name!r}: frames of different sizes {sorted(shapes)} in one batch; "
                                  "give the window a size, e.g. weft.Video(range(16), size=(224, 224))")
        shape = shapes.pop() if shapes else (0, 0, 3)
        dtypes = {segments[s].dtype or "uint8" for s in (order or range(len(segments[:1])))} or {"uint8"}
        if len(dtypes) > 1:
            raise InvalidArgument(f"video window {name!r}: frames of dtypes {sorted(dtypes)} in one batch")
        dtype = dtypes.pop()
        out = np.empty((b, tlen) + shape, STORAGE[dtype])
        for i in range(b):
            for j in range(tlen):
                out[i, j] = frames[int(segment[i, j])][int(pts[i, j])]
        return out, dtype

    def decode(self, batch: Any) -> dict[str, np.ndarray]:
        """{key: uint8 [B, T, H, W, 3]} for every video window column of a
        record batch or table (normalised windows: their dtype's storage,
        ``frames``)."""
        out = {}
        for i, f in enumerate(batch.schema):
            if is_video_window(f.type):
                out[f.name] = self.window(f.name, batch.column(i))
        return out


def decode_windows(batch: Any, threads: Optional[int] = None) -> dict[str, np.ndarray]:
    """{key: uint8 [B, T, H, W, 3]} for every video window column of ``batch``."""
    dec = VideoDecoder(threads)
    try:
        return dec.decode(batch)
    finally:
        dec.close()
