"""Windowed scans: ``weft.ScanDataset`` over ``table.scan_request(columns,
windows=...)`` through a real flightd gives every row once, in order, with
the frames and rows a ``TrainLoader`` with the same windows gives for that
row (docs/python.md, "Windowed scans")."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
import torch
from torch.utils.data import DataLoader

import weft

import videoref as ref

WINDOWS = {"wrist_camera": weft.Video(range(-2, 3)), "action": weft.Rows(range(4))}


@pytest.fixture
def wc(server):
    c = weft.Client(server.location)
    yield c
    c.close()


@pytest.fixture
def moments(wc, tmp_path):
    """A table of 3 episodes (30, 36 and 42 moments, one per frame of an
    H.264 clip with B-frames each) with an action per moment."""
    if not ref.FFMPEG:
        pytest.skip("SKIPPED LOUDLY: the ffmpeg program is missing")
    paths = {}
    for e in range(3):
        d = tmp_path / f"ep{e}"
        d.mkdir()
        paths[e] = ref.make_clip("h264_bframes", d, seconds=1.0 + 0.2 * e)
    clips = {e: ref.demux(p) for e, p in paths.items()}
    eps, ts = [], []
    for e, c in clips.items():
        for p in c.frame_pts:
            eps.append(e)
            ts.append(p / c.timescale)
    data = pa.table({"episode_index": pa.array(eps, pa.int64()), "timestamp": pa.array(ts, pa.float64()),
                     "action": pa.array([float(i) * 0.5 for i in range(len(eps))], pa.float64())})
    t = wc.create_project("robots").branch("main").table("moments")
    for e, p in paths.items():  # one append per episode: a row group and an endpoint each
        rows = [i for i, x in enumerate(eps) if x == e]
        t.append(data.slice(rows[0], len(rows)), videos={"wrist_camera": {e: str(p)}})
    return t, eps, clips


def _scan(ds):
    out = {}
    order = []
    for batch in ds:
        rows = batch["_row"].tolist()
        order += rows
        for i, r in enumerate(rows):
            out[r] = {k: v[i] for k, v in batch.items()}
    return order, out


def test_scan_dataset_windows_equal_train_loader(moments):
    t, eps, clips = moments
    n = len(eps)
    req = t.scan_request(["episode_index"], windows=weft.Windows(WINDOWS))
    ds = weft.ScanDataset(req, batch_size=10, decode_threads=2)
    assert ds.schema.names == ["episode_index", "action", "action_is_pad", "wrist_camera", "wrist_camera_is_pad",
                               "_row"]
    assert ds.plan.windows == {"action": {"kind": "rows", "offsets": [0, 1, 2, 3]},
                               "wrist_camera": {"kind": "video", "frames": [-2, -1, 0, 1, 2]}}
    assert len(ds.plan.tickets) > 1, "several endpoints (--scan-endpoint-size 1)"
    order, scanned = _scan(ds)
    assert order == list(range(n)), "every row once, in order"

    # Rows windows, computed directly: the next 4 actions of the episode, the last one repeated.
    first = {e: eps.index(e) for e in set(eps)}
    last = {e: len(eps) - 1 - eps[::-1].index(e) for e in set(eps)}
    for r in range(n):
        e = eps[r]
        assert scanned[r]["episode_index"].item() == e
        want = [min(r + k, last[e]) for k in range(4)]
        assert scanned[r]["action"].tolist() == [w * 0.5 for w in want]
        assert scanned[r]["action_is_pad"].tolist() == [r + k > last[e] for k in range(4)]
        frames = scanned[r]["wrist_camera"]
        assert frames.dtype == torch.uint8 and tuple(frames.shape) == (5, 64, 96, 3)
        assert scanned[r]["wrist_camera_is_pad"].tolist() == [not (first[e] <= r + k <= last[e])
                                                             for k in range(-2, 3)]

    # A run with the same windows: the same frames, bit for bit, and the same rows windows.
    recipe = weft.Recipe(seed=5, batch_size=12, components=[
        weft.Component(t, columns=["episode_index"], windows=weft.Windows(WINDOWS))])
    seen = 0
    with weft.TrainLoader(recipe, decode_threads=2) as loader:
        for batch in loader:
            for i, r in enumerate(batch["_row"].tolist()):
                for k in ("episode_index", "action", "action_is_pad", "wrist_camera", "wrist_camera_is_pad"):
                    assert torch.equal(batch[k][i], scanned[r][k]), f"row {r}: {k}"
                seen += 1
    assert seen >= n // 2

    # The frames are ffmpeg's (RGB within 1 LSB of the BT.601 reference), for a few rows.
    for r in (0, 1, first[1], last[1], n - 1):
        e, c = eps[r], clips[eps[r]]
        k = r - first[e]
        ff = ref.ffmpeg_frames(c.path, c.pix_fmt, c.width, c.height)
        for j, off in enumerate(range(-2, 3)):
            kk = min(max(k + off, 0), len(c.frame_pts) - 1)
            planes = ref.split_planes(ff[kk], c.pix_fmt, c.width, c.height)
            exp = ref.reference_rgb(planes, 8, "bt601", False)
            assert np.abs(scanned[r]["wrist_camera"][j].numpy().astype(int) - exp.astype(int)).max() <= 1


def test_scan_dataset_windows_in_workers(moments):
    """DataLoader workers forked after gRPC was used read through the relay,
    which keeps each message's step metadata: every row once in all."""
    t, eps, _ = moments
    ds = weft.ScanDataset(t.scan_request(["episode_index"], windows=WINDOWS), batch_size=7, decode_threads=1)
    rows = []
    for batch in DataLoader(ds, batch_size=None, num_workers=2):
        assert batch["wrist_camera"].shape[1:] == (5, 64, 96, 3)
        rows += batch["_row"].tolist()
    assert sorted(rows) == list(range(len(eps)))


def test_windowed_read_has_one_chunk_per_step(moments):
    t, eps, _ = moments
    req = t.scan_request(["episode_index"], windows=weft.Windows({"action": weft.Rows([0, 1])}))
    table = req.read()
    assert table.num_rows == len(eps)
    assert table.column("_row").to_pylist() == list(range(len(eps)))
    plan = req.plan()
    assert all(b.num_rows <= plan.step_rows for b in table.to_batches())
    # Plain scans are unchanged.
    plain = t.scan_request(["episode_index"]).read()
    assert plain.schema.names == ["episode_index"]
    assert plain.column(0).to_pylist() == eps


@pytest.mark.parametrize("windows, match", [
    ({"action": weft.Video(range(3))}, "not a video column"),
    ({"nope": weft.Rows([0])}, "nope"),
    ({"episode_index": weft.Rows([0])}, "both a column and a window"),
    ({"action": {"kind": "sparkle"}}, "sparkle"),
])
def test_bad_windows_refused(moments, windows, match):
    t, _, _ = moments
    with pytest.raises(weft.InvalidArgument, match=match):
        weft.ScanDataset(t.scan_request(["episode_index"], windows=windows))
