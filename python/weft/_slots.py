"""Host-slot delivery, the client's side (issue 14; docs/flight.md, "Host slots").

flightd writes a step's Arrow IPC record-batch message into a slot of a ring
of shared memory (one file in /dev/shm, mode 0600) and sends a descriptor
(``client.SlotDescriptor`` in Go)::

    {"ring": "/dev/shm/weft-ring-…", "slot": 1, "generation": 2,
     "offset": 1048640, "length": 408}

``offset`` counts from the start of the ring's file. :class:`Ring` maps the
file and :meth:`Ring.read_batch` builds the ``pa.RecordBatch`` on the
mapping without copying: every buffer of the batch (numeric values,
fixed-size-list children, binary data) is a slice of the mapping, valid while
the batch (or anything built on it) lives, even after the server unlinks the
file. The slot's bytes stay the client's until it sends the release
(:func:`release_message`, after :meth:`Ring.release`); the server never
rewrites a slot before that.

**Writes are private.** The ring is mapped copy-on-write (``MAP_PRIVATE``,
``mmap.ACCESS_COPY``): a tensor on the slot is writable (``x -= mean``,
``x.div_(255)``), and a write goes to a private copy of the page it touches,
never to the file and never to the server (which reads back what it builds
in a slot). Pages the client did not write keep showing the file (tmpfs
shares its page-cache pages with private mappings until one is written), so
a step the server writes after the mapping was made is read as written. A
write lasts until the step is released: :meth:`Ring.release` finds the
pages of the step's message the client wrote — copied-on-write pages are
anonymous: in ``/proc/self/pagemap`` bit 63 (present) is set and bit 61
(file page or shared anonymous) is not, or bit 62 (swapped) is set — and
drops those runs (``madvise(MADV_DONTNEED)``), so the slot's next step reads
the file again. Only those entries of pagemap are read (8 bytes a page). If
pagemap cannot be read or does not show a copy-on-write (a restricted
``/proc``), the whole range is dropped at each release instead (correct,
slower: the next read of the range faults every page in again), logged once
per ring. Under strict overcommit (``vm.overcommit_memory=2``) the kernel
may refuse to commit a private writable mapping of a large ring: it is then
mapped read-only, as before (logged: a write into a view kills the
process). So is it in a process that locks its memory
(``mlockall(MCL_FUTURE)``): mlock would copy every page of a private
writable mapping at once (a snapshot of the ring, not the server's later
steps), and ``madvise(MADV_DONTNEED)`` refuses locked pages.

**Slots are whole pages.** flightd makes every slot whole pages
(``slot_bytes``, in the stream's header, a multiple of the page size:
docs/flight.md "Host slots"), so no page holds bytes of two steps: a
release drops the step's pages without looking at other steps, and a read
never waits on a release. A ring whose slots are not whole pages (an older
flightd made them 64-byte aligned only) is not mapped: :class:`Ring`
raises :class:`NotWholePages` (the loader then reads the plain stream on
delivery "auto" and refuses on "shm"), and a descriptor whose bytes do not
lie inside its slot is refused at read. Writes through a tensor of a step
already released (kept past the next step without ``.clone()``) may show
in a later step of this process; the server never sees them.

Not exported from ``weft``.
"""

from __future__ import annotations

import errno
import json
import logging
import mmap
import os
import stat
import threading
from dataclasses import dataclass
from typing import Any, Mapping, Optional

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc

log = logging.getLogger("weft")

PAGE = mmap.PAGESIZE
_PRESENT = np.uint64(1 << 63)
_SWAPPED = np.uint64(1 << 62)
_FILE = np.uint64(1 << 61)  # file page or shared anonymous


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


class NotWholePages(ValueError):
    """A ring whose slots are not whole pages (an older flightd): it is not
    mapped (module doc)."""


def check_slot_bytes(ring: str, slot_bytes: Any) -> int:
    """slot_bytes, the ring's slot size from the stream's header, if it is
    whole pages; else NotWholePages naming it."""
    if type(slot_bytes) is not int or slot_bytes < 1:
        raise NotWholePages(f"the server's header gives ring {ring} no slot size (slot_bytes {slot_bytes!r}); "
                            "the server is older than this client, which needs whole-page host slots")
    if slot_bytes % PAGE:
        raise NotWholePages(f"the server's host slots are {slot_bytes} bytes, not whole pages of {PAGE} "
                            f"(ring {ring}): the server is older than this client and does not make "
                            "whole-page slots, which this client needs")
    return slot_bytes


