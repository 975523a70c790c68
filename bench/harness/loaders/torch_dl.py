"""Peer 1: PyTorch DataLoader over a map-style Dataset that reads the
Parquet files with pyarrow (into memory, at construction), a ConcatDataset
of the two tables, mixed by a WeightedRandomSampler (with replacement,
weights 0.3/N_a and 0.7/N_b per row), num_workers 0 or 2.

Ranks: the sampler is not distributed; each rank draws from its own
generator (seed + rank), as is usual to keep ranks apart. Resume: no seek;
the sampler's index stream is regenerated from its seed and the first S·B
indices skipped (no data is read for them): timed over 2,000 steps and
extrapolated to S.
"""

import time

import numpy as np
import pyarrow.parquet as pq
import torch
from torch.utils.data import ConcatDataset, DataLoader, Dataset, Sampler, WeightedRandomSampler

from .base import Loader, Resume

REPLAY_STEPS = 2_000


class ParquetRows(Dataset):
    def __init__(self, path, workload):
        t = pq.read_table(path)
        self.n = t.num_rows
        self.small = workload == "small"
        self.ids = t.column("id").to_numpy()
        if self.small:
            f = t.column("features").combine_chunks()
            self.features = f.flatten().to_numpy().reshape(-1, 32)
            self.labels = t.column("label").to_numpy()
        else:
            img = t.column("image").combine_chunks()
            self.offsets = np.frombuffer(img.buffers()[1], dtype=np.int32)[img.offset:img.offset + self.n + 1]
            self.data = np.frombuffer(img.buffers()[2], dtype=np.uint8)
        self.table = t  # keeps the buffers alive

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if self.small:
            return {"id": self.ids[i], "features": self.features[i], "label": self.labels[i]}
        return {"id": self.ids[i], "image": self.data[self.offsets[i]:self.offsets[i + 1]]}


class Skip(Sampler):
    """A sampler's indices after the first ``n``."""

    def __init__(self, inner, n):
        self.inner, self.n = inner, n

    def __iter__(self):
        it = iter(self.inner)
        for _ in range(self.n):
            next(it)
        return it

    def __len__(self):
        return len(self.inner) - self.n


class TorchDataLoader(Loader):
    package = "torch"

    def __init__(self, workers):
        self.workers = workers
        self.name = f"torch-dl-w{workers}"
        self.title = f"PyTorch DataLoader, num_workers={workers}"
        self.how = ("map-style Dataset over pyarrow-read Parquet, ConcatDataset of both tables, "
                    f"WeightedRandomSampler 0.3/0.7, num_workers={workers}")

    def _dataset(self, params, wl):
        self.parts = [ParquetRows(p, wl.name) for p in params["parquet"]]
        ds = ConcatDataset(self.parts)
        w = torch.cat([torch.full((len(p),), wl.weights[i] / len(p), dtype=torch.double)
                       for i, p in enumerate(self.parts)])
        return ds, w

    def _loader(self, ds, sampler, b):
        return DataLoader(ds, batch_size=b, sampler=sampler, num_workers=self.workers, drop_last=True,
                          persistent_workers=False)

    def open(self, params, wl, rank, world, steps):
        self.ds, self.w = self._dataset(params, wl)
        b = wl.batch_size // world
        g = torch.Generator().manual_seed(wl.seed + rank)
        sampler = WeightedRandomSampler(self.w, num_samples=steps * b, replacement=True, generator=g)
        return iter(self._loader(self.ds, sampler, b))

    def resume(self, params, wl, step, state):
        # No seek: a resumed run regenerates the sampler's index stream from
        # its seed and skips the first S·B indices (no rows are read for
        # them). Timed over REPLAY_STEPS steps and extrapolated to S.
        b = wl.batch_size
        g = torch.Generator().manual_seed(wl.seed)
        t0 = time.perf_counter()
        sampler = WeightedRandomSampler(self.w, num_samples=REPLAY_STEPS * b, replacement=True, generator=g)
        for _ in Skip(sampler, REPLAY_STEPS * b - 1):
            pass
        secs = time.perf_counter() - t0
        return Resume("extrapolated", rate=REPLAY_STEPS / secs,
                      note=f"sampler index replay (no rows read): {REPLAY_STEPS:,} steps in {secs:.2f}s, extrapolated")


LOADERS = [TorchDataLoader(0), TorchDataLoader(2)]
