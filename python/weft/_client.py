"""Client, projects, refs and tables: Weft's Flight protocol in Python.

Every call is one Flight call to the server (docs/flight.md); nothing is
cached here except the connection, so two clients see each other's writes.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
import uuid
import weakref
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Mapping, Optional, Sequence, Union

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.flight as fl

from ._errors import FLIGHT_ERRORS, InvalidArgument, Unavailable, WeftError, reraise, translate

if TYPE_CHECKING:
    import pandas

DEFAULT_URI = "grpc://127.0.0.1:8815"

# One DoPut message at most about this big (the server accepts 64 MiB by default:
# flightd --max-message-size; it leases that much memory per put).
_PUT_BATCH_BYTES = 16 << 20

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


TOKEN_ENV = "WEFT_TOKEN"

# Flight's location for "the server this FlightInfo came from".
REUSE_CONNECTION = "arrow-flight-reuse-connection://"


def location_uri(location: Union[bytes, fl.Location]) -> str:
    """An endpoint location's uri as text."""
    uri = location.uri if isinstance(location, fl.Location) else location
    return uri.decode() if isinstance(uri, bytes) else str(uri)


def _pem(value: Union[bytes, str, "os.PathLike[str]", None], what: str) -> Optional[bytes]:
    """PEM bytes from bytes, or from the file a str/path names."""
    if value is None or isinstance(value, bytes):
        return value
    try:
        with open(value, "rb") as f:
            return f.read()
    except OSError as e:
        raise InvalidArgument(f"{what}: cannot read {value!r} ({e}); give PEM bytes or the path of a PEM file") from None


class _Bearer(fl.ClientMiddlewareFactory):
    """Sends ``authorization: Bearer TOKEN`` with every call."""

    def __init__(self, token: str):
        super().__init__()
        self._headers = {"authorization": f"Bearer {token}"}

    def start_call(self, info: Any) -> fl.ClientMiddleware:
        return _BearerCall(self._headers)


class _BearerCall(fl.ClientMiddleware):
    def __init__(self, headers: dict[str, str]):
        super().__init__()
        self._headers = headers

    def sending_headers(self) -> dict[str, str]:
        return self._headers


@dataclass(frozen=True)
class Connection:
    """Everything needed to connect to a server: what a relay process or a
    pickled client gets. ``token`` is a secret: never logged or shown."""

    uri: str
    token: Optional[str] = field(default=None, repr=False)
    tls_root_certs: Optional[bytes] = field(default=None, repr=False)
    disable_server_verification: bool = False
    cert_chain: Optional[bytes] = field(default=None, repr=False)
    private_key: Optional[bytes] = field(default=None, repr=False)

    def connect(self) -> fl.FlightClient:
        kwargs: dict[str, Any] = {}
        if self.token:
            kwargs["middleware"] = [_Bearer(self.token)]
        if self.tls_root_certs is not None:
            kwargs["tls_root_certs"] = self.tls_root_certs
        if self.disable_server_verification:
            kwargs["disable_server_verification"] = True
        if self.cert_chain is not None:
            kwargs["cert_chain"] = self.cert_chain
            kwargs["private_key"] = self.private_key
        return fl.connect(self.uri, **kwargs)

    def to_json(self) -> dict[str, Any]:
        import base64

        def b64(b: Optional[bytes]) -> Optional[str]:
            return None if b is None else base64.b64encode(b).decode()

        return {"uri": self.uri, "token": self.token, "tls_root_certs": b64(self.tls_root_certs),
                "disable_server_verification": self.disable_server_verification,
                "cert_chain": b64(self.cert_chain), "private_key": b64(self.private_key)}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "Connection":
        import base64

        def unb64(s: Optional[str]) -> Optional[bytes]:
            return None if s is None else base64.b64decode(s)

        return cls(d["uri"], d.get("token"), unb64(d.get("tls_root_certs")), bool(d.get("disable_server_verification")),
                   unb64(d.get("cert_chain")), unb64(d.get("private_key")))


