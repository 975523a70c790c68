"""A relay process for streams in processes where gRPC cannot run.

gRPC does not survive ``fork()`` (apache/arrow#38617): a DataLoader worker
forked from a trainer that had used a Weft client hangs or aborts on its
first Flight call. Such a worker starts ``python -m weft._relay`` instead
(fork+exec is safe), which reads the tickets and writes their batches to
its stdout as one Arrow IPC stream; errors come back on stderr as one JSON
line, and are raised as the same weft exceptions. The request, on the
relay's stdin (never its command line or environment), carries the
client's connection: uri, token and TLS settings.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Iterator, Optional, Sequence

import pyarrow as pa

from . import _errors

if TYPE_CHECKING:
    from ._client import Connection


# The custom metadata key that carries a message's Flight app_metadata
# through the relay's IPC stream.
_APP_METADATA = b"weft.app_metadata"


def relay_chunks(conn: "Connection", tickets: Sequence[bytes]) -> Iterator[tuple[pa.RecordBatch, Optional[bytes]]]:
    """(batch, app_metadata or None) of every message of ``tickets``, read
    by a fresh relay process connected as ``conn``."""
    uri = conn.uri
    if not tickets:
        return
    env = dict(os.environ)
    here = str(Path(__file__).resolve().parent.parent)
    env["PYTHONPATH"] = here + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    request = json.dumps({"conn": conn.to_json(), "tickets": [base64.b64encode(t).decode() for t in tickets]}).encode()
    proc = subprocess.Popen([sys.executable, "-m", "weft._relay"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env)
    try:
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        proc.stdin.write(request)
        proc.stdin.close()
        try:
            reader = pa.ipc.open_stream(proc.stdout)
            while True:
                try:
                    batch, custom = reader.read_next_batch_with_custom_metadata()
                except StopIteration:
                    break
                yield batch, (custom.get(_APP_METADATA) if custom is not None else None)
        except pa.ArrowInvalid:
            pass  # no stream: the relay failed before writing one; its stderr says why
        err = proc.stderr.read()
        if proc.wait() != 0:
            raise _relay_error(uri, err, proc.returncode)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for f in (proc.stdout, proc.stderr):
            if f is not None:
                f.close()


def _relay_error(uri: str, stderr: bytes, code: int) -> _errors.WeftError:
    lines = stderr.decode(errors="replace").strip().splitlines()
    try:
        last = json.loads(lines[-1])
        cls = getattr(_errors, last["type"])
        if isinstance(cls, type) and issubclass(cls, _errors.WeftError):
            return cls(last["message"])
    except (IndexError, ValueError, KeyError, TypeError, AttributeError):
        pass
    tail = "\n".join(lines[-20:])
    return _errors.WeftError(f"the relay process reading from {uri} exited with {code}:\n{tail}")


def main() -> int:
    import pyarrow.flight as fl

    from ._client import Connection

    request = json.loads(sys.stdin.buffer.read())
    conn = Connection.from_json(request["conn"])
    uri = conn.uri
    out = sys.stdout.buffer
    writer = None
    try:
        client = conn.connect()
        for t in request["tickets"]:
            reader = client.do_get(fl.Ticket(base64.b64decode(t)))
            if writer is None:
                writer = pa.ipc.new_stream(out, reader.schema)
            for chunk in reader:
                meta = {_APP_METADATA: chunk.app_metadata.to_pybytes()} if chunk.app_metadata else None
                writer.write_batch(chunk.data, custom_metadata=meta)
        if writer is not None:
            writer.close()
        out.flush()
        return 0
    except _errors.FLIGHT_ERRORS as e:
        err = _errors.translate(e, uri, "DoGet")
        print(json.dumps({"type": type(err).__name__, "message": str(err)}), file=sys.stderr)
        return 1
    except BrokenPipeError:
        return 1  # the worker stopped reading


if __name__ == "__main__":
    sys.exit(main())
