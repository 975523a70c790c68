"""The cost of releasing a host slot the trainer wrote into
(python/weft/_slots.py): a ring of two slots in /dev/shm, a step of one
float32 column of S MiB in each, read as a view tensor, read in full
(sum), optionally written in full (add_), released; then the next step in
that slot is read in full again (its pages fault in again where the
release dropped them).

    PYTHONPATH=python python bench/slot_release.py [--sizes 1,16,256] [--reps 5]

Prints, per step size, mode (pagemap: drop only the written pages;
whole-range: drop every page, what a process without pagemap gets) and
writes (none, one page, all): the median time of the writes (copy-on-write
faults), of the release, read-time check
time, and the next full read pass, with a read pass of an untouched,
already mapped step as the reference.
"""

from __future__ import annotations

import argparse
import mmap
import os
import statistics
import time

import numpy as np
import pyarrow as pa
import torch

from weft import _slots
from weft._convert import to_tensors


def step(mib: int, seed: int) -> pa.RecordBatch:
    n = mib * (1 << 20) // 4
    return pa.record_batch({"x": pa.array(np.full(n, seed, dtype=np.float32))})


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1,16,256")
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()
    torch.set_num_threads(1)
    print(f"kernel {os.uname().release}, page {mmap.PAGESIZE} B, torch threads 1, median of {args.reps}")
    print("| step | mode | writes | write ms | release ms | read check ms | next read pass ms | read pass, untouched ms |")
    print("| ---: | --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for mib in (int(s) for s in args.sizes.split(",")):
        batch = step(mib, 1)
        msg = batch.serialize().to_pybytes()
        slot = (len(msg) + mmap.PAGESIZE - 1) // mmap.PAGESIZE * mmap.PAGESIZE  # whole pages, as flightd's
        path = f"/dev/shm/weft-bench-{os.getpid()}"
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        os.posix_fallocate(fd, 0, 2 * slot)
        srv = mmap.mmap(fd, 2 * slot, mmap.MAP_SHARED)
        os.close(fd)
        srv[0:len(msg)] = msg
        srv[slot:slot + len(msg)] = msg
        del batch
        try:
            for mode in ("pagemap", "whole-range"):
                for writes in ("none", "one page", "all"):
                    ring = _slots.Ring(path, slot, use_pagemap=mode == "pagemap")
                    assert ring.tracking == mode, ring.tracking
                    rel, chk, nxt, ref, wr = [], [], [], [], []
                    gen = 0
                    for _ in range(args.reps + 1):
                        gen += 1
                        d = _slots.SlotDescriptor(path, 0, gen, 0, len(msg))
                        t0 = time.perf_counter()
                        b = ring.read_batch(d, pa.schema([("x", pa.float32())]))
                        t1 = time.perf_counter()
                        x = to_tensors(b, views=True)["x"]
                        t2 = time.perf_counter()
                        float(x.sum())
                        t3 = time.perf_counter()
                        float(x.sum())  # mapped, untouched: the reference pass
                        t4 = time.perf_counter()
                        if writes == "all":
                            x.add_(1)
                        elif writes == "one page":
                            x[0] = 2
                        t5 = time.perf_counter()
                        ring.release(d)
                        t6 = time.perf_counter()
                        chk.append(t1 - t0)
                        nxt.append(t3 - t2)  # this read follows the previous rep's release
                        ref.append(t4 - t3)
                        rel.append(t6 - t5)
                        wr.append(t5 - t4)
                        del x, b
                    ring.close()
                    # the first rep's read faults everything in: not counted
                    med = lambda v: statistics.median(v[1:]) * 1e3  # noqa: E731
                    print(f"| {mib} MiB | {mode} | {writes} | {med(wr):.2f} | {med(rel):.3f} | {med(chk):.3f} | {med(nxt):.1f} | {med(ref):.1f} |",
                          flush=True)
        finally:
            srv.close()
            os.unlink(path)


if __name__ == "__main__":
    main()
