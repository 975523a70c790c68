"""Recipes (what to mix) and worlds (who reads which slice)."""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Optional, Sequence, Union

from ._client import Client, Table
from ._errors import InvalidArgument


@dataclass(frozen=True)
class ShuffleConfig:
    """``buffer_rows``: rows of the shuffle window (None: the server picks
    about 8192, fewer for wide rows). ``buffer_size`` is the same (the name
    the scan loaders' examples use); ``seed`` is the shuffle's seed for
    ``scan.to_iterable_dataset`` (a Recipe has its own ``seed``)."""

    buffer_rows: Optional[int] = None
    seed: Optional[int] = None
    buffer_size: Optional[int] = None

    def __post_init__(self) -> None:
        if self.buffer_size is not None:
            if self.buffer_rows is not None and self.buffer_rows != self.buffer_size:
                raise InvalidArgument(f"ShuffleConfig: buffer_rows {self.buffer_rows} and buffer_size "
                                      f"{self.buffer_size} differ; give one")
            object.__setattr__(self, "buffer_rows", self.buffer_size)
        for name in ("buffer_rows", "seed"):
            v = getattr(self, name)
            if v is not None and (isinstance(v, bool) or not isinstance(v, int)):
                raise InvalidArgument(f"ShuffleConfig: {name} {v!r} is not an integer")


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _int_offsets(what: str, offsets: Any) -> tuple[int, ...]:
    if isinstance(offsets, (str, bytes)) or not isinstance(offsets, Iterable):
        raise InvalidArgument(f"{what}: offsets {offsets!r} are not a sequence of integers; give e.g. range(16)")
    out = tuple(offsets)
    if not out:
        raise InvalidArgument(f"{what}: no offsets; give at least one (e.g. range(16), or [0] for the moment itself)")
    for v in out:
        if not _is_int(v):
            raise InvalidArgument(f"{what}: offset {v!r} is not an integer")
    return out


class Window:
    """A window kind of a component: what the server makes for an output
    key beyond the row's own value (contract: docs/flight.md "Windows")."""

    kind = ""

    def to_json(self) -> dict[str, Any]:
        raise NotImplementedError


# The dtypes of a normalised video window (Video(normalize=..., dtype=...)).
VIDEO_DTYPES = ("float32", "float16", "bfloat16")

_F32_MAX = 3.4028234663852886e38


def _f32(v: float) -> float:
    """v rounded to float32 (as the server and the decoders use it)."""
    import struct

    try:
        return struct.unpack("<f", struct.pack("<f", v))[0]
    except OverflowError:  # beyond float32's largest finite value
        return math.copysign(math.inf, v)


def _normalize(normalize: Any) -> tuple[tuple[float, float, float], tuple[float, float, float]]:
    if isinstance(normalize, (str, bytes)) or not isinstance(normalize, Iterable):
        raise InvalidArgument(f"Video: normalize {normalize!r} must be (mean, std), three numbers each")
    pair = tuple(normalize)
    if len(pair) != 2:
        raise InvalidArgument(f"Video: normalize {normalize!r} must be (mean, std), three numbers each")
    out = []
    for name, vals in zip(("mean", "std"), pair):
        if isinstance(vals, (str, bytes)) or not isinstance(vals, Iterable):
            raise InvalidArgument(f"Video: normalize {name} {vals!r} must be three numbers (R, G, B)")
        vals = tuple(vals)
        if len(vals) != 3:
            raise InvalidArgument(f"Video: normalize {name} {vals!r} must be three numbers (R, G, B), it has {len(vals)}")
        fs = []
        for c, v in enumerate(vals):
            if isinstance(v, bool) or not isinstance(v, (int, float)) and not hasattr(v, "__float__"):
                raise InvalidArgument(f"Video: normalize {name}[{c}] {v!r} is not a number")
            try:
                f = float(v)
            except (TypeError, ValueError) as e:
                raise InvalidArgument(f"Video: normalize {name}[{c}] {v!r} is not a number") from e
            f32 = _f32(f) if math.isfinite(f) else f
            if not math.isfinite(f32):
                raise InvalidArgument(f"Video: normalize {name}[{c}] {v!r} is not a finite number in float32's range")
            if name == "std" and not f32 > 0:
                raise InvalidArgument(f"Video: normalize std[{c}] {v!r} must be above 0 (in float32)")
            fs.append(f + 0.0 if f != 0 else 0.0)
        out.append(tuple(fs))
    return out[0], out[1]  # type: ignore[return-value]