def _runs(mask: np.ndarray) -> list[tuple[int, int]]:
    """[start, end) index runs where mask is True."""
    if not mask.any():
        return []
    edges = np.flatnonzero(np.diff(np.concatenate(([False], mask, [False])).astype(np.int8)))
    return [(int(a), int(b)) for a, b in zip(edges[::2], edges[1::2])]


class Ring:
    """A ring file of slots of ``slot_bytes`` bytes (whole pages, else
    NotWholePages), mapped copy-on-write (module doc). Batches read from
    it keep the mapping alive; :meth:`close` drops this object's reference.

    ``tracking`` says how written pages are found: "pagemap", or
    "whole-range" (every page of a step is dropped at its release: what a
    process without a readable ``/proc/self/pagemap`` gets, or
    ``use_pagemap=False``), or "read-only" (the kernel would not commit a
    private writable mapping of the ring, under strict overcommit, or the
    process locks its memory: it is mapped read-only, and a write into it
    kills the process).
    ``stats`` counts the work: pages dropped at releases, and releases."""

    def __init__(self, path: str | os.PathLike[str], slot_bytes: int, use_pagemap: bool = True):
        self.path = os.fspath(path)
        self.slot_bytes = check_slot_bytes(self.path, slot_bytes)
        fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise ValueError(f"slot ring {self.path} is not a regular file")
            if st.st_size == 0 or st.st_size % self.slot_bytes:
                raise ValueError(f"slot ring {self.path} is {st.st_size} bytes, not whole slots of {self.slot_bytes}")
            # MAP_PRIVATE, PROT_READ|PROT_WRITE: writes are copied on write
            # and never reach the file.
            writable, why = True, ""
            try:
                self._mm = mmap.mmap(fd, st.st_size, access=mmap.ACCESS_COPY)
            except OSError as e:
                if e.errno != errno.ENOMEM:
                    raise
                # strict overcommit (vm.overcommit_memory=2) counts a private
                # writable mapping as memory it may need: map it read-only
                writable, why = False, "not enough memory to commit"
            else:
                try:
                    self._mm.madvise(mmap.MADV_DONTNEED, 0, min(PAGE, st.st_size))
                except OSError as e:
                    if e.errno != errno.EINVAL:
                        raise
                    # locked (mlockall(MCL_FUTURE)): mlock copied every page
                    # of the private mapping at once, a snapshot of the ring
                    # that madvise cannot drop; a read-only mapping is not copied
                    self._mm.close()
                    writable, why = False, "the process locks its memory (mlockall)"
            if not writable:
                self._mm = mmap.mmap(fd, st.st_size, access=mmap.ACCESS_READ)
        finally:
            os.close(fd)  # the mapping holds the file
        self.size = st.st_size
        # One pyarrow buffer over the whole mapping; batches hold slices of
        # it, which keep the mapping alive through the buffer protocol.
        self._buf: pa.Buffer | None = pa.py_buffer(self._mm)
        self._base = self._buf.address
        self._lock = threading.Lock()
        self._live: dict[tuple[int, int], tuple[int, int]] = {}  # (slot, generation) → (offset, end) of steps read, not released
        # Releases drop pages outside self._lock; close waits for them.
        self._idle = threading.Condition(self._lock)
        self._dropping = 0  # releases dropping pages now
        self._pagemap_lock = threading.Lock()  # its (re)opening
        self._pagemap: Optional[int] = None
        self._pagemap_pid = 0
        self.stats = {"releases": 0, "dropped": 0}
        self.tracking = "whole-range"
        if not writable:
            self.tracking = "read-only"
            log.warning("host slots: ring %s (%d bytes) cannot be mapped copy-on-write (%s); it is mapped "
                        "read-only: writing into a tensor on it kills the process (SIGSEGV), .clone() it first",
                        self.path, self.size, why)
        elif use_pagemap:
            unseen = self._probe()
            if unseen is None:
                self.tracking = "pagemap"
            else:
                log.warning("host slots: %s; each released step's whole range is dropped "
                            "(correct, slower: its pages fault in again) for ring %s", unseen, self.path)

    # ------------------------------------------------------------ pagemap

    def _entries(self, first: int, n: int) -> np.ndarray:
        """pagemap entries of the mapping's pages [first, first+n)."""
        with self._pagemap_lock:
            if self._pagemap is None or self._pagemap_pid != os.getpid():
                # /proc/self is resolved at open: a forked child opens its own.
                if self._pagemap is not None:
                    os.close(self._pagemap)
                    self._pagemap = None
                self._pagemap = os.open("/proc/self/pagemap", os.O_RDONLY | os.O_CLOEXEC)
                self._pagemap_pid = os.getpid()
            fd = self._pagemap
        want = n * 8
        raw = os.pread(fd, want, (self._base // PAGE + first) * 8)
        if len(raw) != want:
            raise OSError(f"/proc/self/pagemap: read {len(raw)} of {want} bytes")
        return np.frombuffer(raw, dtype=np.uint64)

    def _written(self, first: int, n: int) -> np.ndarray:
        """Which of the pages [first, first+n) this process wrote (private copies)."""
        e = self._entries(first, n)
        return ((e & (_PRESENT | _FILE)) == _PRESENT) | ((e & _SWAPPED) != 0)

    def _probe(self) -> Optional[str]:
        """None if pagemap shows this mapping's copy-on-write pages, else why not."""
        try:
            mv = memoryview(self._mm)
            try:
                b = mv[0]  # fault the first page in from the file
                if self._written(0, 1)[0]:
                    return "/proc/self/pagemap shows an unwritten page of the ring as written"
                mv[0] = b  # a private copy of the page, same byte
                copied = bool(self._written(0, 1)[0])
                self._mm.madvise(mmap.MADV_DONTNEED, 0, PAGE)
                if not copied:
                    return "/proc/self/pagemap does not show a page written through the ring's private mapping"
                if self._written(0, 1)[0]:
                    return "madvise(MADV_DONTNEED) left a written page of the ring private"
            finally:
                mv.release()
        except (OSError, ValueError) as e:
            return f"/proc/self/pagemap cannot be read ({e})"
        return None

    def _drop(self, first: int, last: int) -> int:
        """Drop the written pages of [first, last]; returns how many. Runs
        outside self._lock: the pages are one released step's, which no
        other step shares (slots are whole pages) and nothing reads or
        writes until its release is sent."""
        n = last - first + 1
        if n <= 0:
            return 0
        if self.tracking == "pagemap":
            try:
                written = self._written(first, n)
            except OSError as e:
                self.tracking = "whole-range"
                log.warning("host slots: /proc/self/pagemap cannot be read (%s); each released step's whole "
                            "range is dropped from now on for ring %s", e, self.path)
                written = np.ones(n, dtype=bool)
        else:
            written = np.ones(n, dtype=bool)
        dropped = 0
        for a, b in _runs(written):
            self._mm.madvise(mmap.MADV_DONTNEED, (first + a) * PAGE, (b - a) * PAGE)
            dropped += b - a
        return dropped

    # ------------------------------------------------------------ steps

    @property
    def address(self) -> int:
        """Address of the mapping's first byte."""
        return self._require().address

    def _require(self) -> pa.Buffer:
        if self._buf is None:
            raise ValueError(f"slot ring {self.path} is closed")
        return self._buf

    def message(self, desc: SlotDescriptor) -> pa.Buffer:
        """The descriptor's bytes, a zero-copy slice of the mapping. They
        must lie inside the descriptor's slot (else ValueError)."""
        buf = self._require()
        end = desc.offset + desc.length
        if end > self.size:
            raise ValueError(f"slot descriptor {desc} reaches past the end of {self.path} ({self.size} bytes)")
        lo = desc.slot * self.slot_bytes
        if not lo <= desc.offset or end > lo + self.slot_bytes:
            raise ValueError(f"slot descriptor {desc}: bytes {desc.offset}..{end} are not inside slot {desc.slot} "
                             f"(bytes {lo}..{lo + self.slot_bytes} of {self.path})")
        return buf.slice(desc.offset, desc.length)

    def read_batch(self, desc: SlotDescriptor, schema: pa.Schema) -> pa.RecordBatch:
        """The record batch the descriptor names, built on the mapping. The
        step is the client's until :meth:`release`. When its bytes are not
        a record batch of schema (a corrupt or short slot), pyarrow's error
        is raised and the step is not the client's: nothing of it stays
        registered (no :meth:`release` is due).

        Nothing is dropped here: the step's pages lie in its slot alone,
        and the slot's last release dropped the ones written."""
        if desc.ring != self.path and os.path.realpath(desc.ring) != os.path.realpath(self.path):
            raise ValueError(f"slot descriptor names ring {desc.ring}, this is {self.path}")
        msg = self.message(desc)
        if self.tracking == "read-only":
            return ipc.read_record_batch(msg, schema)
        key, span = (desc.slot, desc.generation), (desc.offset, desc.offset + desc.length)
        with self._lock:
            before = self._live.get(key)  # read already (a second read of one step)
            self._live[key] = span
        try:
            return ipc.read_record_batch(msg, schema)
        except BaseException:
            # Unread, so unwritten: nothing to drop, no release due.
            with self._lock:
                if self._live.get(key) == span:
                    if before is None:
                        del self._live[key]
                    else:
                        self._live[key] = before
            raise

    def release(self, desc: SlotDescriptor) -> None:
        """desc's step is done: the pages of its message this process wrote
        are dropped, so they show the file again. Call it before sending
        the release (:func:`release_message`). Tensors of the step still
        alive show the file from now on, which the server may rewrite. A
        step not read (or released already) is let be.

        The pagemap read and the drop run outside the ring's lock, so that
        reads of other steps go on meanwhile: no other step has a byte on
        these pages, and nothing reads or writes desc's slot until the
        release is sent (after this returns)."""
        with self._lock:
            span = self._live.pop((desc.slot, desc.generation), None)
            if span is None or self._buf is None:
                return
            self.stats["releases"] += 1
            self._dropping += 1
        dropped = 0
        try:
            dropped = self._drop(span[0] // PAGE, (span[1] - 1) // PAGE)
        finally:
            with self._lock:
                self.stats["dropped"] += dropped
                self._dropping -= 1
                if not self._dropping:
                    self._idle.notify_all()

    def close(self) -> None:
        """Drop the mapping; it is unmapped once no batch built on it lives."""
        with self._lock:
            self._idle.wait_for(lambda: not self._dropping)  # releases dropping pages outside the lock
            self._buf = None
            self._live.clear()
            if self._pagemap is not None:
                os.close(self._pagemap)
                self._pagemap = None
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
    stream, named with its slot size in the stream's header,
    :meth:`expect`; it is mapped at its first descriptor)."""

    def __init__(self, use_pagemap: bool = True) -> None:
        self._rings: dict[str, Ring] = {}
        self._slot_bytes: dict[str, int] = {}
        self._use_pagemap = use_pagemap

    def expect(self, ring: str, slot_bytes: Any) -> None:
        """A stream's header names ring, of slots of slot_bytes bytes
        (NotWholePages: they are not whole pages; nothing is mapped)."""
        self._slot_bytes[ring] = check_slot_bytes(ring, slot_bytes)

    def ring(self, desc: SlotDescriptor) -> Ring:
        """desc's ring, mapped at its first descriptor (OSError, ValueError:
        it cannot be, or no header named it)."""
        ring = self._rings.get(desc.ring)
        if ring is None:
            slot_bytes = self._slot_bytes.get(desc.ring)
            if slot_bytes is None:
                raise ValueError(f"slot descriptor names ring {desc.ring}, which no stream header named")
            ring = self._rings[desc.ring] = Ring(desc.ring, slot_bytes, self._use_pagemap)
        return ring

    def read_batch(self, desc: SlotDescriptor | Mapping[str, Any], schema: pa.Schema) -> pa.RecordBatch:
        if not isinstance(desc, SlotDescriptor):
            desc = SlotDescriptor.from_json(desc)
        return self.ring(desc).read_batch(desc, schema)

    def release(self, desc: SlotDescriptor) -> None:
        """Ring.release on desc's ring (nothing once the rings are closed)."""
        ring = self._rings.get(desc.ring)
        if ring is not None:
            ring.release(desc)

    def close(self) -> None:
        for ring in self._rings.values():
            ring.close()
        self._rings.clear()