class Client:
    """A connection to a Weft server (``flightd serve``).

    ``uri`` is ``grpc://HOST:PORT`` (``HOST:PORT`` alone means the same), or
    ``grpc+tls://HOST:PORT`` for a server with TLS. Connecting is lazy: an
    unreachable server is reported, naming its address, by the first call.

    ``token`` (default: ``$WEFT_TOKEN``) is a bearer token from
    ``flightd admin token create``, sent as ``authorization: Bearer …``
    with every call. With TLS, ``tls_root_certs`` (PEM bytes, or the path of
    a PEM file) names the CAs to trust instead of the system's, and
    ``disable_server_verification=True`` skips checking the server's
    certificate (insecure: for tests only). ``tls_cert_chain`` and
    ``tls_private_key`` (PEM bytes or paths) present a client certificate,
    for servers with mutual TLS (``--tls-client-ca``).

    A client can be pickled (it carries its token and TLS settings); a
    pickled copy opens its own connection.
    """

    def __init__(self, uri: str = DEFAULT_URI, *, token: Optional[str] = None,
                 tls_root_certs: Union[bytes, str, "os.PathLike[str]", None] = None,
                 disable_server_verification: bool = False,
                 tls_cert_chain: Union[bytes, str, "os.PathLike[str]", None] = None,
                 tls_private_key: Union[bytes, str, "os.PathLike[str]", None] = None,
                 timeout: Optional[float] = None):
        self.uri = _normalize_uri(uri)
        if token is None:
            token = os.environ.get(TOKEN_ENV) or None
        if token is not None and (not isinstance(token, str) or not token.strip()):
            raise InvalidArgument(f"token: give the secret 'flightd admin token create' printed (weft_…), not {type(token).__name__}")
        tls = self.uri.startswith("grpc+tls://")
        if not tls and (tls_root_certs is not None or disable_server_verification or tls_cert_chain is not None):
            raise InvalidArgument(f"{self.uri}: TLS settings need a grpc+tls:// uri (the server runs with --tls-cert)")
        if (tls_cert_chain is None) != (tls_private_key is None):
            raise InvalidArgument("tls_cert_chain and tls_private_key go together (a client certificate and its key)")
        self._conn = Connection(self.uri, token.strip() if token else None,
                                _pem(tls_root_certs, "tls_root_certs"), bool(disable_server_verification),
                                _pem(tls_cert_chain, "tls_cert_chain"), _pem(tls_private_key, "tls_private_key"))
        self.timeout = timeout
        self._flight: Optional[fl.FlightClient] = None
        self._mu = threading.Lock()
        _CLIENTS.add(self)

    def __repr__(self) -> str:
        return f"weft.Client({self.uri!r})"

    @property
    def connection(self) -> Connection:
        """How this client connects (uri, token, TLS settings)."""
        return self._conn

    def __getstate__(self) -> dict[str, Any]:
        return {"conn": self._conn.to_json(), "timeout": self.timeout}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._conn = Connection.from_json(state["conn"])
        self.uri, self.timeout = self._conn.uri, state["timeout"]
        self._flight = None
        self._mu = threading.Lock()
        _CLIENTS.add(self)

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

    def at(self, location: Union[str, bytes, fl.Location]) -> "Client":
        """A client of the server at ``location`` (an endpoint's location,
        e.g. ``grpc://host:8815``) with this client's token, TLS settings
        and timeout: how streams reach the servers ``flightd serve
        --advertise`` names. Flight's "reuse this connection" location, or
        this client's own uri, is this client."""
        if not isinstance(location, str):
            location = location_uri(location)
        if location.startswith(REUSE_CONNECTION):
            return self
        uri = _normalize_uri(location)
        if uri.rstrip("/") == self.uri.rstrip("/"):
            return self
        c = Client.__new__(Client)
        c.__setstate__({"conn": {**self._conn.to_json(), "uri": uri}, "timeout": self.timeout})
        return c

    def _reconnect(self) -> None:
        """Drops the connection, so that the next call opens a fresh one
        (gRPC may otherwise wait out its reconnect backoff after the server
        went away). Calls running on the old connection finish on it; it is
        closed when they let go of it."""
        with self._mu:
            self._flight = None

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
                    self._flight = self._conn.connect()
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

    def import_from(self, format: str, source: str, *, progress: Optional[bool] = None,
                    on_progress: Optional[Any] = None, **options: Any) -> str:
        """Imports a dataset into this table as ONE commit on the branch, run
        by the server (bucket -> flightd -> bucket; nothing passes through this
        process), and returns the commit id. ``format`` is ``"wds"``
        (WebDataset), ``"mds"`` (MosaicML Streaming), ``"hf"`` (Hugging Face
        datasets: save_to_disk or Hub Parquet; ``split="train"`` or
        ``splits="table"|"column"``) or ``"lerobot"`` (a LeRobot v2.1 or v3.0
        dataset: rows, tasks, episodes and every MP4); ``source`` an
        ``s3://BUCKET/PREFIX[/PATTERN]`` URL or a directory under the server's
        ``--import-root``. ``options`` are the format's (README.md, "Import
        datasets you already have"), e.g.
        ``pickle="bytes"``. The server needs write access to the project.

        Progress shows with ``tqdm`` when it is installed and ``progress`` is
        not False; ``on_progress`` is called with each progress dict (files,
        rows, bytes, bytes_total, bytes_per_sec, eta_sec, ...)."""
        if not self.ref.is_branch:
            raise InvalidArgument(f"{self!r}: import into a branch, not a pinned commit")
        body = {"format": format, "source": source, "project": self.project, "branch": self.ref.name,
                "table": self.name, "options": {k: _option_text(v) for k, v in options.items()}}
        bar = None
        if progress is not False:
            try:
                from tqdm.auto import tqdm  # type: ignore[import-untyped]
                bar = tqdm(total=0, unit="B", unit_scale=True, unit_divisor=1024, desc=f"import {format}",
                           disable=None if progress is None else False)
            except ImportError:
                bar = None
        commit: Optional[str] = None
        try:
            with self.client.session() as flight:
                results = flight.do_action(fl.Action("import", json.dumps(body).encode()), fl.FlightCallOptions())
                for r in results:
                    ev = json.loads(r.body.to_pybytes())
                    p = ev.get("progress")
                    if p is not None:
                        if on_progress is not None:
                            on_progress(p)
                        if bar is not None:
                            if p.get("bytes_total") and bar.total != p["bytes_total"]:
                                bar.total = p["bytes_total"]
                            bar.n = p.get("bytes", 0)
                            bar.set_postfix(files=f"{p.get('files', 0)}/{p.get('files_total', 0)}", rows=p.get("rows", 0),
                                            refresh=False)
                            bar.refresh()
                    if ev.get("commit"):
                        commit = ev["commit"]
        except FLIGHT_ERRORS as e:
            reraise(e, self.client.uri, f"import {format} {source}")
        finally:
            if bar is not None:
                bar.close()
        if commit is None:
            raise InvalidArgument(f"import {format} {source}: the server ended the import without a commit")
        return commit

    def append(self, data: Data, *, videos: Optional[Mapping[str, Mapping[Any, "os.PathLike[str] | str"]]] = None,
               episode: str = "episode_index", timestamp: str = "timestamp", tolerance: float = 1e-4,
               idempotency_key: Optional[str] = None, retries: int = 5) -> str:
        """Appends ``data`` as ONE commit on the branch and returns the commit
        id. ``data`` is a pyarrow Table, RecordBatch or RecordBatchReader, an
        iterable of batches or tables, or a pandas DataFrame (its index is
        dropped). The first append creates the table and fixes its schema.

        Each call sends an idempotency key (a fresh UUID, or
        ``idempotency_key``): when the server cannot be reached or goes away
        before it answers (``Unavailable``), the append is retried, up to
        ``retries`` times, with the same key, so it commits exactly once
        even if the first attempt had committed and only its answer was
        lost. Retrying needs data that can be read twice (a Table,
        RecordBatch, DataFrame, list or tuple); a RecordBatchReader or a
        generator is sent once. Pass the same ``idempotency_key`` again
        (e.g. from another process) to retry a put yourself.

        ``videos={"wrist_camera": {episode_id: "ep_0001.mp4", ...}}`` writes
        episodes with video: every file is hashed (sha256, streamed), the
        ones the server lacks are uploaded (DoPut media, 4 MiB messages,
        never the whole file in memory), then the rows are appended with
        one video column per camera key (``struct<media, time>``: the
        file's sha256 and the row's ``timestamp``, seconds in that file)
        in the same commit as the media. ``episode`` names the episode
        column (int or string), ``tolerance`` (seconds) how far a
        timestamp may be from a frame's. A row whose timestamp has no
        frame within it fails the append, naming the row and the file."""
        if not self.ref.is_branch:
            raise InvalidArgument(f"append to {self!r}: a commit is read-only; append to a branch "
                                  f"(project.branch(name).table({self.name!r}))")
        if videos is not None:
            return _append_episodes(self, data, videos, episode, timestamp, tolerance, idempotency_key, retries)
        key = str(uuid.uuid4()) if idempotency_key is None else idempotency_key
        replayable = isinstance(data, (pa.Table, pa.RecordBatch, list, tuple)) or (
            type(data).__name__ == "DataFrame" and hasattr(data, "to_numpy"))
        attempt = 0
        while True:
            try:
                return self.put(data, key)["commit"]
            except Unavailable:
                if not replayable or attempt >= retries:
                    raise
                attempt += 1
                time.sleep(min(0.25 * 2 ** attempt, 5.0))
                self.client._reconnect()

    def put(self, data: Data, idempotency_key: Optional[str] = None) -> dict[str, Any]:
        """One DoPut of ``data``, no retries: the server's result
        ``{"commit", "rows"}``, with ``"replayed": True`` when
        ``idempotency_key`` had committed before (nothing new is stored)."""
        batches = _batches(data)
        try:
            first = next(batches)
        except StopIteration:
            raise InvalidArgument(f"append to table {self.name!r}: no record batches; give at least one row") from None
        meta: Optional[pa.Buffer] = None
        if idempotency_key is not None:
            meta = pa.py_buffer(json.dumps({"idempotency_key": idempotency_key}).encode())
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
                            if meta is not None:
                                writer.write_with_metadata(piece, meta)
                                meta = None
                            else:
                                writer.write_batch(piece)
                    writer.done_writing()
                    result = reader.read()
        except FLIGHT_ERRORS as e:
            reraise(e, client.uri, f"append to table {self.name!r}")
        if result is None:
            raise InvalidArgument(f"append to table {self.name!r}: the server sent no result")
        return json.loads(result.to_pybytes())

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

    def scan_request(self, columns: Optional[Sequence[str]] = None, windows: Any = None,
                     filter: Optional[str] = None) -> "ScanRequest":
        """A scan of the table at the ref, with ``columns`` in that order
        (all when None): pass it to ``weft.ScanDataset`` or ``.read()`` it.

        ``filter`` keeps only the rows that match an expression such as
        ``"success = false AND episode >= 100"`` (docs/python.md,
        "Filters": comparisons, AND/OR/NOT, IN, IS [NOT] NULL, BETWEEN,
        LIKE 'prefix%'), evaluated on the server with SQL's null rules;
        row groups whose statistics rule out a match are never read. A bad
        filter raises ``weft.InvalidArgument`` naming the byte position.

        ``windows`` (``weft.Windows({key: weft.Video(...) | weft.Rows(...)})``
        or a plain dict of them) makes a windowed scan: every row, in order,
        also gets each window's columns exactly as a run with those windows
        sends them (``K`` and ``K_is_pad``), and ``_row``; ``columns`` then
        defaults to the columns no window names (docs/python.md, "Windowed
        scans")."""
        if windows is not None:
            from ._recipe import Windows

            if not isinstance(windows, Windows):
                if not isinstance(windows, Mapping):
                    raise InvalidArgument(f"scan_request: windows is a {type(windows).__name__}; "
                                          "give weft.Windows({key: weft.Video(...) | weft.Rows(...)})")
                windows = Windows(windows)
        if filter is not None and not isinstance(filter, str):
            raise InvalidArgument(f"scan_request: filter is a {type(filter).__name__}; give a string such as "
                                  "\"success = false AND episode >= 100\"")
        return ScanRequest(self.client, self.project, self.ref.name, self.name,
                           None if columns is None else list(columns), windows, filter or None)

    def read(self, columns: Optional[Sequence[str]] = None) -> pa.Table:
        """The whole table at the ref as one pyarrow Table, rows in ordinal order."""
        return self.scan_request(columns).read()


