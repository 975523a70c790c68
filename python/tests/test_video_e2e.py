"""Video windows end to end through a real flightd (issue 13, "Tests (real
parts)"), on the fs store and on MinIO.

For every clip kind of videoref.CLIPS (H.264 High with B-frames and an edit
list, open-GOP HEVC, AV1, 10-bit HEVC, irregular timestamps, moov at the
end, a file with audio, BT.709 full range) the clip's frames are split into
three episodes of one MP4 (a short one of 5 frames first), appended with
``videos=``, and read back by ``weft.TrainLoader`` with seeded windows: frame
offsets of history and future (crossing GOPs), a narrow window (inside a
GOP), and time offsets on the constant-rate clips. Each frame is checked
against the truth computed here from the table's layout and ffmpeg's own
decode of the whole file: the server's pts is the expected frame's, the
YUV planes the client decodes are byte for byte ffmpeg's
(``ffmpeg -f rawvideo -pix_fmt <native>``), the RGB tensor is within 1 LSB
of the float64 reference conversion, and ``<key>_is_pad`` marks exactly the
offsets clamped into the episode. Then: the same windows at world size 1,
2 and 4; a run resumed after ``kill -9`` of flightd; and the errors the
server gives for broken uploads, timestamps off every frame, a window on a
non-video column, ``pad=False`` on a short episode and a media object gone
from the store.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Optional

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import weft
from weft import _client, _video

import videoref as ref
from conftest import SMALL, Flightd, fs_store

try:
    import av  # noqa: F401
except ImportError:  # pragma: no cover
    av = None

FPS = 30  # every clip's source rate (testsrc2 rate=30); vfr's timestamps are its own
SHORT = 5  # frames of each clip's first episode
B = 8  # batch size: divisible by every world size tested


def _need_tools() -> None:
    missing = [n for n, ok in (("the ffmpeg program", ref.FFMPEG), ("PyAV (pip install av)", av)) if not ok]
    if missing:
        msg = f"SKIPPED LOUDLY: video end-to-end tests need {' and '.join(missing)}"
        if os.environ.get("CI") == "true":
            pytest.fail(msg)
        pytest.skip(msg)


# ---------------------------------------------------------------- the truth


EXPECT_COLOR = {"h264_bt709_full": ("bt709", True)}  # every other clip is untagged and below 720 lines


@dataclass
class Truth:
    """A clip, ffmpeg's decode of the whole file, and where its episodes lie."""

    name: str
    clip: ref.Clip
    raw: list[np.ndarray]  # ffmpeg's frames in presentation order (native pix_fmt)
    keys: list[int]  # presentation indexes of the keyframes
    spans: list[tuple[int, int]]  # per episode: first and last frame (inclusive)
    constant_rate: bool
    _rgb: dict[int, np.ndarray] = field(default_factory=dict)

    @property
    def n(self) -> int:
        return len(self.clip.frame_pts)

    @property
    def bits(self) -> int:
        return 10 if self.clip.pix_fmt.endswith("10le") else 8

    def span(self, frame: int) -> tuple[int, int]:
        return next(s for s in self.spans if s[0] <= frame <= s[1])

    def expect(self, frame: int, offsets: list[int]) -> list[tuple[int, bool]]:
        """(frame, pad) of each offset from ``frame``, clamped into its episode."""
        ff, fl = self.span(frame)
        return [(min(max(frame + o, ff), fl), not ff <= frame + o <= fl) for o in offsets]

    def rgb(self, k: int) -> np.ndarray:
        if k not in self._rgb:
            matrix, full = EXPECT_COLOR.get(self.name, ("bt601", False))
            planes = ref.split_planes(self.raw[k], self.clip.pix_fmt, self.clip.width, self.clip.height)
            self._rgb[k] = ref.reference_rgb(planes, self.bits, matrix, full).astype(np.int16)
        return self._rgb[k]

    def rows(self) -> pa.Table:
        """The episodes as rows, one per frame in file order (so row = frame)."""
        ep = [i for i, (a, b) in enumerate(self.spans) for _ in range(a, b + 1)]
        ts = [p / self.clip.timescale for p in self.clip.frame_pts]
        return pa.table({"episode_index": pa.array(ep, pa.int64()), "timestamp": pa.array(ts, pa.float64()),
                         "frame": pa.array(range(self.n), pa.int64())})


