"""Recipes (what to mix) and worlds (who reads which slice)."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Optional, Sequence

from ._client import Client, Table
from ._errors import InvalidArgument


@dataclass(frozen=True)
class ShuffleConfig:
    """``buffer_rows``: rows of the shuffle window (None: the server picks
    about 8192, fewer for wide rows)."""

    buffer_rows: Optional[int] = None


@dataclass
class Component:
    """One table of a mix. ``weight`` is relative (0.3/0.7 and 3/7 are the
    same mix); ``columns`` defaults to every column of the first component's
    table, and every component must serve the same columns with the same
    types. ``windows`` (frames around a moment, for video) is not supported
    by the server yet and must be None."""

    table: Table
    windows: Any = None
    weight: float = 1.0
    columns: Optional[Sequence[str]] = None

    def __post_init__(self) -> None:
        if not isinstance(self.table, Table):
            raise InvalidArgument(f"Component: table is a {type(self.table).__name__}; "
                                  "give a weft Table, e.g. client.project(p).branch('main').table(t)")
        if self.windows is not None:
            raise NotImplementedError("Component(windows=...): frame windows around a moment are not "
                                      "supported yet; leave windows=None")
        if isinstance(self.weight, bool) or not isinstance(self.weight, (int, float)):
            raise InvalidArgument(f"Component {self.table.name!r}: weight {self.weight!r} is not a number; "
                                  "give a positive finite number")
        if not math.isfinite(self.weight):
            raise InvalidArgument(f"Component {self.table.name!r}: weight {self.weight!r} is not finite; "
                                  "give a positive finite number")

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"project": self.table.project, "ref": self.table.ref.name,
                               "table": self.table.name, "weight": self.weight}
        if self.columns is not None:
            out["columns"] = list(self.columns)
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
