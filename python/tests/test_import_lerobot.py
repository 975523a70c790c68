"""LeRobot import (v2.1 and v3.0): the fixtures under testdata/lerobot (v3.0
written by LeRobot 0.4.4's own writer, v2.1 built per its documented layout:
python/tests/fixtures/make_lerobot.py), imported with `flightd import
lerobot` and Table.import_from (fs and MinIO). Every row equals the source
Parquet's; every window frame equals the frame PyAV decodes from the source
MP4 at the timestamp LeRobot's loader queries (YUV bit-exact; RGB within
RGB_TOL of swscale's: Weft converts YUV to RGB itself); pad flags follow LeRobot's
`*_is_pad` rule."""
import hashlib
import json
import shutil
import signal
import subprocess
import time
from pathlib import Path

import av
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import weft
from weft import _video
from importutil import cli_import, import_record, serve, upload_dir

FIXTURES = Path(__file__).resolve().parents[2] / "testdata" / "lerobot"
VERSIONS = {"v21": "v2.1", "v30": "v3.0"}
K, H, B = 3, 4, 8  # Video(range(-K, K)), Rows(range(H)), batch size
# Weft converts YUV to RGB with exact BT.601 arithmetic (weft/_video.py);
# PyAV's to_ndarray("rgb24") is swscale's fast path, a few LSB away. The
# frame itself is checked bit-exact on its decoded YUV planes.
RGB_TOL = 4


class Source:
    """What LeRobot's loader knows about a fixture: rows in dataset order,
    episode spans, the MP4 and offset of each episode and camera, tasks."""

    def __init__(self, root: Path):
        self.root = root
        self.info = json.loads((root / "meta" / "info.json").read_text())
        self.cams = sorted(k for k, f in self.info["features"].items() if f["dtype"] == "video")
        self.v3 = self.info["codebase_version"] == "v3.0"
        if self.v3:
            eps = pq.read_table(root / "meta" / "episodes" / "chunk-000" / "file-000.parquet").to_pylist()
            self.video = {(e["episode_index"], c): (root / self.info["video_path"].format(
                video_key=c, chunk_index=e[f"videos/{c}/chunk_index"], file_index=e[f"videos/{c}/file_index"]),
                e[f"videos/{c}/from_timestamp"]) for e in eps for c in self.cams}
            files = sorted((root / "data").rglob("*.parquet"))
            t = pq.read_table(root / "meta" / "tasks.parquet")
            self.tasks = dict(zip(t["task_index"].to_pylist(), t["__index_level_0__"].to_pylist()))
        else:
            eps = [json.loads(l) for l in (root / "meta" / "episodes.jsonl").read_text().splitlines()]
            self.video = {(e["episode_index"], c): (root / self.info["video_path"].format(
                episode_chunk=0, video_key=c, episode_index=e["episode_index"]), 0.0) for e in eps for c in self.cams}
            files = [root / self.info["data_path"].format(episode_chunk=0, episode_index=e["episode_index"]) for e in eps]
            self.tasks = {r["task_index"]: r["task"] for r in map(json.loads, (root / "meta" / "tasks.jsonl").read_text().splitlines())}
        self.rows = pa.concat_tables([pq.read_table(f) for f in files]).replace_schema_metadata(None)
        self.episodes = eps
        ep = self.rows["episode_index"].to_pylist()
        self.span = {}
        for i, e in enumerate(ep):
            lo, _ = self.span.get(e, (i, i))
            self.span[e] = (lo, i + 1)
        self.ep = ep
        self.ts = self.rows["timestamp"].to_pylist()
        self._frames = {}

    def frames(self, path: Path):
        """(times, yuv, rgb) of every frame of an MP4, decoded by PyAV."""
        if path not in self._frames:
            times, yuv, rgb = [], [], []
            with av.open(str(path)) as c:
                s = c.streams.video[0]
                for f in c.decode(s):
                    times.append(float(f.pts * s.time_base))
                    yuv.append(f.to_ndarray().reshape(-1).copy())
                    rgb.append(f.to_ndarray(format="rgb24"))
            order = np.argsort(times)
            self._frames[path] = (np.array(times)[order], [yuv[i] for i in order], [rgb[i] for i in order])
        return self._frames[path]

    def query(self, row: int, offsets, cam: str):
        """LeRobot's _get_query_indices + _query_videos: clamp the row into
        the episode, the frame at from_timestamp + timestamp (tolerance 1e-4)."""
        lo, hi = self.span[self.ep[row]]
        idx = [max(lo, min(hi - 1, row + d)) for d in offsets]
        pad = [not (lo <= row + d < hi) for d in offsets]
        path, frm = self.video[(self.ep[row], cam)]
        times, yuv, rgb = self.frames(path)
        out = []
        for j in idx:
            t = frm + self.ts[j]
            k = int(np.argmin(np.abs(times - t)))
            assert abs(times[k] - t) < 1e-4, (path, t, times[k])
            out.append((yuv[k], rgb[k]))
        return out, pad, idx


