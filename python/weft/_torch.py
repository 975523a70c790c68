"""PyTorch datasets: ScanDataset (a table, split over ranks and workers) and
TrainLoader (a rank's batches of a deterministic mix, resumable)."""

from __future__ import annotations

import base64
import concurrent.futures as cf
import json
import logging
import multiprocessing
import os
import queue
import re
import threading
import time
import traceback
from collections import deque
from typing import Any, Callable, Iterator, Optional, Union

import pyarrow as pa
import pyarrow.flight as fl
import torch
from torch.utils.data import IterableDataset, get_worker_info

from ._client import Client, ScanRequest, join_steps, location_uri, scan_batches, scan_steps
from ._convert import convert, pin, to_device, to_tensors
from ._device import DeviceSlots, cuda_ipc_unavailable, release_device_message
from ._errors import FLIGHT_ERRORS, InvalidArgument, TransformError, Unavailable, WeftError, server_message, translate
from ._recipe import Recipe, World, resolve_world
from ._slots import NotWholePages, Rings, SlotDescriptor, release_message
from ._video import VideoDecoder

STATE_FORMAT = 1

DELIVERIES = ("auto", "shm", "flight", "cuda-ipc")


FAKE_DEVICE_SLOTS_ENV = "WEFT_FAKE_DEVICE_SLOTS"

log = logging.getLogger("weft")

# What flightd's flight.ErrUnavailableDelivery says (FAILED_PRECONDITION): a
# "cuda-ipc" exchange met a step it cannot serve in device slots (a stream
# its NVDEC refuses mid-run, frames of different sizes, no larger device
# ring); the loader asks again from that step on the host path.
CUDA_IPC_REFUSED = "cuda-ipc delivery cannot serve this step"


# pyarrow words FAILED_PRECONDITION "gRPC returned precondition failed error" (an ArrowInvalid).
_GRPC_STATUS = re.compile(r"gRPC returned ([a-z ]+?) error, with message: (.*)", re.S)


def cuda_ipc_refusal(err: BaseException) -> Optional[str]:
    """flightd's reason when err is a "cuda-ipc" exchange's refusal of a
    step (FAILED_PRECONDITION, flight.ErrUnavailableDelivery), else None."""
    code, msg = server_message(err)
    m = _GRPC_STATUS.search(msg) if not code else None
    if m:
        code, msg = m.group(1), re.sub(r"\. (gRPC client debug context|Client context|Detail): .*\Z", "", m.group(2),
                                       flags=re.S).strip()
    if code not in ("failed precondition", "precondition failed") or CUDA_IPC_REFUSED not in msg:
        return None
    return msg


def select_delivery(wanted: str, device_type: str, fake_device_slots: bool = False,
                    ipc_unavailable: Optional[str] = None) -> tuple[str, Optional[str]]:
    """The delivery the loader asks flightd for, and why it differs from
    ``wanted`` (None when it does not). "cuda-ipc" (issue 15: video windows
    decoded by flightd's NVDEC into device slots, opened with CUDA IPC)
    needs ``device="cuda"`` (else InvalidArgument) and a process that can
    open CUDA IPC handles: ``ipc_unavailable`` (``_device.cuda_ipc_unavailable()``)
    says why it cannot (neither ``libcudart`` nor ``libcuda`` loads), and the
    loader then asks for "auto" (host slots, else the plain stream), decodes
    on the CPU and copies from pinned memory (same frames), the reason being
    ``loader.delivery_fallback``. When flightd cannot serve device slots
    (no GPU, a codec its NVDEC lacks, another host), the exchange's header
    says why and the loader sets ``delivery_fallback`` from it.
    ``fake_device_slots`` (tests: $WEFT_FAKE_DEVICE_SLOTS=1, with a flightd
    run with the fake driver and --gpu-fake-memory) lets a CPU loader take
    the fake's device slots as CPU tensors (no CUDA IPC)."""
    if wanted != "cuda-ipc":
        return wanted, None
    if fake_device_slots:
        return "cuda-ipc", None
    if device_type != "cuda":
        raise InvalidArgument(f"TrainLoader: delivery 'cuda-ipc' needs device='cuda' (device is {device_type!r})")
    if ipc_unavailable:
        return "auto", (f"cuda-ipc: {ipc_unavailable}; CPU decode and a pinned host-to-device copy "
                        "instead (same frames)")
    return "cuda-ipc", None


