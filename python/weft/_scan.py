"""The seed's scan loaders in Weft's names: ``scan.to_data_loader``,
``scan.to_iterable_dataset``, ``scan.to_distributed_data_loader`` and
``scan.resume_data_loader`` on a ``table.scan_request(...)``.

They are built on the run machinery (a one-component recipe served as a
run, ``TrainLoader``): the order is fixed by ``seed`` and the commit the
scan pins, the same on any number of ranks, and seekable to any sample.

How a sample is addressed
-------------------------
The loader plans ONE run of the scan's table whose steps have ``step_rows``
rows (S, fixed when the first loader is made and kept in every checkpoint),
whatever the batch size. The run's samples, step after step, in the
positions of each step's global batch, form the *sample sequence*
``p = 0, 1, 2, …``: sample ``p`` is position ``p mod S`` of step ``p div S``.
A loader makes one pass, samples ``0 … N-1`` (``N``: the rows the scan
matches at its commit), which are every row exactly once:

- The last partial step. A run's component is a stream of draws (draw
  ``d`` of epoch 0 is row ``π(d)``), and step ``s`` holds draws
  ``sS … sS+S-1`` in a permuted order, so a step that crosses draw ``N``
  mixes epochs. The samples of the full steps, ``p < M = ⌊N/S⌋·S``, are
  read from the run; samples ``M … N-1`` are draws ``M … N-1`` themselves,
  read from the run of the same stream with 1-row steps (step ``d`` is draw
  ``d``): the same seed, commit (pinned) and shuffle window, as the draw
  stream does not depend on the batch size (sampler/doc.go, "Streams").
  That run serves fewer than S one-row steps per pass.

- Batches: a loader cuts the sequence into batches of ``batch_size`` rows
  itself (the server's steps are S rows whatever the batch size), so a
  loader resumed from a checkpoint at sample ``k`` may use any batch size:
  it seeks to step ``k div S`` and drops the step's samples before ``k``.
  This is why the step size is a loader constant and not the batch size:
  a run's batch size is part of its id and of every step's permutation, so
  a different batch size would be a different order.
- Ranks: rank ``r`` of ``W`` takes the samples ``p ≡ r (mod W)``, in order,
  and cuts them into batches of ``batch_size``. So global batch ``n`` (the
  ``W × batch_size`` consecutive samples after the start) is exactly the
  union of every rank's batch ``n``, and a checkpoint says one number: the
  next global sample. The server serves the run to ``g = gcd(S, W)`` ranks
  (it gives rank ``q`` of ``g`` positions ``q, q+g, …`` of each step, and S
  is a multiple of g, so ``p ≡ q (mod g)``); rank ``r`` reads server rank
  ``r mod g`` and keeps its own samples. When ``W`` divides S (the default S
  is a multiple of 960 and of the first loader's ``W × batch_size``), every
  rank reads only its own rows; otherwise a rank reads ``W / g`` times its
  rows (correct, slower).
- Transforms: ``transform_fn(batch: pyarrow.RecordBatch)`` runs once per
  batch (the seed's tokenizer takes a RecordBatch), after the batch is cut
  and before it becomes tensors (``weft.to_tensors`` rules, as in
  ``TrainLoader``); ``map_workers=N`` runs it in N processes (``spawn``:
  the function must be importable), in order.

Every batch has the scan's columns and ``_row`` (int64: the row ordinal in
the table at the pinned commit), so a sample can always be audited.
"""

from __future__ import annotations

import concurrent.futures as cf
import math
import multiprocessing
from collections import deque
from typing import Any, Callable, Iterator, Optional, Union

import numpy as np
import pyarrow as pa
import torch
from torch.utils.data import IterableDataset, get_worker_info

from ._client import Project, ScanRequest
from ._errors import InvalidArgument, TransformError
from ._recipe import Component, Recipe, ShuffleConfig, World, resolve_world

