"""Video windows on the client: the decoder against ffmpeg (YUV byte for
byte, RGB within 1 LSB of a float64 reference), and the window specs.

The clips are made here with the ffmpeg program; segments are cut with
PyAV's demuxer by a small reference producer (videoref.py), independent of
the server's Go planner."""

from __future__ import annotations

import os
import random

import numpy as np
import pyarrow as pa
import pytest

import weft
from weft import _video

import videoref as ref

try:
    import av  # noqa: F401
except ImportError:  # pragma: no cover
    av = None


def _need_tools() -> None:
    missing = [n for n, ok in (("the ffmpeg program", ref.FFMPEG), ("PyAV (pip install av)", av)) if not ok]
    if missing:
        msg = f"SKIPPED LOUDLY: video decode tests need {' and '.join(missing)}"
        if os.environ.get("CI") == "true":
            pytest.fail(msg)
        pytest.skip(msg)


@pytest.fixture(scope="module")
def clips(tmp_path_factory):
    _need_tools()
    d = tmp_path_factory.mktemp("clips")
    return {name: ref.demux(ref.make_clip(name, d)) for name in ref.CLIPS}


@pytest.fixture(scope="module")
def ffmpeg_decode(clips):
    """ffmpeg's decode of every clip: {name: {pts: raw frame}}."""
    out = {}
    for name, clip in clips.items():
        frames = ref.ffmpeg_frames(clip.path, clip.pix_fmt, clip.width, clip.height)
        pts = clip.frame_pts
        assert len(frames) == len(pts), f"{name}: ffmpeg decoded {len(frames)} frames, the demuxer has {len(pts)}"
        out[name] = dict(zip(pts, frames))
    return out


