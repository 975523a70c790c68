"""The ``weft`` data source for Spark (PySpark >= 4.0's Python data source
API, ``pyspark.sql.datasource``): scans and runs read by Spark's executors
straight from flightd, as Arrow record batches::

    spark.dataSource.register(weft.WeftDataSource)
    df = (spark.read.format("weft").option("uri", "grpc://flightd:8815")
          .option("table", "robotics/main/failed_grasps").load())
    runs = spark.read.format("weft").option("uri", …).option("run", run_id) \\
        .option("world_size", 4).option("steps_per_partition", 100).load()

Options (all strings, as Spark passes them):

- ``uri``: the server (``grpc://HOST:PORT`` or ``grpc+tls://…``); required.
- ``table``: ``PROJECT/REF/TABLE`` (REF a branch or a commit id): a scan.
  One partition per scan endpoint (``flightd serve --scan-endpoint-size``),
  rows as the endpoints send them.
- ``run``: a run id (or a unique prefix of 8+ hex digits): the run's steps.
  One partition per rank (``world_size``, default 1) and step range
  (``steps_per_partition``, default: the whole run; ``start_step`` and
  ``end_step`` bound the steps read). Each partition reads exactly its
  rank's rows of its steps; every row has an extra ``_step`` (long).
- ``columns``: ``a,b,c``, the projection (a scan asks the server for just
  these; a run keeps these, ``_component``, ``_row`` and ``_step``). A
  schema given with ``.schema(…)`` naming a subset of the columns projects
  the same way (the types must be the ones the source reports).
- ``token`` (default ``$WEFT_TOKEN`` where the executor runs),
  ``tls_root_certs``, ``tls_cert_chain``, ``tls_private_key`` (PEM text, or
  the path of a PEM file on every executor), ``disable_server_verification``
  (``true``: tests only), ``timeout`` (seconds per call).

The plan (a scan's endpoints, a run's rank tickets) is made on the driver
when Spark asks for the partitions; the executors only ``DoGet`` the
tickets, from the endpoint's locations first when the server advertises
several (any server answers any ticket). A scan read is pinned to the
commit the ref had at planning time.

Types: Spark has no unsigned integers, half floats, fixed-size lists or
dictionary arrays: uint8/16/32 become the next wider signed integer,
uint64 ``decimal(20,0)``, float16 float, fixed-size lists and binaries
plain arrays and binaries, dictionaries their values (``spark_schema``).
"""

from __future__ import annotations

import os
from typing import Any, Iterator, Optional

import pyarrow as pa
import pyarrow.types as pat
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import StructType

from ._arrow import Endpoint, endpoint_chunks, plan_run, run_steps
from ._client import Client, ScanRequest
from ._errors import InvalidArgument

STEP = "_step"


def _sparkable(t: pa.DataType) -> pa.DataType:
    """The Arrow type Spark can hold ``t`` as (module doc, "Types")."""
    if pat.is_uint8(t):
        return pa.int16()
    if pat.is_uint16(t):
        return pa.int32()
    if pat.is_uint32(t):
        return pa.int64()
    if pat.is_uint64(t):
        return pa.decimal128(20, 0)
    if pat.is_float16(t):
        return pa.float32()
    if pat.is_dictionary(t):
        return _sparkable(t.value_type)
    if pat.is_large_string(t) or pat.is_string_view(t):
        return pa.string()
    if pat.is_fixed_size_binary(t) or pat.is_large_binary(t) or pat.is_binary_view(t):
        return pa.binary()
    if pat.is_list(t) or pat.is_large_list(t) or pat.is_fixed_size_list(t) or pat.is_list_view(t):
        return pa.list_(_sparkable(t.value_type))
    if pat.is_struct(t):
        return pa.struct([f.with_type(_sparkable(f.type)) for f in t])
    if pat.is_map(t):
        return pa.map_(_sparkable(t.key_type), _sparkable(t.item_type))
    return t


def spark_schema(schema: pa.Schema) -> StructType:
    """The Spark schema of rows of Arrow ``schema`` (module doc, "Types")."""
    from pyspark.sql.pandas.types import from_arrow_schema

    return from_arrow_schema(pa.schema([f.with_type(_sparkable(f.type)) for f in schema]))


