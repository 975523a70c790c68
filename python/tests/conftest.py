"""Fixtures that run a real flightd (and, for the s3 store, a real MinIO).

flightd is the binary named by $WEFT_FLIGHTD (`make test-python` builds
bin/flightd and sets it); without it, the session builds one with `go build`.
MinIO is looked up in $WEFT_TOOLS_BIN, ~/.cache/weft/bin, then $PATH; when it
is missing the minio tests are skipped loudly, or fail under CI=true.

Every process started here gets SIGKILL if pytest dies (PR_SET_PDEATHSIG).
"""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.flight as fl
import pyarrow.fs as pafs
import pytest

from weft.testing import MinIO as _MinIOServer
from weft.testing import die_with_parent as _die_with_parent
from weft.testing import find_binary, free_port  # noqa: F401  (tests import free_port from here)

REPO = Path(__file__).resolve().parents[2]


# ---------------------------------------------------------------- flightd


@pytest.fixture(scope="session")
def flightd_bin(tmp_path_factory):
    path = os.environ.get("WEFT_FLIGHTD")
    if path:
        if not os.access(path, os.X_OK):
            pytest.fail(f"WEFT_FLIGHTD={path} is not an executable")
        return path
    out = tmp_path_factory.mktemp("bin") / "flightd"
    subprocess.run(["go", "build", "-o", str(out), "./cmd/flightd"], cwd=REPO, check=True)
    return str(out)


class Flightd:
    """One flightd process serving a store."""

    def __init__(self, binary, store, workdir, args=()):
        self.binary, self.store, self.workdir, self.args = binary, store, Path(workdir), list(args)
        self.proc = None
        self.addr = None
        self.logs = []
        self._n = 0

    def command(self, *extra):
        return [self.binary, "serve", "--store", self.store.url, "--addr", "127.0.0.1:0",
                "--log-format", "json", "--log-level", "debug", *self.store.args, *self.args, *extra]

    def start(self, timeout=30):
        assert self.proc is None or self.proc.poll() is not None, "already running"
        self._n += 1
        log = self.workdir / f"flightd-{self._n}.log"
        self.logs.append(log)
        with open(log, "wb") as f:
            self.proc = subprocess.Popen(self.command(), stdin=subprocess.DEVNULL, stdout=f, stderr=f,
                                         env=self.store.env, preexec_fn=_die_with_parent)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in log.read_text(errors="replace").splitlines():
                try:
                    rec = json.loads(line)
                except ValueError:
                    continue
                if rec.get("msg") == "serving":
                    self.addr = rec["addr"]
                    return self
            if self.proc.poll() is not None:
                raise RuntimeError(f"flightd exited with {self.proc.returncode}:\n{self.log_text()}")
            time.sleep(0.02)
        self.kill()
        raise RuntimeError(f"flightd did not start within {timeout}s:\n{self.log_text()}")

    @property
    def location(self):
        return f"grpc://{self.addr}"

    def client(self):
        return fl.connect(self.location)

    def stop(self, sig=signal.SIGTERM, timeout=20):
        """Signal the server and wait; returns its exit code."""
        if self.proc is None or self.proc.poll() is not None:
            return None if self.proc is None else self.proc.returncode
        self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise

    def kill(self):
        return self.stop(signal.SIGKILL)

    def log_text(self):
        return "\n".join(f"--- {p.name}\n{p.read_text(errors='replace')}" for p in self.logs if p.exists())


# ---------------------------------------------------------------- stores


class Store:
    """A store URL, the flags and environment flightd needs for it, and a
    way to see everything in it."""

    def __init__(self, kind, url, env, args=(), snapshot=None):
        self.kind, self.url, self.env, self.args = kind, url, env, list(args)
        self._snapshot = snapshot

    def snapshot(self):
        """Every object in the store: {key: (size, mtime)}."""
        return self._snapshot()


def _base_env():
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    return env


def fs_store(path):
    path = Path(path)

    def snapshot():
        out = {}
        for p in sorted(path.rglob("*")):
            rel = p.relative_to(path)
            # .weft* paths are the FS backend's bookkeeping (locks, temp files), not objects.
            if p.is_file() and not any(part.startswith(".weft") for part in rel.parts):
                st = p.stat()
                out[str(rel)] = (st.st_size, st.st_mtime_ns)
        return out

    return Store("fs", str(path), _base_env(), snapshot=snapshot)


class MinIO(_MinIOServer):
    """weft.testing's MinIO, with stores for the fixtures."""

    def env(self):
        return super().env(_base_env())

    def store(self, bucket):
        def snapshot():
            out = {}
            for info in self.fs.get_file_info(pafs.FileSelector(bucket, recursive=True)):
                if info.type == pafs.FileType.File:
                    out[info.path] = (info.size, info.mtime_ns)
            return out

        return Store("minio", f"s3://{bucket}", self.env(), snapshot=snapshot)


@pytest.fixture(scope="session")
def minio(tmp_path_factory):
    binary = find_binary("minio")
    if binary is None:
        msg = ("minio binary not found in $WEFT_TOOLS_BIN, ~/.cache/weft/bin or $PATH; "
               "run `make tools` to install it")
        if os.environ.get("CI") == "true":
            pytest.fail(msg)
        print(f"\n*** SKIPPING the MinIO tests: {msg} ***", file=sys.stderr)
        pytest.skip(msg)
    server = MinIO(binary, tmp_path_factory.mktemp("minio"))
    yield server
    server.stop()


@pytest.fixture(params=["fs", "minio"])
def store(request, tmp_path):
    if request.param == "fs":
        return fs_store(tmp_path / "store")
    m = request.getfixturevalue("minio")
    return m.store(m.new_bucket())


# Small row groups and one endpoint per row group, so that tables of a few
# thousand rows have several of each.
SMALL = ("--row-group-rows", "500", "--scan-endpoint-size", "1")


@pytest.fixture
def server(flightd_bin, store, tmp_path):
    d = Flightd(flightd_bin, store, tmp_path, SMALL)
    d.start()
    yield d
    rc = d.stop()
    print(d.log_text()[-20000:])  # shown by pytest only when the test fails
    assert rc in (0, None, -signal.SIGKILL), f"flightd exited with {rc}"


@pytest.fixture
def client(server):
    c = server.client()
    yield c
    c.close()
