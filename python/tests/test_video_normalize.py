"""Normalised video windows (issue 15, item 3): ``weft.Video(...,
normalize=(mean, std), dtype=...)`` on the CPU path.

The rule (docs/python.md, "Video windows"): per value
``y = (float32(x) / 255 - mean32[c]) / std32[c]`` in IEEE float32, one
rounding per operation, then rounded to the dtype to nearest even. The
oracle here computes it one value at a time in Python: each float32
operation as a binary64 operation rounded to float32 (exact for +, -, /
of float32 operands: binary64 has more than 2p+2 bits), float16 by
``struct``'s IEEE half packing, bfloat16 by rounding the value's
significand to 8 bits with Python's round-half-even — none of them the
numpy and bit tricks ``weft._video.normalize`` uses."""

from __future__ import annotations

import math
import os
import struct

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

# ImageNet's, and sets whose values land exactly on float16 and bfloat16
# ties at x = 0 (y = -mean with std 1), both directions, both signs.
IMAGENET = ((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))
BF16_TIES = ((-1.00390625, -1.01171875, 1.01171875), (1.0, 1.0, 1.0))  # 0x3F808000, 0x3F818000, 0xBF818000
F16_TIES = ((-(1 + 2**-11), -(1 + 3 * 2**-11), 1 + 3 * 2**-11), (1.0, 1.0, 1.0))
# Large outputs: float16 overflows to inf (65504 is its largest), float32 and bfloat16 do not;
# the last channel's std is float32's smallest subnormal, so y overflows float32 itself to inf.
HUGE = ((0.5, -3.0, 0.0), (1e-6, 3e-5, 1e-45))
SETS = {"imagenet": IMAGENET, "bf16 ties": BF16_TIES, "f16 ties": F16_TIES, "huge": HUGE,
        "identity": ((0.0, 0.0, 0.0), (1.0, 1.0, 1.0))}


def f32(v: float) -> float:
    try:
        return struct.unpack("<f", struct.pack("<f", v))[0]
    except OverflowError:
        return math.copysign(math.inf, v)


def f32_bits(v: float) -> int:
    return struct.unpack("<I", struct.pack("<f", v))[0]


def oracle_f32(x: int, mean: float, std: float) -> float:
    q = f32(float(x) / 255.0)  # x and 255 are exact in float32
    d = f32(q - f32(mean))
    return f32(d / f32(std))


def oracle_f16_bits(y: float) -> int:
    try:
        return struct.unpack("<H", struct.pack("<e", y))[0]
    except OverflowError:  # rounds past 65504: inf
        return 0xFC00 if y < 0 else 0x7C00


def oracle_bf16_bits(y: float) -> int:
    if math.isnan(y):
        return 0x7FC0
    if math.isinf(y) or y == 0:
        return f32_bits(y) >> 16
    _, e = math.frexp(abs(y))  # |y| = m * 2**e, 0.5 <= m < 1
    quantum = max(2.0 ** (e - 8), 2.0 ** -133)  # 8 significant bits; bfloat16's subnormal step
    r = round(abs(y) / quantum) * quantum  # Python's round: half to even, exact here
    if r > 3.3895313892515355e38:  # bfloat16's largest finite value
        r = math.inf
    return f32_bits(math.copysign(r, y)) >> 16


def oracle(rgb: np.ndarray, mean, std, dtype: str) -> np.ndarray:
    """The rule, value by value: float32/float16 arrays, bfloat16 as uint16 bits."""
    flat = rgb.reshape(-1, 3)
    ys = [[oracle_f32(int(px[c]), mean[c], std[c]) for c in range(3)] for px in flat]
    if dtype == "float32":
        return np.array(ys, np.float32).reshape(rgb.shape)
    if dtype == "float16":
        return np.array([[oracle_f16_bits(y) for y in row] for row in ys], np.uint16).view(np.float16).reshape(rgb.shape)
    return np.array([[oracle_bf16_bits(y) for y in row] for row in ys], np.uint16).reshape(rgb.shape)


def bits(a: np.ndarray) -> np.ndarray:
    return a.view({1: np.uint8, 2: np.uint16, 4: np.uint32}[a.dtype.itemsize])


def every_value() -> np.ndarray:
    """uint8 [1, 16, 16, 3]: every value 0..255 in every channel (shifted per channel)."""
    v = np.arange(256, dtype=np.uint8)
    return np.stack([v, np.roll(v, 85), np.roll(v, 170)], axis=-1).reshape(1, 16, 16, 3)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("which", list(SETS))
