"""Arrow readers: a scan, or a rank's steps of a run, as a
``pyarrow.RecordBatchReader`` that streams from the server (no pandas, no
tensors), for any Arrow consumer: ``duckdb.sql("select … from reader")``,
``polars.from_arrow``, ``pyarrow.dataset.write_dataset``, …

- ``scan.to_arrow_reader()``: the scan's endpoints, one after another
  (rows in ordinal order), planned when the reader is made (the ref's
  commit pinned).
- ``loader.to_arrow_reader()`` on a ``TrainLoader``: the rank's steps from
  the loader's next step to the run's end, each step one record batch
  (``_component`` and ``_row`` included), re-planned from the next step
  when the server goes away, as iteration is; the loader's position moves
  with the reader, so ``state_dict()`` stays right.
- ``loader.to_arrow_reader()`` on a scan loader (``scan.to_data_loader``):
  the loader's batches as record batches (its ``transform_fn`` is not
  applied).

An endpoint that names locations (a server that advertises several) is read
from them in order, then from the client's own server: any server answers
any ticket. Batches are read once and not kept: a reader is one pass.
"""

from __future__ import annotations

import dataclasses
import json
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Optional

import pyarrow as pa
import pyarrow.flight as fl

from ._client import Client, join_steps, location_uri, scan_chunks
from ._errors import InvalidArgument, Unavailable, WeftError

if TYPE_CHECKING:
    from ._client import ScanRequest

@dataclasses.dataclass(frozen=True)
class Endpoint:
    """A ticket and where it may be read (empty: the client's own server)."""

    ticket: bytes
    locations: tuple[str, ...] = ()

    @classmethod
    def of(cls, ep: fl.FlightEndpoint) -> "Endpoint":
        return cls(ep.ticket.ticket, tuple(location_uri(loc) for loc in ep.locations))


def endpoint_clients(client: Client, ep: Endpoint) -> list[Client]:
    """The clients to try for an endpoint, in order: its locations (with
    the client's token and TLS settings), then the client itself."""
    out = [c for c in (client.at(loc) for loc in ep.locations if loc) if c is not client]
    out.append(client)
    return out


def endpoint_chunks(client: Client, ep: Endpoint) -> Iterator[tuple[pa.RecordBatch, Optional[bytes]]]:
    """(batch, app_metadata) of one endpoint's stream. A location that
    cannot be reached before its first message is skipped for the next one;
    once data came, an error is raised (the caller re-plans if it can)."""
    clients = endpoint_clients(client, ep)
    for i, c in enumerate(clients):
        started = False
        try:
            for chunk in scan_chunks(c, [ep.ticket]):
                started = True
                yield chunk
            return
        except Unavailable:
            if started or i == len(clients) - 1:
                raise
        finally:
            if c is not client:
                c.close()


def _conform(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    if batch.schema.equals(schema, check_metadata=False):
        return batch if batch.schema.metadata == schema.metadata else batch.replace_schema_metadata(schema.metadata)
    if batch.schema.names != schema.names:
        raise WeftError(f"the server sent columns {batch.schema.names} where the plan has {schema.names}")
    return batch.cast(schema)


def reader_of(schema: pa.Schema, batches: Iterable[pa.RecordBatch]) -> pa.RecordBatchReader:
    """A RecordBatchReader of ``batches``, each conformed to ``schema``."""
    return pa.RecordBatchReader.from_batches(schema, (_conform(b, schema) for b in batches))


# ---------------------------------------------------------------- scans


def scan_endpoints(scan: "ScanRequest") -> tuple[fl.FlightInfo, list[Endpoint]]:
    """Plans the scan (pins the ref's commit): its FlightInfo and endpoints."""
    info = scan.client.command_info(scan.command(), f"scan of table {scan.table!r}")
    return info, [Endpoint.of(ep) for ep in info.endpoints]


def scan_reader(scan: "ScanRequest") -> pa.RecordBatchReader:
    """``scan.to_arrow_reader()`` (module doc)."""
    info, endpoints = scan_endpoints(scan)
    schema = info.schema
    client = scan.client
    windowed = scan.windows is not None

    def batches() -> Iterator[pa.RecordBatch]:
        for ep in endpoints:
            chunks = endpoint_chunks(client, ep)
            if windowed:  # a windowed scan's step may come in several messages: one batch per step
                for _, batch in join_steps(chunks):
                    yield batch
            else:
                for batch, _ in chunks:
                    yield batch

    return reader_of(schema, batches())


# ---------------------------------------------------------------- runs


def train_loader_reader(loader: Any, step_column: Optional[str] = None) -> pa.RecordBatchReader:
    """``TrainLoader.to_arrow_reader()`` (module doc): one batch per step;
    with ``step_column``, each batch also gets an int64 column of that name
    holding its step."""
    from ._torch import _ArrowSteps

    loader._stop_active()
    loader._resolve()
    start = loader.next_step
    schema = loader._plan(start).schema
    if step_column is not None:
        if step_column in schema.names:
            raise InvalidArgument(f"to_arrow_reader: step_column {step_column!r} is a column of the run already")
        schema = schema.append(pa.field(step_column, pa.int64(), nullable=False))

    def batches() -> Iterator[pa.RecordBatch]:
        if start >= loader.steps:
            return
        fetch = _ArrowSteps(loader, start)
        loader._active = fetch
        try:
            while True:
                item = fetch.get()
                if item is None:
                    return
                step, batch, _ = item
                loader._next = step + 1
                if step_column is not None:
                    batch = batch.append_column(step_column, pa.array([step] * batch.num_rows, pa.int64()))
                yield batch
        finally:
            fetch.stop()
            if loader._active is fetch:
                loader._active = None

    return reader_of(schema, batches())


def scan_loader_reader(loader: Any) -> pa.RecordBatchReader:
    """A ScanLoader's batches as Arrow (module doc)."""
    from ._recipe import World

    tl = loader._train_loader(World())
    try:
        tl.load_state_dict({"run": loader.run_id, "step": 0})
        schema = tl._plan(0).schema
    finally:
        tl.close()
    if "_component" in schema.names:
        schema = schema.remove(schema.get_field_index("_component"))

    def batches() -> Iterator[pa.RecordBatch]:
        for batch in loader._cut():
            loader._consumed += 1
            yield batch

    return reader_of(schema, batches())


# ---------------------------------------------------------------- planning (the Spark source uses these)


def plan_run(client: Client, run: str, world_size: int, start_step: int = 0,
             end_step: Optional[int] = None) -> tuple[fl.FlightInfo, dict[str, Any], list[Endpoint]]:
    """The FlightInfo, run record and rank endpoints of run ``run`` for
    ``world_size`` ranks, steps ``start_step`` to ``end_step``."""
    cmd: dict[str, Any] = {"run": run, "world_size": world_size}
    if start_step:
        cmd["start_step"] = start_step
    if end_step is not None:
        cmd["end_step"] = end_step
    info = client.command_info(cmd, f"run {run}")
    record = json.loads(info.app_metadata) if info.app_metadata else {}
    return info, record, [Endpoint.of(ep) for ep in info.endpoints]


def run_steps(client: Client, ep: Endpoint, first: int) -> Iterator[tuple[int, pa.RecordBatch]]:
    """(step, batch) of a rank endpoint whose first step is ``first``."""
    return join_steps(endpoint_chunks(client, ep), first)
