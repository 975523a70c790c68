"""Processes for tests and benchmarks: a MinIO server on 127.0.0.1.

One launcher for the client's tests (python/tests/conftest.py) and the
benchmark harness (bench/harness), which run in different virtual
environments but both have this package. Every process started here dies
with its parent (PR_SET_PDEATHSIG) and is stopped by ``stop()``. Not part of
the client's API: it may change with the tests.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
import uuid
from pathlib import Path
from typing import Dict, List, Optional

__all__ = ["MinIO", "die_with_parent", "find_binary", "free_port"]

_libc = ctypes.CDLL(None, use_errno=True)


def die_with_parent() -> None:
    """preexec_fn: the child gets SIGKILL when its parent dies."""
    _libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def find_binary(name: str) -> Optional[str]:
    """``name`` in $WEFT_TOOLS_BIN, ~/.cache/weft/bin (where ``make tools``
    installs the S3 servers) or $PATH; None if missing."""
    for d in (os.environ.get("WEFT_TOOLS_BIN"), os.path.expanduser("~/.cache/weft/bin")):
        if d and os.access(os.path.join(d, name), os.X_OK):
            return os.path.join(d, name)
    return shutil.which(name)


class MinIO:
    """A MinIO server on a free 127.0.0.1 port, data under ``workdir``."""

    ACCESS, SECRET = "weftminio", "weftminio-secret"

    def __init__(self, binary: str, workdir, timeout: float = 60.0):
        self.port, console = free_port(), free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self._log = open(self.workdir / "minio.log", "ab")
        env = dict(os.environ, MINIO_ROOT_USER=self.ACCESS, MINIO_ROOT_PASSWORD=self.SECRET,
                   MINIO_BROWSER="off", MINIO_UPDATE="off")
        self.proc = subprocess.Popen(
            [binary, "server", "--quiet", "--address", f"127.0.0.1:{self.port}",
             "--console-address", f"127.0.0.1:{console}", str(self.workdir / "data")],
            stdin=subprocess.DEVNULL, stdout=self._log, stderr=self._log, env=env,
            preexec_fn=die_with_parent)
        deadline = time.monotonic() + timeout
        while True:
            try:
                with urllib.request.urlopen(self.endpoint + "/minio/health/ready", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("minio did not start: " + (self.workdir / "minio.log").read_text()[-2000:])
            time.sleep(0.1)
        self._fs = None

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def fs(self):
        """A pyarrow S3FileSystem on this server."""
        if self._fs is None:
            import pyarrow.fs as pafs

            self._fs = pafs.S3FileSystem(access_key=self.ACCESS, secret_key=self.SECRET, region="us-east-1",
                                         endpoint_override=f"127.0.0.1:{self.port}", scheme="http",
                                         allow_bucket_creation=True, allow_bucket_deletion=True)
        return self._fs

    def make_bucket(self, name: str) -> str:
        self.fs.create_dir(name)
        return name

    def new_bucket(self) -> str:
        """A new bucket with a random name."""
        return self.make_bucket("weft-" + uuid.uuid4().hex[:12])

    def buckets(self) -> List[str]:
        import pyarrow.fs as pafs

        return [i.base_name for i in self.fs.get_file_info(pafs.FileSelector("", recursive=False))]

    def has_bucket(self, name: str) -> bool:
        return name in self.buckets()

    def remove_bucket(self, name: str) -> None:
        self.fs.delete_dir(name)

    def env(self, base: Optional[Dict[str, str]] = None) -> Dict[str, str]:
        """``base`` (default os.environ) without AWS_* variables, plus this
        server's endpoint and keys: what flightd needs for s3:// stores."""
        env = {k: v for k, v in (os.environ if base is None else base).items() if not k.startswith("AWS_")}
        return dict(env, AWS_ENDPOINT_URL=self.endpoint, AWS_ACCESS_KEY_ID=self.ACCESS,
                    AWS_SECRET_ACCESS_KEY=self.SECRET, AWS_REGION="us-east-1")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()
