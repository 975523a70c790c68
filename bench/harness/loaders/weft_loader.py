"""Weft: weft.TrainLoader through a flightd process, on the fs store and on
MinIO, each with the plain Flight stream (``delivery="flight"``) and with
host slots (``delivery="shm"``: each step lies in shared memory the
trainer maps; issue 14). The tables are appended once per store with the weft client
(Table.append); every run starts a fresh flightd (cold cache) over the
store. Ranks: weft.World. Resume: load_state_dict({"run", "step": S}) on a
fresh TrainLoader — a seek.

The run is made long enough to hold step 100,000 (Recipe(steps=RUN_STEPS)).
"""

import contextlib
import time
from pathlib import Path

from .base import Loader, Resume, Served

RUN_STEPS = 200_000


class Weft(Loader):
    package = "weft"

    def __init__(self, store, delivery="flight"):
        self.store, self.delivery = store, delivery
        self.name = f"weft-{store}" + ("-shm" if delivery == "shm" else "")
        self.title = (f"Weft TrainLoader, flightd on {'fs' if store == 'fs' else 'MinIO'}"
                      + (", host slots" if delivery == "shm" else ""))
        self.how = (f"weft.TrainLoader(weft.Recipe(seed, B, [Component(a, 0.3), Component(b, 0.7)]), "
                    f"delivery={delivery!r}) over "
                    f"flightd --store {'DIR' if store == 'fs' else 's3://BUCKET (MinIO on 127.0.0.1)'}; "
                    "large: transform_fn=fixed_blobs (weft.fixed_size_binary: image → uint8 [n, 102400], "
                    + ("a view on the slot, no copy)" if delivery == "shm" else "one copy)"))

    # ------------------------------------------------------------ parent
    def _flightd_args(self, wl):
        # docs/flight.md: row groups of a few MiB for wide rows.
        return ["--row-group-size", "8MiB"] if wl.name == "large" else []

    def _ingest_batch(self, wl):
        return 65536 if wl.name == "small" else 64

    def key(self, h, wl):
        """Cache key of the ingested tables: the Parquet data's key, the
        sha256 of the bin/flightd that writes them (its Parquet writer, page
        and block sizes), the client that appends them, and the ingest
        arguments. Any change re-ingests into a fresh store."""
        from .. import cache, data

        client = sorted((h.repo / "python" / "weft").glob("*.py"))
        return {"data": cache.digest(data.key(wl)), "flightd_sha256": cache.file_sha256(h.flightd_bin),
                "client": cache.sources_sha256(client) if client else None,
                "flightd_args": self._flightd_args(wl), "batch_rows": self._ingest_batch(wl)}

    def _store(self, h, wl, key):
        """fs: one directory per workload (emptied before an ingest); MinIO:
        one bucket per key (older ones of the workload are removed)."""
        from .. import cache

        if self.store == "fs":
            return str(h.work / "weft-fs" / wl.name), h.base_env()
        if h.minio is None:
            raise RuntimeError(h.minio_error or "MinIO is not available")
        return f"s3://bench-{wl.name}-{cache.digest(key)[:12]}", h.minio.env()

    def prepare(self, h, wl):
        import shutil

        import pyarrow.parquet as pq
        import weft

        from .. import cache, data
        from ..servers import flightd

        key = self.key(h, wl)
        store, env = self._store(h, wl, key)
        stamp = h.work / f"weft-{self.store}-{wl.name}.json"
        present = Path(store).is_dir() if self.store == "fs" else h.minio.has_bucket(store[5:])
        if cache.fresh(stamp, key) and present:
            h.log(f"weft {self.store} {wl.name}: tables already in {store}")
            return {"store": store}
        h.log(f"weft {self.store} {wl.name}: ingesting into {store} "
              f"({cache.changed(stamp, key) if present else 'no store'})")
        if self.store == "fs":
            shutil.rmtree(store, ignore_errors=True)
        else:
            for b in h.minio.buckets():
                if b.startswith(f"bench-{wl.name}") and b != store[5:]:
                    h.minio.remove_bucket(b)
            if h.minio.has_bucket(store[5:]):
                h.minio.remove_bucket(store[5:])
            h.minio.make_bucket(store[5:])
        with flightd(h.flightd_bin, store, env, h.work / "logs" / f"flightd-ingest-{self.store}-{wl.name}.log",
                     self._flightd_args(wl)) as d:
            c = weft.Client(f"grpc://{d.addr}")
            try:
                c.create_project("bench")
            except weft.AlreadyExists:
                pass
            ref = c.project("bench").branch("main")
            for t, path in enumerate(data.parquet_paths(h.data_dir, wl)):
                name = f"{wl.name}_{'ab'[t]}"
                t0 = time.monotonic()
                pf = pq.ParquetFile(path)
                commit = ref.table(name).append(pf.iter_batches(batch_size=self._ingest_batch(wl)))
                h.log(f"weft {self.store} {wl.name}: appended {name} ({wl.rows[t]:,} rows) in "
                      f"{time.monotonic() - t0:.1f}s, commit {commit[:12]}")
            c.close()
        cache.record(stamp, key)
        return {"store": store}

    @contextlib.contextmanager
    def serving(self, h, wl, params):
        from ..servers import flightd

        store = params["store"]
        env = h.base_env() if self.store == "fs" else h.minio.env()
        h.flightd_runs += 1
        with flightd(h.flightd_bin, store, env, h.work / "logs" / f"flightd-{self.store}-{h.flightd_runs}.log") as d:
            pids = {"flightd": d.pid}
            if self.store == "minio":
                pids["minio"] = h.minio.proc.pid
            yield Served(params={"addr": d.addr}, pids=pids)

    # ------------------------------------------------------------ worker
    def _recipe(self, params, wl):
        import weft

        c = weft.Client(f"grpc://{params['addr']}")
        ref = c.project("bench").branch("main")
        comps = [weft.Component(ref.table(f"{wl.name}_{'ab'[i]}"), weight=w) for i, w in enumerate(wl.weights)]
        return weft.Recipe(seed=wl.seed, batch_size=wl.batch_size, components=comps, steps=RUN_STEPS)

    def _loader(self, params, wl, rank, world):
        import weft

        return weft.TrainLoader(self._recipe(params, wl), world=weft.World(rank=rank, world_size=world),
                                delivery=self.delivery, transform_fn=fixed_blobs if wl.name == "large" else None)

    def open(self, params, wl, rank, world, steps):
        self.loader = self._loader(params, wl, rank, world)
        return iter(self.loader)  # delivery="shm" raises if it cannot have host slots

    def checkpoint(self, it):
        return self.loader.state_dict()

    def resume(self, params, wl, step, state):
        import weft

        loader = self._loader(params, wl, 0, 1)
        loader.load_state_dict({**state, "step": step})
        self.loader = loader
        return Resume("seek", iter(loader), note="load_state_dict({run, step}) on a fresh TrainLoader")


def fixed_blobs(batch):
    """transform_fn of the large workload: the 100 KiB image values (all one
    length) as a fixed_size_binary column on the same memory, which
    to_tensors makes uint8 [n, 102400] — the same tensor every loader
    yields (base.images_tensor), without a Python object per value."""
    import weft

    i = batch.schema.get_field_index("image")
    return batch.set_column(i, "image", weft.fixed_size_binary(batch.column(i), "image"))


LOADERS = [Weft("fs"), Weft("minio"), Weft("fs", "shm"), Weft("minio", "shm")]