def _windows(clip: ref.Clip, t: int, count: int, seed: int) -> list[list[int]]:
    """Windows of ``t`` frame offsets (history and future) around random
    moments, plus both edges of the clip (the episode): out-of-range frames
    repeat the edge frame, as the server pads."""
    pts = clip.frame_pts
    n = len(pts)
    rnd = random.Random(seed)
    moments = [0, n - 1] + [rnd.randrange(n) for _ in range(count)]
    out = []
    for m in moments:
        first = rnd.choice([-(t // 2), -(t - 1), 0])
        out.append([pts[min(max(m + first + k, 0), n - 1)] for k in range(t)])
    return out


EXPECT_COLOR = {"h264_bt709_full": ("bt709", True)}  # every other clip is untagged and below 720 lines


@pytest.mark.parametrize("name", list(ref.CLIPS))
def test_yuv_bit_exact_with_ffmpeg(clips, ffmpeg_decode, name):
    clip, want = clips[name], ffmpeg_decode[name]
    bits = 10 if clip.pix_fmt.endswith("10le") else 8
    pos = {u.pts: i for i, u in enumerate(clip.units)}
    leading = 0  # windows whose first frame decodes after a later keyframe (open GOP): started one GOP back
    windows = _windows(clip, 6, 10, seed=13)
    if name == "hevc_open_gop":
        keys = [i for i, u in enumerate(clip.units) if u.key]
        # Every leading picture of every CRA, as a window of its own.
        windows += [[u.pts] for i, u in enumerate(clip.units)
                    if not u.key and any(k < i and clip.units[k].pts > u.pts for k in keys)]
    for w in windows:
        start, end = ref.decode_range(clip, w)
        if any(u.key for u in clip.units[start + 1:min(pos[p] for p in w) + 1]):
            leading += 1
        seg = _video.Segment(**{k: v for k, v in ref.segment_dict(clip, start, end).items() if k != "size"})
        pics = _video.decode_segment(seg, set(w))
        assert sorted(pics) == sorted(set(w))
        for p in set(w):
            pic = pics[p]
            assert pic.pix_fmt == clip.pix_fmt
            got = np.concatenate([pl.reshape(-1).view(np.uint8) for pl in pic.planes])
            assert got.tobytes() == want[p].tobytes(), f"{name}: frame at pts {p} differs from ffmpeg's"
        if bits == 10:
            assert pics[w[0]].planes[0].dtype == np.dtype("<u2")
    if name == "hevc_open_gop":
        assert leading >= 3, "the open-GOP clip has no leading pictures to test"


@pytest.mark.parametrize("name", list(ref.CLIPS))
def test_rgb_within_one_lsb_of_reference(clips, ffmpeg_decode, name):
    clip, want = clips[name], ffmpeg_decode[name]
    bits = 10 if clip.pix_fmt.endswith("10le") else 8
    matrix, full = EXPECT_COLOR.get(name, ("bt601", False))
    windows = _windows(clip, 5, 12, seed=7)
    col, nseg = ref.build_windows(clip, windows)
    batch = pa.RecordBatch.from_arrays([col, pa.array(range(len(windows)), pa.int64())], ["cam", "_row"])
    dec = _video.VideoDecoder(threads=2)
    try:
        out = dec.decode(batch)["cam"]
    finally:
        dec.close()
    assert out.dtype == np.uint8 and out.shape == (len(windows), 5, clip.height, clip.width, 3)
    worst = 0
    for i, w in enumerate(windows):
        for j, p in enumerate(w):
            planes = ref.split_planes(want[p], clip.pix_fmt, clip.width, clip.height)
            exp = ref.reference_rgb(planes, bits, matrix, full)
            worst = max(worst, int(np.abs(out[i, j].astype(np.int64) - exp.astype(np.int64)).max()))
    assert worst <= 1, f"{name}: RGB differs from the {matrix} {'full' if full else 'limited'} reference by {worst}"


def test_color_rule_reads_the_stream(clips):
    for name, (matrix, full) in {"h264_bt709_full": ("bt709", True), "h264_bframes": ("bt601", False),
                                 "hevc_10bit": ("bt601", False)}.items():
        clip = clips[name]
        start, end = ref.decode_range(clip, [clip.frame_pts[0]])
        seg = _video.Segment(**{k: v for k, v in ref.segment_dict(clip, start, end).items() if k != "size"})
        pic = next(iter(_video.decode_segment(seg, [clip.frame_pts[0]]).values()))
        assert _video.color_rule(pic)[:2] == (matrix, full), name


def test_shared_gop_is_decoded_once(clips, monkeypatch):
    clip = clips["h264_bframes"]
    pts = clip.frame_pts
    windows = [pts[2:6], pts[3:7], pts[1:5], pts[40:44]]  # three share the first GOP
    col, nseg = ref.build_windows(clip, windows)
    assert nseg == 2
    calls = []
    real = _video.decode_segment

    def counting(seg, want=None, **kw):
        calls.append(seg.unit_pts[0])
        return real(seg, want, **kw)

    monkeypatch.setattr(_video, "decode_segment", counting)
    out = _video.decode_windows(pa.RecordBatch.from_arrays([col], ["cam"]), threads=1)["cam"]
    assert len(calls) == 2
    assert out.shape[:2] == (4, 4)
    # The same frame in two samples is the same picture.
    np.testing.assert_array_equal(out[0, 1], out[1, 0])


def test_size_resizes_after_decode(clips):
    clip = clips["h264_bframes"]
    pts = clip.frame_pts
    col, _ = ref.build_windows(clip, [pts[0:3], pts[20:23]], size=(32, 40))
    out = _video.decode_windows(pa.RecordBatch.from_arrays([col], ["cam"]))["cam"]
    assert out.shape == (2, 3, 32, 40, 3) and out.dtype == np.uint8
    # Resizing a constant picture keeps it constant; an identity size is a no-op.
    flat = np.full((1, 9, 11, 3), 77, np.uint8)
    assert (_video.resize(flat, (4, 5)) == 77).all()
    assert (_video.resize(out[0], (32, 40)) == out[0]).all()


def test_frames_of_different_sizes_need_a_size(tmp_path):
    _need_tools()
    a = ref.demux(ref.make_clip("moov_at_end", tmp_path))
    b = ref.demux(ref.make_clip("moov_at_end", tmp_path, size=(48, 64)))
    ca, _ = ref.build_windows(a, [a.frame_pts[:2]])
    cb, _ = ref.build_windows(b, [b.frame_pts[:2]])
    rows = ca.to_pylist() + [{**r, "segment": [1, 1]} for r in cb.to_pylist()]
    col = pa.array(rows, ref.window_type(2))
    with pytest.raises(weft.InvalidArgument, match="size"):
        _video.decode_windows(pa.RecordBatch.from_arrays([col], ["cam"]))


def test_to_tensors_decodes_video_windows(clips):
    torch = pytest.importorskip("torch")
    from weft._convert import to_tensors

    clip = clips["h264_bframes"]
    pts = clip.frame_pts
    col, _ = ref.build_windows(clip, [pts[0:4], pts[10:14]])
    pad = pa.array([[True, False, False, False], [False] * 4], pa.list_(pa.bool_(), 4))
    action = pa.array([[[1.0, 2.0]] * 3, [[3.0, 4.0]] * 3], pa.list_(pa.list_(pa.float32(), 2), 3))
    batch = pa.RecordBatch.from_arrays([col, pad, action], ["cam", "cam_is_pad", "action"])
    t = to_tensors(batch)
    assert t["cam"].dtype == torch.uint8 and tuple(t["cam"].shape) == (2, 4, clip.height, clip.width, 3)
    assert t["cam_is_pad"].dtype == torch.bool and tuple(t["cam_is_pad"].shape) == (2, 4)
    assert tuple(t["action"].shape) == (2, 3, 2)


# ------------------------------------------------------------------ window specs (no server)


def test_window_specs_json():
    w = weft.Windows({"wrist_camera": weft.Video(range(3), size=(224, 224)),
                      "near": weft.Video(seconds=[-0.2, -0.1, 0], tolerance=0.01, pad=False),
                      "action": weft.Rows(range(-1, 3))})
    assert w.to_json() == {
        "wrist_camera": {"kind": "video", "frames": [0, 1, 2], "size": [224, 224]},
        "near": {"kind": "video", "seconds": [-0.2, -0.1, 0.0], "pad": False, "tolerance": 0.01},
        "action": {"kind": "rows", "offsets": [-1, 0, 1, 2]},
    }
    assert list(w.to_json()["near"]) == ["kind", "seconds", "pad", "tolerance"]  # the contract's order


@pytest.mark.parametrize("make, match", [
    (lambda: weft.Video([]), "no offsets"),
    (lambda: weft.Video(), "exactly one"),
    (lambda: weft.Video(range(3), seconds=[0.0]), "not both"),
    (lambda: weft.Video([0.5]), "not an integer"),
    (lambda: weft.Video(seconds=[]), "no seconds"),
    (lambda: weft.Video(seconds=[float("nan")]), "finite"),
    (lambda: weft.Video(range(2), size=(224,)), "size"),
    (lambda: weft.Video(range(2), size=(0, 4)), "size"),
    (lambda: weft.Video(range(2), size="224"), "size"),
    (lambda: weft.Video(range(2), tolerance=0.1), "tolerance"),
    (lambda: weft.Video(seconds=[0.0], tolerance=-1), "tolerance"),
    (lambda: weft.Video(range(2), pad="yes"), "pad"),
    (lambda: weft.Rows([]), "no offsets"),
    (lambda: weft.Rows("abc"), "sequence"),
    (lambda: weft.Windows({}), "no windows"),
    (lambda: weft.Windows({"cam": 3}), "int"),
    (lambda: weft.Windows({"cam": {"offsets": [0]}}), "kind"),
])
def test_window_specs_invalid(make, match):
    with pytest.raises(weft.InvalidArgument, match=match):
        make()


def test_component_sends_windows():
    client = weft.Client("grpc://127.0.0.1:1")  # never connected
    table = client.project("p").branch("main").table("fails")
    c = weft.Component(table, windows={"wrist_camera": weft.Video(range(90))}, weight=0.3)
    assert isinstance(c.windows, weft.Windows)
    j = weft.Recipe(seed=1, batch_size=8, components=[c]).to_json()
    assert j["components"][0]["windows"] == {"wrist_camera": {"kind": "video", "frames": list(range(90))}}
    with pytest.raises(weft.InvalidArgument, match="windows"):
        weft.Component(table, windows=[weft.Video(range(2))])
    # A run record with the same windows (canonical: pad omitted, floats as floats) is no difference.
    r = weft.Recipe(seed=1, batch_size=8, components=[
        weft.Component(table, windows=weft.Windows({"cam": weft.Video(seconds=[0, 1], size=(8, 8))}))])
    record = {"seed": 1, "batch_size": 8, "components": [
        {"project": "p", "ref": "main", "table": "fails", "weight": 1,
         "windows": {"cam": {"kind": "video", "seconds": [0, 1], "size": [8, 8]}}}]}
    assert r.differences(record) == []
    record["components"][0]["windows"]["cam"]["size"] = [16, 16]
    assert any("windows" in d for d in r.differences(record))