class ScanDataset(IterableDataset):
    """A table scan as an ``IterableDataset`` of dicts of tensors.

    The scan is planned when the dataset is made (pinning the ref's commit),
    and its endpoints are split over ranks and DataLoader workers: endpoint
    ``i`` goes to reader ``i mod (world_size × num_workers)``, so
    ``DataLoader(ScanDataset(scan, batch_size=64), batch_size=None,
    num_workers=N)`` on every rank yields each row exactly once in all.
    Each batch holds ``batch_size`` rows (the last one of a reader fewer,
    unless ``drop_last``). Ranks must scan the same commit: when writers may
    commit between ranks' planning, pin it (``project.commit(id)``).
    A table has one endpoint per ``--scan-endpoint-size`` of Parquet (128 MiB
    by default), so a small table may leave some readers without rows.

    ``shards`` (``scan.shards()``, ``weft.compute_shards(scan, n)`` or a
    number of shards) balances them instead: reader ``me`` of
    ``R = world_size × num_workers`` reads the consecutive shards
    ``[me·n/R, (me+1)·n/R)``, so with ``n`` a multiple of ``R`` every reader
    gets the same number of rows within one (a filter's matching rows,
    counted on the server), each exactly once.

    A windowed scan (``table.scan_request(columns, windows=weft.Windows(...))``)
    yields the same rows, each with its windows as a ``TrainLoader`` gives
    them for that row: ``K`` and ``K_is_pad`` per window key (video windows
    as ``uint8 [B, T, H, W, 3]`` RGB, decoded in ``decode_threads`` threads:
    default one per CPU) and ``_row`` (int64, the row ordinal).
    """

    def __init__(self, scan: ScanRequest, batch_size: int = 1024, *, world: Optional[World] = None,
                 drop_last: bool = False, decode_threads: Optional[int] = None, shards: Any = None):
        if not isinstance(scan, ScanRequest):
            raise InvalidArgument(f"ScanDataset: scan is a {type(scan).__name__}; give table.scan_request(columns)")
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise InvalidArgument(f"ScanDataset: batch_size {batch_size!r} must be a positive integer")
        if decode_threads is not None and (isinstance(decode_threads, bool) or not isinstance(decode_threads, int)
                                           or decode_threads < 1):
            raise InvalidArgument(f"ScanDataset: decode_threads {decode_threads!r} must be an integer ≥ 1 (or None)")
        self.scan, self.batch_size, self.drop_last = scan, batch_size, drop_last
        self.decode_threads = decode_threads
        self.world = resolve_world(world)
        from ._client import Shards

        if shards is None:
            self.shards: Optional[Shards] = None
            self.plan = scan.plan()
        else:
            if isinstance(shards, bool) or not isinstance(shards, (int, Shards)):
                raise InvalidArgument(f"ScanDataset: shards is a {type(shards).__name__}; give scan.shards(), "
                                      "weft.compute_shards(scan, n) or a number of shards")
            if isinstance(shards, int):
                shards = scan.shards(shards)
            elif shards.scan.command() != scan.command():
                raise InvalidArgument("ScanDataset: the shards are of another scan (other table, columns or filter)")
            self.shards = shards
            self.plan = shards.plan

    @property
    def commit(self) -> str:
        return self.plan.commit

    @property
    def schema(self) -> pa.Schema:
        return self.plan.schema

    def tickets(self) -> list[bytes]:
        """This reader's endpoints: by rank, then by DataLoader worker.
        With balanced shards, reader ``me`` of ``R`` takes the consecutive
        shards ``[me·n/R, (me+1)·n/R)``: when ``R`` divides ``n`` every
        reader gets the same number of rows within one."""
        info = get_worker_info()
        workers, worker = (info.num_workers, info.id) if info is not None else (1, 0)
        readers = self.world.world_size * workers
        me = self.world.rank * workers + worker
        if self.shards is not None:
            n = len(self.shards)
            if n % readers:
                raise InvalidArgument(f"ScanDataset: {n} shards do not split evenly over {readers} readers "
                                      f"({self.world.world_size} ranks × {workers} DataLoader workers); "
                                      f"give weft.compute_shards(scan, {readers}) or a multiple of it")
            return [s.ticket for s in self.shards[me * n // readers:(me + 1) * n // readers]]
        return [t for i, t in enumerate(self.plan.tickets) if i % readers == me]

    def __iter__(self) -> Iterator[dict[str, Any]]:
        if self.scan.windows is not None:
            yield from self._windowed()
            return
        client = self.scan.client
        pending: Optional[pa.Table] = None  # rows read but not yet yielded (zero-copy slices)
        for batch in scan_batches(client, self.tickets()):
            if batch.num_rows == 0:
                continue
            table = pa.Table.from_batches([batch])
            pending = table if pending is None else pa.concat_tables([pending, table])
            offset = 0
            while pending.num_rows - offset >= self.batch_size:
                yield to_tensors(pending.slice(offset, self.batch_size))
                offset += self.batch_size
            pending = pending.slice(offset)
        if pending is not None and pending.num_rows and not self.drop_last:
            yield to_tensors(pending)


    def _windowed(self) -> Iterator[dict[str, Any]]:
        """A windowed scan's batches: each step is converted whole (its
        video windows refer to its own segments), then its rows are cut
        into batches of batch_size, carried over from step to step."""
        decoder = VideoDecoder(self.decode_threads)
        try:
            pending: Optional[dict[str, Any]] = None
            for step in scan_steps(self.scan.client, self.tickets()):
                if step.num_rows == 0:
                    continue
                tensors = to_tensors(step, decoder)
                pending = tensors if pending is None else _cat_rows(pending, tensors)
                n, offset = _num_rows(pending), 0
                while n - offset >= self.batch_size:
                    yield _slice_rows(pending, offset, offset + self.batch_size)
                    offset += self.batch_size
                pending = _slice_rows(pending, offset, n) if offset < n else None
            if pending is not None and not self.drop_last:
                yield pending
        finally:
            decoder.close()


def _num_rows(batch: dict[str, Any]) -> int:
    return len(next(iter(batch.values())))


def _cat_rows(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """The rows of a, then those of b: tensors joined on dim 0, lists added."""
    return {k: torch.cat([v, b[k]]) if isinstance(v, torch.Tensor) else list(v) + list(b[k]) for k, v in a.items()}


def _slice_rows(batch: dict[str, Any], lo: int, hi: int) -> dict[str, Any]:
    return {k: v[lo:hi] for k, v in batch.items()}


def _apply(fn: Callable[[pa.RecordBatch], Any], batch: pa.RecordBatch) -> Any:
    """Runs in a map worker: the result, or the error with its traceback."""
    try:
        return True, fn(batch)
    except BaseException as e:  # noqa: BLE001 - sent back to the trainer with its traceback
        return False, (f"{type(e).__name__}: {e}", traceback.format_exc())


class _Stop(Exception):
    pass


class TrainLoader:
    """A rank's batches of a training run: one dict of tensors per step,
    with ``_component`` (index into the recipe's components) and ``_row``
    (row ordinal in that component's pinned table).

    The server plans everything; this object holds only the run id and the
    next step. The run is resolved (every ref pinned to a commit) on first
    use — ``iter``, ``len`` or ``state_dict`` — unless ``load_state_dict``
    names one. Iterating again continues at the next step; the loader ends
    after the run's last step (``recipe.steps``, by default one pass).

    - ``world``: ``weft.World(rank=, world_size=)``; None reads
      torch.distributed when initialized, else $RANK/$WORLD_SIZE, else one
      rank. ``world_size`` must divide the batch size.
    - ``transform_fn(batch: pyarrow.RecordBatch)`` runs on each step's batch
      before conversion; it may return a RecordBatch or Table (converted to
      tensors), a dict (numpy arrays in it become tensors) or anything else
      (passed as is). ``map_workers=N`` runs it in a pool of N processes
      (``mp_context``, default "spawn": the function must be picklable, i.e.
      defined at module level); order is kept, and an error is raised here
      as ``weft.TransformError`` with the worker's traceback.
    - ``prefetch``: steps read, transformed and converted ahead by a
      background thread.
    - ``device``: "cpu", or "cuda[:N]" — tensors are pinned in the
      background and copied with ``non_blocking=True``.
    - ``retries``: times a stream that loses its server (Unavailable) is
      re-planned from the next step before the error is raised. When the
      servers advertise several locations (``flightd serve --advertise``),
      the rank's stream is read from its endpoint's first location, and each
      such loss moves it to the next one (and a lost planning server to one
      of those locations): any server over the bucket serves the run.
    - ``decode_threads``: threads decoding a step's video windows (each
      segment once, with PyAV; default: one per CPU). Video windows become
      ``uint8 [B, T, H, W, 3]`` RGB tensors (docs/python.md, "Video windows").
    - ``delivery``: "flight" (default) reads the rank's stream with DoGet;
      "shm" asks flightd, on this host, for host slots (a DoExchange: each
      step lies in a ring of shared memory the loader maps copy-on-write)
      and raises if it cannot have them; "auto" tries "shm" and falls back
      to "flight" when the server answers with plain messages, has no
      DoExchange, or the ring cannot be mapped (a server older than this
      client, whose slots are not whole pages, included: "shm" then
      raises, naming the server's slot size). ``loader.delivery`` says
      which path is in use. On "shm", numeric and fixed-size-list columns
      are **views** on the slot, valid until the next step is taken (the
      loader then releases the slot and the server may rewrite it):
      ``.clone()`` what must outlive the step. They are writable (``x -=
      mean``, ``x.div_(255)``): a write goes to a private copy of the page
      (never to the server or another process) and lasts until the step is
      released. A
      ``transform_fn`` sees the batch on the slot too; one that keeps its
      memory past the step must copy it. Batches are byte-identical on
      both paths, and resuming works the same. "cuda-ipc" (with
      ``device="cuda"``) asks flightd, on this host, to decode the video
      windows with NVDEC into device slots (docs/gpu.md): each video
      column arrives as a ``uint8 [B, T, H, W, 3]`` tensor on the slot's
      device memory, opened with CUDA IPC, **valid until the next step**
      (``.clone()`` to keep); the other columns come as with "shm". A
      ``transform_fn`` does not see the video columns (they are added to
      its result dict); with ``map_workers`` they are copied. Steps may
      differ in frame size (a mix of cameras): each step's tensor has its
      own shape. When flightd cannot (no GPU, a codec its NVDEC lacks,
      another host), or this process cannot open CUDA IPC handles
      (neither ``libcudart`` nor ``libcuda``), the loader decodes on the CPU
      as "auto" does (same frames) and ``loader.delivery_fallback`` says why.
      When flightd meets, mid-run, a step it cannot decode on the GPU (a
      stream its NVDEC refuses), the loader reads the run again from that
      step on the host path, decodes on the CPU, and stays there: the
      trainer gets exactly the steps of "flight", ``loader.delivery``
      changes to "shm" (or "flight"), ``delivery_fallback`` names the step
      and the reason, and a warning goes to the "weft" logger once. The real-GPU half of this has
      never run (no GPU in CI); the protocol runs end to end in CI against
      flightd's fake driver.
    """

    def __init__(self, recipe: Recipe, device: Union[str, torch.device] = "cpu", world: Optional[World] = None,
                 transform_fn: Optional[Callable[[pa.RecordBatch], Any]] = None, map_workers: int = 0,
                 prefetch: int = 4, *, mp_context: Optional[str] = "spawn", retries: int = 3,
                 decode_threads: Optional[int] = None, delivery: str = "flight"):
        if not isinstance(recipe, Recipe):
            raise InvalidArgument(f"TrainLoader: recipe is a {type(recipe).__name__}; give weft.Recipe(...)")
        if isinstance(map_workers, bool) or not isinstance(map_workers, int) or map_workers < 0:
            raise InvalidArgument(f"TrainLoader: map_workers {map_workers!r} must be an integer ≥ 0")
        if isinstance(prefetch, bool) or not isinstance(prefetch, int) or prefetch < 1:
            raise InvalidArgument(f"TrainLoader: prefetch {prefetch!r} must be an integer ≥ 1")
        if decode_threads is not None and (isinstance(decode_threads, bool) or not isinstance(decode_threads, int)
                                           or decode_threads < 1):
            raise InvalidArgument(f"TrainLoader: decode_threads {decode_threads!r} must be an integer ≥ 1 (or None)")
        if delivery not in DELIVERIES:
            raise InvalidArgument(f"TrainLoader: delivery {delivery!r} must be one of {', '.join(DELIVERIES)}")
        if map_workers and transform_fn is None:
            raise InvalidArgument("TrainLoader: map_workers needs a transform_fn to run")
        self.recipe = recipe
        self.client: Client = recipe.client
        self.world = resolve_world(world)
        self.device = torch.device(device)
        if self.device.type == "cuda" and not torch.cuda.is_available():
            raise InvalidArgument(f"TrainLoader: device {device!r} but torch.cuda.is_available() is False; "
                                  "use device='cpu'")
        self.transform_fn, self.map_workers, self.prefetch = transform_fn, map_workers, prefetch
        self.mp_context, self.retries = mp_context, retries
        self._run: Optional[str] = None
        self._record: Optional[dict[str, Any]] = None
        self._next = 0
        self._info: Optional[tuple[int, fl.FlightInfo]] = None
        self._pool: Optional[cf.ProcessPoolExecutor] = None
        self._decoder = VideoDecoder(decode_threads)
        self._active: Optional[_Prefetcher] = None
        self._replans = 0  # streams re-planned after the server went away
        self._shift = 0  # streams moved to an endpoint's next location after losing theirs
        self._planner: Client = self.client  # where runs are planned (another server once this one is lost)
        self._clients: dict[str, Client] = {}  # endpoint location → its client
        # "cuda-ipc" falls back (select_delivery); loader.delivery_fallback says why
        fake = os.environ.get(FAKE_DEVICE_SLOTS_ENV) == "1"
        ipc = cuda_ipc_unavailable() if delivery == "cuda-ipc" and self.device.type == "cuda" and not fake else None
        self._delivery_wanted, self.delivery_fallback = select_delivery(delivery, self.device.type, fake, ipc)
        self._delivery: Optional[str] = None  # the path the latest stream took
        self._no_shm: Optional[str] = None  # why "auto" gave host slots up
        self._device_slots: Optional[DeviceSlots] = None  # the latest "cuda-ipc" exchange's device slots

    @property
    def delivery(self) -> str:
        """The path in use: "cuda-ipc", "shm" or "flight" once a stream was
        opened (before that, the one asked for, possibly "auto")."""
        return self._delivery or self._delivery_wanted

    def _want_shm(self) -> bool:
        return self._delivery_wanted != "flight" and self._no_shm is None

    def _cuda_ipc_refused(self, step: int, why: str) -> None:
        """flightd refused step ``step`` of a "cuda-ipc" exchange (a stream
        its NVDEC cannot decode, met mid-run): from that step on, for the
        rest of this loader's life, the run is read on the host path
        ("auto": host slots, else the plain stream), its video decoded on
        the CPU and copied to the device from pinned memory, as when the
        exchange falls back at its start. The steps are the run's, fixed
        before its first step: the trainer gets exactly those of
        delivery="flight", none lost or repeated. Said once: a warning on
        the "weft" logger and ``delivery_fallback``."""
        self._delivery_wanted = "auto"
        self.delivery_fallback = (f"cuda-ipc: flightd cannot serve step {step} in device slots ({why}); "
                                  f"steps {step} on: CPU decode and a pinned host-to-device copy instead (same frames)")
        log.warning("weft.TrainLoader: run %s: %s", self._run, self.delivery_fallback)

    def _give_up_shm(self, step: int, why: str) -> None:
        """The server cannot serve host slots here (why): from step on, for
        the rest of this loader's life, the run is read by DoGet (the same
        steps; "cuda-ipc": its video decoded on the CPU, as when the
        exchange falls back at its start). Said once, on the "weft" logger
        (and ``delivery_fallback`` for "cuda-ipc")."""
        self._no_shm = why
        if self._delivery_wanted == "cuda-ipc":
            self.delivery_fallback = (f"cuda-ipc: no host slots from step {step} on ({why}); the plain stream, "
                                      "CPU decode and a pinned host-to-device copy instead (same frames)")
        log.warning("weft.TrainLoader: run %s: host slots unavailable from step %d on (%s); reading the plain "
                    "stream (delivery 'flight')", self._run, step, why)

    # ------------------------------------------------------------ the run

    @property
    def run_id(self) -> str:
        """The run's id (resolves the recipe if nothing did yet)."""
        self._resolve()
        assert self._run is not None
        return self._run

    @property
    def run_record(self) -> dict[str, Any]:
        """The run record: the recipe with every component pinned to a commit."""
        self._resolve()
        assert self._record is not None
        return self._record

    @property
    def steps(self) -> int:
        """The run's length in steps."""
        return int(self.run_record["steps"])

    @property
    def next_step(self) -> int:
        return self._next

    def __len__(self) -> int:
        return max(0, self.steps - self._next)

    def _plan(self, start: int) -> fl.FlightInfo:
        """The FlightInfo of the run from step ``start`` for this world size."""
        if self._info is not None and self._info[0] == start:
            return self._info[1]
        cmd: dict[str, Any]
        if self._run is None:
            cmd = {"recipe": self.recipe.to_json(), "world_size": self.world.world_size}
        else:
            cmd = {"run": self._run, "world_size": self.world.world_size}
        if start:
            cmd["start_step"] = start
        info = self._command_info(cmd)
        record = json.loads(info.app_metadata)
        if self._run is not None and record.get("run") != self._run:
            raise WeftError(f"the server answered run {record.get('run')} for run {self._run}")
        if self._record is None:
            diffs = self.recipe.differences(record)
            if diffs:
                raise InvalidArgument(f"the state is for run {record.get('run')}, made from a different recipe: "
                                      + "; ".join(diffs) + ". Build the TrainLoader from the recipe the run was started "
                                      "with (refs may have moved since: the run keeps its commits)")
        self._run, self._record = record["run"], record
        self._info = (start, info)
        return info

    def _resolve(self) -> None:
        if self._record is None:
            self._plan(0)

    def _command_info(self, cmd: dict[str, Any]) -> fl.FlightInfo:
        """GetFlightInfo of cmd on the planning server, or, when it is
        unavailable, on the first location of the last plan that answers
        (every server over the bucket plans the same run)."""
        try:
            return self._planner.command_info(cmd, "TrainLoader")
        except Unavailable:
            others = [] if self._info is None else self._locations(self._info[1])
            for loc in others:
                c = self._location_client(loc)
                if c is self._planner:
                    continue
                try:
                    info = c.command_info(cmd, "TrainLoader")
                except Unavailable:
                    continue
                self._planner = c
                return info
            raise

    @staticmethod
    def _locations(info: fl.FlightInfo) -> list[str]:
        """Every endpoint location of info, once each, in order."""
        out: list[str] = []
        for ep in info.endpoints:
            for loc in ep.locations:
                uri = location_uri(loc)
                if uri not in out:
                    out.append(uri)
        return out

    def _location_client(self, uri: str) -> Client:
        c = self._clients.get(uri)
        if c is None:
            c = self._clients[uri] = self.client.at(uri)
        return c

    def _stream_client(self, ep: fl.FlightEndpoint) -> Client:
        """The client to read endpoint ep from: this loader's client when
        ep has no location, else its location at the current shift (its
        first, until a stream loses its server)."""
        locs = [location_uri(loc) for loc in ep.locations]
        if not locs:
            return self.client
        return self._location_client(locs[self._shift % len(locs)])

    # ------------------------------------------------------------ state

    def state_dict(self) -> dict[str, Any]:
        """``{"format", "run", "step", "world_size"}``: the next step this
        loader would yield. Small and picklable: save it with the model."""
        return {"format": STATE_FORMAT, "run": self.run_id, "step": self._next, "world_size": self.world.world_size}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Continues the run of ``state`` at its step, on this loader's world
        size. The recipe must be the run's (seed, batch size, tables, weights);
        branches may have moved since: the run keeps its pinned commits."""
        if not isinstance(state, dict) or "run" not in state or "step" not in state:
            raise InvalidArgument(f"load_state_dict: {state!r} is not a TrainLoader.state_dict()")
        if state.get("format", STATE_FORMAT) != STATE_FORMAT:
            raise InvalidArgument(f"load_state_dict: state format {state.get('format')} is not {STATE_FORMAT}; "
                                  "it was saved by another weft version")
        step = state["step"]
        if isinstance(step, bool) or not isinstance(step, int) or step < 0:
            raise InvalidArgument(f"load_state_dict: step {step!r} must be an integer ≥ 0")
        self._stop_active()
        before = (self._run, self._record, self._info, self._next)
        self._run, self._record, self._info = str(state["run"]), None, None
        try:
            self._plan(0)  # checks the run exists and matches the recipe
            if step > self.steps:
                raise InvalidArgument(f"load_state_dict: step {step} is past the run's last step ({self.steps})")
        except BaseException:
            self._run, self._record, self._info, self._next = before  # the loader stays as it was
            raise
        self._next = step

    # ------------------------------------------------------------ iteration

    def __iter__(self) -> Iterator[Any]:
        self._stop_active()
        self._resolve()
        if self._next >= self.steps:
            return
        pool = self._map_pool()
        fetch = _Prefetcher(self, self._next, pool)
        self._active = fetch
        held: Optional[_Slot] = None  # the slot of the step the trainer has (its device tensors are valid until the next)
        try:
            while True:
                if held is not None:  # the trainer asks for the next step: the last one's slots go back
                    held.release()
                    held = None
                item = fetch.get()
                if item is None:
                    return
                step, batch, held = item
                self._next = step + 1
                if self.device.type != "cpu":
                    batch = to_device(batch, self.device)
                yield batch
        finally:
            if held is not None:
                held.release()
            fetch.stop()
            if self._active is fetch:
                self._active = None

    def to_arrow_reader(self, step_column: Optional[str] = None) -> pa.RecordBatchReader:
        """The rank's steps from the next step to the run's end as a
        ``pyarrow.RecordBatchReader`` (one record batch per step, as the
        server sent it, with ``_component`` and ``_row``; no transform, no
        tensors): for DuckDB (``duckdb.sql("select … from reader")``) or any
        Arrow consumer. It streams, re-plans from the next step when the
        server goes away (as iteration does), and moves the loader's
        position: ``state_dict()`` after reading n steps is step + n. With
        ``step_column``, each batch also has an int64 column of that name
        holding its step. Video windows are not decoded (their columns are
        as sent)."""
        from ._arrow import train_loader_reader

        return train_loader_reader(self, step_column)

    def _map_pool(self) -> Optional[cf.ProcessPoolExecutor]:
        if not self.map_workers:
            return None
        if self._pool is None:
            ctx = multiprocessing.get_context(self.mp_context) if self.mp_context else None
            self._pool = cf.ProcessPoolExecutor(self.map_workers, mp_context=ctx)
        return self._pool

    def _stop_active(self) -> None:
        if self._active is not None:
            self._active.stop()
            self._active = None

    def close(self) -> None:
        """Stops the background reader and the map workers."""
        self._stop_active()
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
        self._decoder.close()

    def __enter__(self) -> "TrainLoader":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass


def read_steps(reader: fl.FlightStreamReader, first: int) -> Iterator[tuple[int, pa.RecordBatch]]:
    """(step, batch) of a rank stream from step ``first`` on, in order.

    A step is one message with app_metadata ``{"run","step"}``, or several
    with ``{"run","step","part","parts"}`` (parts 0..parts-1 in order): those
    are joined into one batch (docs/flight.md, "Steps in several messages")."""
    return join_steps(_reader_chunks(reader), first)


def _reader_chunks(reader: fl.FlightStreamReader) -> Iterator[tuple[pa.RecordBatch, Optional[bytes]]]:
    while True:
        try:
            chunk = reader.read_chunk()
        except StopIteration:
            return
        yield chunk.data, (chunk.app_metadata.to_pybytes() if chunk.app_metadata else None)


class _NoShm(Exception):
    """The server cannot serve this stream by host slots (the reason)."""


class _ShmRefused(Unavailable):
    """delivery="shm" and the server cannot serve host slots (not retried)."""


def _releaser(slot: "_Slot") -> Callable[[Any], None]:
    """A future's done-callback that releases slot."""
    def done(_: Any) -> None:
        slot.release()
    return done


class _Exchange:
    """The client's side of a rank's DoExchange: slot releases, sent from
    whichever thread lets a step go (the trainer's, a map pool's), and its
    end.

    The order at the end (docs/gpu.md, "The end of an exchange"): flightd
    frees the device slots when the call ends, so the loader ends its side
    (done_writing, after which flightd ends the call) only once (1) the
    server said every step is sent (its end message, ``{"run","end":
    true}``, after the run's last step or before a step it refuses), (2)
    every step handed on with device slots is released (the trainer took
    the next step, or the iteration ended; up to ``prefetch`` steps may
    still be queued when the end message comes), and (3) the device slots'
    IPC handles are closed and their events destroyed (``dev.close()``).
    An exchange without device slots ends its side at the end message. A
    loader that stops early closes the handles first (``abort``), then
    cancels the call; but when it made release events (their handles went
    to flightd, whose decode may be waiting on one), it ends its side
    instead and reads the call to its status (flightd stops, frees the
    slots and closes what it opened, then ends the call), and destroys the
    events only then (``close``)."""

    def __init__(self, writer: Any, dev: DeviceSlots, rings: Optional[Rings] = None):
        self.writer, self.dev = writer, dev
        self.rings = rings  # the host slots' rings: a step's written pages are dropped before its release goes up
        self.lock = threading.Lock()
        self.closed = False  # no more messages up: done_writing sent, or the stream is gone
        self.server_done = False  # the end message came (or the call is over)
        self.holding = 0  # steps handed on with device slots, not released yet
        self.ended = False  # dev closed and our side ended
        self.draining = False  # stopped early: our side ended, the call is read to its status (abort)

    def track(self, slot: "_Slot") -> None:
        """slot is handed on: its device slots count until its release."""
        if slot.device:
            with self.lock:
                self.holding += 1

    def release(self, slot: "_Slot") -> None:
        with self.lock:
            if slot.released:
                return
            slot.released = True
            if slot.device:
                self.holding -= 1
            if slot.desc is not None and self.rings is not None:
                # before the release goes up: the server may rewrite the
                # slot from then on, and must find its pages showing the file
                self.rings.release(slot.desc)
            if not self.closed:
                try:
                    if slot.desc is not None:
                        self.writer.write_metadata(release_message(slot.desc))
                    for key in dict.fromkeys((d["slot"], d["generation"]) for d in slot.device):
                        # once per slot: a step's video columns share it. The slot's release event is
                        # recorded on this thread's current stream (after the trainer's kernels on the
                        # step), its handle sent with the slot's first release: flightd waits on it
                        # before it rewrites the slot (docs/gpu.md, "Releases after the trainer's work").
                        event = self.dev.release_event(key[0])
                        self.writer.write_metadata(release_device_message({"slot": key[0], "generation": key[1]}, event))
                except FLIGHT_ERRORS:
                    self.closed = True  # the stream is gone (ended, cancelled): nothing holds the slot any more
            self._maybe_end()

    def end(self) -> None:
        """The server sent its last step ({"run","end": true}): our side
        ends once no step with device slots is held (at once when none is),
        so the server ends the call; later releases are moot (the server
        releases every slot as the call ends)."""
        with self.lock:
            self.server_done = True
            self._maybe_end()

    def _maybe_end(self) -> None:
        # under self.lock
        if self.ended or not self.server_done or self.holding:
            return
        self.ended = True
        self.dev.close()  # the IPC handles are closed (and the device synchronised) before the call ends
        if self.closed:
            return
        self.closed = True
        try:
            self.writer.done_writing()
        except FLIGHT_ERRORS:
            pass

    def abort(self) -> bool:
        """The loader stops before the exchange's end: the device slots'
        handles are closed now, before the call ends (flightd frees the
        slots then); steps still held are dropped with the loader. Returns
        whether the call is to be read to its status rather than cancelled:
        when the loader made release events (flightd may be waiting on one,
        so they are destroyed only once flightd's side is done), our side
        is ended here (flightd then stops, frees the slots and ends the
        call: the reader sees the call's end); else the caller cancels it."""
        with self.lock:
            self.ended = True
            self.dev.close_handles()
            if self.draining:
                return True
            if self.closed or not self.dev.has_events:
                self.closed = True
                return False
            self.closed = True
            try:
                self.writer.done_writing()
            except FLIGHT_ERRORS:
                return False  # the stream is gone: the call is over, or cancelling it is all there is
            self.draining = True
            return True

    def close(self, call_over: bool) -> None:
        """The reading of the exchange is over: ``call_over`` when the
        call's status was read (its end, or its error: flightd freed the
        slots then and is done with the loader's events; the handles close
        at the last release), else as ``abort`` (the call was cancelled, or
        is about to be). The loader's release events are destroyed here
        once the handles are closed."""
        if call_over:
            self.end()
        else:
            self.abort()
        with self.lock:
            self.closed = True
            try:
                self.writer.close()
            except FLIGHT_ERRORS:
                pass
            if self.dev.closed:
                self.dev.destroy_events()


class _Slot:
    """A step's slots (its host slot, if it came in one, and its device
    slots), released once (at the latest when the next step is taken)."""

    __slots__ = ("exchange", "desc", "released", "device", "tensors")

    def __init__(self, exchange: _Exchange, desc: Optional[SlotDescriptor], device: Optional[list[dict[str, Any]]] = None,
                 tensors: Optional[dict[str, torch.Tensor]] = None):
        self.exchange, self.desc, self.released = exchange, desc, False
        self.device = device or []  # the step's device slot descriptors (delivery "cuda-ipc")
        self.tensors = tensors or {}  # their tensors by column, on the slots' memory
        exchange.track(self)  # the exchange ends only once every step with device slots is released

    def release(self) -> None:
        self.exchange.release(self)


# How long a loader stopped early waits for flightd to end the exchange
# once it ended its side (_drain); flightd ends it at once (an older one
# serves on until the client's slots are all held).
DRAIN_WAIT = 30.0


def _drain(reader: fl.FlightStreamReader, wait: float = DRAIN_WAIT) -> bool:
    """Reads an exchange whose client side ended to the call's status,
    dropping what still comes (flightd stops at the client's end and ends
    the call once it freed the slots). False when it did not end within
    ``wait`` seconds (the call is cancelled then)."""
    fired = threading.Event()

    def give_up() -> None:
        fired.set()
        try:
            reader.cancel()
        except Exception as e:  # noqa: BLE001 - a timer thread has nobody to raise to
            log.warning("cancelling the exchange after %.0f s: %r", wait, e)

    timer = threading.Timer(wait, give_up)
    timer.daemon = True
    timer.start()
    try:
        while True:
            try:
                reader.read_chunk()
            except StopIteration:
                if not fired.is_set():
                    return True
                break
            except FLIGHT_ERRORS:
                if fired.is_set():
                    break
                return True  # the call's error status: its end all the same
    finally:
        timer.cancel()
    log.warning("weft: the exchange did not end within %.0fs of the loader's end (an older flightd?); its call is "
                "cancelled and the loader's release events destroyed, though flightd may still wait on one", wait)
    return False


def exchange_command(ticket: bytes, delivery: str = "shm") -> bytes:
    """The CMD of a rank's DoExchange (docs/flight.md, "Host slots")."""
    return json.dumps({"rank_exchange": {"ticket": base64.b64encode(ticket).decode(),
                                         "delivery": delivery}}).encode()


class _Prefetcher:
    """A thread that reads a rank's stream, transforms and converts each
    step, and queues at most ``prefetch`` finished steps."""

    def __init__(self, loader: TrainLoader, start: int, pool: Optional[cf.ProcessPoolExecutor]):
        self.loader, self.pool = loader, pool
        self.next = start  # the next step to read from the server
        self.out: queue.Queue = queue.Queue(maxsize=loader.prefetch)
        self.stopping = threading.Event()
        self.reader: Optional[fl.FlightStreamReader] = None
        self.up: Optional[_Exchange] = None  # the exchange being read, if any
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self._run, name="weft-prefetch", daemon=True)
        self.thread.start()

    def get(self) -> Optional[tuple[int, Any, Optional["_Slot"]]]:
        kind, value = self.out.get()
        if kind == "error":
            raise value
        if kind == "end":
            return None
        return value

    def stop(self) -> None:
        """Stops the reading. An exchange's device slots are closed first
        (their IPC handles), then its call is cancelled (which frees them
        on the server), or, when the loader made release events, ended
        and read to its status by the reading thread (``_Exchange.abort``);
        the steps still queued are dropped."""
        self.stopping.set()
        with self.lock:
            draining = self.up is not None and self.up.abort()
            if self.reader is not None and not draining:
                try:
                    self.reader.cancel()
                except Exception:  # noqa: BLE001 - cancelling a finished stream
                    pass
        while self.thread.is_alive():
            try:
                self.out.get_nowait()
            except queue.Empty:
                pass
            self.thread.join(0.01)

    def _put(self, item: tuple[str, Any]) -> None:
        while not self.stopping.is_set():
            try:
                self.out.put(item, timeout=0.05)
                return
            except queue.Full:
                pass
        raise _Stop

    def _run(self) -> None:
        try:
            self._stream()
            self._put(("end", None))
        except _Stop:
            pass
        except BaseException as e:  # noqa: BLE001 - handed to the trainer
            try:
                self._put(("error", e))
            except _Stop:
                pass

    def _chunks(self) -> Iterator[tuple[int, pa.RecordBatch, Optional[_Slot]]]:
        """(step, batch, slot or None) from the server, re-planning from the
        next step when the server goes away (up to ``retries`` times in a row)."""
        loader = self.loader
        failures = 0
        while self.next < loader.steps:
            source: Optional[Client] = None
            located = False  # the stream's endpoint names locations to fail over to
            try:
                info = loader._plan(self.next)
                endpoint = info.endpoints[loader.world.rank]
                ticket = endpoint.ticket
                source = loader._stream_client(endpoint)
                located = len(endpoint.locations) > 1
                with source.session() as flight:
                    if loader._want_shm():
                        try:
                            for item in self._exchange(flight, ticket):
                                failures = 0
                                self.next += 1
                                yield item
                        except _NoShm as e:
                            if loader._delivery_wanted == "shm":
                                raise _ShmRefused(f"run {loader._run} step {self.next}: delivery='shm' but {e}; "
                                                  "use delivery='auto' or 'flight'") from None
                            loader._give_up_shm(self.next, str(e))
                            continue  # the same step, by DoGet
                        except FLIGHT_ERRORS as e:
                            why = cuda_ipc_refusal(e) if loader._delivery_wanted == "cuda-ipc" else None
                            if why is None or self.stopping.is_set():
                                raise
                            loader._cuda_ipc_refused(self.next, why)
                            continue  # the same step, on the host path
                    else:
                        with self.lock:
                            if self.stopping.is_set():
                                raise _Stop
                            self.reader = flight.do_get(ticket)
                        loader._delivery = "flight"
                        for step, batch in read_steps(self.reader, self.next):
                            failures = 0
                            self.next += 1
                            yield step, batch, None
                if self.next < loader.steps:
                    raise WeftError(f"the stream of run {loader._run} ended at step {self.next}, "
                                    f"before the run's end ({loader.steps})")
            except (Unavailable, *FLIGHT_ERRORS) as e:
                if self.stopping.is_set():
                    raise _Stop from e
                if isinstance(e, _ShmRefused):
                    raise
                if not isinstance(e, Unavailable):
                    err = translate(e, (source or loader.client).uri, f"run {loader._run} step {self.next}")
                    if not isinstance(err, Unavailable) or failures >= loader.retries:
                        raise err from e
                elif failures >= loader.retries:
                    raise
                loader._replans += 1
                failures += 1
                if source is not None:
                    source._reconnect()  # no waiting out gRPC's reconnect backoff on a dead server
                    if located:
                        loader._shift += 1  # the next try reads the endpoint's next location
                time.sleep(min(0.2 * 2 ** failures, 5))
            finally:
                with self.lock:
                    self.reader = None

    def _exchange(self, flight: fl.FlightClient, ticket: fl.Ticket) -> Iterator[tuple[int, pa.RecordBatch, Optional[_Slot]]]:
        """The rank's steps over a DoExchange asking for host slots. A step
        comes as a slot descriptor (read on the mapped ring) or inline as
        plain messages; a server that sends only plain messages serves the
        plain stream (delivery "flight"). Raises _NoShm, before any step,
        when the server has no DoExchange, or when a ring cannot be mapped."""
        loader = self.loader
        ask = "cuda-ipc" if loader._delivery_wanted == "cuda-ipc" else "shm"
        descriptor = fl.FlightDescriptor.for_command(exchange_command(ticket.ticket, ask))
        with self.lock:
            if self.stopping.is_set():
                raise _Stop
            try:
                writer, reader = flight.do_exchange(descriptor)
            except pa.ArrowNotImplementedError as e:
                raise _NoShm(f"the server has no DoExchange ({type(e).__name__}); an older flightd?") from None
            self.reader = reader
        rings = Rings()
        dev = DeviceSlots(loader.device)
        loader._device_slots = dev
        up = _Exchange(writer, dev, rings)
        with self.lock:
            self.up = up
        over = {"call": False}  # the call's status was read (its end, or its error)
        slots: dict[int, SlotDescriptor] = {}  # step → its slot, until join_steps hands the step on
        device: dict[int, list[dict[str, Any]]] = {}  # step → its device slots ("cuda-ipc")
        seen = {"any": False, "shm": False}
        mode = {"slots": "shm"}  # "cuda-ipc" when the header names device columns

        def messages() -> Iterator[tuple[pa.RecordBatch, Optional[bytes]]]:
            while True:
                try:
                    chunk = reader.read_chunk()
                except StopIteration:
                    over["call"] = True
                    return
                except pa.ArrowNotImplementedError as e:
                    over["call"] = True
                    if seen["any"]:
                        raise
                    raise _NoShm(f"the server has no DoExchange ({type(e).__name__}); an older flightd?") from None
                except FLIGHT_ERRORS:
                    over["call"] = True
                    raise
                first = not seen["any"]
                seen["any"] = True
                raw = chunk.app_metadata.to_pybytes() if chunk.app_metadata is not None else None
                meta = json.loads(raw) if raw else {}
                if chunk.data is not None:
                    if first or not seen["shm"]:
                        loader._delivery = "shm" if seen["shm"] else "flight"
                        if not seen["shm"] and loader._delivery_wanted == "shm":
                            raise _NoShm("the server answered with plain messages (not on its host, "
                                         "or it cannot make a ring)")
                    yield chunk.data, raw
                    continue
                if meta.get("end") is True:  # {"run","end": true}: every step is sent
                    # Our side ends once the steps handed on are released and
                    # the device slots closed (at once if none is held); the
                    # call's status (its end, or a refusal's error) comes then.
                    up.end()
                    continue
                if meta.get("delivery") in ("shm", "cuda-ipc") and "ring" in meta:
                    # the stream's header: {"run","delivery","ring","slots","slot_bytes"[,"device_columns"][,"fallback"]}
                    try:
                        rings.expect(str(meta["ring"]), meta.get("slot_bytes"))
                    except NotWholePages as e:
                        raise _NoShm(str(e)) from None
                    seen["shm"] = True
                    mode["slots"] = "cuda-ipc" if meta.get("device_columns") else "shm"
                    loader._delivery = mode["slots"]
                    if meta.get("fallback"):
                        loader.delivery_fallback = str(meta["fallback"])
                    continue
                if isinstance(meta.get("device"), list) and "step" in meta:  # {"run","step","device":[…]}
                    device[meta["step"]] = meta["device"]
                    continue
                slot = meta.get("slot")
                if not isinstance(slot, dict) or "step" not in meta:
                    continue  # a message with nothing to read
                desc = SlotDescriptor.from_json(slot)
                try:
                    ring = rings.ring(desc)
                except (OSError, ValueError) as e:
                    raise _NoShm(f"the ring {desc.ring} cannot be mapped ({e})") from None
                try:
                    batch = ring.read_batch(desc, reader.schema)
                except (pa.ArrowException, OSError, ValueError) as e:
                    # Not the client's (nothing to release): the exchange
                    # ends with this error (its call is cancelled below, and
                    # flightd frees the ring).
                    raise WeftError(f"run {loader._run} step {meta['step']}: the step in host slot {desc.slot} "
                                    f"(generation {desc.generation}, bytes {desc.offset}..{desc.offset + desc.length} "
                                    f"of {desc.ring}) is not a record batch of the stream's schema: "
                                    f"{type(e).__name__}: {e}") from e
                seen["shm"] = True
                loader._delivery = mode["slots"]
                slots[meta["step"]] = desc
                yield batch, raw

        try:
            for step, batch in join_steps(messages(), self.next):
                desc = slots.pop(step, None)
                descs = device.pop(step, None)
                if descs:
                    tensors = {d["column"]: dev.tensor(d) for d in descs}
                    yield step, batch, _Slot(up, desc, descs, tensors)
                else:
                    yield step, batch, (_Slot(up, desc) if desc is not None else None)
        finally:
            if not over["call"]:
                # the device slots' handles are closed before the call ends
                if up.abort():  # our side ended: flightd stops; its status says its side is done
                    over["call"] = _drain(reader)
                if not over["call"]:
                    try:
                        reader.cancel()
                    except Exception:  # noqa: BLE001 - cancelling a finished stream
                        pass
            up.close(over["call"])  # the loader's release events are destroyed (after the call's end)
            rings.close()
            with self.lock:
                if self.up is up:
                    self.up = None

    def _finish(self, step: int, result: Any, slot: Optional[_Slot], views: bool,
                tensors: Optional[dict[str, torch.Tensor]] = None) -> tuple[int, Any, Optional[_Slot]]:
        batch = convert(result, self.loader._decoder, views and (slot is None or slot.desc is not None))
        if self.loader.device.type == "cuda":
            batch = pin(batch)
        tensors = tensors if tensors is not None else (slot.tensors if slot is not None else None)
        if tensors and isinstance(batch, dict):
            # "cuda-ipc": the video windows, on the device slots' memory (valid until the next step)
            batch = {**batch, **tensors}
        return step, batch, slot

    def _stream(self) -> None:
        fn = self.loader.transform_fn
        if self.pool is None:
            for step, batch, slot in self._chunks():
                if fn is not None:
                    try:
                        batch = fn(batch)
                    except Exception as e:
                        raise TransformError(f"transform_fn raised {type(e).__name__}: {e} on step {step}\n\n"
                                             f"{traceback.format_exc()}") from e
                self._put(("batch", self._finish(step, batch, slot, slot is not None)))
            return
        assert fn is not None  # TrainLoader insists on a transform_fn for map_workers
        pending: deque = deque()
        window = max(self.loader.map_workers * 2, self.loader.prefetch)
        chunks = self._chunks()
        done = False
        while pending or not done:
            while not done and len(pending) < window:
                try:
                    step, batch, slot = next(chunks)
                except StopIteration:
                    done = True
                    break
                future = self.pool.submit(_apply, fn, batch)
                # "cuda-ipc" with map workers: the device tensors are copied, as the slot goes back early
                copies = {k: v.clone() for k, v in slot.tensors.items()} if slot is not None and slot.tensors else None
                if slot is not None:  # the worker has its own copy once it answered: the slot goes back
                    future.add_done_callback(_releaser(slot))
                pending.append((step, future, copies))
            if not pending:
                break
            step, future, copies = pending.popleft()
            try:
                ok, value = future.result()
            except Exception as e:  # the pool broke (a worker died) or the result did not pickle
                raise TransformError(f"transform_fn in a map worker failed on step {step}: {type(e).__name__}: {e}") from e
            if not ok:
                raise TransformError(f"transform_fn raised {value[0]} on step {step} in a map worker; "
                                     f"its traceback:\n\n{value[1]}")
            self._put(("batch", self._finish(step, value, None, False, copies)))


class _ArrowSteps(_Prefetcher):
    """The prefetching reader of ``TrainLoader.to_arrow_reader``: hands on
    each step as the record batch the server sent (no transform, no
    tensors). A step read from a host slot is copied out of the slot,
    which then goes back at once (an Arrow consumer may keep batches)."""

    def __init__(self, loader: TrainLoader, start: int):
        super().__init__(loader, start, None)

    def _stream(self) -> None:
        for step, batch, slot in self._chunks():
            if slot is not None:
                batch = pa.ipc.read_record_batch(batch.serialize(), batch.schema)
                slot.release()
            self._put(("batch", (step, batch, None)))
