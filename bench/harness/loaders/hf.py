"""Peer 3: Hugging Face datasets. load_dataset("parquet", streaming=True) on
the same Parquet files, interleave_datasets(probabilities=[0.3, 0.7],
seed), .shuffle(seed, buffer_size), .with_format("torch"), in a DataLoader.

Ranks: datasets.distributed.split_dataset_by_node. Resume: an iterable
dataset has no seek to a step it has not saved; the replay to step S is
extrapolated from the loader's measured step rate.
"""

import os

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
        # No seek to an unsaved step: a replay iterates the same pipeline,
        # so its rate is the loader's own measured step rate (rate=None).
        return Resume("extrapolated", rate=None, note="replay at the loader's measured step rate, extrapolated")


LOADERS = [HF()]
