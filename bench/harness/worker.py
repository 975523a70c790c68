"""One measurement in a fresh process: python -m harness.worker SPEC_JSON.

mode "run": open the loader (rank 0 of 1), time the first batch, keep the
sample ids of the first ``ids_steps`` steps, warm up, time ``measure``
steps (samples and bytes of the data tensors), then resume at
``resume_step`` and time that; report peak RSS. mode "ids": rank
``rank`` of ``world``: the sample ids of the first ``ids_steps`` steps.
Prints one line "RESULT {json}".
"""

import time

MAIN_AT = time.time()  # wall clock: the parent subtracts its spawn time (interpreter start-up)

import json  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402
import traceback  # noqa: E402

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


def _cpu(proc):
    """User + system CPU seconds of a psutil.Process (0 once it is gone)."""
    import psutil

    try:
        t = proc.cpu_times()
    except psutil.Error:
        return 0.0
    return t.user + t.system


def cpu_snapshot(server_pids):
    """(CPU seconds of the trainer: this process, its reaped children and
    its live ones (DataLoader workers); {server name: its CPU seconds})."""
    import psutil

    me = psutil.Process()
    t = me.cpu_times()
    trainer = t.user + t.system + t.children_user + t.children_system + \
        sum(_cpu(c) for c in me.children(recursive=True))
    return trainer, {k: _cpu(psutil.Process(p)) for k, p in server_pids.items()}


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
    t_imp = time.perf_counter()
    from .data import Workload
    from .loaders import registry

    wl = Workload(spec["workload"]["name"], tuple(spec["workload"]["rows"]), spec["workload"]["batch_size"],
                  tuple(spec["workload"]["weights"]), spec["workload"]["seed"])
    loader = registry.get(spec["loader"])
    loader.configure(spec.get("scale", "full"))
    params = spec["params"]
    out = {"timing": {"main_at": MAIN_AT, "harness_imports_s": time.perf_counter() - t_imp}}
    try:
        if spec["mode"] == "scale":
            out.update(scale(loader, params, wl, spec))
        elif spec["mode"] == "ids":
            t0 = time.perf_counter()
            it = loader.open(params, wl, spec["rank"], spec["world"], spec["ids_steps"])
            out["ids"] = [next(it)["id"].tolist() for _ in range(spec["ids_steps"])]
            out["timing"]["ids_s"] = time.perf_counter() - t0
        else:
            out.update(measure(loader, params, wl, spec, out["timing"]))
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
    kill_children()  # DataLoader workers would hold our stdout until they notice (up to 5 s)
    os._exit(0)  # do not wait for loader threads or worker pools


def kill_children():
    """Kill our child processes (DataLoader workers), except
    multiprocessing's resource tracker: once we are gone it unlinks the
    shared memory we leave (Streaming's /dev/shm segments); killed, it would
    leave them, and every later Streaming run slows down scanning them."""
    import psutil

    for c in psutil.Process().children(recursive=True):
        try:
            if "resource_tracker" in " ".join(c.cmdline()):
                continue
            c.kill()
        except psutil.Error:
            pass


def scale(loader, params, wl, spec):
    """Rank ``rank`` of ``world`` ranks on this host: warm up, wait at the
    barrier for every rank, then read for ``secs`` of wall time."""
    import pathlib

    it = loader.open(params, wl, spec["rank"], spec["world"], spec["warmup"] + 100_000)
    for _ in range(spec["warmup"]):
        check(next(it), wl)
    barrier = pathlib.Path(spec["barrier"])
    (barrier / f"ready-{spec['rank']}").touch()
    deadline = time.monotonic() + 600
    while len(list(barrier.glob("ready-*"))) < spec["world"]:
        if time.monotonic() > deadline:
            raise RuntimeError("the other ranks never got ready")
        time.sleep(0.005)
    c0, s0 = cpu_snapshot(spec.get("server_pids") or {})
    samples = steps = 0
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < spec["secs"]:
        b = next(it, None)
        if b is None:
            break
        samples += b["id"].shape[0]
        steps += 1
    secs = time.perf_counter() - t0
    c1, s1 = cpu_snapshot(spec.get("server_pids") or {})
    loader.release(it)
    return {"samples": samples, "steps": steps, "secs": secs,
            "cpu": {"trainer_s": c1 - c0, "servers_s_total": sum(s1.values()) - sum(s0.values())}}


def measure(loader, params, wl, spec, timing):
    # Warm-up: max(warmup, ids_steps) steps from the first batch on; the
    # first ids_steps of them are recorded (the W=1 global batches for the
    # W1 = W2 check), the rest are cut short after max_secs / 2.
    warmup = max(spec["warmup"], spec["ids_steps"])
    steps_total = warmup + spec["measure"] + 2
    t0 = time.perf_counter()
    it = loader.open(params, wl, 0, 1, steps_total)
    first = next(it)
    ttfb = time.perf_counter() - t0
    check(first, wl)
    ids = [first["id"].tolist()]
    while len(ids) < spec["ids_steps"]:
        ids.append(next(it)["id"].tolist())
    tw = time.perf_counter()
    timing["first_batch_and_ids_s"] = tw - t0
    for _ in range(warmup - len(ids)):
        if time.perf_counter() - (t0 + ttfb) > spec["max_secs"] / 2:
            break
        if next(it, None) is None:
            break
    samples = nbytes = steps = 0
    c0, s0 = cpu_snapshot(spec.get("server_pids") or {})
    t1 = time.perf_counter()
    timing["warmup_s"] = t1 - tw
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
    c1, s1 = cpu_snapshot(spec.get("server_pids") or {})
    timing["measure_s"] = secs
    if steps == 0:
        raise RuntimeError("the loader ended before the timed steps")
    out = {"first_batch_s": ttfb, "samples": samples, "bytes": nbytes, "secs": secs, "steps": steps,
           "samples_per_s": samples / secs, "mb_per_s": nbytes / 1e6 / secs, "ids": ids,
           "rss_after_throughput": hwm("self"), "workers_rss_max": children_hwm(),
           # CPU-seconds over the timed steps: the trainer (with its DataLoader
           # workers) and each server process; µs per sample.
           "cpu": {"trainer_s": c1 - c0, "servers_s": {k: s1[k] - s0[k] for k in s0},
                   "trainer_us_per_sample": (c1 - c0) / max(samples, 1) * 1e6,
                   "servers_us_per_sample": sum(s1[k] - s0[k] for k in s0) / max(samples, 1) * 1e6}}
    state = loader.checkpoint(it)
    loader.release(it)
    del it
    t_res = time.perf_counter()
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
    timing["resume_s"] = time.perf_counter() - t_res
    return out


if __name__ == "__main__":
    main()
