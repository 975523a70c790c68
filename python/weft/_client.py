"""Client, projects, refs and tables: Weft's Flight protocol in Python.

Every call is one Flight call to the server (docs/flight.md); nothing is
cached here except the connection, so two clients see each other's writes.
"""

from __future__ import annotations

import json
import os
import threading
import weakref
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Optional, Sequence, Union

import pyarrow as pa
import pyarrow.flight as fl

from ._errors import FLIGHT_ERRORS, InvalidArgument, WeftError, reraise

if TYPE_CHECKING:
    import pandas

DEFAULT_URI = "grpc://127.0.0.1:8815"

# One DoPut message at most this big (the server accepts 256 MiB by default).
_PUT_BATCH_BYTES = 64 << 20

Data = Union[pa.Table, pa.RecordBatch, pa.RecordBatchReader, "pandas.DataFrame", Iterable[Union[pa.RecordBatch, pa.Table]]]


class _ForkState:
    grpc_started = False  # this process (or an ancestor before forking) connected
    tainted = False  # forked from a process that had started gRPC


_FORK = _ForkState()
_CLIENTS: "weakref.WeakSet[Client]" = weakref.WeakSet()
# Flight clients a forked child inherited: kept and never touched, since
# even freeing them would use the parent's gRPC threads, which the child lacks.
_INHERITED: list = []


def _after_fork_in_child() -> None:
    _FORK.tainted = _FORK.grpc_started
    for c in list(_CLIENTS):
        c._mu = threading.Lock()
        if c._flight is not None:
            _INHERITED.append(c._flight)
            c._flight = None


os.register_at_fork(after_in_child=_after_fork_in_child)


def forked_after_grpc() -> bool:
    """Whether this process was forked from one that had used gRPC: gRPC
    does not work here (apache/arrow#38617), so streams go through a relay
    process (see _relay.py) and other calls fail clearly."""
    return _FORK.tainted


def _normalize_uri(uri: str) -> str:
    if not isinstance(uri, str) or not uri:
        raise InvalidArgument(f"server uri {uri!r}: give a string like {DEFAULT_URI!r}")
    if "://" not in uri:
        uri = "grpc://" + uri
    return uri


