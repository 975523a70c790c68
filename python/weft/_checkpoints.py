"""Checkpoints in a table: one row per checkpoint (step, run record,
loader position, extra as JSON) and the weights as a media object of kind
"file" that the row's file column names, committed together.

``save`` streams the weights into the bucket first (a state_dict is
``torch.save``d to a temporary file, then uploaded in 4 MiB chunks: the
file is never held in memory whole), then appends the row: the commit names
the object in the table's manifest, so a crash between the upload and the
commit leaves no visible checkpoint (the orphan object is gc'd after its
grace period). Appends from several processes each commit (the server
retries a commit whose branch head moved), so concurrent savers lose none.
``latest()`` / ``at(step)`` read the row back; ``weights_to(path)`` streams
the object to a file with ranged reads (``read_media``), ``load()``
``torch.load``s it.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass
from typing import Any, Optional, Union

import pyarrow as pa

from ._client import Table, hash_file, put_media
from ._errors import InvalidArgument, NotFound

READ_BYTES = 64 << 20  # bytes per read_media call


def _schema() -> pa.Schema:
    return pa.schema([
        pa.field("step", pa.int64(), nullable=False),
        pa.field("weights", pa.utf8(), metadata={b"weft.kind": b"file"}),
        pa.field("weights_size", pa.int64()),
        pa.field("run", pa.utf8()),
        pa.field("loader", pa.utf8()),
        pa.field("extra", pa.utf8()),
    ])


@dataclass
class Checkpoint:
    """One row of a checkpoints table."""

    table: Table
    step: int
    weights: Optional[str]  # sha256 of the weights object, None when the row has none
    weights_size: int
    run: Optional[dict[str, Any]]
    loader: Optional[dict[str, Any]]
    extra: dict[str, Any]

    def weights_to(self, path: Union[str, "os.PathLike[str]"]) -> str:
        """Streams the weights into ``path`` (ranged reads of READ_BYTES,
        written as they come); returns the path."""
        if self.weights is None:
            raise NotFound(f"checkpoint at step {self.step} has no weights")
        client = self.table.client
        path = os.fspath(path)
        with open(path + ".part", "wb") as f:
            off = 0
            while off < self.weights_size:
                n = min(READ_BYTES, self.weights_size - off)
                with client.session() as flight:
                    import pyarrow.flight as fl

                    body = json.dumps({"project": self.table.project, "sha256": self.weights,
                                       "offset": off, "length": n}).encode()
                    for r in flight.do_action(fl.Action("read_media", body), client._options()):
                        buf = r.body
                        f.write(memoryview(buf))
                        off += buf.size
        os.replace(path + ".part", path)
        return path

    def load(self, map_location: Any = "cpu") -> Any:
        """The weights ``torch.load``ed (via a temporary file)."""
        import torch

        with tempfile.TemporaryDirectory() as d:
            return torch.load(self.weights_to(os.path.join(d, "weights")), map_location=map_location)


class Checkpoints:
    """A table of checkpoints: ``weft.Checkpoints(branch.table("checkpoints"))``."""

    def __init__(self, table: Table):
        if not isinstance(table, Table):
            raise InvalidArgument(f"Checkpoints: table is a {type(table).__name__}; give branch.table(name)")
        self.table = table

    def save(self, step: int, model: Any = None, loader: Optional[dict[str, Any]] = None,
             extra: Optional[dict[str, Any]] = None, run: Optional[dict[str, Any]] = None) -> Checkpoint:
        """Stores one checkpoint in one commit. ``model``: a path to a
        weights file, a state_dict (or any object ``torch.save`` takes), or
        None (a row with metrics only, e.g. from a rank that writes no
        weights). ``loader``: a loader's ``state_dict()``; ``run``: a run
        record (default: the loader state's run id)."""
        if isinstance(step, bool) or not isinstance(step, int) or step < 0:
            raise InvalidArgument(f"Checkpoints.save: step {step!r} must be an integer ≥ 0")
        sha, size = None, None
        tmp = None
        try:
            if model is not None:
                if isinstance(model, (str, os.PathLike)):
                    path = os.fspath(model)
                else:
                    import torch

                    fd, tmp = tempfile.mkstemp(prefix="weft-ckpt-", suffix=".pt")
                    os.close(fd)
                    torch.save(model, tmp)
                    path = tmp
                f = hash_file(path)
                put_media(self.table.client, self.table.project, f, kind="file")
                sha, size = f.sha256, f.size
        finally:
            if tmp is not None:
                os.unlink(tmp)
        if run is None and loader is not None and "run" in loader:
            run = {"run": loader["run"]}
        row = pa.table({
            "step": pa.array([step], pa.int64()), "weights": pa.array([sha], pa.utf8()),
            "weights_size": pa.array([size], pa.int64()),
            "run": pa.array([None if run is None else json.dumps(run)], pa.utf8()),
            "loader": pa.array([None if loader is None else json.dumps(loader)], pa.utf8()),
            "extra": pa.array([json.dumps(extra or {})], pa.utf8()),
        }, schema=_schema())
        self.table.append(row)
        return Checkpoint(self.table, step, sha, size or 0, run, loader, extra or {})

    def _rows(self) -> pa.Table:
        try:
            return self.table.read()
        except NotFound:
            return _schema().empty_table()

    def _row(self, t: pa.Table, i: int) -> Checkpoint:
        r = {k: t.column(k)[i].as_py() for k in t.column_names}
        return Checkpoint(self.table, r["step"], r["weights"], r["weights_size"] or 0,
                          json.loads(r["run"]) if r["run"] else None,
                          json.loads(r["loader"]) if r["loader"] else None, json.loads(r["extra"] or "{}"))

    def all(self) -> list[Checkpoint]:
        t = self._rows()
        return [self._row(t, i) for i in range(t.num_rows)]

    def latest(self, with_weights: bool = True) -> Optional[Checkpoint]:
        """The checkpoint with the highest step (with weights, unless
        ``with_weights=False``); None when there is none. Of rows with the
        same step, the last committed."""
        t = self._rows()
        best = None
        for i in range(t.num_rows):
            if with_weights and not t.column("weights")[i].is_valid:
                continue
            if best is None or t.column("step")[i].as_py() >= t.column("step")[best].as_py():
                best = i
        return None if best is None else self._row(t, best)

    def at(self, step: int) -> Checkpoint:
        """The checkpoint saved at ``step`` (the last one with weights, else the last)."""
        t = self._rows()
        idx = [i for i in range(t.num_rows) if t.column("step")[i].as_py() == step]
        if not idx:
            raise NotFound(f"no checkpoint at step {step} in table {self.table.name!r}")
        withw = [i for i in idx if t.column("weights")[i].is_valid]
        return self._row(t, (withw or idx)[-1])
