"""Hugging Face datasets import: fixtures written by `datasets` itself
(save_to_disk of a DatasetDict with several shards, and to_parquet in two
Hub layouts), imported with `flightd import hf` and Table.import_from (fs
and MinIO); every row compared with what datasets / pyarrow read from the
same files (bytes-exact for binary, types equal); bad input commits nothing."""
import io
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import weft
from importutil import cli_import, import_record, serve, upload_dir

datasets = pytest.importorskip("datasets", reason="pip install --no-deps -r python/requirements-import.txt")


def _png(i):
    from PIL import Image
    b = io.BytesIO()
    Image.new("RGB", (3 + i % 4, 2), (i % 256, 7, 9)).save(b, "PNG")
    return b.getvalue()


FEATURES = datasets.Features({
    "label": datasets.ClassLabel(names=["cat", "dog", "eel"]),
    "image": datasets.Image(),
    "text": datasets.Value("string"),
    "nest": {"a": datasets.Value("int32"), "b": datasets.List(datasets.Value("float32")),
             "tag": datasets.ClassLabel(names=["x", "y"])},
    "pair": datasets.Sequence(datasets.Value("int16"), length=2),
    "opt": datasets.Value("int64"),
})


def _rows(n, seed):
    out = {k: [] for k in FEATURES}
    for i in range(n):
        j = i + seed
        out["label"].append(None if j % 7 == 3 else j % 3)
        out["image"].append(None if j % 5 == 4 else {"bytes": _png(j), "path": f"img{j}.png" if j % 2 else None})
        out["text"].append(None if j % 6 == 1 else f"row {j} é")
        out["nest"].append(None if j % 9 == 8 else {"a": j, "b": [j / 2] * (j % 3), "tag": j % 2})
        out["pair"].append([j, -j])
        out["opt"].append(None if j % 4 == 0 else j * 10**10)
    return out


@pytest.fixture
def hf_fixture(tmp_path):
    datasets.disable_progress_bars()
    train = datasets.Dataset.from_dict(_rows(30, 0), features=FEATURES)
    test = datasets.Dataset.from_dict(_rows(7, 100), features=FEATURES)
    dd = datasets.DatasetDict(train=train, test=test)
    dd.save_to_disk(str(tmp_path / "disk"), num_shards={"train": 3, "test": 1})
    for split, ds, k in [("train", train, 2), ("test", test, 1)]:
        for s in range(k):
            part = ds.shard(k, s, contiguous=True)
            part.to_parquet(str(tmp_path / "hub" / "data" / f"{split}-{s:05d}-of-{k:05d}.parquet"))
            part.to_parquet(str(tmp_path / "cfg" / "default" / split / f"{s:04d}.parquet"))
    return tmp_path


def _ref_disk(root, split):
    return datasets.load_from_disk(str(root / "disk"))[split].data.table


def _ref_parquet(files):
    return pa.concat_tables([pq.read_table(f) for f in sorted(files)])


def _same(got, ref, split_col=None):
    """Every row and type equal; the features in the field metadata."""
    cols = [c for c in got.column_names if c != "split"]
    assert cols == ref.column_names
    assert got.num_rows == ref.num_rows
    for c in cols:
        assert got.schema.field(c).type == ref.schema.field(c).type, c
        assert got.column(c).to_pylist() == ref.column(c).to_pylist(), c
    md = got.schema.field("label").metadata or {}
    assert json.loads(md[b"weft.hf.class_names"]) == ["cat", "dog", "eel"]
    assert json.loads(got.schema.field("image").metadata[b"weft.hf.feature"]) == {"_type": "Image"}
    tag = got.schema.field("nest").type.field("tag")
    assert json.loads(tag.metadata[b"weft.hf.class_names"]) == ["x", "y"]
    # datasets reads its features back from the kept schema metadata.
    if split_col is None:
        assert datasets.Features.from_arrow_schema(got.schema) == FEATURES