@dataclass(frozen=True)
class ScanPlan:
    """A scan pinned to a commit: its schema, rows and endpoint tickets; for
    a windowed scan also its canonical windows and the most rows of one of
    its steps."""

    commit: str
    schema: pa.Schema
    total_records: int
    tickets: tuple[bytes, ...]
    windows: Optional[dict[str, Any]] = None
    step_rows: int = 0
    filter: Optional[str] = None  # the canonical filter, for filtered scans
    shard_rows: Optional[tuple[int, ...]] = None  # rows of each endpoint, for balanced shards


@dataclass
class ScanRequest:
    """What to scan: a table at a ref, with an optional projection."""

    client: Client
    project: str
    ref: str
    table: str
    columns: Optional[list[str]] = None
    windows: Any = None  # weft.Windows, or None: a plain scan
    filter: Optional[str] = None  # a filter expression, or None: every row

    def command(self, shards: Optional[int] = None, balanced: bool = False) -> dict[str, Any]:
        scan: dict[str, Any] = {"project": self.project, "ref": self.ref, "table": self.table}
        if self.columns is not None:
            scan["columns"] = self.columns
        if self.windows is not None:
            scan["windows"] = self.windows.to_json()
        if self.filter is not None:
            scan["filter"] = self.filter
        if shards is not None:
            scan["shards"] = shards
        if balanced:
            scan["balanced"] = True
        return {"scan": scan}

    def plan(self, shards: Optional[int] = None, balanced: bool = False) -> ScanPlan:
        """Plans the scan now: pins the ref's current commit. With
        ``shards`` (or ``balanced``) its endpoints are balanced shards
        (``shards()``)."""
        info = self.client.command_info(self.command(shards, balanced), f"scan of table {self.table!r}")
        meta = json.loads(info.app_metadata) if info.app_metadata else {}
        rows = meta.get("shard_rows")
        return ScanPlan(meta.get("commit", ""), info.schema, info.total_records,
                        tuple(ep.ticket.ticket for ep in info.endpoints), meta.get("windows"), meta.get("step_rows", 0),
                        meta.get("filter"), None if rows is None else tuple(rows))

    def shards(self, n: Optional[int] = None) -> "Shards":
        """The scan's rows (its matching rows, with a filter) in ``n``
        shards whose row counts differ by at most one, computed on the
        server from the filter's matches (not from file sizes), in row
        order, every row in exactly one; ``n`` None lets the server choose
        (about one per ``--scan-endpoint-size`` of rows). Pins the ref's
        commit now. Give them to ``weft.ScanDataset(scan, shards=…)``."""
        if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 1):
            raise InvalidArgument(f"shards: n {n!r} must be a positive integer (or None: the server chooses)")
        if self.windows is not None:
            raise InvalidArgument("shards: a windowed scan has no shards (yet)")
        plan = self.plan(shards=n, balanced=n is None)
        return Shards(self, plan)

    def read(self) -> pa.Table:
        """The scan as one pyarrow Table, rows in ordinal order. A windowed
        scan's table has one chunk per step (``to_batches()``): a video
        window column refers to its step's segments, so decode it per chunk
        (or iterate ``weft.ScanDataset``, which does)."""
        plan = self.plan()
        if self.windows is not None:
            return pa.Table.from_batches(list(scan_steps(self.client, plan.tickets)), schema=plan.schema)
        tables = [read_ticket(self.client, t) for t in plan.tickets]
        return pa.concat_tables(tables) if tables else plan.schema.empty_table()

    def to_arrow_reader(self) -> pa.RecordBatchReader:
        """The scan as a ``pyarrow.RecordBatchReader`` that streams from the
        server, endpoint after endpoint (rows in ordinal order; a windowed
        scan: one batch per step), planned now (the ref's commit pinned):
        ``duckdb.sql("select … from reader")`` queries it with no copy
        through pandas. One pass."""
        from ._arrow import scan_reader

        return scan_reader(self)

    # The seed's scan loaders (python/weft/_scan.py has the contract).

    def to_data_loader(self, seed: Optional[int] = None, batch_size: int = 32, transform_fn: Any = None,
                       map_workers: int = 0, device: Any = "cpu", **kw: Any) -> Any:
        """This process's batches of one pass over the scan, in the order of
        ``seed``: a ``weft.ScanLoader`` (resumable at the sample, with
        ``state_dict()``). ``transform_fn(pyarrow.RecordBatch)`` runs per
        batch, in ``map_workers`` processes when > 0."""
        from ._scan import to_data_loader

        return to_data_loader(self, seed, batch_size, transform_fn, map_workers, device, **kw)

    def to_distributed_data_loader(self, world: Any = None, seed: Optional[int] = None, batch_size: int = 32,
                                   **kw: Any) -> Any:
        """A rank's batches (``batch_size`` rows per rank): ``world`` is
        ``weft.World(rank, world_size)``, or None for torch.distributed /
        $RANK, $WORLD_SIZE. Global batch n is the union of every rank's batch n."""
        from ._scan import to_distributed_data_loader

        return to_distributed_data_loader(self, world, seed, batch_size, **kw)

    def resume_data_loader(self, checkpoint: dict[str, Any], batch_size: Optional[int] = None, **kw: Any) -> Any:
        """A loader continuing at the checkpoint's sample (``loader.state_dict()``),
        with any batch size and (``world=``) any world size."""
        from ._scan import resume_data_loader

        return resume_data_loader(self, checkpoint, batch_size, **kw)

    def to_iterable_dataset(self, shuffle: Any = None, **kw: Any) -> Any:
        """A torch ``IterableDataset`` of samples (one per row) in the order
        of ``weft.ShuffleConfig(seed=, buffer_size=)``, split over ranks and
        DataLoader workers: use ``DataLoader(ds, batch_size=32)``."""
        from ._scan import to_iterable_dataset

        return to_iterable_dataset(self, shuffle, **kw)