class Video(Window):
    """Frames of a video column around each row's moment.

    ``Video(range(90))`` or ``Video(frames=[-2, -1, 0])``: frame offsets from
    the moment's frame (negative: history). ``Video(seconds=[-0.2, -0.1, 0.0])``:
    time offsets, each resolved to the nearest frame (within ``tolerance``
    seconds when given; by default half the frame interval there). Exactly
    one of ``frames`` and ``seconds``. ``size=(H, W)`` resizes the decoded
    frames (bilinear with antialiasing, docs/python.md); it is part of the
    run id. ``pad``: at an episode's edges the edge frame repeats and
    ``<key>_is_pad`` marks it; ``pad=False`` makes such a window an error.
    The trainer gets ``uint8 [B, T, H, W, 3]`` RGB and ``<key>_is_pad`` bool ``[B, T]``.

    ``normalize=(mean, std)`` (three numbers each, R, G, B; std above 0)
    makes the frames floats instead: ``(x / 255 - mean[c]) / std[c]`` per
    value, in float32, then rounded to ``dtype`` ("float32", the default:
    the rule's exact result, as torchvision's Normalize gives; "float16" or
    "bfloat16" to halve the bytes) by round-to-nearest-even. The exact rule
    is in docs/python.md ("Video windows"); it is part of the run id. The
    trainer then gets ``dtype [B, T, H, W, 3]`` (still channels last)."""

    kind = "video"

    def __init__(self, frames: Optional[Iterable[int]] = None, *, seconds: Optional[Iterable[float]] = None,
                 size: Optional[Sequence[int]] = None, pad: bool = True, tolerance: Optional[float] = None,
                 normalize: Optional[tuple[Sequence[float], Sequence[float]]] = None, dtype: Optional[str] = None):
        if (frames is None) == (seconds is None):
            raise InvalidArgument("Video: give exactly one of frames (frame offsets, e.g. range(16)) and "
                                  "seconds (time offsets, e.g. [-0.2, -0.1, 0.0])"
                                  + (", not both" if frames is not None else ""))
        self.frames: Optional[tuple[int, ...]] = None
        self.seconds: Optional[tuple[float, ...]] = None
        if frames is not None:
            self.frames = _int_offsets("Video", frames)
            if tolerance is not None:
                raise InvalidArgument("Video: tolerance applies to seconds offsets; frame offsets need none")
        else:
            if isinstance(seconds, (str, bytes)) or not isinstance(seconds, Iterable):
                raise InvalidArgument(f"Video: seconds {seconds!r} is not a sequence of numbers")
            secs = tuple(seconds)
            if not secs:
                raise InvalidArgument("Video: no seconds offsets; give at least one (e.g. [0.0])")
            for v in secs:
                if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                    raise InvalidArgument(f"Video: seconds offset {v!r} is not a finite number")
            self.seconds = tuple(float(v) for v in secs)
        if size is not None:
            if isinstance(size, (str, bytes)) or not isinstance(size, Iterable):
                raise InvalidArgument(f"Video: size {size!r} must be (height, width)")
            size = tuple(size)
            if len(size) != 2 or not all(_is_int(v) and v > 0 for v in size):
                raise InvalidArgument(f"Video: size {size!r} must be (height, width), two positive integers")
        self.size: Optional[tuple[int, int]] = size  # type: ignore[assignment]
        if not isinstance(pad, bool):
            raise InvalidArgument(f"Video: pad {pad!r} must be True or False")
        self.pad = pad
        if tolerance is not None:
            if isinstance(tolerance, bool) or not isinstance(tolerance, (int, float)) or not (
                    math.isfinite(tolerance) and tolerance > 0):
                raise InvalidArgument(f"Video: tolerance {tolerance!r} must be a positive number of seconds")
            tolerance = float(tolerance)
        self.tolerance: Optional[float] = tolerance
        self.normalize: Optional[tuple[tuple[float, float, float], tuple[float, float, float]]] = None
        self.dtype: Optional[str] = None
        if normalize is None:
            if dtype is not None:
                raise InvalidArgument(f"Video: dtype {dtype!r} applies to normalised frames only; give "
                                      "normalize=(mean, std) too (without it frames are uint8)")
        else:
            self.normalize = _normalize(normalize)
            if dtype is None:
                dtype = "float32"
            if dtype not in VIDEO_DTYPES:
                raise InvalidArgument(f"Video: dtype {dtype!r} must be one of {', '.join(VIDEO_DTYPES)}")
            self.dtype = dtype

    def __repr__(self) -> str:
        what = f"frames={list(self.frames)}" if self.frames is not None else f"seconds={list(self.seconds or ())}"
        extra = "".join(f", {k}={v!r}" for k, v in (("size", self.size), ("tolerance", self.tolerance),
                                                     ("normalize", self.normalize), ("dtype", self.dtype))
                        if v is not None)
        return f"Video({what}{extra}{'' if self.pad else ', pad=False'})"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": "video"}
        if self.frames is not None:
            out["frames"] = list(self.frames)
        else:
            out["seconds"] = list(self.seconds or ())
        if self.size is not None:
            out["size"] = list(self.size)
        if self.normalize is not None:
            out["normalize"] = {"mean": list(self.normalize[0]), "std": list(self.normalize[1])}
            out["dtype"] = self.dtype
        if not self.pad:
            out["pad"] = False
        if self.tolerance is not None:
            out["tolerance"] = self.tolerance
        return out


