"""flightd and MinIO processes (MinIO from weft.testing, shared with
python/tests/conftest.py); every process started here dies with the harness
(PR_SET_PDEATHSIG) and is stopped by the context managers."""

import contextlib
import json
import signal
import subprocess
import threading
import time
from pathlib import Path

from weft.testing import MinIO as _MinIO
from weft.testing import die_with_parent, free_port  # noqa: F401  (the harness's names for them)


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


def MinIO(binary, workdir, log):
    """weft.testing's MinIO (the one the client's tests use), logged."""
    m = _MinIO(binary, workdir)
    log(f"minio: serving {m.endpoint} (pid {m.pid}, data {m.workdir / 'data'})")
    return m


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