@dataclass(frozen=True)
class Shard:
    """One balanced shard of a scan: its ``rows`` and the ticket that
    streams them."""

    index: int
    rows: int
    ticket: bytes


class Shards(Sequence[Shard]):
    """A scan's balanced shards (``scan.shards()``, ``weft.compute_shards``):
    a sequence of ``Shard`` pinned to one commit, whose row counts differ
    by at most one and add up to ``total_records``."""

    def __init__(self, scan: "ScanRequest", plan: ScanPlan):
        self.scan, self.plan = scan, plan
        rows = plan.shard_rows or ()
        self._shards = tuple(Shard(i, r, t) for i, (r, t) in enumerate(zip(rows, plan.tickets)))

    @property
    def commit(self) -> str:
        return self.plan.commit

    @property
    def total_records(self) -> int:
        return self.plan.total_records

    def __len__(self) -> int:
        return len(self._shards)

    def __getitem__(self, i: Any) -> Any:
        return self._shards[i]

    def __repr__(self) -> str:
        return f"Shards({len(self)} of {sorted(set(s.rows for s in self._shards))} rows, commit {self.commit[:12]})"

    def read(self) -> pa.Table:
        """Every shard's rows, in order, as one pyarrow Table."""
        tables = [read_ticket(self.scan.client, s.ticket) for s in self._shards]
        return pa.concat_tables(tables) if tables else self.plan.schema.empty_table()