class Rows(Window):
    """Values of a table column at row offsets within the row's episode:
    ``Rows(range(50))`` is the next 50 rows (an action chunk), negative
    offsets are history. The trainer gets ``[B, T, ...]`` and
    ``<key>_is_pad`` bool ``[B, T]``; at the episode's edges the edge row
    repeats (``pad=False`` makes such a window an error)."""

    kind = "rows"

    def __init__(self, offsets: Iterable[int], *, pad: bool = True):
        self.offsets = _int_offsets("Rows", offsets)
        if not isinstance(pad, bool):
            raise InvalidArgument(f"Rows: pad {pad!r} must be True or False")
        self.pad = pad

    def __repr__(self) -> str:
        return f"Rows({list(self.offsets)}{'' if self.pad else ', pad=False'})"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": "rows", "offsets": list(self.offsets)}
        if not self.pad:
            out["pad"] = False
        return out


class Windows(dict):
    """A component's windows: output key → ``weft.Video(...)``,
    ``weft.Rows(...)`` or a raw spec ``{"kind": K, ...}``. The key names a
    table column (a video column for Video)."""

    def __init__(self, windows: Optional[Mapping[str, Union[Window, Mapping[str, Any]]]] = None, **kw: Any):
        super().__init__()
        items = dict(windows or {})
        items.update(kw)
        if not items:
            raise InvalidArgument("Windows: no windows; give e.g. Windows({'wrist_camera': Video(range(16))})")
        for key, spec in items.items():
            if not isinstance(key, str) or not key:
                raise InvalidArgument(f"Windows: key {key!r} must be a column name (a non-empty string)")
            if isinstance(spec, Window):
                pass
            elif isinstance(spec, Mapping):
                if not isinstance(spec.get("kind"), str) or not spec["kind"]:
                    raise InvalidArgument(f"Windows: {key!r} is {dict(spec)!r}, which has no \"kind\"; "
                                          "give weft.Video(...), weft.Rows(...) or {'kind': ..., ...}")
                spec = dict(spec)
            else:
                raise InvalidArgument(f"Windows: {key!r} is a {type(spec).__name__}; "
                                      "give weft.Video(...), weft.Rows(...) or {'kind': ..., ...}")
            self[key] = spec

    def to_json(self) -> dict[str, Any]:
        return {k: (v.to_json() if isinstance(v, Window) else dict(v)) for k, v in self.items()}


def _canonical_window(spec: Any) -> Any:
    """A window spec as the run record stores it (pad omitted when true,
    numbers compared by value), for comparing a recipe with a record."""
    if not isinstance(spec, dict):
        return spec
    out = {k: v for k, v in spec.items() if not (k == "pad" and v is True)}
    for k in ("seconds",):
        if isinstance(out.get(k), list):
            out[k] = [float(v) for v in out[k]]
    if isinstance(out.get("tolerance"), (int, float)):
        out["tolerance"] = float(out["tolerance"])
    return out


