"""Table.append(data, videos=...): the client side of media upload (issue
13, contract sections 2 and 3). The offline tests need no server; the
end-to-end ones need a flightd with stat_media and DoPut media and skip
loudly (never counted as passing) against one without."""

from __future__ import annotations

import hashlib
import os
import re

import numpy as np
import pyarrow as pa
import pytest

import weft
from weft import _client

import videoref as ref


def _moments(eps, per=5, fps=30.0):
    ep, ts = [], []
    for e in eps:
        for i in range(per):
            ep.append(e)
            ts.append(i / fps)
    return pa.table({"episode_index": pa.array(ep, pa.int64()), "timestamp": pa.array(ts, pa.float32()),
                     "action": pa.array([float(i) for i in range(len(ep))])})


def _files(tmp_path, n, size=100):
    out = {}
    for i in range(n):
        p = tmp_path / f"ep_{i:04d}.mp4"
        p.write_bytes(bytes([i]) * size)
        out[i] = str(p)
    return out


def test_missing_episode_fails_before_anything_is_sent(tmp_path):
    client = weft.Client("grpc://127.0.0.1:1")  # nothing listens: any call would be Unavailable
    table = client.project("p").branch("main").table("moments")
    files = _files(tmp_path, 2)
    with pytest.raises(weft.InvalidArgument, match=r"no file for episode\(s\) \[2\]"):
        table.append(_moments([0, 1, 2]), videos={"wrist_camera": files})
    with pytest.raises(weft.InvalidArgument, match="is not a file"):
        table.append(_moments([0, 1]), videos={"wrist_camera": {0: files[0], 1: str(tmp_path / "nope.mp4")}})
    with pytest.raises(weft.InvalidArgument, match="no episode column 'ep'"):
        table.append(_moments([0]), videos={"wrist_camera": files}, episode="ep")
    with pytest.raises(weft.InvalidArgument, match="already a column"):
        table.append(_moments([0]), videos={"action": files})
    with pytest.raises(weft.InvalidArgument, match="tolerance"):
        table.append(_moments([0]), videos={"cam": files}, tolerance=0)


def test_video_columns_follow_the_contract(tmp_path):
    files = _files(tmp_path, 2)
    data = _moments([1, 0], per=3)
    table, by_key = _client.episode_table(data, {"wrist_camera": files, "top": {0: files[1], 1: files[0]}},
                                          "episode_index", "timestamp", 1e-4)
    shas = {p: hashlib.sha256(open(p, "rb").read()).hexdigest() for p in files.values()}
    out = _client.with_video_columns(table, by_key, shas, "episode_index", "timestamp", 1e-4)
    assert out.schema.metadata[b"weft.episode"] == b"episode_index"
    f = out.schema.field("wrist_camera")
    assert f.type == pa.struct([pa.field("media", pa.utf8(), nullable=False),
                                pa.field("time", pa.float64(), nullable=False)])
    assert f.metadata == {b"weft.kind": b"video", b"weft.tolerance": b"0.0001"}
    rows = out.column("wrist_camera").to_pylist()
    assert [r["media"] for r in rows] == [shas[files[1]]] * 3 + [shas[files[0]]] * 3
    assert [r["media"] for r in out.column("top").to_pylist()] == [shas[files[0]]] * 3 + [shas[files[1]]] * 3
    assert [r["time"] for r in rows] == pytest.approx([0, 1 / 30, 2 / 30] * 2)
    assert out.column_names == ["episode_index", "timestamp", "action", "wrist_camera", "top"]
    # String episodes and pandas work too.
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame({"episode": ["a", "a", "b"], "timestamp": [0.0, 0.1, 0.0]})
    t2, m2 = _client.episode_table(df, {"cam": {"a": files[0], "b": files[1]}}, "episode", "timestamp", 1e-3)
    out2 = _client.with_video_columns(t2, m2, shas, "episode", "timestamp", 1e-3)
    assert out2.schema.field("cam").metadata[b"weft.tolerance"] == b"0.001"


def test_media_is_hashed_and_chunked_streaming(tmp_path):
    p = tmp_path / "big.mp4"
    data = os.urandom(9 * (1 << 20) + 123)
    p.write_bytes(data)
    f = _client.hash_file(p)
    assert f.sha256 == hashlib.sha256(data).hexdigest() and f.size == len(data)
    chunks = list(_client.media_chunks(p, f.size))
    assert [c.schema for c in chunks] == [_client.MEDIA_SCHEMA] * 3
    assert [c.column(0)[0].as_py().__len__() for c in chunks] == [4 << 20, 4 << 20, (1 << 20) + 123]
    assert b"".join(c.column(0)[0].as_py() for c in chunks) == data
    with pytest.raises(weft.InvalidArgument, match="changed while it was uploaded"):
        list(_client.media_chunks(p, f.size + 1))