def test_normalize_equals_the_oracle_bit_for_bit(which, dtype):
    mean, std = SETS[which]
    rgb = every_value()
    got = _video.normalize(rgb, mean, std, dtype)
    want = oracle(rgb, mean, std, dtype)
    assert got.dtype == _video.STORAGE[dtype] and got.shape == rgb.shape
    np.testing.assert_array_equal(bits(got), bits(want), err_msg=f"{which} {dtype}")


def test_ties_round_to_even():
    black = np.zeros((1, 1, 1, 3), np.uint8)
    # y = 1.00390625 (0x3F808000) → 0x3F80 (down, even); 1.01171875 (0x3F818000) → 0x3F82 (up, even);
    # -1.01171875 → 0xBF82
    assert _video.normalize(black, *BF16_TIES, "bfloat16").reshape(3).tolist() == [0x3F80, 0x3F82, 0xBF82]
    # 1 + 2^-11 → 1.0 (0x3C00); 1 + 3*2^-11 → 1 + 2^-9 (0x3C02); and its negation 0xBC02
    f16 = _video.normalize(black, *F16_TIES, "float16").view(np.uint16).reshape(3).tolist()
    assert f16 == [0x3C00, 0x3C02, 0xBC02]
    white = np.full((1, 1, 1, 3), 255, np.uint8)
    h = _video.normalize(white, *HUGE, "float16").reshape(3)
    assert h.tolist() == [np.inf] * 3  # 5e5, 1.3e5: past float16's 65504; 1/1e-45: past float32's range
    b = _video.normalize(white, *HUGE, "bfloat16").reshape(3).tolist()
    assert b[0] == oracle_bf16_bits(f32(0.5 / f32(1e-6))) and b[2] == 0x7F80  # finite; inf stays inf


def test_bfloat16_bits_edges():
    vals = np.array([0.0, -0.0, 1.0, np.inf, -np.inf, np.nan, 3.3895314e38, 3.4028235e38, 1e-40, -1e-45],
                    np.float32)
    got = _video.bfloat16_bits(vals).tolist()
    assert got[:5] == [0x0000, 0x8000, 0x3F80, 0x7F80, 0xFF80]
    assert (got[5] & 0x7F80) == 0x7F80 and (got[5] & 0x7F) != 0  # NaN stays NaN
    assert got[6] == 0x7F7F  # bfloat16's largest finite
    assert got[7] == 0x7F80  # float32's largest rounds up to inf
    assert got[8:] == [oracle_bf16_bits(float(v)) for v in vals[8:]]  # subnormals
    # a NaN whose top 16 bits alone would read as inf
    nan = np.array([0x7F800001], np.uint32).view(np.float32)
    assert _video.bfloat16_bits(nan)[0] & 0x7F != 0


def test_torch_views_bfloat16_bits():
    torch = pytest.importorskip("torch")
    rgb = every_value()
    got = _video.normalize(rgb, *IMAGENET, "bfloat16")
    t = torch.from_numpy(_video.normalize(rgb, *IMAGENET, "float32")).to(torch.bfloat16)  # torch's RNE
    assert torch.equal(torch.from_numpy(got.view(np.int16)).view(torch.bfloat16), t)


# ------------------------------------------------------------------ window specs (no server)


def test_video_normalize_json():
    v = weft.Video(range(2), size=(8, 8), normalize=IMAGENET, dtype="bfloat16", pad=False)
    j = v.to_json()
    assert j == {"kind": "video", "frames": [0, 1], "size": [8, 8],
                 "normalize": {"mean": [0.485, 0.456, 0.406], "std": [0.229, 0.224, 0.225]},
                 "dtype": "bfloat16", "pad": False}
    assert list(j) == ["kind", "frames", "size", "normalize", "dtype", "pad"]  # the canonical order
    assert weft.Video([0], normalize=IMAGENET).to_json()["dtype"] == "float32"  # the default
    assert "normalize" not in weft.Video([0]).to_json() and "dtype" not in weft.Video([0]).to_json()
    assert "normalize=" in repr(v) and "dtype='bfloat16'" in repr(v)
    np_mean = weft.Video([0], normalize=(np.array([0.5, 0.5, 0.5], np.float32), [1, 2, 3]))
    assert np_mean.to_json()["normalize"] == {"mean": [0.5, 0.5, 0.5], "std": [1.0, 2.0, 3.0]}


