"""flightd as a process: flags, exit codes, signals, and crash safety."""

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

import pyarrow.flight as fl
import pytest

from conftest import SMALL, Flightd, fs_store
from weftflight import CODES, action, make_table, put, read, rows, scan_info

SERVE_FLAGS = ["--store", "--addr", "--log-level", "--log-format", "--s3-endpoint", "--s3-access-key",
               "--s3-secret-key", "--s3-region", "--max-message-size", "--scan-batch-size",
               "--scan-endpoint-size", "--scan-prefetch", "--shutdown-grace", "--row-group-rows",
               "--row-group-size", "--commit-attempts"]


def run(binary, *args, env=None, timeout=120):
    return subprocess.run([binary, *args], capture_output=True, text=True, env=env, timeout=timeout,
                          stdin=subprocess.DEVNULL)


def test_help(flightd_bin):
    top = run(flightd_bin, "--help")
    assert top.returncode == 0 and "flightd serve" in top.stdout
    serve = run(flightd_bin, "serve", "--help")
    assert serve.returncode == 0
    for flag in SERVE_FLAGS:
        assert "-" + flag.lstrip("-") + " " in serve.stdout, flag
    assert "./weft-data" in serve.stdout and "127.0.0.1:8815" in serve.stdout
    assert "AWS_ENDPOINT_URL" in serve.stdout and "AWS_ACCESS_KEY_ID" in serve.stdout
    assert run(flightd_bin, "help", "serve").stdout == serve.stdout


@pytest.mark.parametrize("args,names", [
    (["serve", "--nope"], "nope"),
    (["serve", "--max-message-size", "12XB"], "12XB"),
    (["serve", "--log-level", "loud"], "loud"),
    (["serve", "--store", "ftp://x"], "ftp://x"),
    (["serve", "extra"], "extra"),
    (["bogus"], "bogus"),
    ([], "no command"),
])
def test_bad_flags_exit_2(flightd_bin, tmp_path, args, names):
    res = run(flightd_bin, *args)
    assert res.returncode == 2, res
    assert names in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1, res.stderr


def test_unreachable_store_exit_2(flightd_bin, tmp_path):
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, AWS_ENDPOINT_URL=f"http://127.0.0.1:{port}", AWS_ACCESS_KEY_ID="x",
               AWS_SECRET_ACCESS_KEY="y", AWS_REGION="us-east-1")
    res = run(flightd_bin, "serve", "--store", "s3://nobucket", "--addr", "127.0.0.1:0", env=env)
    assert res.returncode == 2, res
    assert "store" in res.stderr and len(res.stderr.strip().splitlines()) == 1, res.stderr

    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    res = run(flightd_bin, "serve", "--store", str(blocker / "store"), "--addr", "127.0.0.1:0")
    assert res.returncode == 2, res
    assert "store" in res.stderr and len(res.stderr.strip().splitlines()) == 1, res.stderr


def test_missing_bucket_exit_2(flightd_bin, minio):
    res = run(flightd_bin, "serve", "--store", "s3://no-such-bucket", "--addr", "127.0.0.1:0", env=minio.env())
    assert res.returncode == 2, res
    assert "no-such-bucket" in res.stderr and len(res.stderr.strip().splitlines()) == 1, res.stderr