def test_cli_save_to_disk_and_hub_layouts(flightd_bin, tmp_path, hf_fixture):
    from conftest import fs_store
    root = hf_fixture
    store = fs_store(tmp_path / "store")
    cli_import(flightd_bin, store, "hf", str(root / "disk"), table="d")
    cli_import(flightd_bin, store, "hf", str(root / "disk"), table="c", extra=["--opt", "splits=column"])
    cli_import(flightd_bin, store, "hf", str(root / "hub"), table="h")
    cli_import(flightd_bin, store, "hf", str(root / "cfg"), table="g", extra=["--opt", "split=test"])
    d = serve(flightd_bin, store, tmp_path)
    try:
        ref = weft.Client(d.location).project("p").branch("main")
        for split in ["train", "test"]:
            _same(ref.table(f"d.{split}").read(), _ref_disk(root, split))
            _same(ref.table(f"h.{split}").read(), _ref_parquet((root / "hub" / "data").glob(f"{split}-*.parquet")))
        _same(ref.table("g").read(), _ref_parquet((root / "cfg" / "default" / "test").glob("*.parquet")))
        col = ref.table("c").read()
        assert col.column("split").to_pylist() == ["train"] * 30 + ["test"] * 7
        _same(col, pa.concat_tables([_ref_disk(root, "train"), _ref_disk(root, "test")]), split_col=True)
        log = ref.log(limit=4)
        rec = import_record(log[-1].message)
        assert rec["format"] == "hf" and rec["format_version"].startswith("hf save_to_disk")
        assert rec["tables"] == {"d.train": 30, "d.test": 7}
        assert import_record(log[1].message)["format_version"] == "hf parquet"
    finally:
        d.stop()


def test_import_from_server_side(flightd_bin, store, minio, tmp_path, hf_fixture):
    root = hf_fixture
    if store.kind == "minio":
        disk, hub = upload_dir(minio, root / "disk"), upload_dir(minio, root / "hub")
        d = serve(flightd_bin, store, tmp_path)
    else:
        disk, hub = str(root / "disk"), str(root / "hub")
        d = serve(flightd_bin, store, tmp_path, "--import-root", str(root))
    try:
        c = weft.Client(d.location)
        c.create_project("p")
        br = c.project("p").branch("main")
        br.table("t").import_from("hf", disk, progress=False, split="train")
        _same(br.table("t").read(), _ref_disk(root, "train"))
        br.table("h").import_from("hf", hub, progress=False, splits="column")
        got = br.table("h").read()
        assert got.column("split").to_pylist() == ["train"] * 30 + ["test"] * 7
        _same(got, pa.concat_tables([_ref_parquet((root / "hub" / "data").glob(f"{s}-*.parquet")) for s in ["train", "test"]]),
              split_col=True)
    finally:
        d.stop()


def _refs(s):
    return {k: v for k, v in s.items() if "/refs/heads/" in k}


def test_bad_input_commits_nothing(flightd_bin, tmp_path, hf_fixture):
    from conftest import fs_store
    root = hf_fixture
    store = fs_store(tmp_path / "store")
    cli_import(flightd_bin, store, "hf", str(root / "hub"))
    before = store.snapshot()

    # A truncated IPC stream (the second shard of train).
    arrow = sorted((root / "disk" / "train").glob("data-*.arrow"))[1]
    arrow.write_bytes(arrow.read_bytes()[:300])
    r = cli_import(flightd_bin, store, "hf", str(root / "disk"), check=False)
    assert r.returncode != 0 and arrow.name in r.stderr, r.stderr

    # No dataset_info.json.
    (root / "disk" / "test" / "dataset_info.json").unlink()
    r = cli_import(flightd_bin, store, "hf", str(root / "disk"), extra=["--opt", "split=test"], check=False)
    assert r.returncode != 0 and "test/dataset_info.json" in r.stderr and "missing" in r.stderr, r.stderr

    # Parquet files of one split with different columns.
    other = datasets.Dataset.from_dict({"x": [1, 2]})
    bad = root / "hub" / "data" / "train-00001-of-00002.parquet"
    other.to_parquet(str(bad))
    r = cli_import(flightd_bin, store, "hf", str(root / "hub"), check=False)
    assert r.returncode != 0 and bad.name in r.stderr and "same columns" in r.stderr, r.stderr

    # Not Parquet at all.
    bad.write_bytes(b"PAR1 not really")
    r = cli_import(flightd_bin, store, "hf", str(root / "hub"), check=False)
    assert r.returncode != 0 and bad.name in r.stderr, r.stderr

    # Nothing that looks like a dataset.
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "README.md").write_text("hi")
    r = cli_import(flightd_bin, store, "hf", str(tmp_path / "empty"), check=False)
    assert r.returncode != 0 and "dataset_dict.json" in r.stderr, r.stderr

    after = store.snapshot()
    assert _refs(after) == _refs(before)
    assert {k for k in after if "/data/" in k} == {k for k in before if "/data/" in k}


