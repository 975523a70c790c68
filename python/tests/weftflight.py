"""Small pyarrow.flight helpers for the tests: Weft's protocol by hand."""

import json

import pyarrow as pa
import pyarrow.flight as fl


def action(client, name, body):
    results = list(client.do_action(fl.Action(name, json.dumps(body).encode() if not isinstance(body, bytes) else body)))
    assert len(results) == 1, f"{name}: {len(results)} results"
    return json.loads(results[0].body.to_pybytes())


def put(client, path, table, batch_rows=None):
    """DoPut table (in batches of batch_rows) to path; returns the PutResult JSON."""
    writer, reader = client.do_put(fl.FlightDescriptor.for_path(*path), table.schema)
    with writer:
        for batch in table.to_batches(max_chunksize=batch_rows):
            writer.write_batch(batch)
        writer.done_writing()
        meta = reader.read()
    assert meta is not None, "no PutResult"
    return json.loads(meta.to_pybytes())


def scan_info(client, project, ref, table, columns=None):
    if columns is None:
        return client.get_flight_info(fl.FlightDescriptor.for_path(project, ref, table))
    cmd = {"scan": {"project": project, "ref": ref, "table": table, "columns": columns}}
    return client.get_flight_info(fl.FlightDescriptor.for_command(json.dumps(cmd).encode()))


def read(client, info):
    """Read every endpoint of info, in order, into one table."""
    tables = [client.do_get(ep.ticket).read_all() for ep in info.endpoints]
    if not tables:
        return info.schema.empty_table()
    return pa.concat_tables(tables)


def info_commit(info):
    return json.loads(info.app_metadata)["commit"]


def rows(table, column="id"):
    return table.column(column).to_pylist()


SCHEMA = pa.schema([
    pa.field("id", pa.int64(), nullable=False),
    pa.field("name", pa.string()),
    pa.field("blob", pa.binary()),
    pa.field("x", pa.float64()),
    pa.field("emb", pa.list_(pa.float32(), 4)),
])


def make_table(start, n, blob_len=16):
    """Rows [start, start+n): every column is a function of the id."""
    ids = list(range(start, start + n))
    return pa.Table.from_arrays([
        pa.array(ids, pa.int64()),
        pa.array([f"row-{i}" for i in ids], pa.string()),
        pa.array([bytes([(i + k) % 256 for k in range(blob_len)]) for i in ids], pa.binary()),
        pa.array([None if i % 7 == 3 else i * 0.5 for i in ids], pa.float64()),
        pa.array([[float(i), i + 0.25, i + 0.5, i + 0.75] for i in ids], pa.list_(pa.float32(), 4)),
    ], schema=SCHEMA)


# gRPC codes as pyarrow.flight raises them: (exception class, message part).
CODES = {
    "InvalidArgument": (pa.ArrowInvalid, "invalid argument error"),
    "NotFound": (pa.ArrowKeyError, "not found error"),
    "AlreadyExists": (pa.ArrowException, "already exists error"),
    "Unimplemented": (pa.ArrowNotImplementedError, "unimplemented error"),
    "Aborted": (fl.FlightInternalError, "aborted error"),
    "Internal": (fl.FlightInternalError, "internal error"),
}