STATE_KIND = "weft.scan_loader"
STATE_FORMAT = 1
STEP_BASE = 960  # 2^6·3·5: divides 1,2,3,4,5,6,8,10,12,15,16,20,24,30,32,40,48,60,64,… ranks
MAX_STEP_BYTES = 64 << 20  # a step's rows should hold about this much at most (from the run's buffer_rows)


def _positive_int(what: str, v: Any) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < 1:
        raise InvalidArgument(f"{what} {v!r} must be a positive integer")
    return v


def _component(scan: ScanRequest, commit: Optional[str] = None) -> Component:
    """The scan as a one-component recipe's component (at ``commit`` when
    given), with the scan's filter."""
    project = Project(scan.client, scan.project)
    table = (project.commit(commit) if commit else project.branch(scan.ref)).table(scan.table)
    return Component(table, columns=scan.columns, filter=scan.filter)


def _check_scan(scan: Any, what: str) -> ScanRequest:
    if not isinstance(scan, ScanRequest):
        raise InvalidArgument(f"{what}: scan is a {type(scan).__name__}; give table.scan_request(columns)")
    if scan.windows is not None:
        raise InvalidArgument(f"{what}: a windowed scan cannot be cut into batches of any size (its video windows "
                              "refer to a step's segments); use weft.ScanDataset or weft.TrainLoader with windows")
    return scan


def _shuffle(seed: Optional[int], shuffle: Optional[ShuffleConfig]) -> tuple[int, Optional[int]]:
    """(seed, buffer_rows) of the run from a loader's arguments."""
    if shuffle is not None and not isinstance(shuffle, ShuffleConfig):
        raise InvalidArgument(f"shuffle is a {type(shuffle).__name__}; give weft.ShuffleConfig(seed=, buffer_size=)")
    s = seed if seed is not None else (shuffle.seed if shuffle is not None else None)
    if s is None:
        s = 0
    if isinstance(s, bool) or not isinstance(s, int):
        raise InvalidArgument(f"seed {s!r} is not an integer")
    return s, (shuffle.buffer_rows if shuffle is not None else None)


def _no_shards(shards: Any, what: str) -> None:
    """Refuses shards=: a scan loader is one run whose sample p goes to rank
    p mod W, among the rows the filter matches, so every rank already gets
    its share within one row; shards (a partition of endpoints for
    ScanDataset's readers) would be a second partition and break resume,
    which is one sample number of the run (docs/python.md, "Scan loaders")."""
    if shards is not None:
        raise InvalidArgument(f"{what}: shards= is not taken here: a scan loader is one run, which gives rank r of W "
                              "the samples p ≡ r (mod W) of the rows the filter matches, so ranks already differ by "
                              "at most one row whatever the filter, and a checkpoint is one sample of that run; "
                              "shards balance endpoints among readers: use them with "
                              "weft.ScanDataset(scan, shards=scan.shards())")