def _flag(v: Optional[str], what: str) -> bool:
    if v is None:
        return False
    s = str(v).strip().lower()
    if s in ("true", "1", "yes"):
        return True
    if s in ("false", "0", "no", ""):
        return False
    raise InvalidArgument(f"option {what}={v!r}: give true or false")


def _int(options: dict[str, str], what: str, default: Optional[int], least: int) -> Optional[int]:
    v = options.get(what)
    if v is None:
        return default
    try:
        n = int(str(v).strip())
    except ValueError:
        raise InvalidArgument(f"option {what}={v!r} is not an integer") from None
    if n < least:
        raise InvalidArgument(f"option {what}={v!r} must be ≥ {least}")
    return n


def _pem_option(v: Optional[str]) -> Any:
    """PEM text as bytes; anything else is a path (read by weft.Client)."""
    if v is None:
        return None
    return v.encode() if v.lstrip().startswith("-----BEGIN") else v


def client_from_options(options: dict[str, str]) -> Client:
    uri = options.get("uri")
    if not uri:
        raise InvalidArgument('the weft data source needs .option("uri", "grpc://HOST:PORT")')
    timeout = options.get("timeout")
    return Client(uri, token=options.get("token") or None, tls_root_certs=_pem_option(options.get("tls_root_certs")),
                  disable_server_verification=_flag(options.get("disable_server_verification"),
                                                    "disable_server_verification"),
                  tls_cert_chain=_pem_option(options.get("tls_cert_chain")),
                  tls_private_key=_pem_option(options.get("tls_private_key")),
                  timeout=float(timeout) if timeout else None)


def _columns(options: dict[str, str]) -> Optional[list[str]]:
    v = options.get("columns")
    if v is None or not v.strip():
        return None
    cols = [c.strip() for c in v.split(",")]
    if any(not c for c in cols):
        raise InvalidArgument(f"option columns={v!r}: give column names separated by commas")
    return cols


def _table(spec: str) -> tuple[str, str, str]:
    parts = spec.split("/")
    if len(parts) < 3 or not all(parts):
        raise InvalidArgument(f"option table={spec!r}: give PROJECT/REF/TABLE, e.g. robotics/main/failed_grasps")
    return parts[0], "/".join(parts[1:-1]), parts[-1]


class _Source:
    """What the options ask for: a scan or a run, checked."""

    def __init__(self, options: dict[str, str]):
        self.options = {str(k): str(v) for k, v in options.items()}
        table, run = self.options.get("table"), self.options.get("run")
        if (table is None) == (run is None):
            raise InvalidArgument('the weft data source reads .option("table", "PROJECT/REF/TABLE") or '
                                  '.option("run", RUN_ID): give exactly one')
        self.table = _table(table) if table is not None else None
        self.run = run.strip() if run is not None else None
        self.columns = _columns(self.options)
        if self.table is not None:
            for what in ("world_size", "steps_per_partition", "start_step", "end_step"):
                if what in self.options:
                    raise InvalidArgument(f"option {what} is for runs (.option('run', ID)), not for a table scan")
        self.world_size = _int(self.options, "world_size", 1, 1) or 1
        self.steps_per_partition = _int(self.options, "steps_per_partition", None, 1)
        self.start_step = _int(self.options, "start_step", 0, 0) or 0
        self.end_step = _int(self.options, "end_step", None, 0)
        client_from_options(self.options)  # checks the connection options on the driver

    def client(self) -> Client:
        return client_from_options(self.options)

    def scan(self, client: Client, columns: Optional[list[str]]) -> ScanRequest:
        assert self.table is not None
        project, ref, table = self.table
        return ScanRequest(client, project, ref, table, columns)

    def arrow_schema(self) -> pa.Schema:
        """The rows' Arrow schema as the server sends them (runs: with _step)."""
        client = self.client()
        try:
            if self.table is not None:
                return client.command_info(self.scan(client, self.columns).command(),
                                           f"schema of table {'/'.join(self.table)}").schema
            assert self.run is not None
            info, _, _ = plan_run(client, self.run, 1, self.start_step, self.end_step)
            schema = info.schema
            if self.columns is not None:
                missing = [c for c in self.columns if c not in schema.names]
                if missing:
                    raise InvalidArgument(f"run {self.run} has no column {', '.join(map(repr, missing))} "
                                          f"(its columns: {', '.join(schema.names)})")
                keep = [c for c in schema.names if c in self.columns or c in ("_component", "_row")]
                schema = pa.schema([schema.field(c) for c in keep], metadata=schema.metadata)
            return schema.append(pa.field(STEP, pa.int64(), nullable=False))
        finally:
            client.close()