@dataclass
class Component:
    """One table of a mix. ``weight`` is relative (0.3/0.7 and 3/7 are the
    same mix); ``columns`` defaults to every column of the first component's
    table, and every component must serve the same columns with the same
    types. ``windows``: ``weft.Windows({key: weft.Video(...) | weft.Rows(...)})``
    (or a plain dict of them): frames or rows around each row's moment.
    ``filter``: only the table's rows that match it (the language of
    ``table.scan_request(filter=…)``); the component then is those rows, in
    ordinal order, at the pinned commit, so shares, rank invariance and
    resume hold as for a table of just those rows (``_row`` still names the
    row's ordinal in the table)."""

    table: Table
    windows: Any = None
    weight: float = 1.0
    columns: Optional[Sequence[str]] = None
    filter: Optional[str] = None

    def __post_init__(self) -> None:
        if not isinstance(self.table, Table):
            raise InvalidArgument(f"Component: table is a {type(self.table).__name__}; "
                                  "give a weft Table, e.g. client.project(p).branch('main').table(t)")
        if self.windows is not None and not isinstance(self.windows, Windows):
            if not isinstance(self.windows, Mapping):
                raise InvalidArgument(f"Component {self.table.name!r}: windows is a {type(self.windows).__name__}; "
                                      "give weft.Windows({key: weft.Video(...) or weft.Rows(...)})")
            self.windows = Windows(self.windows)
        if isinstance(self.weight, bool) or not isinstance(self.weight, (int, float)):
            raise InvalidArgument(f"Component {self.table.name!r}: weight {self.weight!r} is not a number; "
                                  "give a positive finite number")
        if not math.isfinite(self.weight):
            raise InvalidArgument(f"Component {self.table.name!r}: weight {self.weight!r} is not finite; "
                                  "give a positive finite number")
        if self.filter is not None and not isinstance(self.filter, str):
            raise InvalidArgument(f"Component {self.table.name!r}: filter is a {type(self.filter).__name__}; "
                                  "give a string such as \"success = false AND episode >= 100\"")

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"project": self.table.project, "ref": self.table.ref.name,
                               "table": self.table.name, "weight": self.weight}
        if self.columns is not None:
            out["columns"] = list(self.columns)
        if self.windows is not None:
            out["windows"] = self.windows.to_json()
        if self.filter:
            out["filter"] = self.filter
        return out