def compute_shards(scan: "ScanRequest", n: int) -> Shards:
    """``scan.shards(n)``: ``n`` balanced shards of the scan (row counts
    within one of each other), e.g. ``world_size × num_workers`` of them."""
    if not isinstance(scan, ScanRequest):
        raise InvalidArgument(f"compute_shards: scan is a {type(scan).__name__}; give table.scan_request(...)")
    if n is None:
        raise InvalidArgument("compute_shards: give n, the number of shards (scan.shards() lets the server choose)")
    return scan.shards(n)


def read_ticket(client: Client, ticket: bytes) -> pa.Table:
    try:
        with client.session() as flight:
            return flight.do_get(fl.Ticket(ticket), client._options()).read_all()
    except FLIGHT_ERRORS as e:
        reraise(e, client.uri, "DoGet")


def scan_batches(client: Client, tickets: Sequence[bytes]) -> Iterator[pa.RecordBatch]:
    """The record batches of the tickets' streams, in order. In a process
    forked after gRPC was used (a DataLoader worker), through a relay."""
    for batch, _ in scan_chunks(client, tickets):
        yield batch


def scan_chunks(client: Client, tickets: Sequence[bytes]) -> Iterator[tuple[pa.RecordBatch, Optional[bytes]]]:
    """(batch, app_metadata or None) of every message of the tickets'
    streams, in order. In a process forked after gRPC was used (a
    DataLoader worker), through a relay."""
    if forked_after_grpc():
        from ._relay import relay_chunks

        yield from relay_chunks(client.connection, tickets)
        return
    for ticket in tickets:
        try:
            with client.session() as flight:
                reader = flight.do_get(fl.Ticket(ticket), client._options())
                while True:
                    try:
                        chunk = reader.read_chunk()
                    except StopIteration:
                        break
                    yield chunk.data, (chunk.app_metadata.to_pybytes() if chunk.app_metadata else None)
        except FLIGHT_ERRORS as e:
            reraise(e, client.uri, "DoGet")