@pytest.fixture(scope="module")
def truths(tmp_path_factory) -> dict[str, Truth]:
    _need_tools()
    d = tmp_path_factory.mktemp("clips")
    out = {}
    for name in ref.CLIPS:
        clip = ref.demux(ref.make_clip(name, d))
        raw = ref.ffmpeg_frames(clip.path, clip.pix_fmt, clip.width, clip.height)
        pts = clip.frame_pts
        assert len(raw) == len(pts), f"{name}: ffmpeg decoded {len(raw)} frames, the demuxer has {len(pts)}"
        pos = {p: i for i, p in enumerate(pts)}
        keys = sorted(pos[u.pts] for u in clip.units if u.key)
        n = len(pts)
        mid = SHORT + (n - SHORT) // 2
        times = np.array(pts, np.float64) / clip.timescale
        constant = bool(np.allclose(np.diff(times), 1 / FPS, atol=1e-6))
        assert constant == (name != "vfr"), f"{name}: frame intervals {sorted(set(np.diff(pts).tolist()))}"
        out[name] = Truth(name, clip, raw, keys, [(0, SHORT - 1), (SHORT, mid - 1), (mid, n - 1)], constant)
    return out


# ---------------------------------------------------------------- windows


@dataclass
class Spec:
    """The windows of a run: per key, the frame offsets the truth is
    computed with and the weft window asked for."""

    frames: dict[str, list[int]]
    windows: dict[str, weft.Window]


def make_spec(seed: int, seconds: bool) -> Spec:
    rnd = random.Random(seed)
    cam = [rnd.randint(-14, -7), rnd.randint(-6, -1), 0, rnd.randint(1, 6), rnd.randint(7, 14)]
    frames = {"cam": cam, "near": [-1, 0, 1]}
    windows: dict[str, weft.Window] = {"cam": weft.Video(cam), "near": weft.Video([-1, 0, 1])}
    if seconds:
        ks = [rnd.randint(-12, -4), rnd.randint(-3, -1), 0, rnd.randint(1, 3), rnd.randint(4, 12)]
        # Each time offset lies within 0.3 frame intervals of a frame: the nearest is unambiguous.
        frames["secs"] = ks
        windows["secs"] = weft.Video(seconds=[(k + rnd.uniform(-0.3, 0.3)) / FPS for k in ks])
    return Spec(frames, windows)


def append_clip(table: weft.Table, truth: Truth, keys) -> str:
    path = str(truth.clip.path)
    return table.append(truth.rows(), videos={k: {e: path for e in range(len(truth.spans))} for k in keys})