class Client:
    """A connection to a Weft server (``flightd serve``).

    ``uri`` is ``grpc://HOST:PORT`` (``HOST:PORT`` alone means the same).
    Connecting is lazy: an unreachable server is reported, naming its
    address, by the first call. A client can be pickled; a pickled copy
    opens its own connection.
    """

    def __init__(self, uri: str = DEFAULT_URI, *, timeout: Optional[float] = None):
        self.uri = _normalize_uri(uri)
        self.timeout = timeout
        self._flight: Optional[fl.FlightClient] = None
        self._mu = threading.Lock()
        _CLIENTS.add(self)

    def __repr__(self) -> str:
        return f"weft.Client({self.uri!r})"

    def __getstate__(self) -> dict[str, Any]:
        return {"uri": self.uri, "timeout": self.timeout}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["uri"], timeout=state["timeout"])  # type: ignore[misc]

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Closes the connection (a later call reconnects)."""
        with self._mu:
            flight, self._flight = self._flight, None
        if flight is not None:
            flight.close()

    # ------------------------------------------------------------ raw calls

    @contextmanager
    def session(self) -> Iterator[fl.FlightClient]:
        """The ``pyarrow.flight.FlightClient`` of this process, connected."""
        with self._mu:
            if _FORK.tainted:
                raise WeftError(
                    f"{self.uri}: this process was forked from one that had used gRPC, which then does not work "
                    "(apache/arrow#38617); start worker processes with the 'spawn' method, e.g. "
                    "DataLoader(..., multiprocessing_context='spawn'), or make the client in the worker. "
                    "(weft.ScanDataset works in forked DataLoader workers: it reads through a relay process.)")
            if self._flight is None:
                try:
                    self._flight = fl.connect(self.uri)
                except FLIGHT_ERRORS as e:
                    reraise(e, self.uri, "connect")
                _FORK.grpc_started = True
            flight = self._flight
        yield flight

    @property
    def flight(self) -> fl.FlightClient:
        """The underlying ``pyarrow.flight.FlightClient`` (for calls this
        client has no method for; prefer ``session()``, which a fork respects)."""
        with self.session() as flight:
            return flight

    def _options(self) -> fl.FlightCallOptions:
        return fl.FlightCallOptions(timeout=self.timeout)

    def action(self, name: str, body: dict[str, Any]) -> Any:
        """Runs DoAction ``name`` with a JSON body; returns its JSON result."""
        try:
            with self.session() as flight:
                results = list(flight.do_action(fl.Action(name, json.dumps(body).encode()), self._options()))
        except FLIGHT_ERRORS as e:
            reraise(e, self.uri, name)
        if len(results) != 1:
            raise InvalidArgument(f"{name}: the server sent {len(results)} results, expected 1")
        return json.loads(results[0].body.to_pybytes())

    def flight_info(self, descriptor: fl.FlightDescriptor, what: str) -> fl.FlightInfo:
        try:
            with self.session() as flight:
                return flight.get_flight_info(descriptor, self._options())
        except FLIGHT_ERRORS as e:
            reraise(e, self.uri, what)

    def command_info(self, cmd: dict[str, Any], what: str) -> fl.FlightInfo:
        return self.flight_info(fl.FlightDescriptor.for_command(json.dumps(cmd).encode()), what)

    # ------------------------------------------------------------ projects

    def create_project(self, name: str) -> "Project":
        """Creates project ``name`` with branch ``main`` at an empty commit."""
        self.action("create_project", {"project": name})
        return Project(self, name)

    def project(self, name: str) -> "Project":
        """Project ``name`` (not checked until it is used)."""
        return Project(self, name)

    def tables(self, project: str = "") -> dict[tuple[str, str], int]:
        """Every table at ``main`` of ``project`` (all projects when empty):
        ``{(project, table): rows}``."""
        out = {}
        try:
            with self.session() as flight:
                for info in flight.list_flights(project.encode(), self._options()):
                    path = info.descriptor.path
                    out[(path[0].decode(), path[2].decode())] = info.total_records
        except FLIGHT_ERRORS as e:
            reraise(e, self.uri, "ListFlights")
        return out


@dataclass(frozen=True)
class Commit:
    """One entry of a log: ``tables`` maps each table to its manifest id."""

    id: str
    parent: Optional[str]
    time: str
    message: str
    tables: dict[str, str] = field(default_factory=dict)


def _commits(entries: list[dict[str, Any]]) -> list[Commit]:
    return [Commit(e["commit"], e.get("parent"), e.get("time", ""), e.get("message", ""), dict(e.get("tables") or {}))
            for e in entries]


class Project:
    def __init__(self, client: Client, name: str):
        self.client, self.name = client, name

    def __repr__(self) -> str:
        return f"weft.Project({self.name!r})"

    def branch(self, name: str = "main") -> "Ref":
        """Branch ``name``: reads see its head when they are planned; appends
        commit on it."""
        return Ref(self, name, is_branch=True)

    def commit(self, ref: str) -> "Ref":
        """A pinned, read-only ref: a full commit id or a unique prefix of at
        least 8 hex digits."""
        return Ref(self, ref, is_branch=False)

    def create_branch(self, name: str, from_ref: str = "main") -> "Ref":
        """Creates branch ``name`` at ``from_ref`` (any ref)."""
        self.client.action("create_branch", {"project": self.name, "branch": name, "from": from_ref})
        return self.branch(name)

    def branches(self) -> dict[str, str]:
        """``{branch: head commit id}``."""
        return {b["branch"]: b["commit"] for b in self.client.action("list_branches", {"project": self.name})}

    def log(self, ref: str = "main", limit: Optional[int] = None) -> list[Commit]:
        """The commits reachable from ``ref``, newest first."""
        body: dict[str, Any] = {"project": self.name, "ref": ref}
        if limit is not None:
            body["limit"] = limit
        return _commits(self.client.action("log", body))


class Ref:
    """A branch or a pinned commit of a project."""

    def __init__(self, project: Project, name: str, is_branch: bool):
        self.project, self.name, self.is_branch = project, name, is_branch

    def __repr__(self) -> str:
        kind = "branch" if self.is_branch else "commit"
        return f"weft.Project({self.project.name!r}).{kind}({self.name!r})"

    @property
    def client(self) -> Client:
        return self.project.client

    def table(self, name: str) -> "Table":
        return Table(self, name)

    def log(self, limit: Optional[int] = None) -> list[Commit]:
        return self.project.log(self.name, limit)

    def head(self) -> str:
        """The commit id this ref names now."""
        [c] = self.log(limit=1)
        return c.id


class Table:
    """A table at a ref. Reads are planned at the ref's commit when they are
    made (``project.commit(id).table(...)`` pins them); appends need a branch."""

    def __init__(self, ref: Ref, name: str):
        self.ref, self.name = ref, name

    def __repr__(self) -> str:
        return f"{self.ref!r}.table({self.name!r})"

    @property
    def client(self) -> Client:
        return self.ref.client

    @property
    def project(self) -> str:
        return self.ref.project.name

    def _path(self) -> fl.FlightDescriptor:
        return fl.FlightDescriptor.for_path(self.project, self.ref.name, self.name)

    def append(self, data: Data) -> str:
        """Appends ``data`` as ONE commit on the branch and returns the commit
        id. ``data`` is a pyarrow Table, RecordBatch or RecordBatchReader, an
        iterable of batches or tables, or a pandas DataFrame (its index is
        dropped). The first append creates the table and fixes its schema."""
        if not self.ref.is_branch:
            raise InvalidArgument(f"append to {self!r}: a commit is read-only; append to a branch "
                                  f"(project.branch(name).table({self.name!r}))")
        batches = _batches(data)
        try:
            first = next(batches)
        except StopIteration:
            raise InvalidArgument(f"append to table {self.name!r}: no record batches; give at least one row") from None
        client = self.client
        try:
            with client.session() as flight:
                writer, reader = flight.do_put(self._path(), first.schema, client._options())
                with writer:
                    for batch in _chain_first(first, batches):
                        if batch.schema != first.schema:
                            raise InvalidArgument(f"append to table {self.name!r}: batches have different schemas:"
                                                  f"\n{first.schema}\nvs\n{batch.schema}")
                        for piece in _split(batch):
                            writer.write_batch(piece)
                    writer.done_writing()
                    meta = reader.read()
        except FLIGHT_ERRORS as e:
            reraise(e, client.uri, f"append to table {self.name!r}")
        if meta is None:
            raise InvalidArgument(f"append to table {self.name!r}: the server sent no result")
        return json.loads(meta.to_pybytes())["commit"]

    @property
    def schema(self) -> pa.Schema:
        """The table's Arrow schema at the ref."""
        try:
            with self.client.session() as flight:
                return flight.get_schema(self._path(), self.client._options()).schema
        except FLIGHT_ERRORS as e:
            reraise(e, self.client.uri, f"schema of table {self.name!r}")

    def num_rows(self) -> int:
        return self.scan_request().plan().total_records

    def log(self, limit: Optional[int] = None) -> list[Commit]:
        """The commits of the ref that changed this table, newest first."""
        commits = self.ref.log()
        out = []
        for i, c in enumerate(commits):
            parent_manifest = commits[i + 1].tables.get(self.name) if i + 1 < len(commits) else None
            if self.name in c.tables and c.tables[self.name] != parent_manifest:
                out.append(c)
                if limit is not None and len(out) >= limit:
                    break
        return out

    def scan_request(self, columns: Optional[Sequence[str]] = None) -> "ScanRequest":
        """A scan of the table at the ref, with ``columns`` in that order
        (all when None): pass it to ``weft.ScanDataset`` or ``.read()`` it."""
        return ScanRequest(self.client, self.project, self.ref.name, self.name,
                           None if columns is None else list(columns))

    def read(self, columns: Optional[Sequence[str]] = None) -> pa.Table:
        """The whole table at the ref as one pyarrow Table, rows in ordinal order."""
        return self.scan_request(columns).read()