def join_steps(chunks: Iterable[tuple[pa.RecordBatch, Optional[bytes]]],
               first: Optional[int] = None) -> Iterator[tuple[int, pa.RecordBatch]]:
    """(step, batch) of a stream of steps: a message with app_metadata
    ``{…,"step"}`` is a step, messages with ``{…,"step","part","parts"}``
    (parts 0..parts-1 in order) are joined into one (docs/flight.md, "Steps
    in several messages"). With ``first``, steps must come in order from
    it (a rank stream); without, any step number may follow (the streams of
    a windowed scan's endpoints, one after another)."""
    expect = first
    parts: list[pa.RecordBatch] = []
    for data, raw in chunks:
        meta = json.loads(raw) if raw else {}
        got = meta.get("step", expect)
        if not isinstance(got, int) or isinstance(got, bool):
            raise WeftError(f"a message of the stream has no step number (app_metadata {raw!r})")
        step: int = got
        if parts and step != expect:
            raise WeftError(f"step {expect} ended after {len(parts)} parts, before its last")
        if first is not None and step != expect:
            raise WeftError(f"the server sent step {step} where step {expect} was due")
        nparts = meta.get("parts")
        if nparts is None:
            if parts:
                raise WeftError(f"step {step} ended after {len(parts)} parts, before its last")
            expect = step + 1
            yield step, data
            continue
        if meta.get("part") != len(parts) or not 0 < nparts:
            raise WeftError(f"step {step}: got part {meta.get('part')} of {nparts} where part {len(parts)} was due")
        expect = step
        parts.append(data)
        if len(parts) < nparts:
            continue
        batch = parts[0] if len(parts) == 1 else pa.concat_batches(parts)
        parts = []
        expect = step + 1
        yield step, batch
    if parts:
        raise WeftError(f"the stream ended inside step {expect} (after {len(parts)} parts)")


def scan_steps(client: Client, tickets: Sequence[bytes]) -> Iterator[pa.RecordBatch]:
    """The steps of a windowed scan's tickets, in row order, each joined
    from its messages into one batch."""
    for _, batch in join_steps(scan_chunks(client, tickets)):
        yield batch


def _option_text(v: Any) -> str:
    """An import option as the text the server parses."""
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


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


# ---------------------------------------------------------------- media

MEDIA_CHUNK = 4 << 20  # bytes of a file per DoPut message (contract: the Python client sends 4 MiB)
MEDIA_SCHEMA = pa.schema([pa.field("chunk", pa.binary(), nullable=False)])
DEFAULT_TOLERANCE = 1e-4


@dataclass(frozen=True)
class MediaFile:
    """A local file and its content address."""

    path: str
    sha256: str
    size: int