class Recorder:
    """transform_fn that keeps every step's batch as the server sent it (in
    the loader's prefetch thread, in order) and passes it on."""

    def __init__(self):
        self.raw: list[pa.RecordBatch] = []

    def __call__(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        self.raw.append(batch)
        return batch


def read_run(recipe: weft.Recipe, world: Optional[weft.World] = None, steps: Optional[int] = None,
             state: Optional[dict] = None) -> tuple[list[dict], list[pa.RecordBatch], dict]:
    """The batches (and the server's raw steps) of a loader, and its state after."""
    rec = Recorder()
    with weft.TrainLoader(recipe, world=world, transform_fn=rec, decode_threads=2, prefetch=2) as loader:
        if state is not None:
            loader.load_state_dict(state)
        out = []
        for batch in loader:
            out.append(batch)
            if steps is not None and len(out) == steps:
                break
        return out, rec.raw[:len(out)], loader.state_dict()


@dataclass
class Coverage:
    windows: int = 0
    pad_start: int = 0
    pad_end: int = 0
    cross_gop: int = 0
    inside_gop: int = 0
    frames: int = 0


def check_step(batch: dict, raw: pa.RecordBatch, truths_by_comp: list[Truth], spec: Spec,
               cov: dict[str, Coverage]) -> None:
    """Every frame of every window of a step against the truth."""
    comps = batch["_component"].tolist()
    rows = batch["_row"].tolist()
    assert raw.column("_row").to_pylist() == rows and raw.column("_component").to_pylist() == comps
    assert batch["frame"].tolist() == rows  # row = frame in these tables
    bad: list[str] = []
    for key, offsets in spec.frames.items():
        t = len(offsets)
        rgb = batch[key].numpy()
        pad = batch[f"{key}_is_pad"].numpy()
        assert rgb.dtype == np.uint8 and pad.shape == (len(rows), t)
        col = raw.column(key)
        wire_pts = np.array(col.field("pts").to_pylist())
        pics = _video.window_pictures(key, col)
        c = cov.setdefault(key, Coverage())
        for i, (comp, row) in enumerate(zip(comps, rows)):
            tr = truths_by_comp[comp]
            assert rgb.shape[1:] == (t, tr.clip.height, tr.clip.width, 3)
            exp = tr.expect(row, offsets)
            where = f"{tr.name} {key} row {row} offsets {offsets}"
            got_pad = pad[i].tolist()
            if got_pad != [p for _, p in exp]:
                bad.append(f"{where}: _is_pad {got_pad}, expected {[p for _, p in exp]}")
            idx = [k for k, _ in exp]
            if wire_pts[i].tolist() != [tr.clip.frame_pts[k] for k in idx]:
                bad.append(f"{where}: the server sent pts {wire_pts[i].tolist()}, expected frames {idx} "
                           f"= pts {[tr.clip.frame_pts[k] for k in idx]}")
                continue
            for j, k in enumerate(idx):
                pic = pics[i][j]
                if pic.pix_fmt != tr.clip.pix_fmt:
                    bad.append(f"{where}: decoded as {pic.pix_fmt}, ffmpeg's native is {tr.clip.pix_fmt}")
                    continue
                yuv = np.concatenate([p.reshape(-1).view(np.uint8) for p in pic.planes])
                if yuv.tobytes() != tr.raw[k].tobytes():
                    bad.append(f"{where}: frame {k} (offset {offsets[j]}): YUV differs from ffmpeg's decode")
                d = int(np.abs(rgb[i, j].astype(np.int16) - tr.rgb(k)).max())
                if d > 1:
                    bad.append(f"{where}: frame {k}: RGB is {d} LSB from the reference")
                c.frames += 1
            c.windows += 1
            c.pad_start += got_pad[0] and idx[0] == tr.span(row)[0]
            c.pad_end += got_pad[-1] and idx[-1] == tr.span(row)[1]
            lo, hi = min(idx), max(idx)
            if any(lo < q <= hi for q in tr.keys):
                c.cross_gop += 1
            elif hi > lo:
                c.inside_gop += 1
    assert not bad, f"{len(bad)} mismatches:\n" + "\n".join(bad[:20])


def fingerprint(batches: list[dict], keys) -> list[list[tuple]]:
    """Per step, per global position: (component, row, per key: pad and frames)."""
    out = []
    for b in batches:
        step = []
        for i in range(len(b["_row"])):
            step.append((int(b["_component"][i]), int(b["_row"][i]),
                         *[(tuple(b[f"{k}_is_pad"][i].tolist()), b[k][i].numpy().tobytes()) for k in keys]))
        out.append(step)
    return out


def interleave(per_rank: list[list[list[tuple]]]) -> list[list[tuple]]:
    """Rank r of W holds global positions r, r+W, …: the global steps."""
    w = len(per_rank)
    steps = len(per_rank[0])
    assert all(len(r) == steps for r in per_rank)
    out = []
    for s in range(steps):
        n = sum(len(r[s]) for r in per_rank)
        out.append([per_rank[p % w][s][p // w] for p in range(n)])
    return out


# ---------------------------------------------------------------- fixtures


@pytest.fixture
def wc(server):
    c = weft.Client(server.location)
    yield c
    c.close()


@contextmanager
def serving(flightd_bin, store, workdir):
    d = Flightd(flightd_bin, store, workdir, SMALL)
    d.start()
    try:
        yield d
    finally:
        d.stop()


def _seed(name: str) -> int:
    return sum(map(ord, name)) * 7919


# ---------------------------------------------------------------- 1, 2: episodes and windows


@pytest.mark.parametrize("name", list(ref.CLIPS))
def test_windows_equal_ffmpeg(wc, truths, name):
    """Three episodes of one clip, one pass over every row: each frame of
    each window (frames, narrow frames, seconds) is the expected one, its
    YUV is ffmpeg's byte for byte, its RGB within 1 LSB; padding exact."""
    tr = truths[name]
    spec = make_spec(_seed(name), seconds=tr.constant_rate)
    t = wc.create_project("robots").branch("main").table(name)
    append_clip(t, tr, spec.frames)
    assert t.num_rows() == tr.n
    schema = t.schema
    for k in spec.frames:
        assert schema.field(k).metadata[b"weft.kind"] == b"video"
    recipe = weft.Recipe(seed=_seed(name), batch_size=B, components=[
        weft.Component(t, windows=weft.Windows(spec.windows))])
    batches, raws, _ = read_run(recipe)
    assert len(batches) == -(-tr.n // B)
    cov: dict[str, Coverage] = {}
    seen = set()
    for b, raw in zip(batches, raws):
        check_step(b, raw, [tr], spec, cov)
        seen.update(b["_row"].tolist())
    assert seen == set(range(tr.n)), "one pass reads every row"
    cam = cov["cam"]
    # Every episode's edges were sampled (so both edges padded), windows crossed GOPs and stayed inside one.
    assert cam.pad_start >= len(tr.spans) and cam.pad_end >= len(tr.spans), cam
    assert cam.cross_gop > 0 and cov["near"].inside_gop > 0, cov
    if tr.constant_rate:
        assert cov["secs"].pad_start > 0 and cov["secs"].pad_end > 0, cov["secs"]


# ---------------------------------------------------------------- 3: world sizes


def _mixed(client: weft.Client, truths: dict[str, Truth]) -> tuple[weft.Recipe, list[Truth], Spec]:
    """Every clip as a table of its own, mixed equally: a step holds windows of several media objects."""
    main = client.create_project("mix").branch("main")
    spec = make_spec(11, seconds=False)
    comps, order = [], []
    for name, tr in truths.items():
        t = main.table(name)
        append_clip(t, tr, spec.frames)
        comps.append(weft.Component(t, windows=weft.Windows(spec.windows)))
        order.append(tr)
    return weft.Recipe(seed=5, batch_size=B, steps=4, components=comps), order, spec


def _same_recipe(client: weft.Client, recipe: weft.Recipe) -> weft.Recipe:
    """``recipe`` with its tables on another client (another server)."""
    comps = [weft.Component(client.project(c.table.project).branch(c.table.ref.name).table(c.table.name),
                            windows=c.windows, weight=c.weight) for c in recipe.components]
    return weft.Recipe(seed=recipe.seed, batch_size=recipe.batch_size, steps=recipe.steps, components=comps)


def test_windows_equal_at_world_sizes_1_2_4(wc, truths):
    recipe, order, spec = _mixed(wc, truths)
    keys = list(spec.frames)
    one, raws, _ = read_run(recipe)
    cov: dict[str, Coverage] = {}
    for b, raw in zip(one, raws):
        check_step(b, raw, order, spec, cov)
    assert len({int(c) for b in one for c in b["_component"]}) >= 4, "the steps mix several media objects"
    want = fingerprint(one, keys)
    for w in (2, 4):
        per_rank = []
        for r in range(w):
            batches, raws, _ = read_run(recipe, world=weft.World(r, w))
            assert all(len(b["_row"]) == B // w for b in batches)
            for b, raw in zip(batches, raws):
                check_step(b, raw, order, spec, {})
            per_rank.append(fingerprint(batches, keys))
        got = interleave(per_rank)
        for s, (g, e) in enumerate(zip(got, want)):
            diff = [p for p in range(B) if g[p] != e[p]]
            assert not diff, f"world size {w}, step {s}: global positions {diff} differ from world size 1"


# ---------------------------------------------------------------- 4: kill -9


def test_resume_after_kill_9(flightd_bin, store, truths, tmp_path):
    """A few steps, SIGKILL of flightd mid-stream, a new flightd on the
    same store: the loaded state continues exactly as an uninterrupted run."""
    first = Flightd(flightd_bin, store, tmp_path, SMALL).start()
    c1 = weft.Client(first.location)
    try:
        recipe, order, spec = _mixed(c1, dict(list(truths.items())[:4]))
        recipe = weft.Recipe(seed=9, batch_size=B, steps=6, components=recipe.components)
        rec = Recorder()
        loader = weft.TrainLoader(recipe, transform_fn=rec, decode_threads=2, prefetch=2, retries=0)
        it = iter(loader)
        before = [next(it), next(it)]
        state = loader.state_dict()
        assert state["step"] == 2
        assert first.kill() == -9  # the loader's stream is open, prefetching
        loader.close()
    finally:
        c1.close()
    with serving(flightd_bin, store, tmp_path) as second:
        c2 = weft.Client(second.location)
        try:
            again = _same_recipe(c2, recipe)
            resumed, _, end = read_run(again, state=state)
            assert end["step"] == 6 and end["run"] == state["run"]
            whole, raws, _ = read_run(again)
            cov: dict[str, Coverage] = {}
            for b, raw in zip(whole, raws):
                check_step(b, raw, order, spec, cov)
        finally:
            c2.close()
    keys = list(spec.frames)
    assert len(whole) == 6 and len(resumed) == 4
    assert fingerprint(before, keys) == fingerprint(whole[:2], keys)
    assert fingerprint(resumed, keys) == fingerprint(whole[2:], keys)


# ---------------------------------------------------------------- 5: errors through the server


def _one_episode(tr: Truth, frames: int = 10) -> pa.Table:
    return tr.rows().slice(0, frames).set_column(0, "episode_index", pa.array([0] * frames, pa.int64()))


def test_broken_uploads_are_refused(wc, store, truths, tmp_path):
    tr = truths["h264_bframes"]
    data = tr.clip.path.read_bytes()
    cut = tmp_path / "truncated_mdat.mp4"  # faststart: moov first, the samples cut off
    cut.write_bytes(data[:len(data) // 2])
    no_moov = tmp_path / "truncated_no_moov.mp4"  # moov at the end, cut off
    tail = truths["moov_at_end"].clip.path.read_bytes()
    no_moov.write_bytes(tail[:len(tail) // 2])
    garbage = tmp_path / "garbage.mp4"
    garbage.write_bytes(random.Random(1).randbytes(20000))
    mjpeg = tmp_path / "mjpeg.mp4"  # a well-formed MP4 of a codec weft does not decode
    subprocess.run(["ffmpeg", "-v", "error", "-f", "lavfi", "-i", "testsrc2=size=64x64:rate=25", "-frames:v", "3",
                    "-c:v", "mjpeg", str(mjpeg)], check=True)
    main = wc.create_project("robots").branch("main")
    for i, path in enumerate([cut, no_moov, garbage, mjpeg]):
        t = main.table(f"t{i}")
        with pytest.raises(weft.InvalidArgument) as ei:
            t.append(_one_episode(tr), videos={"cam": {0: str(path)}})
        assert str(path) in str(ei.value), ei.value
        if path == mjpeg:
            assert "H.264" in str(ei.value), ei.value  # names what it takes
        sha = _client.hash_file(path).sha256
        assert _client.stat_media(wc, "robots", sha)["exists"] is False
        assert not [k for k in store.snapshot() if sha in k], f"{path.name}: an object is left in the store"
        with pytest.raises(weft.NotFound):
            t.num_rows()


def test_timestamp_off_every_frame_is_refused(wc, truths):
    tr = truths["hevc_open_gop"]
    t = wc.create_project("robots").branch("main").table("moments")
    head = append_clip(t, tr, ["cam"])
    bad = tr.rows().slice(SHORT, 6)  # episode 1's first rows
    ts = bad.column("timestamp").to_pylist()
    ts[4] += 0.4 / FPS  # between two frames
    bad = bad.set_column(1, "timestamp", pa.array(ts, pa.float64()))
    with pytest.raises(weft.InvalidArgument) as ei:
        t.append(bad, videos={"cam": {1: str(tr.clip.path)}})
    msg = str(ei.value)
    assert "row 4" in msg and str(tr.clip.path) in msg, msg
    assert t.num_rows() == tr.n and t.ref.head() == head


def test_window_on_a_non_video_column(wc, truths):
    tr = truths["av1"]
    t = wc.create_project("robots").branch("main").table("moments")
    append_clip(t, tr, ["cam"])
    recipe = weft.Recipe(seed=1, batch_size=B, components=[
        weft.Component(t, windows=weft.Windows({"frame": weft.Video([0, 1])}))])
    with pytest.raises(weft.InvalidArgument, match=r"frame.*not a video column"):
        read_run(recipe)


def test_no_padding_on_a_short_episode(wc, truths):
    """pad=False: a window longer than the short episode (5 frames) is
    refused naming that episode; the long episodes alone are fine."""
    tr = truths["moov_at_end"]
    main = wc.create_project("robots").branch("main")
    rows = tr.rows()
    ep = pa.array([[7, 8, 9][i] for i in rows.column("episode_index").to_pylist()], pa.int64())
    t = main.table("moments")
    path = str(tr.clip.path)
    t.append(rows.set_column(0, "episode_index", ep), videos={"cam": {7: path, 8: path, 9: path}})
    win = weft.Windows({"cam": weft.Video(range(-3, SHORT + 1), pad=False)})  # 9 frames
    recipe = weft.Recipe(seed=2, batch_size=B, components=[weft.Component(t, windows=win)])
    with pytest.raises(weft.InvalidArgument, match=r"\(episode 7: rows 0\.\.4\)") as ei:
        read_run(recipe)
    assert "pad" in str(ei.value)
    # Without the short episode every window slides into its episode: nothing is padded.
    long = main.table("long")
    keep = rows.filter(pc.greater_equal(rows.column("frame"), SHORT))
    long.append(keep.set_column(0, "episode_index", pa.array(
        [8 if f < tr.spans[2][0] else 9 for f in keep.column("frame").to_pylist()], pa.int64())),
        videos={"cam": {8: path, 9: path}})
    batches, _, _ = read_run(weft.Recipe(seed=2, batch_size=B, components=[weft.Component(long, windows=win)]))
    assert batches and not any(b["cam_is_pad"].any() for b in batches)


def test_missing_media_object_is_not_found(flightd_bin, truths, tmp_path):
    """Upload and append, then delete the media object from the fs store
    behind the server's back: reading a window is NotFound naming the media."""
    root = tmp_path / "store"
    store = fs_store(root)
    tr = truths["with_audio"]
    with serving(flightd_bin, store, tmp_path) as d:
        c = weft.Client(d.location)
        try:
            t = c.create_project("robots").branch("main").table("moments")
            append_clip(t, tr, ["cam"])
            sha = _client.hash_file(tr.clip.path).sha256
            [key] = [k for k in store.snapshot() if k.endswith(f"media/{sha}.mp4")]
            (root / key).unlink()
            assert _client.stat_media(c, "robots", sha)["exists"] is False
            recipe = weft.Recipe(seed=1, batch_size=B, components=[
                weft.Component(t, windows=weft.Windows({"cam": weft.Video([-1, 0])}))])
            with pytest.raises(weft.NotFound) as ei:
                read_run(recipe)
            assert sha[:12] in str(ei.value) and "media" in str(ei.value), ei.value
        finally:
            c.close()


# ---------------------------------------------------------------- host slots (issue 14)


def test_shm_windows_equal_flight(wc, truths):
    """Video windows delivered on host slots: the same steps, byte for
    byte, and the same decoded frames as on the plain Flight stream."""
    recipe, _, _ = _mixed(wc, truths)

    def run(delivery: str) -> tuple[str, list[bytes], list[dict]]:
        raws: list[bytes] = []

        def rec(b: pa.RecordBatch) -> pa.RecordBatch:
            raws.append(b.serialize().to_pybytes())  # a copy: slot memory is reused after the step
            return b

        with weft.TrainLoader(recipe, transform_fn=rec, decode_threads=2, prefetch=2, delivery=delivery) as loader:
            out = [{k: v.clone() if hasattr(v, "clone") else v for k, v in b.items()} for b in loader]
            return loader.delivery, raws, out

    used, raw_s, out_s = run("auto")
    if used != "shm":
        msg = "this flightd did not serve host slots: shm with windows NOT tested"
        print(f"\n*** SKIPPING: {msg} ***", file=sys.stderr)
        pytest.skip(msg)
    _, raw_f, out_f = run("flight")
    assert raw_s == raw_f, "every step's RecordBatch (the windows' segments), byte for byte"
    assert len(out_s) == len(out_f) == recipe.steps
    for i, (s, f) in enumerate(zip(out_s, out_f)):
        assert s.keys() == f.keys()
        for k in s:
            if hasattr(s[k], "numpy"):
                assert s[k].shape == f[k].shape and s[k].numpy().tobytes() == f[k].numpy().tobytes(), (i, k)
            else:
                assert s[k] == f[k], (i, k)
