"""Tokens, TLS and idempotent appends from Python, against a real flightd
(fs store): weft.Client(token=…) and $WEFT_TOKEN, pyarrow.flight over TLS
with a certificate made here, a ScanDataset whose forked DataLoader workers
read through the relay with the token, and appends retried with their
idempotency key."""

import json
import subprocess

import pyarrow.flight as fl
import pytest
from torch.utils.data import DataLoader

import weft
from conftest import SMALL, Flightd, fs_store
from weftflight import make_table


def admin(flightd_bin, store, *args):
    out = subprocess.run([flightd_bin, "admin", *args, "--store", store.url], capture_output=True, text=True, env=store.env)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


@pytest.fixture
def secured(flightd_bin, tmp_path):
    """A flightd with --auth tokens on loopback, and tokens: root (global
    admin), reader (read on robotics), other (read on another project)."""
    store = fs_store(tmp_path / "store")
    (tmp_path / "store").mkdir()
    tokens = {
        "root": admin(flightd_bin, store, "token", "create", "--global-admin", "--name", "root"),
        "reader": admin(flightd_bin, store, "token", "create", "--project", "robotics", "--scope", "read", "--name", "reader"),
        "other": admin(flightd_bin, store, "token", "create", "--project", "elsewhere", "--scope", "read", "--name", "other"),
    }
    d = Flightd(flightd_bin, store, tmp_path, [*SMALL, "--auth", "tokens"])
    d.start()
    d.tokens = tokens
    yield d
    d.stop()
    print(d.log_text()[-20000:])


def test_token_from_argument_and_environment(secured, monkeypatch):
    monkeypatch.delenv("WEFT_TOKEN", raising=False)
    anonymous = weft.Client(secured.location)
    with pytest.raises(weft.Unauthenticated, match="token"):
        anonymous.create_project("robotics")
    with pytest.raises(weft.Unauthenticated):
        weft.Client(secured.location, token="weft_" + "A" * 43).project("robotics").branches()

    root = weft.Client(secured.location, token=secured.tokens["root"])
    main = root.create_project("robotics").branch("main")
    main.table("t").append(make_table(0, 1000))
    assert "weft_" not in repr(root)

    monkeypatch.setenv("WEFT_TOKEN", secured.tokens["reader"])
    reader = weft.Client(secured.location)
    table = reader.project("robotics").branch("main").table("t")
    assert table.read().num_rows == 1000
    with pytest.raises(weft.PermissionDenied, match="needs write"):
        table.append(make_table(1000, 10))
    with pytest.raises(weft.PermissionDenied):
        reader.create_project("mine")

    other = weft.Client(secured.location, token=secured.tokens["other"])
    with pytest.raises(weft.PermissionDenied, match='project "robotics"'):
        other.project("robotics").branch("main").table("t").read()
    assert other.tables() == {}, "ListFlights shows only readable projects"
    assert reader.tables() == {("robotics", "t"): 1000}

    # A raw pyarrow client passes the header itself.
    raw = fl.connect(secured.location)
    opts = fl.FlightCallOptions(headers=[(b"authorization", f"Bearer {secured.tokens['reader']}".encode())])
    info = raw.get_flight_info(fl.FlightDescriptor.for_path("robotics", "main", "t"), opts)
    assert info.total_records == 1000
    with pytest.raises(fl.FlightUnauthenticatedError):
        raw.get_flight_info(fl.FlightDescriptor.for_path("robotics", "main", "t"))


def test_scan_dataset_forked_workers_with_token(secured, monkeypatch):
    """Forked DataLoader workers read through the relay process, which
    gets the token (and would get the TLS settings) on its stdin."""
    monkeypatch.delenv("WEFT_TOKEN", raising=False)
    root = weft.Client(secured.location, token=secured.tokens["root"])
    root.create_project("robotics").branch("main").table("t").append(make_table(0, 2345))
    reader = weft.Client(secured.location, token=secured.tokens["reader"])
    scan = reader.project("robotics").branch("main").table("t").scan_request(["id"])
    ds = weft.ScanDataset(scan, batch_size=100)
    assert len(ds.plan.tickets) > 2  # the parent used gRPC: workers are forked after it
    ids = []
    for batch in DataLoader(ds, batch_size=None, num_workers=2, timeout=60, multiprocessing_context="fork"):
        ids.extend(batch["id"].tolist())
    assert sorted(ids) == list(range(2345))


def make_pki(tmp_path):
    """A CA and a server certificate for 127.0.0.1, made with openssl."""
    def run(*args):
        subprocess.run(["openssl", *args], check=True, capture_output=True, cwd=tmp_path)
    run("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", "ca-key.pem",
        "-out", "ca.pem", "-days", "1", "-subj", "/CN=weft test CA")
    run("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", "server-key.pem",
        "-out", "server.csr", "-subj", "/CN=127.0.0.1")
    (tmp_path / "ext.cnf").write_text("subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n")
    run("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca-key.pem", "-CAcreateserial",
        "-out", "server.pem", "-days", "1", "-extfile", "ext.cnf")
    return tmp_path / "ca.pem", tmp_path / "server.pem", tmp_path / "server-key.pem"