def test_types_the_store_converts(flightd_bin, tmp_path):
    """timestamp[s], large_list, duration (also inside structs and lists)
    become timestamp[ms], list, int64; values equal; the original type is in
    the field metadata."""
    import datetime
    import numpy as np
    from conftest import fs_store
    datasets.disable_progress_bars()
    feats = datasets.Features({
        "ts": datasets.Value("timestamp[s]"), "ll": datasets.LargeList(datasets.Value("int32")),
        "a2": datasets.Array2D(shape=(2, 2), dtype="float32"), "dur": datasets.Value("duration[ms]"),
        "n": {"t": datasets.Value("timestamp[s]"), "l": datasets.List(datasets.Value("duration[s]"))},
    })
    rows = {
        "ts": [datetime.datetime(2020, 1, 1, 12, 30, 5), None, datetime.datetime(1969, 12, 31)],
        "ll": [[1, 2], None, []],
        "a2": [np.arange(4, dtype="float32").reshape(2, 2), None, np.ones((2, 2), "float32")],
        "dur": [datetime.timedelta(seconds=3), None, datetime.timedelta(milliseconds=-5)],
        "n": [{"t": datetime.datetime(2021, 1, 1), "l": [datetime.timedelta(seconds=1)]}, None, {"t": None, "l": []}],
    }
    ds = datasets.Dataset.from_dict(rows, features=feats)
    ds.save_to_disk(str(tmp_path / "d"))
    store = fs_store(tmp_path / "store")
    cli_import(flightd_bin, store, "hf", str(tmp_path / "d"))
    d = serve(flightd_bin, store, tmp_path)
    try:
        got = weft.Client(d.location).project("p").branch("main").table("t").read()
    finally:
        d.stop()
    ref = ds.data.table
    assert got.schema.field("ts").type == pa.timestamp("ms")
    assert got.schema.field("ll").type == pa.list_(pa.int32())
    assert got.schema.field("dur").type == pa.int64()
    assert got.schema.field("ts").metadata[b"weft.hf.arrow_type"] == b"timestamp[s]"
    assert got.column("ts").to_pylist() == ref.column("ts").to_pylist()
    assert got.column("ll").to_pylist() == ref.column("ll").to_pylist()
    a2 = ref.column("a2").combine_chunks()
    a2 = a2.storage if isinstance(a2, pa.ExtensionArray) else a2  # datasets' Array2D extension
    assert got.column("a2").to_pylist() == a2.to_pylist()
    assert got.column("dur").to_pylist() == [3000, None, -5]
    n = got.column("n").to_pylist()
    assert n[0]["t"] == datetime.datetime(2021, 1, 1) and n[0]["l"] == [1] and n[1] is None and n[2] == {"t": None, "l": []}


def test_audio_struct_kept(flightd_bin, tmp_path):
    """An Audio column stays struct<bytes, path>, bytes exact, its feature
    (sampling rate) in the field metadata. (Written from an Arrow table:
    datasets needs soundfile to encode audio itself.)"""
    from conftest import fs_store
    datasets.disable_progress_bars()
    feats = datasets.Features({"audio": datasets.Audio(sampling_rate=16000), "id": datasets.Value("int32")})
    wav = [b"RIFF" + bytes(range(i, i + 40)) + b"WAVE" for i in range(5)]
    t = pa.table({"audio": pa.array([{"bytes": w, "path": f"{i}.wav"} for i, w in enumerate(wav)] + [None],
                                    type=pa.struct([("bytes", pa.binary()), ("path", pa.string())])),
                  "id": pa.array(range(6), pa.int32())})
    datasets.Dataset(t, info=datasets.DatasetInfo(features=feats)).save_to_disk(str(tmp_path / "d"))
    store = fs_store(tmp_path / "store")
    cli_import(flightd_bin, store, "hf", str(tmp_path / "d"))
    d = serve(flightd_bin, store, tmp_path)
    try:
        got = weft.Client(d.location).project("p").branch("main").table("t").read()
    finally:
        d.stop()
    assert got.column("audio").to_pylist() == t.column("audio").to_pylist()
    assert json.loads(got.schema.field("audio").metadata[b"weft.hf.feature"]) == {"sampling_rate": 16000, "_type": "Audio"}
