"""Peer 2: MosaicML Streaming. The same rows written with its MDSWriter to
local directories (one per table, no compression), read by a
StreamingDataset of two Streams with proportions 0.3/0.7,
batching_method="stratified", shuffle on, in a StreamingDataLoader.

Ranks: RANK/WORLD_SIZE/LOCAL_RANK/LOCAL_WORLD_SIZE (two processes on one
node; Streaming initializes torch.distributed with gloo itself). Resume:
its state_dict (epoch, sample_in_epoch) for step S, loaded into a fresh
dataset: Streaming's own seek.
"""

import contextlib
import gc
import json
import time
from pathlib import Path

from .base import Loader, Resume, Served, collate_large


def write_mds(h, wl, out):
    """One MDS directory per table, from the same rows as the Parquet files."""
    import numpy as np
    import pyarrow.parquet as pq
    from streaming import MDSWriter

    from .. import data

    out = Path(out)
    stamp = out / "spec.json"
    if stamp.exists() and json.loads(stamp.read_text()) == wl.spec():
        return
    if wl.name == "small":
        columns = {"id": "int64", "features": "ndarray:float32:32", "label": "int64"}
    else:
        columns = {"id": "int64", "image": "bytes"}
    for t, path in enumerate(data.parquet_paths(h.data_dir, wl)):
        t0 = time.monotonic()
        d = out / "ab"[t]
        with MDSWriter(out=str(d), columns=columns, compression=None, size_limit="64mb", exist_ok=True) as w:
            for rb in pq.ParquetFile(path).iter_batches(batch_size=65536):
                ids = rb.column(0).to_numpy()
                if wl.name == "small":
                    feats = rb.column(1).flatten().to_numpy().reshape(-1, 32)
                    labels = rb.column(2).to_numpy()
                    for i in range(len(ids)):
                        w.write({"id": ids[i], "features": feats[i], "label": labels[i]})
                else:
                    imgs = rb.column(1)
                    for i in range(len(ids)):
                        w.write({"id": ids[i], "image": imgs[i].as_py()})
        h.log(f"mds {wl.name}: wrote {d} ({wl.rows[t]:,} samples) in {time.monotonic() - t0:.1f}s")
    stamp.write_text(json.dumps(wl.spec()))


class Mosaic(Loader):
    name = "streaming"
    title = "MosaicML Streaming (MDS)"
    package = "mosaicml-streaming"
    how = ("MDSWriter shards on local disk, StreamingDataset(streams=[Stream(local, proportion=0.3/0.7)], "
           "batching_method='stratified', shuffle=True), StreamingDataLoader, num_workers=0")

    def prepare(self, h, wl):
        out = h.work / "mds" / wl.name
        write_mds(h, wl, out)
        return {"mds": [str(out / "a"), str(out / "b")]}

    @contextlib.contextmanager
    def serving(self, h, wl, params):
        # Shared memory left by a killed run would block the next one; the
        # parent cleans it between runs (never a rank: it would remove the
        # other rank's live segments).
        from streaming.base.util import clean_stale_shared_memory

        clean_stale_shared_memory()
        yield Served()

    def _dataset(self, params, wl, b):
        from streaming import Stream, StreamingDataset

        streams = [Stream(local=d, proportion=p) for d, p in zip(params["mds"], wl.weights)]
        return StreamingDataset(streams=streams, batch_size=b, shuffle=True, shuffle_seed=wl.seed,
                                batching_method="stratified", epoch_size=sum(wl.rows))

    def _loader(self, ds, wl, b):
        from streaming import StreamingDataLoader

        collate = collate_large if wl.name == "large" else None
        return StreamingDataLoader(ds, batch_size=b, num_workers=0, collate_fn=collate, drop_last=True)

    def open(self, params, wl, rank, world, steps):
        b = wl.batch_size // world
        self.ds = self._dataset(params, wl, b)
        self.dl = self._loader(self.ds, wl, b)
        return self._epochs(self.dl)

    def _epochs(self, dl):
        while True:
            yield from dl

    def resume(self, params, wl, step, state):
        samples = step * wl.batch_size
        epoch_size = sum(wl.rows)
        del self.dl, self.ds
        gc.collect()
        t0 = time.monotonic()
        ds = self._dataset(params, wl, wl.batch_size)
        st = ds.state_dict(num_samples=samples % epoch_size, from_beginning=True)
        st["epoch"] = samples // epoch_size
        ds.load_state_dict(st)
        dl = self._loader(ds, wl, wl.batch_size)
        self.ds, self.dl = ds, dl
        return Resume("seek", self._epochs(dl), note=f"state_dict epoch {st['epoch']}, sample_in_epoch "
                      f"{st['sample_in_epoch']} (built in {time.monotonic() - t0:.2f}s, included)")


LOADERS = [Mosaic()]