@pytest.mark.parametrize("kw, match", [
    ({"dtype": "float16"}, "dtype 'float16' applies to normalised frames only"),
    ({"normalize": IMAGENET, "dtype": "float64"}, "dtype 'float64' must be one of"),
    ({"normalize": IMAGENET, "dtype": "uint8"}, "dtype 'uint8' must be one of"),
    ({"normalize": ((0.5, 0.5), (1, 1, 1))}, "mean .* three numbers"),
    ({"normalize": ((0.5, 0.5, 0.5),)}, r"\(mean, std\)"),
    ({"normalize": "imagenet"}, r"\(mean, std\)"),
    ({"normalize": ((0, 0, 0), (1, 0, 1))}, r"std\[1\] 0 must be above 0"),
    ({"normalize": ((0, 0, 0), (1, 1, -2))}, r"std\[2\] -2 must be above 0"),
    ({"normalize": ((0, 0, 0), (1, 1, 1e-50))}, r"std\[2\] .* above 0 \(in float32\)"),
    ({"normalize": ((0, float("nan"), 0), (1, 1, 1))}, r"mean\[1\] nan is not a finite"),
    ({"normalize": ((1e39, 0, 0), (1, 1, 1))}, r"mean\[0\] .* float32's range"),
    ({"normalize": ((0, 0, 0), (1, float("inf"), 1))}, r"std\[1\] inf is not a finite"),
    ({"normalize": ((0, "a", 0), (1, 1, 1))}, r"mean\[1\] 'a' is not a number"),
    ({"normalize": ((0, True, 0), (1, 1, 1))}, r"mean\[1\] True is not a number"),
])
def test_video_normalize_invalid(kw, match):
    with pytest.raises(weft.InvalidArgument, match=match):
        weft.Video(range(2), **kw)


# ------------------------------------------------------------------ decoding (PyAV, no server)


def _need_tools() -> None:
    missing = [n for n, ok in (("the ffmpeg program", ref.FFMPEG), ("PyAV (pip install av)", av)) if not ok]
    if missing:
        msg = f"SKIPPED LOUDLY: video decode tests need {' and '.join(missing)}"
        if os.environ.get("CI") == "true":
            pytest.fail(msg)
        pytest.skip(msg)


@pytest.fixture(scope="module")
def clip(tmp_path_factory):
    _need_tools()
    return ref.demux(ref.make_clip("h264_bframes", tmp_path_factory.mktemp("clips"), seconds=1.0))


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("size", [None, (17, 29)])
def test_decoded_windows_are_normalised(clip, dtype, size):
    """A normalised window's frames are the rule applied to the uint8 frames
    of the same window without normalize (after the resize), bit for bit;
    to_tensors gives them the torch dtype, channels last."""
    torch = pytest.importorskip("torch")
    from weft._convert import to_tensors

    pts = clip.frame_pts
    windows = [pts[0:3], pts[10:13], pts[2:5]]
    plain, _ = ref.build_windows(clip, windows, size=size)
    normed, _ = ref.build_windows(clip, windows, size=size, norm=(*(list(map(f32, v)) for v in IMAGENET), dtype))
    u8 = _video.decode_windows(pa.RecordBatch.from_arrays([plain], ["cam"]), threads=1)["cam"]
    dec = _video.VideoDecoder(threads=2)
    try:
        got, got_dtype = dec.frames("cam", normed)
    finally:
        dec.close()
    assert got_dtype == dtype and got.dtype == _video.STORAGE[dtype] and got.shape == u8.shape
    # the oracle on a sample of pixels (it is slow), numpy's normalize on all of them
    np.testing.assert_array_equal(bits(got), bits(_video.normalize(u8, *IMAGENET, dtype)))
    some = u8[:, :, ::5, ::7]
    np.testing.assert_array_equal(bits(got[:, :, ::5, ::7]), bits(oracle(some, *IMAGENET, dtype)))
    t = to_tensors(pa.RecordBatch.from_arrays([normed], ["cam"]))["cam"]
    assert t.dtype == {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}[dtype]
    assert tuple(t.shape) == u8.shape and t.shape[-1] == 3
    assert torch.equal(t.view(torch.int16 if dtype != "float32" else torch.int32),
                       torch.from_numpy(got.view(np.int16 if dtype != "float32" else np.int32)))


