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
import shutil
import time
from pathlib import Path

from .base import Loader, Resume, Served, collate_large


MDS_SHARD = "64mb"


def mds_key(wl):
    """Cache key of the MDS shards: the Parquet data's key, the Streaming
    version and this writer's source."""
    from .. import cache, data

    return {"data": cache.digest(data.key(wl)), "streaming": cache.version("mosaicml-streaming"),
            "producer": cache.sources_sha256([Path(__file__)])}


def encoded_samples(names, wl, rb):
    """The rows of a record batch encoded as MDSWriter.encode_sample would
    encode them (columns in ``names`` order; a uint32 size per variable-size
    column first), built with numpy instead of one encode per sample."""
    import numpy as np

    n = rb.num_rows
    ids = rb.column(0).to_numpy()
    if wl.name == "small":
        fields = {"id": ("<i8", ()), "features": ("<f4", (32,)), "label": ("<i8", ())}
        rec = np.empty(n, dtype=np.dtype([(c, *fields[c]) for c in names]))
        rec["id"] = ids
        rec["features"] = rb.column(1).flatten().to_numpy().reshape(-1, 32)
        rec["label"] = rb.column(2).to_numpy()
        buf, k = rec.tobytes(), rec.dtype.itemsize
        return [buf[i * k:(i + 1) * k] for i in range(n)]
    assert list(names) == ["id", "image"], names
    img = rb.column(1)
    off = np.frombuffer(img.buffers()[1], dtype=np.int32)[img.offset:img.offset + n + 1]
    raw = memoryview(img.buffers()[2])
    return [np.uint32(off[i + 1] - off[i]).tobytes() + ids[i].tobytes() + raw[off[i]:off[i + 1]].tobytes()
            for i in range(n)]


def write_mds(h, wl, out):
    """One MDS directory per table, from the same rows as the Parquet files:
    Streaming's own MDSWriter (shards, index.json), fed samples encoded in
    bulk; a few samples per batch are checked against its encode_sample."""
    import pyarrow.parquet as pq
    from streaming import MDSWriter

    from .. import cache, data

    out = Path(out)
    stamp = out / "spec.json"
    key = mds_key(wl)
    if cache.fresh(stamp, key):
        return
    shutil.rmtree(out, ignore_errors=True)
    if wl.name == "small":
        columns = {"id": "int64", "features": "ndarray:float32:32", "label": "int64"}
    else:
        columns = {"id": "int64", "image": "bytes"}
    for t, path in enumerate(data.parquet_paths(h.data_dir, wl)):
        t0 = time.monotonic()
        d = out / "ab"[t]
        with MDSWriter(out=str(d), columns=columns, compression=None, size_limit=MDS_SHARD, exist_ok=True) as w:
            for rb in pq.ParquetFile(path).iter_batches(batch_size=65536 if wl.name == "small" else 256):
                enc = encoded_samples(w.column_names, wl, rb)
                for i in {0, len(enc) // 2, len(enc) - 1}:
                    row = {c: rb.column(c)[i].as_py() for c in columns}
                    if wl.name == "small":
                        import numpy as np
                        row["features"] = np.asarray(row["features"], dtype=np.float32)
                    if MDSWriter.encode_sample(w, row) != enc[i]:
                        raise RuntimeError(f"bulk MDS encoding differs from MDSWriter's at row {i} of {path}")
                w.encode_sample = lambda e: e  # the samples are encoded already
                for e in enc:
                    w.write(e)
                del w.encode_sample
        h.log(f"mds {wl.name}: wrote {d} ({wl.rows[t]:,} samples) in {time.monotonic() - t0:.1f}s")
    cache.record(stamp, key)


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
