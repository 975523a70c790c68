"""Peer 3: Hugging Face datasets. load_dataset("parquet", streaming=True) on
the same Parquet files, interleave_datasets(probabilities=[0.3, 0.7],
seed), .shuffle(seed, buffer_size), .with_format("torch"), in a DataLoader.

Ranks: datasets.distributed.split_dataset_by_node. Resume: an iterable
dataset has no seek to a step it has not saved; the replay to step S is
extrapolated from the loader's measured step rate.
"""

import os

from .base import Loader, Resume, collate_large

BUFFER = 10_000  # full mode
# Quick mode: a smaller shuffle buffer, so that filling it (which reads the
# whole 3,000-row large workload at 10,000) does not dominate the run.
QUICK_BUFFER = 1_000


class HF(Loader):
    name = "hf-datasets"
    title = "Hugging Face datasets (IterableDataset)"
    package = "datasets"
    buffer = BUFFER

    @property
    def how(self):
        note = " (quick mode; 10,000 in full mode)" if self.buffer != BUFFER else ""
        return ("load_dataset('parquet', streaming=True) ×2 → interleave_datasets(probabilities=[0.3, 0.7], seed) → "
                f".shuffle(buffer_size={self.buffer:,}){note} → .with_format('torch') → DataLoader, num_workers=0; "
                "datasets' 5 s sleep at the end of a stream (a workaround for pyarrow ≤ 24; this is pyarrow 25) "
                "set to 0")

    def configure(self, mode):
        self.buffer = QUICK_BUFFER if mode == "quick" else BUFFER


    def _dataset(self, params, wl, rank, world):
        os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        import datasets
        from datasets import interleave_datasets, load_dataset
        from datasets.distributed import split_dataset_by_node
        from packaging import version

        if version.parse(datasets.config.PYARROW_VERSION.base_version) > version.parse("24.0.0"):
            # datasets sleeps SLEEP_TIME_ON_THREADS_SHUTDOWN (5 s) each time
            # an interleaved Parquet stream ends or is closed — a workaround
            # for apache/arrow#45214, which its own Parquet reader applies
            # only for pyarrow <= 24 (we run 25). Left on, every epoch end
            # (33 steps in quick mode's large workload) costs 10 s of sleep.
            datasets.config.SLEEP_TIME_ON_THREADS_SHUTDOWN = 0

        parts = [load_dataset("parquet", data_files=p, split="train", streaming=True) for p in params["parquet"]]
        ds = interleave_datasets(parts, probabilities=list(wl.weights), seed=wl.seed)
        ds = ds.shuffle(seed=wl.seed, buffer_size=self.buffer)
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
