"""MosaicML Streaming (MDS) import: fixtures written by MDSWriter itself
(every encoding but pkl, raw/zstd/gz shards, sha1 + xxh64 hashes),
imported with `flightd import mds` and Table.import_from (fs and MinIO),
every value compared with what MDSWriter encoded."""
import importlib.util
import json
import os
import sys
import types
from decimal import Decimal

import numpy as np
import pytest

import weft
from importutil import cli_import, import_record, serve, upload_dir


def _mds():
    """streaming's writer and encoder, without the package __init__ (which
    imports transformers and the cloud SDKs, not needed to write)."""
    if "streaming" not in sys.modules:
        spec = importlib.util.find_spec("streaming")
        if spec is None:
            pytest.skip("pip install --no-deps -r python/requirements-import.txt")
        root = os.path.dirname(spec.origin)
        for name, sub in [("streaming", ""), ("streaming.base", "base")]:
            m = types.ModuleType(name)
            m.__path__ = [os.path.join(root, sub)]
            sys.modules[name] = m
    from streaming.base.format.mds.encodings import mds_encode
    from streaming.base.format.mds.writer import MDSWriter
    return MDSWriter, mds_encode


COLUMNS = {
    "b": "bytes", "s": "str", "i": "int", "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64",
    "u8": "uint8", "u16": "uint16", "u32": "uint32", "u64": "uint64",
    "f16": "float16", "f32": "float32", "f64": "float64",
    "si": "str_int", "sf": "str_float", "sd": "str_decimal", "j": "json",
    "nd": "ndarray", "ndt": "ndarray:float32", "nds": "ndarray:int16:2,3",
    "jp": "jpeg", "pn": "png", "pl": "pil", "ja": "jpeg_array", "lp": "list[png]",
}


def _sample(i, rng):
    from PIL import Image
    img = Image.fromarray(rng.integers(0, 255, (4 + i % 3, 5, 3), dtype=np.uint8))
    return {
        "b": rng.bytes(int(rng.integers(0, 200))), "s": f"str {i} é", "i": -i * 10**12, "i8": -i % 128, "i16": -i * 7,
        "i32": i * 100000, "i64": -(2**62) + i, "u8": i % 256, "u16": 65535 - i, "u32": 2**32 - 1 - i,
        "u64": 2**64 - 1 - i, "f16": float(np.float16(i / 3)), "f32": float(np.float32(i / 7)), "f64": i / 9,
        "si": i - 50, "sf": i / 11, "sd": Decimal(f"{i}.0{i}"), "j": {"i": i, "l": [1, "x", None]},
        "nd": rng.integers(-5, 5, (2, i % 4 + 1)).astype(["int32", "float64", "uint8"][i % 3]),
        "ndt": rng.random(i % 5 + 1).astype("float32"), "nds": rng.integers(-300, 300, (2, 3)).astype("int16"),
        "jp": img, "pn": img, "pl": img, "ja": [b"\xff\xd8jpeg%d" % k for k in range(i % 3 + 1)], "lp": [img, img],
    }


def _write(MDSWriter, out, samples, compression, hashes=("sha1", "xxh64")):
    with MDSWriter(out=str(out), columns=COLUMNS, compression=compression, hashes=list(hashes), size_limit=1 << 14) as w:
        for s in samples:
            w.write(s)


@pytest.fixture
def mds_fixture(tmp_path):
    MDSWriter, enc = _mds()
    rng = np.random.default_rng(3)
    streams = {}
    for sub, comp in [("raw", None), ("zstd", "zstd"), ("gz", "gz:6")]:
        samples = [_sample(i, rng) for i in range(40)]
        _write(MDSWriter, tmp_path / "mds" / sub, samples, comp)
        streams[sub] = samples
    return tmp_path / "mds", streams, enc


def _check(tbl, samples, enc):
    rows = tbl.to_pylist()
    assert len(rows) == len(samples)
    for r, s in zip(rows, samples):
        for c, e in COLUMNS.items():
            got, want = r[c], s[c]
            if e in ("bytes", "jpeg", "png", "pil"):
                assert got == enc(e, want), c
            elif e == "str":
                assert got == want
            elif e == "str_decimal":
                assert got == str(want)
            elif e == "json":
                assert got == json.dumps(want)
            elif e == "str_float":
                assert got == want
            elif e == "ndarray:int16:2,3":
                assert got == want.flatten().tolist()
            elif e == "ndarray:float32":
                assert got["shape"] == list(want.shape) and np.array(got["data"], np.float32).tobytes() == want.tobytes()
            elif e == "ndarray":
                assert got == {"dtype": want.dtype.name, "shape": list(want.shape), "data": want.tobytes()}, c
            elif e == "jpeg_array":
                assert got == want
            elif e == "list[png]":
                assert got == [enc("png", im) for im in want]
            else:
                assert got == want, (c, got, want)


