"""Peer 6: LitData (Lightning AI's litdata). The same rows written with its
BinaryWriter (the writer ``litdata.optimize`` uses; one directory of
uncompressed chunks per table), read by two StreamingDatasets (shuffle on,
seeded) in a CombinedStreamingDataset(weights=[0.3, 0.7], seed,
iterate_over_all=False) in a StreamingDataLoader, num_workers=0.

Version: litdata 0.2.47 on Debian's torch 1.13, like every other peer.
0.2.48 and later add ``torch.uint16`` to a dtype table at import (torch
1.13 has no uint16, so they do not import), and current releases require
torch >= 2.4. 0.2.47 differs from 0.2.48 only in that table and in S3
session options (neither is used here). The other way — a newer litdata
under a newer torch (the PyPI torch 2.10 venv) — would give this one peer
a different torch, NumPy and pyarrow from the rest, so it is not taken.
The one other torch-1.13 adjustment: prefetch_factor=2 is passed (see _loader).

Ranks: litdata reads rank and world size from torch.distributed, so a
rank initializes a gloo process group (as a DDP trainer would) and each
rank reads its own share of the chunks. Resume: the StreamingDataLoader's
own state_dict, saved after the timed steps, loaded into a fresh loader
(litdata cannot state an unsaved step: the per-table counts at step S
depend on every weighted draw before it, which it replays itself from a
saved state). The step reached is in the note, not step 100,000.
"""

import os
import shutil
import time
from pathlib import Path

from .base import Loader, Resume, collate_large

CHUNK_BYTES = "64MB"


def litdata_key(wl):
    from .. import cache, data

    return {"data": cache.digest(data.key(wl)), "litdata": cache.version("litdata"),
            "producer": cache.sources_sha256([Path(__file__)])}


def write_litdata(h, wl, out):
    """One chunk directory per table, from the Parquet files, with
    litdata's BinaryWriter (what litdata.optimize runs per worker)."""
    import pyarrow.parquet as pq
    from litdata.streaming.writer import BinaryWriter

    from .. import cache, data

    out = Path(out)
    stamp = out / "spec.json"
    key = litdata_key(wl)
    if cache.fresh(stamp, key):
        return
    shutil.rmtree(out, ignore_errors=True)
    for t, path in enumerate(data.parquet_paths(h.data_dir, wl)):
        t0 = time.monotonic()
        d = out / "ab"[t]
        d.mkdir(parents=True)
        w = BinaryWriter(str(d), chunk_bytes=CHUNK_BYTES)
        i = 0
        for rb in pq.ParquetFile(path).iter_batches(batch_size=65536 if wl.name == "small" else 64):
            ids = rb.column(0).to_numpy()
            if wl.name == "small":
                feats = rb.column(1).flatten().to_numpy().reshape(-1, 32)
                labels = rb.column(2).to_numpy()
                for k in range(rb.num_rows):
                    w.add_item(i, {"id": int(ids[k]), "features": feats[k], "label": int(labels[k])})
                    i += 1
            else:
                for k, v in enumerate(rb.column(1)):
                    w.add_item(i, {"id": int(ids[k]), "image": v.as_py()})
                    i += 1
        w.done()
        w.merge()
        h.log(f"litdata {wl.name}: wrote {d} ({wl.rows[t]:,} samples) in {time.monotonic() - t0:.1f}s")
    cache.record(stamp, key)


class LitData(Loader):
    name = "litdata"
    title = "LitData (StreamingDataset)"
    package = "litdata"
    how = ("BinaryWriter chunks on local disk (litdata 0.2.47: the last that imports on torch 1.13), "
           "CombinedStreamingDataset([StreamingDataset(a, shuffle=True), StreamingDataset(b, shuffle=True)], "
           "weights=[0.3, 0.7], seed, iterate_over_all=False), StreamingDataLoader, num_workers=0")

    def prepare(self, h, wl):
        out = h.work / "litdata" / wl.name
        write_litdata(h, wl, out)
        return {"litdata": [str(out / "a"), str(out / "b")]}

    def _loader(self, params, wl, b):
        from litdata import CombinedStreamingDataset, StreamingDataLoader, StreamingDataset

        parts = [StreamingDataset(d, shuffle=True, seed=wl.seed, drop_last=True) for d in params["litdata"]]
        ds = CombinedStreamingDataset(parts, seed=wl.seed, weights=list(wl.weights), iterate_over_all=False)
        collate = collate_large if wl.name == "large" else None
        # prefetch_factor=2: torch 1.13's DataLoader default, which it requires
        # with num_workers=0; litdata passes None there (torch >= 2.0's default).
        return StreamingDataLoader(ds, batch_size=b, num_workers=0, collate_fn=collate, drop_last=True,
                                   prefetch_factor=2)

    def _epochs(self, dl):
        while True:
            yield from dl

    def open(self, params, wl, rank, world, steps):
        if world > 1:
            import torch.distributed as dist

            os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
            dist.init_process_group("gloo", rank=rank, world_size=world)
        self.dl = self._loader(params, wl, wl.batch_size // world)
        return self._epochs(self.dl)

    def checkpoint(self, it):
        return {"state": self.dl.state_dict(), "samples": self.dl._num_samples_yielded_combined}

    def resume(self, params, wl, step, state):
        t0 = time.monotonic()
        dl = self._loader(params, wl, wl.batch_size)
        dl.load_state_dict(state["state"])
        self.dl = dl
        n = sum(sum(v) for v in state["samples"].values()) if isinstance(state["samples"], dict) else state["samples"]
        return Resume("seek", self._epochs(dl),
                      note=f"its own state_dict after the timed steps (epoch {state['state'].get('current_epoch')}, "
                           f"{n:,} samples of that epoch), not step {step:,}: litdata cannot state an unsaved step "
                           f"(built in {time.monotonic() - t0:.2f}s, included)")


LOADERS = [LitData()]
