"""WebDataset import: fixtures written by webdataset's own TarWriter /
ShardWriter, imported with `flightd import wds` (CLI) and
Table.import_from (server-side, fs and MinIO), every row compared
bytes-exactly with the tar members."""
import gzip
import io
import json
import os
import signal
import subprocess
import tarfile
import time

import pytest

wds = pytest.importorskip("webdataset", reason="pip install --no-deps -r python/requirements-import.txt")

import weft  # noqa: E402
from importutil import cli_import, import_record, serve, upload_dir  # noqa: E402


def _samples(n, seed=0):
    rng = __import__("random").Random(seed)
    out = []
    for i in range(n):
        s = {"__key__": f"sample{i:05d}", "jpg": rng.randbytes(rng.randint(0, 3000)), "cls": i % 7,
             "txt": f"caption {i} ü", "json": {"i": i, "tags": ["a", "b"][: i % 3]}, "seg.png": rng.randbytes(50)}
        if i % 5 == 3:
            del s["txt"]  # a missing member: null
        if i % 11 == 4:
            del s["seg.png"]
        out.append(s)
    return out


def _members(paths):
    """{key: {ext: bytes}} read from the tars with tarfile (not webdataset)."""
    out = {}
    for p in paths:
        with tarfile.open(p) as tf:
            for m in tf:
                if not m.isfile():
                    continue
                d, b = os.path.split(m.name)
                key, ext = b.split(".", 1)
                out.setdefault(os.path.join(d, key) if d else key, {})[ext] = tf.extractfile(m).read()
    return out


@pytest.fixture
def wds_dir(tmp_path):
    d = tmp_path / "wds"
    d.mkdir()
    samples = _samples(60)
    with wds.ShardWriter(str(d / "shard-%06d.tar"), maxcount=25, verbose=0) as sink:
        for s in samples[:50]:
            sink.write(s)
    # A gzip'd shard, by TarWriter itself.
    with wds.TarWriter(str(d / "shard-000002.tar.gz"), compress=True) as sink:
        for s in samples[50:]:
            sink.write(s)
    os.rename(d / "shard-000002.tar.gz", d / "shard-000002.tar")
    return d


def _expected(d):
    paths = sorted(d.glob("shard-*.tar"))
    return _members(paths)


def _check_table(tbl, expected):
    rows = tbl.to_pylist()
    assert len(rows) == len(expected)
    assert [r["__key__"] for r in rows] == sorted(expected)  # shard order = key order here
    for r in rows:
        want = expected[r["__key__"]]
        for ext in ("jpg", "cls", "txt", "json", "seg.png"):
            got = r[ext]
            if ext not in want:
                assert got is None, (r["__key__"], ext)
                continue
            if ext == "cls":
                assert str(got).encode() == want[ext]
            elif ext in ("txt", "json"):
                assert got.encode() == want[ext]
            else:
                assert got == want[ext]
    # typed columns
    assert str(tbl.schema.field("cls").type) == "int64"
    assert str(tbl.schema.field("txt").type) == "string"
    assert str(tbl.schema.field("jpg").type) == "binary"
    assert tbl.schema.field("json").metadata[b"weft.wds.encoding"] == b"json"


def test_cli_import_fs_and_brace_pattern(flightd_bin, tmp_path, wds_dir):
    from conftest import fs_store
    store = fs_store(tmp_path / "store")
    r = cli_import(flightd_bin, store, "wds", str(wds_dir / "shard-{000000..000002}.tar"))
    commit = r.stdout.strip()
    d = serve(flightd_bin, store, tmp_path)
    try:
        c = weft.Client(d.location)
        tbl = c.project("p").branch("main").table("t").read()
        _check_table(tbl, _expected(wds_dir))
        [log] = c.project("p").branch("main").log(limit=1)
        assert log.id == commit
        rec = import_record(log.message)
        assert rec["format"] == "wds" and rec["source"].endswith("shard-{000000..000002}.tar")
        assert rec["rows"] == 60 and rec["files"] == 3 and rec["tables"] == {"t": 60}
    finally:
        d.stop()


def test_import_from_server_side(flightd_bin, store, minio, tmp_path, wds_dir):
    """bucket -> flightd -> bucket for MinIO stores; an --import-root
    directory for fs stores."""
    if store.kind == "minio":
        src = upload_dir(minio, wds_dir) + "/shard-*.tar"
        d = serve(flightd_bin, store, tmp_path)
    else:
        src = str(wds_dir)
        d = serve(flightd_bin, store, tmp_path, "--import-root", str(wds_dir.parent))
    try:
        c = weft.Client(d.location)
        c.create_project("p")
        t = c.project("p").branch("main").table("t")
        seen = []
        commit = t.import_from("wds", src, on_progress=seen.append, progress=False)
        assert t.ref.head() == commit
        _check_table(t.read(), _expected(wds_dir))
        assert seen and seen[-1]["done"] and seen[-1]["rows"] == 60
    finally:
        d.stop()