def test_cli_every_encoding_and_compression(flightd_bin, tmp_path, mds_fixture):
    from conftest import fs_store
    root, streams, enc = mds_fixture
    store = fs_store(tmp_path / "store")
    cli_import(flightd_bin, store, "mds", str(root))
    d = serve(flightd_bin, store, tmp_path)
    try:
        ref = weft.Client(d.location).project("p").branch("main")
        for sub, samples in streams.items():
            _check(ref.table(f"t.{sub}").read(), samples, enc)
        rec = import_record(ref.log(limit=1)[0].message)
        assert rec["format"] == "mds" and rec["format_version"] == "mds index v2"
        assert rec["tables"] == {"t.raw": 40, "t.zstd": 40, "t.gz": 40}
    finally:
        d.stop()


def test_import_from_server_side(flightd_bin, store, minio, tmp_path, mds_fixture):
    root, streams, enc = mds_fixture
    if store.kind == "minio":
        src = upload_dir(minio, root / "zstd")
        d = serve(flightd_bin, store, tmp_path)
    else:
        src = str(root / "zstd")
        d = serve(flightd_bin, store, tmp_path, "--import-root", str(root))
    try:
        c = weft.Client(d.location)
        c.create_project("p")
        t = c.project("p").branch("main").table("t")
        t.import_from("mds", src, progress=False)
        _check(t.read(), streams["zstd"], enc)
    finally:
        d.stop()


def test_server_side_import_is_bounded_by_the_memory_limit(flightd_bin, store, tmp_path, mds_fixture):
    """A server-side import holds an MDS shard whole: on this server its
    max_shard_bytes is at most half of what the budget leaves after the
    writer's buffers (halved again: compressed and decompressed); more is
    refused before anything is read, and the import within it succeeds,
    leasing from --memory-limit."""
    root, streams, enc = mds_fixture
    d = serve(flightd_bin, store, tmp_path, "--import-root", str(root), "--memory-limit", "1GiB")
    try:
        c = weft.Client(d.location)
        c.create_project("p")
        t = c.project("p").branch("main").table("t")
        with pytest.raises(weft.WeftError, match="max_shard_bytes=1073741824 is over what this server lets an import hold"):
            t.import_from("mds", str(root / "zstd"), progress=False, max_shard_bytes=str(1 << 30))
        assert len(c.project("p").log("main")) == 1, "nothing committed"
        t.import_from("mds", str(root / "zstd"), progress=False)
        _check(t.read(), streams["zstd"], enc)
    finally:
        d.stop()


def _refs(s):
    return {k: v for k, v in s.items() if "/refs/heads/" in k}


def test_bad_input_commits_nothing(flightd_bin, tmp_path, mds_fixture):
    from conftest import fs_store
    MDSWriter, _ = _mds()
    root, _, _ = mds_fixture
    store = fs_store(tmp_path / "store")
    cli_import(flightd_bin, store, "mds", str(root / "raw"))
    before = store.snapshot()

    # A hash mismatch: one byte of a shard changed.
    shard = sorted((root / "raw").glob("shard.*.mds"))[1]
    data = bytearray(shard.read_bytes())
    data[-1] ^= 0xFF
    shard.write_bytes(bytes(data))
    r = cli_import(flightd_bin, store, "mds", str(root / "raw"), check=False)
    assert r.returncode != 0 and shard.name in r.stderr and "hash mismatch" in r.stderr, r.stderr

    # A corrupt compressed shard.
    z = sorted((root / "zstd").glob("shard.*.mds.zstd"))[0]
    z.write_bytes(z.read_bytes()[:20])
    r = cli_import(flightd_bin, store, "mds", str(root / "zstd"), check=False)
    assert r.returncode != 0 and z.name in r.stderr, r.stderr

    # No index.json.
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "shard.00000.mds").write_bytes(b"x")
    r = cli_import(flightd_bin, store, "mds", str(tmp_path / "empty"), check=False)
    assert r.returncode != 0 and "index.json" in r.stderr, r.stderr

    # A pkl column.
    with MDSWriter(out=str(tmp_path / "pkl"), columns={"x": "pkl"}) as w:
        w.write({"x": {"a": 1}})
    r = cli_import(flightd_bin, store, "mds", str(tmp_path / "pkl"), check=False)
    assert r.returncode != 0 and "pkl" in r.stderr and "never unpickles" in r.stderr, r.stderr

    after = store.snapshot()
    assert _refs(after) == _refs(before)
    assert {k for k in after if "/data/" in k} == {k for k in before if "/data/" in k}
