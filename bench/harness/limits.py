"""The physical limits, measured in the same run as the loaders: iperf3 over
loopback (one stream), arrow-go Flight resending one prebuilt batch, and
arrow-go's sequential Parquet decode of the workload's files
(bench/cmd/weftbench)."""

import json
import subprocess

from .servers import die_with_parent, free_port


def iperf3(seconds):
    port = free_port()
    srv = subprocess.Popen(["iperf3", "-s", "-1", "-B", "127.0.0.1", "-p", str(port)], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, preexec_fn=die_with_parent)
    try:
        for attempt in range(50):
            c = subprocess.run(["iperf3", "-c", "127.0.0.1", "-p", str(port), "-t", str(seconds), "-J"],
                               capture_output=True, text=True, timeout=seconds + 30)
            rep = json.loads(c.stdout or "{}")
            end = rep.get("end") or {}
            sums = end.get("sum_received") or end.get("sum_sent") or end.get("sum")
            if c.returncode == 0 and sums:
                return {"mb_per_s": sums["bits_per_second"] / 8 / 1e6, "secs": seconds}
            if "error" in rep and "connect" in rep["error"] and attempt < 49:
                import time
                time.sleep(0.1)
                continue
            raise RuntimeError(f"iperf3 failed: {rep.get('error') or c.stderr}")
    finally:
        if srv.poll() is None:
            srv.kill()
        srv.wait()


def weftbench(binary, *args, timeout=600):
    c = subprocess.run([binary, *args], capture_output=True, text=True, timeout=timeout)
    if c.returncode != 0:
        raise RuntimeError(f"weftbench {args[0]}: {c.stderr.strip()}")
    return json.loads(c.stdout.strip().splitlines()[-1])


def flight_ceiling(binary, wl, batches):
    return weftbench(binary, "flight-ceiling", "--shape", wl.name, "--rows", str(wl.batch_size),
                     "--batches", str(batches))


def decode(binary, paths):
    return weftbench(binary, "decode", *map(str, paths))


def memcpy(nbytes=256 << 20, repeats=5):
    """One core copying memory: numpy's copy of a buffer larger than the
    caches (the cost of one more copy of every delivered byte)."""
    import time

    import numpy as np

    src = np.ones(nbytes, dtype=np.uint8)
    dst = np.empty_like(src)
    np.copyto(dst, src)  # fault the pages in
    best = None
    for _ in range(repeats):
        t0 = time.perf_counter()
        np.copyto(dst, src)
        secs = time.perf_counter() - t0
        best = secs if best is None else min(best, secs)
    return {"mb_per_s": nbytes / 1e6 / best, "bytes": nbytes}