@pytest.fixture(scope="module", params=list(VERSIONS))
def source(request):
    return request.param, Source(FIXTURES / request.param)


def sha(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def check_rows(tbl: "weft.Table", src: Source) -> None:
    got = tbl.read()
    want = src.rows
    assert got.num_rows == want.num_rows
    for name in want.column_names:
        assert got[name].to_pylist() == want[name].to_pylist(), name
    assert got["task"].to_pylist() == [src.tasks[i] for i in want["task_index"].to_pylist()]
    for cam in src.cams:
        assert got.schema.field(cam).metadata[b"weft.kind"] == b"video"
        vals = got[cam].to_pylist()
        for i, v in enumerate(vals):
            path, frm = src.video[(src.ep[i], cam)]
            assert v == {"media": sha(path), "time": frm + src.ts[i]}, (cam, i)
    md = got.schema.metadata
    assert md[b"weft.episode"] == b"episode_index"
    assert json.loads(md[b"lerobot.stats"]) == json.loads((src.root / "meta" / "stats.json").read_text())
    assert json.loads(md[b"lerobot.info"]) == src.info


def check_windows(tbl: "weft.Table", src: Source) -> None:
    offsets = list(range(-K, K))
    windows = {c: weft.Video(range(-K, K)) for c in src.cams}
    windows["action"] = weft.Rows(range(H))
    recipe = weft.Recipe(seed=7, batch_size=B, components=[weft.Component(tbl, windows=weft.Windows(windows))])
    raws = []

    def rec(batch):
        raws.append(batch)
        return batch

    seen, bad, frames, pads, worst = set(), [], 0, 0, 0
    action = src.rows["action"].to_pylist()
    with weft.TrainLoader(recipe, transform_fn=rec, decode_threads=2, prefetch=2) as loader:
        for n, b in enumerate(loader):
            raw = raws[n]
            rows = b["_row"].tolist()
            seen.update(rows)
            for cam in src.cams:
                rgb, pad = b[cam].numpy(), b[f"{cam}_is_pad"].numpy()
                pics = _video.window_pictures(cam, raw.column(cam))
                for i, row in enumerate(rows):
                    want, wpad, _ = src.query(row, offsets, cam)
                    if pad[i].tolist() != wpad:
                        bad.append(f"{cam} row {row}: is_pad {pad[i].tolist()} != {wpad}")
                    pads += sum(wpad)
                    for j, (yuv, ref) in enumerate(want):
                        got_yuv = np.concatenate([p.reshape(-1).view(np.uint8) for p in pics[i][j].planes])
                        if got_yuv.tobytes() != yuv.tobytes():
                            bad.append(f"{cam} row {row} offset {offsets[j]}: YUV differs from PyAV's decode")
                        d = int(np.abs(rgb[i, j].astype(np.int16) - ref).max())
                        worst = max(worst, d)
                        if d > RGB_TOL:
                            bad.append(f"{cam} row {row} offset {offsets[j]}: RGB {d} LSB off")
                        frames += 1
            act, apad = b["action"].numpy(), b["action_is_pad"].numpy()
            for i, row in enumerate(rows):
                lo, hi = src.span[src.ep[row]]
                wpad = [not (lo <= row + d < hi) for d in range(H)]
                if apad[i].tolist() != wpad:
                    bad.append(f"action row {row}: is_pad {apad[i].tolist()} != {wpad}")
                for d in range(H):
                    if not wpad[d] and not np.array_equal(act[i, d], np.array(action[row + d], np.float32)):
                        bad.append(f"action row {row} offset {d}: {act[i, d]} != {action[row + d]}")
    assert not bad, f"{len(bad)} mismatches:\n" + "\n".join(bad[:20])
    print(f"{src.root.name}: {frames} window frames, YUV bit-exact, RGB at most {worst} LSB from swscale's rgb24")
    assert seen == set(range(src.rows.num_rows))
    assert frames == src.rows.num_rows * len(src.cams) * len(offsets) and pads > 0


def test_cli_import_rows_and_windows(flightd_bin, tmp_path, source):
    from conftest import fs_store
    name, src = source
    store = fs_store(tmp_path / "store")
    cli_import(flightd_bin, store, "lerobot", str(src.root))
    d = serve(flightd_bin, store, tmp_path)
    try:
        ref = weft.Client(d.location).project("p").branch("main")
        t = ref.table("t")
        check_rows(t, src)
        eps = ref.table("t.episodes").read()
        assert eps["episode_index"].to_pylist() == [e["episode_index"] for e in src.episodes]
        assert eps["tasks"].to_pylist() == [e["tasks"] for e in src.episodes]
        tasks = ref.table("t.tasks").read()
        assert dict(zip(tasks["task_index"].to_pylist(), tasks["task"].to_pylist())) == src.tasks
        rec = import_record(ref.log(limit=1)[0].message)
        assert rec["format"] == "lerobot" and rec["format_version"] == "lerobot " + VERSIONS[name]
        assert rec["tables"] == {"t": src.rows.num_rows, "t.episodes": len(src.episodes), "t.tasks": len(src.tasks)}
        assert rec["media"] == len({p for p, _ in src.video.values()})
        check_windows(t, src)
    finally:
        d.stop()


def test_import_from_server_side(flightd_bin, store, minio, tmp_path, source):
    name, src = source
    if store.kind == "minio":
        url = upload_dir(minio, src.root)
        d = serve(flightd_bin, store, tmp_path)
    else:
        url = str(src.root)
        d = serve(flightd_bin, store, tmp_path, "--import-root", str(FIXTURES))
    try:
        c = weft.Client(d.location)
        c.create_project("p")
        t = c.project("p").branch("main").table("robot")
        t.import_from("lerobot", url, progress=False)
        check_rows(t, src)
        check_windows(t, src)
    finally:
        d.stop()


def _refs(s):
    return {k: v for k, v in s.items() if "/refs/heads/" in k}


def test_bad_input_commits_nothing(flightd_bin, tmp_path):
    from conftest import fs_store
    store = fs_store(tmp_path / "store")
    cli_import(flightd_bin, store, "lerobot", str(FIXTURES / "v21"))
    before = store.snapshot()

    def broken(name, version="v30"):
        d = tmp_path / name
        shutil.copytree(FIXTURES / version, d)
        return d

    cases = []
    d = broken("noinfo")
    (d / "meta" / "info.json").unlink()
    cases.append((d, "meta/info.json"))
    d = broken("unknown")
    info = json.loads((d / "meta" / "info.json").read_text())
    info["codebase_version"] = "v1.6"
    (d / "meta" / "info.json").write_text(json.dumps(info))
    cases.append((d, "codebase_version \"v1.6\""))
    d = broken("badmp4")
    mp4 = d / "videos" / "observation.images.wrist" / "chunk-000" / "file-001.mp4"
    mp4.write_bytes(mp4.read_bytes()[:300])
    cases.append((d, "videos/observation.images.wrist/chunk-000/file-001.mp4"))
    d = broken("noparquet", "v21")
    (d / "data" / "chunk-000" / "episode_000002.parquet").unlink()
    cases.append((d, "data/chunk-000/episode_000002.parquet"))
    d = broken("badparquet")
    p = d / "data" / "chunk-000" / "file-000.parquet"
    p.write_bytes(p.read_bytes()[:-40])
    cases.append((d, "data/chunk-000/file-000.parquet"))
    for d, want in cases:
        r = cli_import(flightd_bin, store, "lerobot", str(d), table=d.name, check=False)
        assert r.returncode != 0 and want in r.stderr, (d.name, r.stderr)
    after = store.snapshot()
    assert _refs(after) == _refs(before)
    assert {k for k in after if "/data/" in k} == {k for k in before if "/data/" in k}


def _big_v21(dst: Path, episodes: int) -> None:
    """A v2.1 dataset of many episodes: the fixture's four repeated (each a
    copy, renumbered), so the import takes long enough to be killed."""
    src = FIXTURES / "v21"
    shutil.copytree(src / "meta", dst / "meta")
    info = json.loads((src / "meta" / "info.json").read_text())
    eps = [json.loads(l) for l in (src / "meta" / "episodes.jsonl").read_text().splitlines()]
    out, start = [], 0
    for e in range(episodes):
        s = eps[e % 4]
        t = pq.read_table(src / info["data_path"].format(episode_chunk=0, episode_index=s["episode_index"]))
        n = t.num_rows
        t = t.set_column(t.schema.get_field_index("episode_index"), "episode_index", pa.array([e] * n, pa.int64()))
        t = t.set_column(t.schema.get_field_index("index"), "index", pa.array(range(start, start + n), pa.int64()))
        start += n
        p = dst / info["data_path"].format(episode_chunk=0, episode_index=e)
        p.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(t, p)
        for cam in ("observation.images.top", "observation.images.wrist"):
            v = dst / info["video_path"].format(episode_chunk=0, video_key=cam, episode_index=e)
            v.parent.mkdir(parents=True, exist_ok=True)
            # A distinct file per episode (a trailing free box), so each is a new media object.
            data = (src / info["video_path"].format(episode_chunk=0, video_key=cam, episode_index=s["episode_index"])).read_bytes()
            v.write_bytes(data + (16).to_bytes(4, "big") + b"free" + e.to_bytes(8, "big"))
        out.append({**s, "episode_index": e})
    (dst / "meta" / "episodes.jsonl").write_text("".join(json.dumps(e) + "\n" for e in out))
    (dst / "meta" / "episodes_stats.jsonl").unlink()


def test_kill_mid_import_leaves_no_commit(flightd_bin, tmp_path):
    from conftest import fs_store
    store = fs_store(tmp_path / "store")
    src = tmp_path / "big"
    _big_v21(src, 600)
    cli_import(flightd_bin, store, "lerobot", str(FIXTURES / "v21"))  # creates the project
    before = store.snapshot()
    proc = subprocess.Popen([flightd_bin, "import", "lerobot", str(src), "--store", store.url, "--project", "p",
                             "--table", "big"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=dict(store.env))
    # Kill once it has stored some media objects.
    deadline = time.time() + 60
    while time.time() < deadline and proc.poll() is None:
        if len(list(Path(store.url).rglob("media/*.mp4"))) > 50:
            break
        time.sleep(0.005)
    assert proc.poll() is None, "the import finished before it could be killed; make the fixture bigger"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert _refs(store.snapshot()) == _refs(before)
    r = cli_import(flightd_bin, store, "lerobot", str(src), table="big")
    assert r.returncode == 0 and "imported 18603 rows" in r.stderr, r.stderr