def test_server_errors_name_the_file():
    f = _client.MediaFile("/data/ep_0007.mp4", "ab" * 32, 10)
    err = weft.InvalidArgument("row 12 (episode 7): wrist_camera time 1.234567s has no frame in media "
                               f"{f.sha256[:12]} within 0.0001s; the nearest is frame 37 at 1.233333s")
    out = _client._with_files(err, {f.sha256: f})
    assert isinstance(out, weft.InvalidArgument)
    assert "/data/ep_0007.mp4" in str(out) and "row 12" in str(out)
    other = weft.InvalidArgument("nothing about media")
    assert _client._with_files(other, {f.sha256: f}) is other


# ---------------------------------------------------------------- against flightd


def _needs_media_server(client):
    try:
        _client.stat_media(client, "p", "0" * 64)
    except weft.WeftError as e:
        if re.search(r"unknown action", str(e)):
            pytest.skip("SKIPPED LOUDLY (not a pass): this flightd has no stat_media action yet; "
                        "issue 13's media upload is not merged into this build")
        if not isinstance(e, weft.NotFound):  # a missing project is fine: the action exists
            raise


@pytest.fixture
def wc(server):
    c = weft.Client(server.location)
    yield c
    c.close()


@pytest.fixture
def episodes(tmp_path):
    if not ref.FFMPEG:
        pytest.skip("SKIPPED LOUDLY: the ffmpeg program is missing")
    out = {}
    for e in range(3):
        d = tmp_path / f"ep{e}"
        d.mkdir()
        out[e] = ref.make_clip("h264_bframes", d, seconds=1.0 + 0.2 * e)
    return out


def test_append_episodes_end_to_end(wc, episodes, tmp_path):
    client = wc
    _needs_media_server(client)
    main = client.create_project("robots").branch("main")
    clips = {e: ref.demux(p) for e, p in episodes.items()}
    eps, ts = [], []
    for e, c in clips.items():
        for p in c.frame_pts:
            eps.append(e)
            ts.append(p / c.timescale)
    data = pa.table({"episode_index": pa.array(eps, pa.int64()), "timestamp": pa.array(ts, pa.float64())})
    t = main.table("moments")
    t.append(data, videos={"wrist_camera": {e: str(p) for e, p in episodes.items()}})
    back = t.read()
    assert back.num_rows == len(eps)
    f = back.schema.field("wrist_camera")
    assert f.metadata[b"weft.kind"] == b"video"
    shas = {e: _client.hash_file(p).sha256 for e, p in episodes.items()}
    assert [r["media"] for r in back.column("wrist_camera").to_pylist()] == [shas[e] for e in eps]
    # An identical file again stores nothing new.
    st = _client.stat_media(client, "robots", shas[0])
    assert st["exists"] and st["size"] == os.path.getsize(episodes[0])
    again = _client.put_media(client, "robots", _client.hash_file(episodes[0]))
    assert again["stored"] is False
    # A timestamp between frames is refused, naming the row and the file.
    bad = pa.table({"episode_index": pa.array([1], pa.int64()), "timestamp": pa.array([0.5 / 30], pa.float64())})
    with pytest.raises(weft.InvalidArgument) as ei:
        t.append(bad, videos={"wrist_camera": {1: str(episodes[1])}})
    assert str(episodes[1]) in str(ei.value) and "row 0" in str(ei.value)
    assert t.num_rows() == len(eps)

    # Train on windows: frames equal ffmpeg's decode (RGB within 1 LSB of the BT.601 reference).
    recipe = weft.Recipe(seed=3, batch_size=8, steps=2, components=[
        weft.Component(t, windows=weft.Windows({"wrist_camera": weft.Video(range(-2, 3))}))])
    ff = {e: dict(zip(c.frame_pts, ref.ffmpeg_frames(c.path, c.pix_fmt, c.width, c.height)))
          for e, c in clips.items()}
    with weft.TrainLoader(recipe, decode_threads=2) as loader:
        for batch in loader:
            frames, pad = batch["wrist_camera"].numpy(), batch["wrist_camera_is_pad"].numpy()
            assert frames.shape[1:] == (5, 64, 96, 3) and pad.shape == (8, 5)
            for i, row in enumerate(batch["_row"].tolist()):
                e, c = eps[row], clips[eps[row]]
                k = c.frame_pts.index(round(ts[row] * c.timescale))
                for j, off in enumerate(range(-2, 3)):
                    kk = min(max(k + off, 0), len(c.frame_pts) - 1)
                    assert bool(pad[i, j]) == (kk != k + off)
                    planes = ref.split_planes(ff[e][c.frame_pts[kk]], c.pix_fmt, c.width, c.height)
                    exp = ref.reference_rgb(planes, 8, "bt601", False)
                    assert np.abs(frames[i, j].astype(int) - exp.astype(int)).max() <= 1