def test_tls_end_to_end(flightd_bin, tmp_path, monkeypatch):
    monkeypatch.delenv("WEFT_TOKEN", raising=False)
    pki = tmp_path / "pki"
    pki.mkdir()
    ca, cert, key = make_pki(pki)
    store = fs_store(tmp_path / "store")
    (tmp_path / "store").mkdir()
    token = admin(flightd_bin, store, "token", "create", "--global-admin")
    d = Flightd(flightd_bin, store, tmp_path, [*SMALL, "--auth", "tokens", "--tls-cert", str(cert), "--tls-key", str(key)])
    d.start()
    try:
        uri = f"grpc+tls://{d.addr}"
        # pyarrow.flight itself, trusting the test CA.
        raw = fl.connect(uri, tls_root_certs=ca.read_bytes())
        opts = fl.FlightCallOptions(headers=[(b"authorization", f"Bearer {token}".encode())])
        [res] = raw.do_action(fl.Action("create_project", json.dumps({"project": "robotics"}).encode()), opts)
        assert json.loads(res.body.to_pybytes())["branch"] == "main"

        # The weft client: a CA file path, or PEM bytes.
        c = weft.Client(uri, token=token, tls_root_certs=str(ca))
        t = c.project("robotics").branch("main").table("t")
        t.append(make_table(0, 500))
        assert weft.Client(uri, token=token, tls_root_certs=ca.read_bytes()).project("robotics").branch("main") \
            .table("t").read().num_rows == 500
        # A pickled copy (what a spawned worker gets) keeps token and TLS.
        import pickle
        assert pickle.loads(pickle.dumps(c)).project("robotics").branch("main").table("t").num_rows() == 500
        # Not trusting the CA: unavailable; without TLS: unavailable.
        with pytest.raises(weft.Unavailable):
            weft.Client(uri, token=token).project("robotics").branches()
        with pytest.raises(weft.Unavailable):
            weft.Client(f"grpc://{d.addr}", token=token, timeout=10).project("robotics").branches()
        # disable_server_verification only when asked.
        assert "main" in weft.Client(uri, token=token, disable_server_verification=True).project("robotics").branches()
        with pytest.raises(weft.InvalidArgument, match="grpc\\+tls"):
            weft.Client(f"grpc://{d.addr}", tls_root_certs=ca.read_bytes())
    finally:
        d.stop()
        print(d.log_text()[-20000:])


def test_idempotent_append(server, monkeypatch):
    """The same key twice: one commit, the rows once; the second put is
    answered as replayed. (What a retry after a lost acknowledgement does.)"""
    monkeypatch.delenv("WEFT_TOKEN", raising=False)
    c = weft.Client(server.location)
    main = c.create_project("p").branch("main")
    t = main.table("t")
    data = make_table(0, 700)
    first = t.put(data, idempotency_key="retry-me-1")
    assert first == {"commit": first["commit"], "rows": 700}  # "replayed" only when true
    again = t.put(data, idempotency_key="retry-me-1")
    assert again == {"commit": first["commit"], "rows": 700, "replayed": True}
    assert t.append(data, idempotency_key="retry-me-1") == first["commit"]
    assert t.num_rows() == 700
    assert len(main.log()) == 2  # the root commit and one put
    # append sets a fresh key per call: two appends are two commits.
    t.append(data)
    t.append(data)
    assert t.num_rows() == 2100
    with pytest.raises(weft.InvalidArgument, match="idempotency key"):
        t.put(data, idempotency_key="has space")
    with pytest.raises(weft.InvalidArgument, match="new key"):
        main.table("u").put(data, idempotency_key="retry-me-1")


def test_append_retries_when_the_server_is_unavailable(flightd_bin, tmp_path, monkeypatch):
    """A server that is down when the append starts and up a moment later:
    the append retries with its key and commits once."""
    import socket
    import threading

    monkeypatch.delenv("WEFT_TOKEN", raising=False)
    store = fs_store(tmp_path / "store")
    (tmp_path / "store").mkdir()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]

    class Fixed(Flightd):
        def command(self, *extra):
            return [*super().command(*extra), "--addr", f"127.0.0.1:{port}"]

    d = Fixed(flightd_bin, store, tmp_path, SMALL)
    d.start()
    c = weft.Client(f"grpc://127.0.0.1:{port}", timeout=20)
    t = c.create_project("p").branch("main").table("t")
    d.stop()
    # The append runs in a thread; the server restarts from this one (its
    # child dies with the thread that started it: PR_SET_PDEATHSIG).
    result = {}

    def append():
        try:
            result["commit"] = t.append(make_table(0, 300), retries=8)
        except Exception as e:  # noqa: BLE001 - checked below
            result["error"] = e

    worker = threading.Thread(target=append)
    worker.start()
    try:
        import time
        time.sleep(1.0)  # let the first attempt fail
        d.start()
        worker.join(60)
        assert not worker.is_alive()
        assert "error" not in result, result.get("error")
        assert t.num_rows() == 300
        assert c.project("p").branch("main").head() == result["commit"]
    finally:
        d.stop()