class ScanLoader:
    """A scan's batches for one rank: what ``scan.to_data_loader``,
    ``to_distributed_data_loader`` and ``resume_data_loader`` return.

    Iterating yields dicts of tensors (or what ``transform_fn`` returns,
    converted as ``TrainLoader`` converts it), ``batch_size`` rows each (the
    last batch fewer, unless ``drop_last``: then every rank yields the same
    number of full batches). Iterating again continues where the last
    iteration stopped; ``state_dict()`` is the next sample of the sample
    sequence (module doc), the same on every rank after the same number of
    batches, so save it from any one rank. ``len()`` is the batches left.
    """

    def __init__(self, scan: ScanRequest, *, seed: Optional[int] = None, batch_size: int = 32,
                 world: Optional[World] = None, transform_fn: Optional[Callable[[pa.RecordBatch], Any]] = None,
                 map_workers: int = 0, device: Union[str, torch.device] = "cpu", drop_last: bool = False,
                 shuffle: Optional[ShuffleConfig] = None, step_rows: Optional[int] = None, prefetch: int = 4,
                 mp_context: Optional[str] = "spawn", _resume: Optional[dict[str, Any]] = None,
                 _check: bool = True):
        self.scan = _check_scan(scan, "to_data_loader")
        self.batch_size = _positive_int("batch_size", batch_size)
        self.world = World() if world is None else resolve_world(world)
        if isinstance(map_workers, bool) or not isinstance(map_workers, int) or map_workers < 0:
            raise InvalidArgument(f"map_workers {map_workers!r} must be an integer ≥ 0")
        if map_workers and transform_fn is None:
            raise InvalidArgument("map_workers needs a transform_fn to run")
        self.transform_fn, self.map_workers, self.mp_context = transform_fn, map_workers, mp_context
        self.device = torch.device(device)
        if self.device.type == "cuda" and not torch.cuda.is_available():
            raise InvalidArgument(f"device {device!r} but torch.cuda.is_available() is False; use device='cpu'")
        self.drop_last = bool(drop_last)
        self.prefetch = _positive_int("prefetch", prefetch)
        self._pool: Optional[cf.ProcessPoolExecutor] = None
        # tickets planned before a fork (ScanIterableDataset): server world size g → tickets,
        # "tail" → the tail run's ticket, "tail_from" → its first sample
        self._tickets: Optional[dict[Any, Any]] = None
        if _resume is not None:
            self.seed, self.buffer_rows = int(_resume["seed"]), _resume.get("buffer_rows")
            self.step_rows = int(_resume["step_rows"])
            self._run: str = str(_resume["run"])
            self.rows = int(_resume["rows"])
            self._start = int(_resume["sample"])
            self._consumed = 0  # batches yielded since _start
            if _check:
                self._check_run()
            return
        self.seed, self.buffer_rows = _shuffle(seed, shuffle)
        if step_rows is not None:
            self.step_rows = _positive_int("step_rows", step_rows)
        else:
            self.step_rows = math.lcm(self.world.world_size * self.batch_size, STEP_BASE)
        self._start, self._consumed = 0, 0
        self._run, self.rows = self._new_run(explicit=step_rows is not None)

    # ------------------------------------------------------------ the run

    def _recipe(self) -> Recipe:
        return Recipe(seed=self.seed, batch_size=self.step_rows, components=[_component(self.scan)],
                      shuffle=ShuffleConfig(buffer_rows=self.buffer_rows))

    def _train_loader(self, world: World) -> Any:
        from ._torch import TrainLoader

        return TrainLoader(self._recipe(), world=world, transform_fn=_Raw, prefetch=self.prefetch)

    def _new_run(self, explicit: bool) -> tuple[str, int]:
        """Plans the run (pinning the scan's commit). With the default step
        size, a table of wide rows gets a smaller one: at most about
        MAX_STEP_BYTES a step, judged from the shuffle window the server
        chose (it holds about 64 MiB), still a multiple of W × batch_size."""
        tl = self._train_loader(World())
        try:
            record = tl.run_record
            window = int((record.get("shuffle") or {}).get("buffer_rows") or 0)
            unit = self.world.world_size * self.batch_size
            if not explicit and self.buffer_rows is None and 0 < window < self.step_rows and window < 8192:
                smaller = max(unit, window // unit * unit)
                if smaller < self.step_rows:
                    self.step_rows = smaller
                    tl.close()
                    tl = self._train_loader(World())
                    record = tl.run_record
            self.buffer_rows = (record.get("shuffle") or {}).get("buffer_rows", self.buffer_rows)
            self._commit = str(record["components"][0]["commit"])
            return tl.run_id, int(record["components"][0]["rows"])
        finally:
            tl.close()

    def _check_run(self) -> None:
        tl = self._train_loader(World())
        try:
            tl.load_state_dict({"run": self._run, "step": 0})
            rows = int(tl.run_record["components"][0]["rows"])
            self._commit = str(tl.run_record["components"][0]["commit"])
        finally:
            tl.close()
        if rows != self.rows:
            raise InvalidArgument(f"the checkpoint's run {self._run} has {rows} rows, the checkpoint says {self.rows}")

    @property
    def run_id(self) -> str:
        return self._run

    @property
    def sample(self) -> int:
        """The next global sample (what ``state_dict`` saves)."""
        return min(self._start + self._consumed * self.world.world_size * self.batch_size, self.rows)

    def _batches_left(self) -> int:
        left = self.rows - self.sample
        per = self.world.world_size * self.batch_size
        if self.drop_last:
            return left // per
        # rank r's rows among the remaining ones: p ≡ r (mod W), p in [sample, rows)
        mine = _count_congruent(self.sample, self.rows, self.world.rank, self.world.world_size)
        return -(-mine // self.batch_size)

    def __len__(self) -> int:
        return self._batches_left()

    def state_dict(self) -> dict[str, Any]:
        """The loader's position: small and picklable (save it with the model,
        e.g. in ``weft.Checkpoints``). ``scan.resume_data_loader(state, ...)``
        continues at ``state["sample"]`` with any batch size and world size."""
        return {"format": STATE_FORMAT, "kind": STATE_KIND, "run": self._run, "sample": self.sample,
                "rows": self.rows, "step_rows": self.step_rows, "seed": self.seed, "buffer_rows": self.buffer_rows,
                "project": self.scan.project, "ref": self.scan.ref, "table": self.scan.table,
                "columns": self.scan.columns, "filter": self.scan.filter,
                "batch_size": self.batch_size, "world_size": self.world.world_size}

    # ------------------------------------------------------------ iteration

    def _steps(self, g: int, q: int, first: int) -> Iterator[tuple[int, pa.RecordBatch]]:
        """(step, batch) of server rank q of g from step ``first``, read by a
        TrainLoader (prefetched in a thread, re-planned when the server goes
        away), or from a planned ticket in a process forked after gRPC was used."""
        tickets = self._tickets
        if tickets is not None and first == 0 and g in tickets:
            from ._client import join_steps, scan_chunks

            yield from join_steps(scan_chunks(self.scan.client, [tickets[g][q]]), 0)
            return
        yield from _steps_from(self._train_loader(World(q, g)), self._run, first)

    def _tail(self, first: int) -> Iterator[tuple[int, pa.RecordBatch]]:
        """(sample, one-row batch) of samples ``first`` … rows-1 when they lie
        past the run's last full step: the same draws of the same stream,
        from a run with 1-row steps at the same commit, seed and window
        (module doc, "The last partial step")."""
        tickets = self._tickets
        if tickets is not None and "tail" in tickets and first >= int(tickets["tail_from"]):
            from ._client import join_steps, scan_chunks

            for k, batch in join_steps(scan_chunks(self.scan.client, [tickets["tail"]]), int(tickets["tail_from"])):
                if k >= first:
                    yield k, batch
            return
        tl = self._tail_loader()
        yield from _steps_from(tl, tl.run_id, first)

    def _tail_loader(self) -> Any:
        from ._torch import TrainLoader

        recipe = Recipe(seed=self.seed, batch_size=1, components=[_component(self.scan, self._commit)],
                        shuffle=ShuffleConfig(buffer_rows=self.buffer_rows))
        return TrainLoader(recipe, transform_fn=_Raw, prefetch=self.prefetch, world=World())

    def _server_world(self) -> int:
        """g: the server's world size this rank reads (module doc)."""
        g = math.gcd(self.step_rows, self.world.world_size)
        tickets = self._tickets
        if tickets is not None:  # planned before a fork: the largest planned g that divides it
            g = max(h for h in tickets if isinstance(h, int) and g % h == 0)
        return g

    def _rows(self) -> Iterator[pa.RecordBatch]:
        """This rank's samples from the current position on, in order, as
        record batches (no _component)."""
        W, r, S = self.world.world_size, self.world.rank, self.step_rows
        g = self._server_world()
        q = r % g
        start, end = self.sample, self.rows
        full = end // S * S  # samples of the run's full steps; the rest come from _tail
        if start < full:
            yield from self._main(g, q, start, full)
        if end > max(start, full):
            pending: list[pa.RecordBatch] = []
            for k, batch in self._tail(max(start, full)):
                if k % W == r:
                    pending.append(batch.drop_columns(["_component"]))
                    if len(pending) >= 256:
                        yield pa.Table.from_batches(pending).combine_chunks().to_batches()[0]
                        pending = []
                if k + 1 >= end:
                    break
            if pending:
                yield pa.Table.from_batches(pending).combine_chunks().to_batches()[0]

    def _main(self, g: int, q: int, start: int, end: int) -> Iterator[pa.RecordBatch]:
        W, r, S = self.world.world_size, self.world.rank, self.step_rows
        for step, batch in self._steps(g, q, start // S):
            batch = batch.drop_columns(["_component"]) if "_component" in batch.schema.names else batch
            n = batch.num_rows
            p = step * S + q + np.arange(n, dtype=np.int64) * g
            keep = (p >= start) & (p < end)
            if g != W:
                keep &= (p % W) == r
            if keep.all():
                out = batch
            elif g == W:  # a contiguous range of the step's rows
                idx = np.flatnonzero(keep)
                out = batch.slice(int(idx[0]), len(idx)) if len(idx) else batch.slice(0, 0)
            else:
                out = batch.take(pa.array(np.flatnonzero(keep)))
            if out.num_rows:
                yield out
            if step * S + S >= end:
                return

    def _cut(self) -> Iterator[pa.RecordBatch]:
        """This rank's samples in batches of batch_size (the last one fewer,
        or none under drop_last)."""
        left = self._batches_left()
        if left <= 0:
            return
        b = self.batch_size
        pending: list[pa.RecordBatch] = []
        have = 0
        for batch in self._rows():
            pending.append(batch)
            have += batch.num_rows
            while have >= b:
                t = pa.Table.from_batches(pending).combine_chunks()
                yield t.slice(0, b).to_batches()[0]
                left -= 1
                if left == 0:
                    return
                rest = t.slice(b)
                pending = rest.to_batches() if rest.num_rows else []
                have = rest.num_rows
        if have and left > 0 and not self.drop_last:
            yield pa.Table.from_batches(pending).combine_chunks().to_batches()[0]

    def __iter__(self) -> Iterator[Any]:
        from ._convert import convert, to_device

        results = self._transformed()
        for out in results:
            out = convert(out)
            if self.device.type != "cpu":
                out = to_device(out, self.device)
            self._consumed += 1
            yield out

    def _transformed(self) -> Iterator[Any]:
        fn = self.transform_fn
        if fn is None:
            yield from self._cut()
            return
        if not self.map_workers:
            for batch in self._cut():
                try:
                    yield fn(batch)
                except Exception as e:
                    raise TransformError(f"transform_fn raised {type(e).__name__}: {e} on batch "
                                         f"{self._consumed}") from e
            return
        from ._torch import _apply

        if self._pool is None:
            ctx = multiprocessing.get_context(self.mp_context) if self.mp_context else None
            self._pool = cf.ProcessPoolExecutor(self.map_workers, mp_context=ctx)
        pending: deque = deque()
        window = self.map_workers * 2
        batches = self._cut()
        done = False
        while pending or not done:
            while not done and len(pending) < window:
                try:
                    pending.append(self._pool.submit(_apply, fn, next(batches)))
                except StopIteration:
                    done = True
            if not pending:
                return
            try:
                ok, value = pending.popleft().result()
            except Exception as e:
                raise TransformError(f"transform_fn in a map worker failed: {type(e).__name__}: {e}") from e
            if not ok:
                raise TransformError(f"transform_fn raised {value[0]} in a map worker; its traceback:\n\n{value[1]}")
            yield value

    def to_arrow_reader(self) -> pa.RecordBatchReader:
        """This rank's remaining batches (``batch_size`` rows each, with
        ``_row``) as a ``pyarrow.RecordBatchReader``, without
        ``transform_fn`` and without tensors: for DuckDB or any Arrow
        consumer. Reading moves the loader's position as iterating does."""
        from ._arrow import scan_loader_reader

        return scan_loader_reader(self)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def __enter__(self) -> "ScanLoader":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _steps_from(tl: Any, run: str, first: int) -> Iterator[tuple[int, pa.RecordBatch]]:
    """(step, batch) of TrainLoader ``tl`` from step ``first`` of ``run``
    to its end; closes ``tl``."""
    try:
        tl.load_state_dict({"run": run, "step": first})
        for raw in tl:
            yield tl.next_step - 1, raw.batch
    finally:
        tl.close()


def _count_congruent(lo: int, hi: int, r: int, w: int) -> int:
    """How many p in [lo, hi) have p ≡ r (mod w)."""
    if hi <= lo:
        return 0
    first = lo + (r - lo) % w
    return 0 if first >= hi else (hi - 1 - first) // w + 1


class _Raw:
    """A step's record batch passed through TrainLoader unconverted (a
    transform_fn result that is neither Arrow nor a dict is passed as is)."""

    __slots__ = ("batch",)

    def __init__(self, batch: pa.RecordBatch):
        self.batch = batch


# ---------------------------------------------------------------- iterable dataset


class ScanIterableDataset(IterableDataset):
    """A scan as a torch ``IterableDataset`` of samples (one dict of tensors
    per row, with ``_row``), in the order of ``shuffle`` (its seed and
    buffer), one pass; split over ranks × DataLoader workers by the loaders'
    rule (reader ``i`` of ``n`` takes samples ``p ≡ i (mod n)``), so every
    row comes exactly once over all of them and readers differ by at most
    one row. The run (so the commit) is pinned when the dataset is made.

    DataLoader workers forked from a process that used gRPC cannot call the
    server (see ``ScanDataset``): the dataset plans, when it is made, the
    run's tickets for 1, 2, 4, …, 64 server ranks, and a worker reads the
    largest that divides its reader count through a relay process (a worker
    of ``n`` readers then reads ``n / g`` times its rows)."""

    def __init__(self, scan: ScanRequest, shuffle: Optional[ShuffleConfig] = None, world: Optional[World] = None,
                 chunk_rows: int = 1024):
        super().__init__()
        self.world = resolve_world(world)
        self.chunk_rows = _positive_int("chunk_rows", chunk_rows)
        seed, buffer_rows = _shuffle(None, shuffle)
        base = ScanLoader(scan, seed=seed, batch_size=self.chunk_rows, world=World(),
                          shuffle=ShuffleConfig(buffer_rows=buffer_rows),
                          step_rows=math.lcm(self.chunk_rows, STEP_BASE))
        self.scan, self.state = scan, base.state_dict()
        self.tickets: dict[Any, Any] = {}
        for g in (1, 2, 4, 8, 16, 32, 64):
            if base.step_rows % g == 0:
                info = scan.client.command_info({"run": base.run_id, "world_size": g}, "to_iterable_dataset")
                self.tickets[g] = [ep.ticket.ticket for ep in info.endpoints]
        full = base.rows // base.step_rows * base.step_rows
        if full < base.rows:
            tail = base._tail_loader()
            try:
                info = scan.client.command_info({"run": tail.run_id, "world_size": 1, "start_step": full},
                                                "to_iterable_dataset")
            finally:
                tail.close()
            self.tickets["tail"], self.tickets["tail_from"] = info.endpoints[0].ticket.ticket, full

    def __len__(self) -> int:
        return int(self.state["rows"])

    def __iter__(self) -> Iterator[dict[str, Any]]:
        from ._client import forked_after_grpc
        from ._convert import to_tensors

        info = get_worker_info()
        workers, worker = (info.num_workers, info.id) if info is not None else (1, 0)
        reader = World(self.world.rank * workers + worker, self.world.world_size * workers)
        loader = ScanLoader(self.scan, batch_size=self.chunk_rows, world=reader,
                            _resume=self.state, _check=not forked_after_grpc())
        loader._tickets = self.tickets
        for batch in loader._cut():
            t = to_tensors(batch)
            for i in range(batch.num_rows):
                yield {k: v[i] for k, v in t.items()}


# ---------------------------------------------------------------- the scan's methods


def to_data_loader(scan: ScanRequest, seed: Optional[int] = None, batch_size: int = 32,
                   transform_fn: Optional[Callable[[pa.RecordBatch], Any]] = None, map_workers: int = 0,
                   device: Union[str, torch.device] = "cpu", *, shuffle: Optional[ShuffleConfig] = None,
                   drop_last: bool = False, step_rows: Optional[int] = None, shards: Any = None,
                   **kw: Any) -> ScanLoader:
    _no_shards(shards, "to_data_loader")
    return ScanLoader(scan, seed=seed, batch_size=batch_size, world=World(), transform_fn=transform_fn,
                      map_workers=map_workers, device=device, shuffle=shuffle, drop_last=drop_last,
                      step_rows=step_rows, **kw)


def to_distributed_data_loader(scan: ScanRequest, world: Optional[World] = None, seed: Optional[int] = None,
                               batch_size: int = 32, transform_fn: Optional[Callable[[pa.RecordBatch], Any]] = None,
                               map_workers: int = 0, device: Union[str, torch.device] = "cpu", *,
                               shuffle: Optional[ShuffleConfig] = None, drop_last: bool = False,
                               step_rows: Optional[int] = None, shards: Any = None, **kw: Any) -> ScanLoader:
    _no_shards(shards, "to_distributed_data_loader")
    return ScanLoader(scan, seed=seed, batch_size=batch_size, world=resolve_world(world),
                      transform_fn=transform_fn, map_workers=map_workers, device=device, shuffle=shuffle,
                      drop_last=drop_last, step_rows=step_rows, **kw)


def resume_data_loader(scan: ScanRequest, checkpoint: dict[str, Any], batch_size: Optional[int] = None,
                       transform_fn: Optional[Callable[[pa.RecordBatch], Any]] = None, map_workers: int = 0,
                       device: Union[str, torch.device] = "cpu", *, world: Optional[World] = None,
                       drop_last: bool = False, **kw: Any) -> ScanLoader:
    if not isinstance(checkpoint, dict) or checkpoint.get("kind") != STATE_KIND:
        raise InvalidArgument(f"resume_data_loader: {str(checkpoint)[:200]} is not a scan loader's state_dict()")
    if checkpoint.get("format") != STATE_FORMAT:
        raise InvalidArgument(f"resume_data_loader: state format {checkpoint.get('format')} is not {STATE_FORMAT}")
    _check_scan(scan, "resume_data_loader")
    want = {"project": scan.project, "ref": scan.ref, "table": scan.table, "columns": scan.columns,
            "filter": scan.filter}
    diffs = [f"{k} {v!r} (checkpoint: {checkpoint.get(k)!r})" for k, v in want.items() if checkpoint.get(k) != v]
    if diffs:
        raise InvalidArgument("resume_data_loader: the checkpoint is of another scan: " + "; ".join(diffs))
    sample, rows = checkpoint.get("sample"), checkpoint.get("rows")
    if not (isinstance(sample, int) and isinstance(rows, int)) or isinstance(sample, bool) or isinstance(rows, bool) \
            or not 0 <= sample <= rows:
        raise InvalidArgument(f"resume_data_loader: sample {sample!r} of rows {rows!r} is not a position")
    if world is None:
        world = World.detect() if checkpoint.get("world_size", 1) > 1 else World()
    return ScanLoader(scan, batch_size=batch_size or int(checkpoint.get("batch_size") or 32), world=world,
                      transform_fn=transform_fn, map_workers=map_workers, device=device, drop_last=drop_last,
                      _resume=checkpoint, **kw)


def to_iterable_dataset(scan: ScanRequest, shuffle: Optional[ShuffleConfig] = None, *,
                        world: Optional[World] = None, chunk_rows: int = 1024, shards: Any = None) -> Any:
    _no_shards(shards, "to_iterable_dataset")
    _check_scan(scan, "to_iterable_dataset")
    return ScanIterableDataset(scan, shuffle, world, chunk_rows)
