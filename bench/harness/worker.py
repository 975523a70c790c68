"""One measurement in a fresh process: python -m harness.worker SPEC_JSON.

mode "run": open the loader (rank 0 of 1), time the first batch, keep the
sample ids of the first ``ids_steps`` steps, warm up, time ``measure``
steps (samples and bytes of the data tensors), then resume at
``resume_step`` and time that; report peak RSS. mode "ids": rank
``rank`` of ``world``: the sample ids of the first ``ids_steps`` steps.
Prints one line "RESULT {json}".
"""

import json
import os
import sys
import time
import traceback

os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def hwm(pid):
    try:
        for line in open(f"/proc/{pid}/status"):
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def children_hwm():
    """Peak RSS of each live child (DataLoader workers), largest."""
    import psutil

    return max((hwm(c.pid) or 0 for c in psutil.Process().children(recursive=True)), default=0)


def data_bytes(batch, columns):
    return sum(batch[c].nelement() * batch[c].element_size() for c in columns)


def check(batch, wl):
    import torch

    n = batch["id"].shape[0]
    assert batch["id"].dtype == torch.int64, batch["id"].dtype
    if wl.name == "small":
        assert batch["features"].dtype == torch.float32 and tuple(batch["features"].shape) == (n, 32), \
            (batch["features"].dtype, batch["features"].shape)
        assert batch["label"].dtype == torch.int64
    else:
        assert batch["image"].dtype == torch.uint8 and tuple(batch["image"].shape) == (n, 100 << 10), \
            (batch["image"].dtype, batch["image"].shape)


def main():
    spec = json.loads(sys.argv[1])
    from .data import Workload
    from .loaders import registry

    wl = Workload(spec["workload"]["name"], tuple(spec["workload"]["rows"]), spec["workload"]["batch_size"],
                  tuple(spec["workload"]["weights"]), spec["workload"]["seed"])
    loader = registry.get(spec["loader"])
    params = spec["params"]
    out = {}
    try:
        if spec["mode"] == "ids":
            it = loader.open(params, wl, spec["rank"], spec["world"], spec["ids_steps"])
            out["ids"] = [next(it)["id"].tolist() for _ in range(spec["ids_steps"])]
        else:
            out.update(measure(loader, params, wl, spec))
    except BaseException as e:  # noqa: BLE001 — reported, not hidden
        out["error"] = f"{type(e).__name__}: {e}"
        out["traceback"] = traceback.format_exc()[-4000:]
    # VmHWM, not ru_maxrss: Linux carries ru_maxrss across exec from the
    # parent (the harness), VmHWM is this process's own peak.
    out["trainer_rss"] = hwm("self")
    from .loaders.base import SHORT_VALUES
    out["short_values"] = SHORT_VALUES[0]
    print("RESULT " + json.dumps(out), flush=True)
    sys.stdout.flush()
    os._exit(0)  # do not wait for loader threads or worker pools


def measure(loader, params, wl, spec):
    steps_total = spec["ids_steps"] + spec["warmup"] + spec["measure"] + 2
    t0 = time.perf_counter()
    it = loader.open(params, wl, 0, 1, steps_total)
    first = next(it)
    ttfb = time.perf_counter() - t0
    check(first, wl)
    ids = [first["id"].tolist()]
    while len(ids) < spec["ids_steps"]:
        ids.append(next(it)["id"].tolist())
    tw = time.perf_counter()
    for i in range(spec["warmup"]):
        if next(it, None) is None:
            break
        if i >= 2 and time.perf_counter() - tw > spec["max_secs"] / 2:
            break
    samples = nbytes = steps = 0
    t1 = time.perf_counter()
    # A fixed number of steps, cut short after max_secs (at least min_steps)
    # so that a slow loader does not hold up quick mode; the steps timed are reported.
    while steps < spec["measure"]:
        b = next(it, None)
        if b is None:  # the loader ended (an iterable dataset's epoch)
            break
        steps += 1
        samples += b["id"].shape[0]
        nbytes += data_bytes(b, wl.columns)
        if steps >= spec["min_steps"] and time.perf_counter() - t1 > spec["max_secs"]:
            break
    secs = time.perf_counter() - t1
    if steps == 0:
        raise RuntimeError("the loader ended before the timed steps")
    out = {"first_batch_s": ttfb, "samples": samples, "bytes": nbytes, "secs": secs, "steps": steps,
           "samples_per_s": samples / secs, "mb_per_s": nbytes / 1e6 / secs, "ids": ids,
           "rss_after_throughput": hwm("self"), "workers_rss_max": children_hwm()}
    state = loader.checkpoint(it)
    del it
    try:
        t2 = time.perf_counter()
        r = loader.resume(params, wl, spec["resume_step"], state)
        if r.kind == "extrapolated":
            rate = r.rate or steps / secs  # None: the loader's own measured step rate
            out["resume"] = {"kind": r.kind, "secs": spec["resume_step"] / rate, "rate_steps_per_s": rate,
                             "note": r.note}
        else:
            b = next(r.iterator)
            secs = time.perf_counter() - t2
            check(b, wl)
            out["resume"] = {"kind": r.kind, "secs": secs, "note": r.note}
    except BaseException as e:  # noqa: BLE001
        out["resume"] = {"kind": "error", "error": f"{type(e).__name__}: {e}",
                         "traceback": traceback.format_exc()[-3000:]}
    return out


if __name__ == "__main__":
    main()