@dataclass(frozen=True)
class ScanPlan:
    """A scan pinned to a commit: its schema, rows and endpoint tickets."""

    commit: str
    schema: pa.Schema
    total_records: int
    tickets: tuple[bytes, ...]


@dataclass
class ScanRequest:
    """What to scan: a table at a ref, with an optional projection."""

    client: Client
    project: str
    ref: str
    table: str
    columns: Optional[list[str]] = None

    def command(self) -> dict[str, Any]:
        scan: dict[str, Any] = {"project": self.project, "ref": self.ref, "table": self.table}
        if self.columns is not None:
            scan["columns"] = self.columns
        return {"scan": scan}

    def plan(self) -> ScanPlan:
        """Plans the scan now: pins the ref's current commit."""
        info = self.client.command_info(self.command(), f"scan of table {self.table!r}")
        commit = json.loads(info.app_metadata)["commit"] if info.app_metadata else ""
        return ScanPlan(commit, info.schema, info.total_records, tuple(ep.ticket.ticket for ep in info.endpoints))

    def read(self) -> pa.Table:
        plan = self.plan()
        tables = [read_ticket(self.client, t) for t in plan.tickets]
        return pa.concat_tables(tables) if tables else plan.schema.empty_table()


def read_ticket(client: Client, ticket: bytes) -> pa.Table:
    try:
        with client.session() as flight:
            return flight.do_get(fl.Ticket(ticket), client._options()).read_all()
    except FLIGHT_ERRORS as e:
        reraise(e, client.uri, "DoGet")


