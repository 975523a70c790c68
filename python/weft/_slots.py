"""Host-slot delivery, the client's side (issue 14; planned, not served yet).

flightd writes a step's Arrow IPC record-batch message into a slot of a ring
of shared memory (one file in /dev/shm, mode 0600) and sends a descriptor
(``client.SlotDescriptor`` in Go)::

    {"ring": "/dev/shm/weft-ring-…", "slot": 1, "generation": 2,
     "offset": 1048640, "length": 408}

``offset`` counts from the start of the ring's file. :class:`Ring` maps the
file read-only and :meth:`Ring.read_batch` builds the ``pa.RecordBatch`` on
the mapping without copying: every buffer of the batch (numeric values,
fixed-size-list children, binary data) is a slice of the mapping, valid while
the batch (or anything built on it) lives, even after the server unlinks the
file. The slot's bytes stay the client's until it sends the release
(:func:`release_message`); the server never rewrites a slot before that.

Not exported from ``weft``: the wire protocol around it is not served yet.
"""

from __future__ import annotations

import json
import mmap
import os
import stat
from dataclasses import dataclass
from typing import Any, Mapping

import pyarrow as pa
import pyarrow.ipc as ipc


@dataclass(frozen=True)
class SlotDescriptor:
    """Where one record-batch message lies: bytes [offset, offset+length) of
    the ring file ``ring``, in slot ``slot`` at use ``generation``."""

    ring: str
    slot: int
    generation: int
    offset: int
    length: int

    @classmethod
    def from_json(cls, obj: str | bytes | Mapping[str, Any]) -> "SlotDescriptor":
        d = json.loads(obj) if isinstance(obj, (str, bytes)) else dict(obj)
        want = {"ring", "slot", "generation", "offset", "length"}
        if set(d) != want:
            raise ValueError(f"slot descriptor: fields {sorted(d)}, want {sorted(want)}")
        if not isinstance(d["ring"], str) or not d["ring"]:
            raise ValueError(f"slot descriptor: ring {d['ring']!r} is not a path")
        for k in ("slot", "generation", "offset", "length"):
            if type(d[k]) is not int:
                raise ValueError(f"slot descriptor: {k} {d[k]!r} is not an integer")
        if d["slot"] < 0 or d["generation"] < 1 or d["offset"] < 0 or d["length"] < 1:
            raise ValueError(f"slot descriptor: out of range: {d}")
        return cls(**d)


def release_message(desc: SlotDescriptor) -> bytes:
    """The JSON a client sends when done with desc's step (``client.SlotRelease``)."""
    return b'{"slot":%d,"generation":%d}' % (desc.slot, desc.generation)


class Ring:
    """A ring file mapped read-only. Batches read from it keep the mapping
    alive; :meth:`close` drops this object's reference."""

    def __init__(self, path: str | os.PathLike[str]):
        self.path = os.fspath(path)
        fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise ValueError(f"slot ring {self.path} is not a regular file")
            if st.st_size == 0:
                raise ValueError(f"slot ring {self.path} is empty")
            self._mm = mmap.mmap(fd, st.st_size, access=mmap.ACCESS_READ)
        finally:
            os.close(fd)
        self.size = st.st_size
        # One pyarrow buffer over the whole mapping; batches hold slices of
        # it, which keep the mapping alive through the buffer protocol.
        self._buf: pa.Buffer | None = pa.py_buffer(self._mm)

    @property
    def address(self) -> int:
        """Address of the mapping's first byte."""
        return self._require().address

    def _require(self) -> pa.Buffer:
        if self._buf is None:
            raise ValueError(f"slot ring {self.path} is closed")
        return self._buf

    def message(self, desc: SlotDescriptor) -> pa.Buffer:
        """The descriptor's bytes, a zero-copy slice of the mapping."""
        buf = self._require()
        if desc.offset + desc.length > self.size:
            raise ValueError(f"slot descriptor {desc} reaches past the end of {self.path} ({self.size} bytes)")
        return buf.slice(desc.offset, desc.length)

    def read_batch(self, desc: SlotDescriptor, schema: pa.Schema) -> pa.RecordBatch:
        """The record batch the descriptor names, built on the mapping."""
        if desc.ring != self.path and os.path.realpath(desc.ring) != os.path.realpath(self.path):
            raise ValueError(f"slot descriptor names ring {desc.ring}, this is {self.path}")
        return ipc.read_record_batch(self.message(desc), schema)

    def close(self) -> None:
        """Drop the mapping; it is unmapped once no batch built on it lives."""
        self._buf = None
        try:
            self._mm.close()
        except BufferError:
            pass  # batches still point into it: the mapping lives until they die

    def __enter__(self) -> "Ring":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Rings:
    """The rings a client has mapped, by path (a server sends one ring per
    stream; they are mapped at their first descriptor)."""

    def __init__(self) -> None:
        self._rings: dict[str, Ring] = {}

    def read_batch(self, desc: SlotDescriptor | Mapping[str, Any], schema: pa.Schema) -> pa.RecordBatch:
        if not isinstance(desc, SlotDescriptor):
            desc = SlotDescriptor.from_json(desc)
        ring = self._rings.get(desc.ring)
        if ring is None:
            ring = self._rings[desc.ring] = Ring(desc.ring)
        return ring.read_batch(desc, schema)

    def close(self) -> None:
        for ring in self._rings.values():
            ring.close()
        self._rings.clear()