def hash_file(path: Union[str, "os.PathLike[str]"]) -> MediaFile:
    """sha256 (hex) and size of a file, read in chunks."""
    h = hashlib.sha256()
    size = 0
    with open(path, "rb") as f:
        while True:
            b = f.read(MEDIA_CHUNK)
            if not b:
                break
            h.update(b)
            size += len(b)
    return MediaFile(os.fspath(path), h.hexdigest(), size)


def media_chunks(path: Union[str, "os.PathLike[str]"], size: int, chunk: int = MEDIA_CHUNK) -> Iterator[pa.RecordBatch]:
    """The file as record batches of MEDIA_SCHEMA, one ``chunk`` bytes each
    (the last fewer), read one at a time; fails if the file is not
    ``size`` bytes any more."""
    sent = 0
    with open(path, "rb") as f:
        while True:
            b = f.read(chunk)
            if not b:
                break
            sent += len(b)
            data = pa.py_buffer(b)
            offsets = pa.py_buffer(pa.array([0, len(b)], pa.int32()).buffers()[1])
            yield pa.RecordBatch.from_arrays([pa.Array.from_buffers(pa.binary(), 1, [None, offsets, data])],
                                             schema=MEDIA_SCHEMA)
    if sent != size:
        raise InvalidArgument(f"media file {os.fspath(path)} changed while it was uploaded ({size} bytes when hashed, "
                              f"{sent} now); upload it again once nothing writes to it")


def _with_files(err: WeftError, files: Mapping[str, MediaFile]) -> WeftError:
    """``err`` with the file path added for every media sha (or its
    12-digit prefix, as the server abbreviates) its message names."""
    msg = str(err)
    named = [f for sha, f in files.items() if sha[:12] in msg]
    if not named:
        return err
    extra = "; ".join(f"media {f.sha256[:12]} is file {f.path}" for f in named)
    out = type(err)(f"{msg} ({extra})")
    out.__cause__ = err
    return out


def _episode_key(v: Any, where: str) -> Union[int, str]:
    if isinstance(v, bool):
        raise InvalidArgument(f"{where}: episode {v!r} is a bool; episodes are integers or strings")
    if isinstance(v, str):
        return v
    try:
        import numbers

        if isinstance(v, numbers.Integral):
            return int(v)
    except TypeError:
        pass
    raise InvalidArgument(f"{where}: episode {v!r} ({type(v).__name__}) is not an integer or string")


def video_field(name: str, tolerance: float) -> pa.Field:
    """A video column's field: struct<media, time> with weft.kind=video."""
    return pa.field(name, pa.struct([pa.field("media", pa.utf8(), nullable=False),
                                     pa.field("time", pa.float64(), nullable=False)]),
                    metadata={"weft.kind": "video", "weft.tolerance": repr(float(tolerance))})


def episode_table(data: Data, videos: Mapping[str, Mapping[Any, Any]], episode: str, timestamp: str,
                  tolerance: float) -> tuple[pa.Table, dict[str, dict[Union[int, str], str]]]:
    """Checks the episodes of ``data`` against ``videos`` (nothing is read
    or sent yet): the rows as one table, and per camera key
    {episode: file path}. Raises InvalidArgument for a missing column,
    episode or file."""
    if not isinstance(videos, Mapping) or not videos:
        raise InvalidArgument("append: videos must map a camera key to {episode: file}, e.g. "
                              "videos={'wrist_camera': {0: 'ep_0000.mp4'}}")
    if isinstance(tolerance, bool) or not isinstance(tolerance, (int, float)) or not 0 < tolerance < 1:
        raise InvalidArgument(f"append: tolerance {tolerance!r} must be a number of seconds in (0, 1)")
    batches = list(_batches(data))
    if not batches:
        raise InvalidArgument("append: no record batches; give at least one row")
    table = pa.Table.from_batches(batches)
    names = table.schema.names
    for what, col in (("episode", episode), ("timestamp", timestamp)):
        if col not in names:
            raise InvalidArgument(f"append with videos: no {what} column {col!r} (columns: {names}); "
                                  f"name it with {what}=...")
    ep_type = table.schema.field(episode).type
    if not (pa.types.is_integer(ep_type) or pa.types.is_string(ep_type) or pa.types.is_large_string(ep_type)):
        raise InvalidArgument(f"append with videos: episode column {episode!r} is {ep_type}; give integers or strings")
    ts = table.column(timestamp)
    if not (pa.types.is_floating(ts.type) or pa.types.is_integer(ts.type)):
        raise InvalidArgument(f"append with videos: timestamp column {timestamp!r} is {ts.type}; "
                              "give seconds (float) in the episode's video")
    for col in (episode, timestamp):
        if table.column(col).null_count:
            raise InvalidArgument(f"append with videos: column {col!r} has {table.column(col).null_count} nulls")
    present = {_episode_key(v, "append") for v in table.column(episode).unique().to_pylist()}
    files: dict[str, dict[Union[int, str], str]] = {}
    for key, mapping in videos.items():
        if not isinstance(key, str) or not key:
            raise InvalidArgument(f"append: camera key {key!r} must be a non-empty string (the column name)")
        if key in names:
            raise InvalidArgument(f"append: camera key {key!r} is already a column of the data; pick another name")
        if not isinstance(mapping, Mapping):
            raise InvalidArgument(f"append: videos[{key!r}] is a {type(mapping).__name__}; give {{episode: file}}")
        by_ep = {_episode_key(k, f"videos[{key!r}]"): os.fspath(v) for k, v in mapping.items()}
        missing = sorted(present - set(by_ep), key=str)
        if missing:
            raise InvalidArgument(f"append: videos[{key!r}] has no file for episode(s) {missing[:10]}"
                                  f"{' …' if len(missing) > 10 else ''} ({len(missing)} of {len(present)}); "
                                  "give a file for every episode of the data")
        for ep in sorted(present, key=str):
            path = by_ep[ep]
            if not os.path.isfile(path):
                raise InvalidArgument(f"append: videos[{key!r}][{ep!r}] = {path!r} is not a file")
        files[key] = {ep: by_ep[ep] for ep in present}
    return table, files