def test_addr_in_use_exit_2(flightd_bin, tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        addr = "127.0.0.1:%d" % s.getsockname()[1]
        res = run(flightd_bin, "serve", "--store", str(tmp_path / "s"), "--addr", addr)
    assert res.returncode == 2, res
    assert addr in res.stderr


def test_s3_flags_instead_of_env(flightd_bin, minio, tmp_path):
    bucket = minio.new_bucket()
    store = minio.store(bucket)
    store.env = {k: v for k, v in store.env.items() if not k.startswith("AWS_")}
    store.args = ["--s3-endpoint", minio.endpoint, "--s3-access-key", minio.ACCESS,
                  "--s3-secret-key", minio.SECRET, "--s3-region", "us-east-1"]
    d = Flightd(flightd_bin, store, tmp_path).start()
    try:
        c = d.client()
        action(c, "create_project", {"project": "p"})
        put(c, ["p", "main", "t"], make_table(0, 10))
        assert rows(read(c, scan_info(c, "p", "main", "t"))) == list(range(10))
        assert any(k.endswith("refs/heads/main") for k in store.snapshot())
        c.close()
    finally:
        assert d.stop() == 0, d.log_text()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_signal_exits_0_after_finishing_streams(flightd_bin, store, tmp_path, sig):
    d = Flightd(flightd_bin, store, tmp_path, SMALL).start()
    c = d.client()
    action(c, "create_project", {"project": "p"})
    put(c, ["p", "main", "t"], make_table(0, 3000))
    info = scan_info(c, "p", "main", "t")
    reader = c.do_get(info.endpoints[0].ticket)  # a stream open across the signal
    first = reader.read_chunk().data
    d.proc.send_signal(sig)
    rest = reader.read_all()
    assert first.num_rows + rest.num_rows == 500, "the open stream was finished, not cut"
    assert d.proc.wait(30) == 0, d.log_text()
    log = d.log_text()
    assert "shutting down" in log and '"msg":"stopped"' in log
    c.close()


def test_sigkill_during_put_leaves_branch(flightd_bin, store, tmp_path):
    """SIGKILL flightd while a DoPut streams: after a restart on the same
    store, the branch is at its previous commit with its previous rows, and
    the store takes new puts."""
    d = Flightd(flightd_bin, store, tmp_path, SMALL).start()
    c = d.client()
    action(c, "create_project", {"project": "p"})
    before = put(c, ["p", "main", "t"], make_table(0, 1000))

    batch = make_table(1000, 2000, blob_len=512).to_batches()[0]  # ~1 MiB
    writer, _ = c.do_put(fl.FlightDescriptor.for_path("p", "main", "t"), batch.schema)
    with pytest.raises(Exception):
        for i in range(10000):
            writer.write_batch(batch)
            if i == 40:  # 40 MiB sent: the server is deep in the append
                assert d.kill() == -signal.SIGKILL
        writer.close()
    try:
        writer.close()
    except Exception:
        pass
    c.close()

    d.start()
    c = d.client()
    branches = action(c, "list_branches", {"project": "p"})
    assert branches == [{"branch": "main", "commit": before["commit"]}]
    info = scan_info(c, "p", "main", "t")
    assert info.total_records == 1000
    assert rows(read(c, info)) == list(range(1000))
    after = put(c, ["p", "main", "t"], make_table(1000, 10))
    assert action(c, "log", {"project": "p", "ref": "main", "limit": 2})[1]["commit"] == before["commit"]
    assert scan_info(c, "p", "main", "t").total_records == 1010 and after["rows"] == 10
    c.close()
    assert d.stop() == 0


def test_lost_race_is_aborted(flightd_bin, store, tmp_path):
    """With one commit attempt, concurrent puts to one branch lose races:
    the losers get ABORTED (pyarrow: FlightInternalError, "aborted error"),
    the winners' commits are all there, and no loser's rows are visible."""
    d = Flightd(flightd_bin, store, tmp_path, ["--commit-attempts", "1"]).start()
    c = d.client()
    action(c, "create_project", {"project": "p"})
    cls, text = CODES["Aborted"]
    aborted, won = [], []
    for rnd in range(10):
        errors = []

        def writer(i):
            cc = d.client()
            try:
                won.append(put(cc, ["p", "main", f"t{rnd}-{i}"], make_table(0, 5)))
            except Exception as e:  # noqa: BLE001 - checked below
                errors.append(e)
            finally:
                cc.close()

        threads = [threading.Thread(target=writer, args=(i,)) for i in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for e in errors:
            assert isinstance(e, cls) and text in str(e) and "contended" in str(e), repr(e)
        aborted += errors
        if aborted:
            break
    assert aborted, "no put lost a race in 10 rounds of 6"
    log = action(c, "log", {"project": "p", "ref": "main"})
    assert len(log) == 1 + len(won)
    assert {x["commit"] for x in won} <= {x["commit"] for x in log}
    assert len(list(c.list_flights(b"p"))) == len(won)
    c.close()
    assert d.stop() == 0


CLIENT_THAT_DIES = r"""
import sys, pyarrow as pa, pyarrow.flight as fl
sys.path.insert(0, sys.argv[2])
from weftflight import make_table
c = fl.connect(sys.argv[1])
batch = make_table(5000, 1000, blob_len=512).to_batches()[0]
writer, _ = c.do_put(fl.FlightDescriptor.for_path("p", "main", "t"), batch.schema)
for i in range(100000):
    writer.write_batch(batch)
    if i == 20:
        print("streaming", flush=True)
"""


def test_client_killed_mid_put_commits_nothing(flightd_bin, store, tmp_path, server):
    """A client SIGKILLed in the middle of a DoPut: the branch stays at its
    previous commit and the store goes back to exactly what it held."""
    c = server.client()
    action(c, "create_project", {"project": "p"})
    before = put(c, ["p", "main", "t"], make_table(0, 100))
    snap = store.snapshot()
    here = os.path.dirname(os.path.abspath(__file__))
    proc = subprocess.Popen([sys.executable, "-c", CLIENT_THAT_DIES, server.location, here], stdout=subprocess.PIPE)
    assert proc.stdout.readline().strip() == b"streaming"
    proc.kill()
    proc.wait()
    # Wait until the server has finished the put (its call log line), then look.
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        log = server.log_text()
        if '"code":"Canceled"' in log or '"code":"Unavailable"' in log:
            break
        time.sleep(0.05)
    log = server.log_text()
    assert '"code":"Canceled"' in log or '"code":"Unavailable"' in log, log[-3000:]
    assert store.snapshot() == snap, "the dead client's put left objects behind"
    assert action(c, "list_branches", {"project": "p"}) == [{"branch": "main", "commit": before["commit"]}]
    c.close()


def test_internal_error_is_logged_not_leaked(flightd_bin, tmp_path):
    """A corrupt manifest is a server fault: INTERNAL with an error id; the
    cause (with the file name) is in the server log, not in the message."""
    store = fs_store(tmp_path / "store")
    d = Flightd(flightd_bin, store, tmp_path).start()
    c = d.client()
    action(c, "create_project", {"project": "p"})
    put(c, ["p", "main", "t"], make_table(0, 10))
    [manifest] = (tmp_path / "store" / "projects" / "p" / "manifests").iterdir()
    manifest.write_text('{"format": 1, "table": "t", "files": []}')
    cls, text = CODES["Internal"]
    with pytest.raises(cls) as exc:
        scan_info(c, "p", "main", "t")
    msg = str(exc.value)
    assert text in msg and "error id" in msg and manifest.name not in msg
    error_id = msg.split("error id ")[1].split(")")[0]
    records = [json.loads(line) for line in d.log_text().splitlines() if line.startswith("{")]
    [rec] = [r for r in records if r.get("error_id") == error_id]
    assert rec["msg"] == "internal error" and manifest.name in rec["err"]
    c.close()
    assert d.stop() == 0