def scan_batches(client: Client, tickets: Sequence[bytes]) -> Iterator[pa.RecordBatch]:
    """The record batches of the tickets' streams, in order. In a process
    forked after gRPC was used (a DataLoader worker), through a relay."""
    if forked_after_grpc():
        from ._relay import relay_batches

        yield from relay_batches(client.uri, tickets)
        return
    for ticket in tickets:
        try:
            with client.session() as flight:
                reader = flight.do_get(fl.Ticket(ticket))
                while True:
                    try:
                        chunk = reader.read_chunk()
                    except StopIteration:
                        break
                    yield chunk.data
        except FLIGHT_ERRORS as e:
            reraise(e, client.uri, "DoGet")


def _batches(data: Data) -> Iterator[pa.RecordBatch]:
    if isinstance(data, pa.Table):
        yield from data.to_batches()
        return
    if isinstance(data, pa.RecordBatch):
        yield data
        return
    if isinstance(data, pa.RecordBatchReader):
        yield from data
        return
    if type(data).__name__ == "DataFrame" and hasattr(data, "to_numpy"):
        yield from pa.Table.from_pandas(data, preserve_index=False).to_batches()
        return
    if isinstance(data, (str, bytes, dict)) or not hasattr(data, "__iter__"):
        raise InvalidArgument(f"append: cannot write a {type(data).__name__}; give a pyarrow Table, RecordBatch, "
                              "RecordBatchReader, an iterable of them, or a pandas DataFrame")
    for item in data:
        if isinstance(item, pa.Table):
            yield from item.to_batches()
        elif isinstance(item, pa.RecordBatch):
            yield item
        else:
            raise InvalidArgument(f"append: an item of the iterable is a {type(item).__name__}; "
                                  "give pyarrow RecordBatches or Tables")


def _chain_first(first: pa.RecordBatch, rest: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    yield first
    yield from rest


def _split(batch: pa.RecordBatch) -> Iterator[pa.RecordBatch]:
    """Slices of ``batch`` of at most about _PUT_BATCH_BYTES each."""
    size = batch.nbytes
    if size <= _PUT_BATCH_BYTES or batch.num_rows <= 1:
        yield batch
        return
    rows = max(1, batch.num_rows * _PUT_BATCH_BYTES // size)
    for start in range(0, batch.num_rows, rows):
        yield batch.slice(start, rows)
