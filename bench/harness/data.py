"""The benchmark data, generated once per scale, deterministically.

small: tables a and b of ``id int64, features fixed_size_list<float32>[32],
       label int64`` (144 B/row); ids of b start at ID_OFFSET so that every
       sample id is unique across the two tables.
large: tables a and b of ``id int64, image binary`` (100 KiB random bytes).

Each table is one Parquet file written by pyarrow (snappy, the default);
row groups of 65,536 rows (small) and 64 rows, about 6.5 MB (large).
"""

import json
import shutil
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from . import cache

ID_OFFSET = 1_000_000_000
IMAGE_BYTES = 100 << 10
FORMAT = 1  # bump to regenerate every cached data set


@dataclass(frozen=True)
class Workload:
    name: str            # "small" or "large"
    rows: tuple          # rows of table a and table b
    batch_size: int
    weights: tuple = (0.3, 0.7)
    seed: int = 2048

    @property
    def columns(self):
        return ("id", "features", "label") if self.name == "small" else ("id", "image")

    def spec(self):
        """JSON-shaped (lists, not tuples), so that it compares equal to a stamp read back."""
        return json.loads(json.dumps(dict(asdict(self), format=FORMAT)))


def schema(name):
    if name == "small":
        return pa.schema([("id", pa.int64()), ("features", pa.list_(pa.float32(), 32)), ("label", pa.int64())])
    return pa.schema([("id", pa.int64()), ("image", pa.binary())])


def chunks(wl, table, chunk_rows):
    """The rows of table 0 (a) or 1 (b) as record batches: a pure function
    of the workload's seed, the table and the row range."""
    n = wl.rows[table]
    for start in range(0, n, chunk_rows):
        k = min(chunk_rows, n - start)
        rng = np.random.default_rng([wl.seed, table, start])
        ids = pa.array(np.arange(start, start + k, dtype=np.int64) + table * ID_OFFSET)
        if wl.name == "small":
            feats = rng.standard_normal(k * 32, dtype=np.float32)
            cols = [ids, pa.FixedSizeListArray.from_arrays(pa.array(feats), 32),
                    pa.array(rng.integers(0, 1000, k, dtype=np.int64))]
        else:
            raw = rng.integers(0, 256, k * IMAGE_BYTES, dtype=np.uint8)
            offsets = pa.array(np.arange(0, (k + 1) * IMAGE_BYTES, IMAGE_BYTES, dtype=np.int32))
            cols = [ids, pa.BinaryArray.from_buffers(pa.binary(), k, [None, offsets.buffers()[1], pa.py_buffer(raw)])]
        yield pa.record_batch(cols, schema=schema(wl.name))


def parquet_paths(root, wl):
    d = Path(root) / wl.name
    return [d / "a.parquet", d / "b.parquet"]


def key(wl):
    """The cache key of a workload's Parquet files: the spec, this file's
    source (the generator and writer) and the pyarrow/numpy versions."""
    return {"spec": wl.spec(), "producer": cache.sources_sha256([Path(__file__)]),
            "pyarrow": pa.__version__, "numpy": np.__version__}


def ensure_parquet(root, wl, log):
    """Write the workload's two Parquet files unless they exist for this key."""
    d = Path(root) / wl.name
    stamp = d / "spec.json"
    k = key(wl)
    if cache.fresh(stamp, k) and all(p.exists() for p in parquet_paths(root, wl)):
        log(f"data {wl.name}: cached in {d}")
        return parquet_paths(root, wl)
    if stamp.exists():
        log(f"data {wl.name}: regenerating ({cache.changed(stamp, k)} changed)")
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True)
    group = 65536 if wl.name == "small" else 64
    for t, path in enumerate(parquet_paths(root, wl)):
        t0 = time.monotonic()
        with pq.ParquetWriter(path, schema(wl.name)) as w:
            for rb in chunks(wl, t, group):
                w.write_batch(rb, row_group_size=group)
        log(f"data {wl.name}: wrote {path.name} ({wl.rows[t]:,} rows, {path.stat().st_size / 1e6:.0f} MB) "
            f"in {time.monotonic() - t0:.1f}s")
    cache.record(stamp, k)
    return parquet_paths(root, wl)


def row_bytes(wl):
    """Bytes of one sample as delivered to the trainer (the data columns' tensors)."""
    return 8 + 32 * 4 + 8 if wl.name == "small" else 8 + IMAGE_BYTES