def test_server_refuses_paths_outside_roots(flightd_bin, tmp_path, wds_dir):
    from conftest import fs_store
    import weft
    store = fs_store(tmp_path / "store")
    d = serve(flightd_bin, store, tmp_path)  # no --import-root: no local paths at all
    try:
        c = weft.Client(d.location)
        c.create_project("p")
        t = c.project("p").branch("main").table("t")
        head = t.ref.head()
        with pytest.raises(weft.WeftError, match="import-root"):
            t.import_from("wds", str(wds_dir), progress=False)
        assert t.ref.head() == head
    finally:
        d.stop()
    d = serve(flightd_bin, store, tmp_path, "--import-root", str(tmp_path / "elsewhere"))
    try:
        t = weft.Client(d.location).project("p").branch("main").table("t")
        with pytest.raises(weft.WeftError, match="not under an import root"):
            t.import_from("wds", str(wds_dir), progress=False)
        with pytest.raises(weft.WeftError, match="not under an import root"):
            t.import_from("wds", str(tmp_path / "elsewhere" / ".." / "wds"), progress=False)
    finally:
        d.stop()


def _tar(path, members, gz=False):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:
        for name, data in members:
            ti = tarfile.TarInfo(name)
            ti.size = len(data)
            tf.addfile(ti, io.BytesIO(data))
    raw = buf.getvalue()
    path.write_bytes(gzip.compress(raw) if gz else raw)
    return raw


BAD = {
    "truncated": (lambda p: p.write_bytes(_tar(p, [("a.jpg", b"x" * 5000), ("b.jpg", b"y" * 5000)])[:3000]),
                  ["bad.tar", "truncated", "a.jpg"]),
    "duplicate_key": (lambda p: _tar(p, [("a.jpg", b"1"), ("b.jpg", b"2"), ("a.cls", b"3")]), ["bad.tar", "key", "a"]),
    "pickle": (lambda p: _tar(p, [("a.jpg", b"1"), ("a.pyd", b"\x80\x04K\x01.")]), ["bad.tar", "a.pyd", "never unpickles"]),
    "path_trick": (lambda p: _tar(p, [("../../etc/a.jpg", b"1")]), ["bad.tar", "../../etc/a.jpg"]),
    "two_members_same_ext": (lambda p: _tar(p, [("a.jpg", b"1"), ("a.jpg", b"2")]), ["bad.tar", "a.jpg"]),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_input_commits_nothing(flightd_bin, tmp_path, case):
    from conftest import fs_store
    store = fs_store(tmp_path / "store")
    good = tmp_path / "good"
    good.mkdir()
    _tar(good / "ok.tar", [("k.jpg", b"1")])
    cli_import(flightd_bin, store, "wds", str(good))
    before = store.snapshot()
    bad = tmp_path / "bad"
    bad.mkdir()
    make, words = BAD[case]
    make(bad / "bad.tar")
    r = cli_import(flightd_bin, store, "wds", str(bad), check=False)
    assert r.returncode != 0
    for w in words:
        assert w in r.stderr, r.stderr
    after = store.snapshot()
    refs = lambda s: {k: v for k, v in s.items() if "/refs/heads/" in k}
    assert refs(after) == refs(before)
    data = lambda s: {k for k in s if "/data/" in k}
    assert data(after) == data(before), "the failed import's data files were not deleted"


def test_pickle_kept_as_bytes_when_asked(flightd_bin, tmp_path):
    from conftest import fs_store
    store = fs_store(tmp_path / "store")
    src = tmp_path / "src"
    src.mkdir()
    _tar(src / "s.tar", [("a.jpg", b"1"), ("a.pyd", b"\x80\x04K\x01.")])
    cli_import(flightd_bin, store, "wds", str(src), extra=["--opt", "pickle=bytes"])


def test_kill_mid_import_leaves_no_commit(flightd_bin, tmp_path):
    from conftest import fs_store
    store = fs_store(tmp_path / "store")
    src = tmp_path / "big"
    src.mkdir()
    rng = __import__("random").Random(1)
    blob = rng.randbytes(1 << 20)
    for s in range(48):
        _tar(src / f"shard-{s:03d}.tar", [(f"s{s:03d}k{i:03d}.bin", blob[i:] + blob[:i]) for i in range(12)])
    cli_import(flightd_bin, store, "wds", str(src / "shard-000.tar"))  # creates the project
    before = store.snapshot()
    refs = lambda s: {k: v for k, v in s.items() if "/refs/heads/" in k}
    env = dict(store.env)
    proc = subprocess.Popen([flightd_bin, "import", "wds", str(src), "--store", store.url, "--project", "p",
                             "--table", "big"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    # Kill once it has read about a third of the 48 MiB of shards (its
    # survey seeks over the members, so these are the writing pass's reads).
    deadline = time.time() + 60
    while time.time() < deadline and proc.poll() is None:
        try:
            io_stats = dict(line.split(": ") for line in open(f"/proc/{proc.pid}/io").read().splitlines())
        except OSError:
            break
        if int(io_stats["rchar"]) > 16 << 20:
            break
        time.sleep(0.005)
    assert proc.poll() is None, "the import finished before it could be killed; make the fixture bigger"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert refs(store.snapshot()) == refs(before)
    r = cli_import(flightd_bin, store, "wds", str(src), table="big")
    assert r.returncode == 0