def test_dtypes_differ_in_one_batch(clip):
    _need_tools()
    pts = clip.frame_pts
    a, _ = ref.build_windows(clip, [pts[0:2]], norm=((0, 0, 0), (1, 1, 1), "float16"))
    b, _ = ref.build_windows(clip, [pts[20:22]])
    rows = a.to_pylist() + [{**r, "segment": [1, 1]} for r in b.to_pylist()]
    col = pa.array(rows, ref.window_type(2))
    with pytest.raises(weft.InvalidArgument, match="dtypes"):
        _video.decode_windows(pa.RecordBatch.from_arrays([col], ["cam"]))


# ------------------------------------------------------------------ end to end (a real flightd)


@pytest.fixture
def wclient(server):
    c = weft.Client(server.location)
    yield c
    c.close()


def _moments(client, tmp_path):
    """A table of two episodes of one clip each, with a video column cam."""
    _need_tools()
    episodes = {}
    for e in range(2):
        d = tmp_path / f"ep{e}"
        d.mkdir()
        episodes[e] = ref.make_clip("h264_bframes", d, seconds=1.0)
    eps, ts = [], []
    for e, path in episodes.items():
        clip = ref.demux(path)
        for p in clip.frame_pts:
            eps.append(e)
            ts.append(p / clip.timescale)
    t = client.create_project("robots").branch("main").table("moments")
    t.append(pa.table({"episode_index": pa.array(eps, pa.int64()), "timestamp": pa.array(ts, pa.float64())}),
             videos={"cam": {e: str(p) for e, p in episodes.items()}})
    return t


def _read_all(recipe):
    torch = pytest.importorskip("torch")
    out = []
    with weft.TrainLoader(recipe, prefetch=2, decode_threads=1) as loader:
        for batch in loader:
            out.append({k: (v.clone() if isinstance(v, torch.Tensor) else v) for k, v in batch.items()})
    return out


@pytest.mark.parametrize("store", ["fs"], indirect=True)
def test_normalised_windows_through_flightd(wclient, tmp_path):
    """The server validates and canonicalises normalize/dtype (part of the
    run id) and sends mean, std and dtype with each segment; the trainer's
    tensors are the rule applied to the uint8 frames of the same run
    without normalize, bit for bit, for each dtype, with and without size."""
    torch = pytest.importorskip("torch")
    t = _moments(wclient, tmp_path)
    tdt = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}

    def recipe(**kw):
        return weft.Recipe(seed=5, batch_size=4, components=[
            weft.Component(t, windows=weft.Windows({"cam": weft.Video([-2, 0, 1], **kw)}))])

    for size in (None, (24, 32)):
        base = recipe(size=size)
        plain = _read_all(base)
        assert len(plain) > 2 and plain[0]["cam"].dtype == torch.uint8
        for dtype in ("float32", "float16", "bfloat16"):
            got = _read_all(recipe(size=size, normalize=IMAGENET, dtype=dtype))
            assert len(got) == len(plain)
            for i, (g, w) in enumerate(zip(got, plain)):
                assert g["cam"].dtype == tdt[dtype] and g["cam"].shape == w["cam"].shape, (size, dtype, i)
                assert torch.equal(g["cam_is_pad"], w["cam_is_pad"])
                want = _video.normalize(w["cam"].numpy(), *IMAGENET, dtype)
                gb = g["cam"].view(torch.int32 if dtype == "float32" else torch.int16).numpy()
                np.testing.assert_array_equal(gb, want.view(gb.dtype), err_msg=f"size {size} {dtype} step {i}")


@pytest.mark.parametrize("store", ["fs"], indirect=True)
@pytest.mark.parametrize("spec, match", [
    ({"normalize": {"mean": [0.5, 0.5], "std": [1, 1, 1]}}, r'"normalize"\."mean" needs 3 numbers'),
    ({"normalize": {"mean": [0, 0, 0], "std": [1, 0, 1]}}, r'"normalize"\.std\[1\] is 0'),
    ({"normalize": {"mean": [0, 0, "1e999"], "std": [1, 1, 1]}}, r'"normalize"\.mean\[2\]'),
    ({"normalize": {"mean": [0, 0, 0], "std": [1, 1, 1]}, "dtype": "int8"}, r'"dtype" is "int8"'),
    ({"dtype": "float16"}, r'"dtype" applies to normalised frames'),
])
def test_server_refuses_hostile_normalize(wclient, tmp_path, spec, match):
    t = _moments(wclient, tmp_path)
    r = weft.Recipe(seed=5, batch_size=4, components=[
        weft.Component(t, windows=weft.Windows({"cam": {"kind": "video", "frames": [0], **spec}}))])
    with pytest.raises(weft.InvalidArgument, match=match):
        _read_all(r)