class WeftDataSource(DataSource):
    """``spark.read.format("weft")``: a weft scan or run (module doc)."""

    @classmethod
    def name(cls) -> str:
        return "weft"

    def schema(self) -> StructType:
        return spark_schema(_Source(dict(self.options)).arrow_schema())

    def reader(self, schema: StructType) -> "WeftReader":
        return WeftReader(dict(self.options), schema)


class WeftReader(DataSourceReader):
    """Plans on the driver (``partitions``), reads tickets on executors (``read``)."""

    def __init__(self, options: dict[str, str], schema: StructType):
        self.source = _Source(options)
        self.names = [f.name for f in schema.fields]
        from pyspark.sql.pandas.types import to_arrow_schema

        self.target = to_arrow_schema(schema)
        if self.source.table is not None:
            self.columns = self.names  # a scan reads just the schema's columns
        else:
            self.columns = [c for c in self.names if c != STEP]

    def partitions(self) -> list[InputPartition]:
        client = self.source.client()
        try:
            if self.source.table is not None:
                info = client.command_info(self.source.scan(client, self.columns).command(),
                                           f"scan of table {'/'.join(self.source.table)}")
                return [InputPartition({"ep": Endpoint.of(ep)}) for ep in info.endpoints]
            return self._run_partitions(client)
        finally:
            client.close()

    def _run_partitions(self, client: Client) -> list[InputPartition]:
        src = self.source
        assert src.run is not None
        W = src.world_size
        info, record, eps = plan_run(client, src.run, W, src.start_step, src.end_step)
        start = src.start_step
        end = src.end_step if src.end_step is not None else int(record["steps"])
        k = src.steps_per_partition or max(1, end - start)
        out: list[InputPartition] = []
        for a in range(start, end, k):
            b = min(a + k, end)
            if (a, b) != (start, end) or not eps:
                _, _, eps = plan_run(client, src.run, W, a, b)
            if len(eps) != W:
                raise InvalidArgument(f"run {src.run}: the server planned {len(eps)} endpoints for {W} ranks")
            out.extend(InputPartition({"ep": ep, "rank": r, "first": a, "end": b}) for r, ep in enumerate(eps))
        return out

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        part = partition.value
        ep: Endpoint = part["ep"]
        client = self.source.client()
        try:
            if "first" not in part:
                for batch, _ in endpoint_chunks(client, ep):
                    if batch.num_rows:
                        yield self._conform(batch)
                return
            for step, batch in run_steps(client, ep, int(part["first"])):
                if step >= int(part["end"]):
                    return
                if batch.num_rows:
                    cols = [batch.column(c) for c in self.columns]
                    cols.append(pa.array([step] * batch.num_rows, pa.int64()))
                    yield self._conform(pa.RecordBatch.from_arrays(cols, names=self.names))
        finally:
            client.close()

    def _conform(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        if batch.schema.names != self.names:
            batch = batch.select(self.names)
        if batch.schema.equals(self.target):
            return batch
        return pa.RecordBatch.from_arrays([batch.column(i).cast(f.type) for i, f in enumerate(self.target)],
                                          schema=self.target)


def worker_python() -> None:
    """Sets ``PYSPARK_PYTHON`` to this interpreter when unset, so that
    Spark's Python workers import the same weft and pyarrow (call before
    making the SparkSession)."""
    import sys

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
