"""flightd and MinIO processes, started the way python/tests/conftest.py
starts them; every process started here dies with the harness
(PR_SET_PDEATHSIG) and is stopped by the context managers."""

import contextlib
import ctypes
import json
import os
import signal
import socket
import subprocess
import threading
import time
import urllib.request
from pathlib import Path

_libc = ctypes.CDLL(None, use_errno=True)


def die_with_parent():
    _libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def status_kb(pid, field):
    """VmHWM / VmRSS of a live process, in bytes (None if gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


class RSSSampler:
    """Peak VmRSS of some processes, sampled every 50 ms (for servers that
    outlive one run, where VmHWM would include earlier work)."""

    def __init__(self, pids):
        self.pids, self.peak = dict(pids), {k: 0 for k in pids}
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._loop, daemon=True)
        self._t.start()

    def _loop(self):
        while not self._stop.is_set():
            for k, pid in self.pids.items():
                v = status_kb(pid, "VmRSS") or 0
                self.peak[k] = max(self.peak[k], v)
            self._stop.wait(0.05)

    def stop(self):
        self._stop.set()
        self._t.join()
        return self.peak


class MinIO:
    ACCESS, SECRET = "weftminio", "weftminio-secret"

    def __init__(self, binary, workdir, log):
        self.port, console = free_port(), free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        workdir = Path(workdir)
        workdir.mkdir(parents=True, exist_ok=True)
        self.logf = open(workdir / "minio.log", "ab")
        env = dict(os.environ, MINIO_ROOT_USER=self.ACCESS, MINIO_ROOT_PASSWORD=self.SECRET,
                   MINIO_BROWSER="off", MINIO_UPDATE="off")
        self.proc = subprocess.Popen(
            [binary, "server", "--quiet", "--address", f"127.0.0.1:{self.port}",
             "--console-address", f"127.0.0.1:{console}", str(workdir / "data")],
            stdin=subprocess.DEVNULL, stdout=self.logf, stderr=self.logf, env=env, preexec_fn=die_with_parent)
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(self.endpoint + "/minio/health/ready", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"minio did not start: {(workdir / 'minio.log').read_text()[-2000:]}")
            time.sleep(0.1)
        log(f"minio: serving {self.endpoint} (pid {self.proc.pid}, data {workdir / 'data'})")

    def _fs(self):
        import pyarrow.fs as pafs

        return pafs.S3FileSystem(access_key=self.ACCESS, secret_key=self.SECRET, region="us-east-1",
                                 endpoint_override=f"127.0.0.1:{self.port}", scheme="http",
                                 allow_bucket_creation=True, allow_bucket_deletion=True)

    def make_bucket(self, name):
        self._fs().create_dir(name)

    def buckets(self):
        import pyarrow.fs as pafs

        return [i.base_name for i in self._fs().get_file_info(pafs.FileSelector("", recursive=False))]

    def has_bucket(self, name):
        return name in self.buckets()

    def remove_bucket(self, name):
        self._fs().delete_dir(name)

    def env(self):
        env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        return dict(env, AWS_ENDPOINT_URL=self.endpoint, AWS_ACCESS_KEY_ID=self.ACCESS,
                    AWS_SECRET_ACCESS_KEY=self.SECRET, AWS_REGION="us-east-1")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.logf.close()


class Flightd:
    def __init__(self, binary, store, env, logpath, args=()):
        self.logpath = Path(logpath)
        self.logpath.parent.mkdir(parents=True, exist_ok=True)
        self.cmd = [binary, "serve", "--store", store, "--addr", "127.0.0.1:0", "--log-format", "json", *args]
        with open(self.logpath, "wb") as f:
            self.proc = subprocess.Popen(self.cmd, stdin=subprocess.DEVNULL, stdout=f, stderr=f, env=env,
                                         preexec_fn=die_with_parent)
        deadline = time.monotonic() + 60
        self.addr = None
        while self.addr is None:
            for line in self.logpath.read_text(errors="replace").splitlines():
                try:
                    rec = json.loads(line)
                except ValueError:
                    continue
                if rec.get("msg") == "serving":
                    self.addr = rec["addr"]
            if self.addr is None:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(f"flightd did not start: {self.logpath.read_text()[-2000:]}")
                time.sleep(0.02)

    @property
    def pid(self):
        return self.proc.pid

    def hwm(self):
        return status_kb(self.proc.pid, "VmHWM")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@contextlib.contextmanager
def flightd(binary, store, env, logpath, args=()):
    d = Flightd(binary, store, env, logpath, args)
    try:
        yield d
    finally:
        d.stop()