@dataclass
class Recipe:
    """A weighted mix of tables: resolved by the server into a run that pins
    every table to a commit. ``steps`` defaults to one pass over the rows
    (⌈Σ rows / batch_size⌉); more steps draw further epochs."""

    seed: int
    batch_size: int
    components: list[Component] = field(default_factory=list)
    steps: Optional[int] = None
    shuffle: ShuffleConfig = field(default_factory=ShuffleConfig)

    def __post_init__(self) -> None:
        for name in ("seed", "batch_size"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int):
                raise InvalidArgument(f"Recipe: {name} {v!r} is not an integer")
        if self.steps is not None and (isinstance(self.steps, bool) or not isinstance(self.steps, int)):
            raise InvalidArgument(f"Recipe: steps {self.steps!r} is not an integer (or None for one pass)")
        self.components = list(self.components)
        if not self.components:
            raise InvalidArgument("Recipe: no components; give at least one weft.Component(table)")
        for c in self.components:
            if not isinstance(c, Component):
                raise InvalidArgument(f"Recipe: a component is a {type(c).__name__}; give weft.Component(table, weight=...)")
        uris = {c.table.client.uri for c in self.components}
        if len(uris) > 1:
            raise InvalidArgument(f"Recipe: components come from different servers {sorted(uris)}; "
                                  "a run is served by one store")
        if not isinstance(self.shuffle, ShuffleConfig):
            raise InvalidArgument(f"Recipe: shuffle is a {type(self.shuffle).__name__}; give weft.ShuffleConfig(buffer_rows=...)")

    @property
    def client(self) -> Client:
        return self.components[0].table.client

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"seed": self.seed, "batch_size": self.batch_size,
                               "components": [c.to_json() for c in self.components]}
        if self.steps is not None:
            out["steps"] = self.steps
        if self.shuffle.buffer_rows is not None:
            out["shuffle"] = {"buffer_rows": self.shuffle.buffer_rows}
        return out

    def differences(self, record: dict[str, Any]) -> list[str]:
        """How this recipe differs from a run record (empty: it is a recipe
        of that run). Refs may have moved since the run was made: only the
        ref names are compared, not the commits."""
        diffs = []
        for name in ("seed", "batch_size"):
            if record.get(name) != getattr(self, name):
                diffs.append(f"{name} {getattr(self, name)} (run: {record.get(name)})")
        if self.steps is not None and record.get("steps") != self.steps:
            diffs.append(f"steps {self.steps} (run: {record.get('steps')})")
        buffer_rows = (record.get("shuffle") or {}).get("buffer_rows")
        if self.shuffle.buffer_rows is not None and buffer_rows != self.shuffle.buffer_rows:
            diffs.append(f"shuffle.buffer_rows {self.shuffle.buffer_rows} (run: {buffer_rows})")
        theirs = record.get("components") or []
        if len(theirs) != len(self.components):
            diffs.append(f"{len(self.components)} components (run: {len(theirs)})")
            return diffs
        mine = [Fraction(repr(float(c.weight))) for c in self.components]
        their_w = [Fraction(repr(float(c.get("weight", 1)))) for c in theirs]
        for i, (c, r) in enumerate(zip(self.components, theirs)):
            want = (c.table.project, c.table.ref.name, c.table.name)
            got = (r.get("project"), r.get("ref", "main"), r.get("table"))
            if want != got:
                diffs.append(f"component {i} is {'/'.join(want)} (run: {'/'.join(map(str, got))})")
            if c.columns is not None and list(c.columns) != list(r.get("columns") or []):
                diffs.append(f"component {i} columns {list(c.columns)} (run: {r.get('columns')})")
            if c.windows is not None:
                mine_w = {k: _canonical_window(v) for k, v in c.windows.to_json().items()}
                theirs_w = {k: _canonical_window(v) for k, v in (r.get("windows") or {}).items()}
                if mine_w != theirs_w:
                    diffs.append(f"component {i} windows {c.windows.to_json()} (run: {r.get('windows')})")
        if sum(mine) > 0 and sum(their_w) > 0:
            a = [w / sum(mine) for w in mine]
            b = [w / sum(their_w) for w in their_w]
            if a != b:
                diffs.append(f"weights {[c.weight for c in self.components]} "
                             f"(run: {[c.get('weight') for c in theirs]}; weights are compared as ratios)")
        return diffs


@dataclass(frozen=True)
class World:
    """Which rank this process is, of how many."""

    rank: int = 0
    world_size: int = 1

    def __post_init__(self) -> None:
        for name in ("rank", "world_size"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int):
                raise InvalidArgument(f"World: {name} {v!r} is not an integer")
        if self.world_size < 1:
            raise InvalidArgument(f"World: world_size {self.world_size} must be at least 1")
        if not 0 <= self.rank < self.world_size:
            raise InvalidArgument(f"World: rank {self.rank} must be in 0..{self.world_size - 1} "
                                  f"for world_size {self.world_size}")

    @staticmethod
    def detect() -> "World":
        """torch.distributed's rank and world size when it is initialized,
        else $RANK and $WORLD_SIZE, else a single rank."""
        try:
            import torch.distributed as dist

            if dist.is_available() and dist.is_initialized():
                return World(dist.get_rank(), dist.get_world_size())
        except ImportError:
            pass
        rank, size = os.environ.get("RANK"), os.environ.get("WORLD_SIZE")
        if rank is None and size is None:
            return World()
        try:
            return World(int(rank or 0), int(size or 1))
        except ValueError:
            raise InvalidArgument(f"RANK={rank!r} WORLD_SIZE={size!r}: not integers; "
                                  "fix the environment or pass world=weft.World(rank=, world_size=)") from None


def resolve_world(world: Optional[World]) -> World:
    if world is None:
        return World.detect()
    if not isinstance(world, World):
        raise InvalidArgument(f"world is a {type(world).__name__}; give weft.World(rank=, world_size=) or None")
    return world