def with_video_columns(table: pa.Table, files: dict[str, dict[Union[int, str], str]],
                       shas: Mapping[str, str], episode: str, timestamp: str, tolerance: float) -> pa.Table:
    """``table`` plus a video column per camera key (media = the sha of
    the row's episode's file, time = the row's timestamp), and schema
    metadata weft.episode."""
    eps = [_episode_key(v, "append") for v in table.column(episode).to_pylist()]
    times = pc.cast(table.column(timestamp), pa.float64()).combine_chunks()
    for key, by_ep in files.items():
        media = pa.array([shas[by_ep[e]] for e in eps], pa.utf8())
        col = pa.StructArray.from_arrays([media, times], fields=list(video_field(key, tolerance).type))
        table = table.append_column(video_field(key, tolerance), col)
    meta = dict(table.schema.metadata or {})
    meta[b"weft.episode"] = episode.encode()
    return table.replace_schema_metadata(meta)


def put_media(client: "Client", project: str, f: MediaFile, kind: Optional[str] = None) -> dict[str, Any]:
    """One DoPut of a media file (contract section 3): the server's
    PutResult ``{"sha256","size","stored",...}``."""
    cmd: dict[str, Any] = {"media": {"project": project, "sha256": f.sha256, "size": f.size,
                                     "name": os.path.basename(f.path)}}
    if kind is not None:
        cmd["media"]["kind"] = kind
    descriptor = fl.FlightDescriptor.for_command(json.dumps(cmd).encode())
    try:
        with client.session() as flight:
            writer, reader = flight.do_put(descriptor, MEDIA_SCHEMA, client._options())
            with writer:
                for batch in media_chunks(f.path, f.size):
                    writer.write_batch(batch)
                writer.done_writing()
                result = reader.read()
    except FLIGHT_ERRORS as e:
        raise _with_files(translate(e, client.uri, f"upload of {f.path}"), {f.sha256: f}) from e
    if result is None:
        raise InvalidArgument(f"upload of {f.path}: the server sent no result")
    return json.loads(result.to_pybytes())


def stat_media(client: "Client", project: str, sha256: str) -> dict[str, Any]:
    """``{"sha256", "size", "exists"}`` of a media object of ``project``."""
    return client.action("stat_media", {"project": project, "sha256": sha256})


def _append_episodes(t: "Table", data: Data, videos: Mapping[str, Mapping[Any, Any]], episode: str, timestamp: str,
                     tolerance: float, idempotency_key: Optional[str], retries: int) -> str:
    table, files = episode_table(data, videos, episode, timestamp, tolerance)
    hashed: dict[str, MediaFile] = {}
    for by_ep in files.values():
        for path in by_ep.values():
            if path not in hashed:
                hashed[path] = hash_file(path)
    by_sha = {f.sha256: f for f in hashed.values()}
    for sha, f in sorted(by_sha.items()):
        attempt = 0
        while True:
            try:
                if not stat_media(t.client, t.project, sha).get("exists"):
                    put_media(t.client, t.project, f)
                break
            except Unavailable:
                if attempt >= retries:
                    raise
                attempt += 1
                time.sleep(min(0.25 * 2 ** attempt, 5.0))
                t.client._reconnect()
            except WeftError as e:
                raise _with_files(e, {sha: f}) from e
    rows = with_video_columns(table, files, {p: f.sha256 for p, f in hashed.items()}, episode, timestamp, tolerance)
    try:
        return t.append(rows, idempotency_key=idempotency_key, retries=retries)
    except WeftError as e:
        raise _with_files(e, by_sha) from e
