"""Peer 3: Hugging Face datasets. load_dataset("parquet", streaming=True) on
the same Parquet files, interleave_datasets(probabilities=[0.3, 0.7],
seed), .shuffle(seed, buffer_size), .with_format("torch"), in a DataLoader.

Ranks: datasets.distributed.split_dataset_by_node. Resume: an iterable
dataset has no seek to a step it has not saved; its replay rate (the
interleaved, shuffled example stream, without batching) is measured and
the replay to step S extrapolated.
"""

import os
import time

from .base import Loader, Resume, collate_large

BUFFER = 10_000


class HF(Loader):
    name = "hf-datasets"
    title = "Hugging Face datasets (IterableDataset)"
    package = "datasets"
    how = (f"load_dataset('parquet', streaming=True) ×2 → interleave_datasets(probabilities=[0.3, 0.7], seed) → "
           f".shuffle(buffer_size={BUFFER}) → .with_format('torch') → DataLoader, num_workers=0")

    def _dataset(self, params, wl, rank, world):
        os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        from datasets import interleave_datasets, load_dataset
        from datasets.distributed import split_dataset_by_node

        parts = [load_dataset("parquet", data_files=p, split="train", streaming=True) for p in params["parquet"]]
        ds = interleave_datasets(parts, probabilities=list(wl.weights), seed=wl.seed)
        ds = ds.shuffle(seed=wl.seed, buffer_size=BUFFER)
        if world > 1:
            ds = split_dataset_by_node(ds, rank=rank, world_size=world)
        return ds

    def open(self, params, wl, rank, world, steps):
        from torch.utils.data import DataLoader

        ds = self._dataset(params, wl, rank, world)
        self.raw = ds
        collate = collate_large if wl.name == "large" else None
        return iter(DataLoader(ds.with_format("torch"), batch_size=wl.batch_size // world,
                               num_workers=0, collate_fn=collate, drop_last=True))

    def resume(self, params, wl, step, state):
        # Replay: iterate the same example stream (no torch formatting, no
        # batching: the least a replay must do) for a while, time it.
        ds = self._dataset(params, wl, 0, 1)
        n = min(sum(wl.rows) // 2, 10 * wl.batch_size)
        t0 = time.monotonic()
        it = iter(ds)
        for _ in range(n):
            next(it)
        secs = time.monotonic() - t0
        return Resume("extrapolated", rate=n / wl.batch_size / secs,
                      note=f"replayed {n:,} examples of the interleaved shuffled stream in {secs:.2f}s")


LOADERS = [HF()]
