"""Peer 5: Lance (pylance). The same rows written with lance.write_dataset
(one dataset per table, from the Parquet files), read with
LanceDataset.take(indices) per step.

Lance has random access but no mixing and no resume of its own, so this
module adds the smallest version of both that matches Weft's contract
(``Mix`` below: 19 lines, docstring included; 28 with the step loop in
``_batches`` that reads each step with take() and slices it per rank): exact per-batch shares (component c gets
floor((s+1)·w_c·B) − floor(s·w_c·B) rows at step s, the rest go to the
last one), each component read in a seeded permutation per epoch, so the
rows of any step are a closed-form function of (seed, step) — resume at
step S is a seek, no replay.

Ranks: every rank computes the global batch's indices and takes its
contiguous B/W slice (rank r: [r·B/W, (r+1)·B/W)), so the union of the
ranks' batches is the W = 1 batch.
"""

import math
import shutil
import time
from pathlib import Path

import numpy as np

from .base import IMAGE_BYTES, Loader, Resume


def lance_key(wl):
    """Cache key of the Lance datasets: the Parquet data's key, the pylance
    version and this writer's source."""
    from .. import cache, data

    return {"data": cache.digest(data.key(wl)), "pylance": cache.version("pylance"),
            "producer": cache.sources_sha256([Path(__file__)])}


def write_lance(h, wl, out):
    import lance
    import pyarrow.parquet as pq

    from .. import cache, data

    out = Path(out)
    stamp = out / "spec.json"
    key = lance_key(wl)
    if cache.fresh(stamp, key):
        return
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    for t, path in enumerate(data.parquet_paths(h.data_dir, wl)):
        t0 = time.monotonic()
        f = pq.ParquetFile(path)
        lance.write_dataset(f.iter_batches(batch_size=65536 if wl.name == "small" else 64), str(out / "ab"[t]),
                            schema=f.schema_arrow, mode="overwrite")
        h.log(f"lance {wl.name}: wrote {out / 'ab'[t]} ({wl.rows[t]:,} rows) in {time.monotonic() - t0:.1f}s")
    cache.record(stamp, key)


# ---- the mix and the resume: everything Lance does not have ----
class Mix:
    """Global batch ``step`` of B rows: per component, the row indices."""

    def __init__(self, rows, weights, batch, seed):
        self.rows, self.weights, self.batch, self.seed, self.perms = rows, weights, batch, seed, {}

    def counts(self, step):  # rows each component has given before ``step``: exact shares, the rest to the last
        head = [math.floor(step * w * self.batch) for w in self.weights[:-1]]
        return head + [step * self.batch - sum(head)]

    def perm(self, c, epoch):  # a seeded permutation per component and epoch (the current one kept)
        if (c, epoch) not in self.perms:
            self.perms = {k: v for k, v in self.perms.items() if k[0] != c}  # epochs only grow
            self.perms[(c, epoch)] = np.random.default_rng([self.seed, c, epoch]).permutation(self.rows[c])
        return self.perms[(c, epoch)]

    def indices(self, step):
        out = []
        for c, (lo, hi) in enumerate(zip(self.counts(step), self.counts(step + 1))):
            n = self.rows[c]
            out.append(np.concatenate([self.perm(c, e)[max(lo - e * n, 0):hi - e * n]
                                       for e in range(lo // n, (hi - 1) // n + 1)]))
        return out
# ---- end of the mix and the resume ----


def to_tensors(table, wl):
    import numpy as np
    import torch

    out = {"id": torch.from_numpy(table.column("id").to_numpy())}
    if wl.name == "small":
        out["features"] = torch.from_numpy(table.column("features").combine_chunks().flatten().to_numpy().reshape(-1, 32))
        out["label"] = torch.from_numpy(table.column("label").to_numpy())
        return out
    img = table.column("image").combine_chunks()
    n = len(img)
    off = np.frombuffer(img.buffers()[1], dtype=np.int64 if img.type.id == 35 else np.int32)[img.offset:img.offset + n + 1]
    raw = np.frombuffer(img.buffers()[2], dtype=np.uint8)
    # One copy into one tensor, as base.images_tensor (the values here are fixed-size).
    t = np.zeros((n, IMAGE_BYTES), dtype=np.uint8)
    for i in range(n):
        t[i, :off[i + 1] - off[i]] = raw[off[i]:off[i + 1]]
    out["image"] = torch.from_numpy(t)
    return out


class Lance(Loader):
    name = "lance"
    title = "Lance (pylance), take() per step"
    package = "pylance"
    how = ("lance.write_dataset per table; per step LanceDataset.take(indices) of an exact 0.3/0.7 share of B "
           "from a seeded per-epoch permutation of each table (Mix, 19 lines written here: Lance has no mix or resume)")

    def prepare(self, h, wl):
        out = h.work / "lance" / wl.name
        write_lance(h, wl, out)
        return {"lance": [str(out / "a"), str(out / "b")]}

    def _batches(self, params, wl, rank, world, start):
        import lance
        import pyarrow as pa

        ds = [lance.dataset(p) for p in params["lance"]]
        mix = Mix(wl.rows, wl.weights, wl.batch_size, wl.seed)
        b = wl.batch_size // world
        step = start
        while True:
            parts = [d.take(ix) for d, ix in zip(ds, mix.indices(step))]
            t = pa.concat_tables(parts).slice(rank * b, b)
            yield to_tensors(t, wl)
            step += 1

    def open(self, params, wl, rank, world, steps):
        return self._batches(params, wl, rank, world, 0)

    def resume(self, params, wl, step, state):
        return Resume("seek", self._batches(params, wl, 0, 1, step),
                      note=f"Mix.indices(step={step:,}): closed form, a fresh dataset opened")


LOADERS = [Lance()]
