"""The benchmark driver: make bench (quick) / make bench-full.

    python3 bench/harness/run.py --quick|--full [--out bench] [--runs N] [--only NAME,...]

Creates bench/.venv if needed (venv.py) and re-runs itself there; builds
bin/flightd and weftbench; generates the data (bench/work/data); prepares
every loader (MDS shards, Weft tables on fs and MinIO); measures the limits
and every loader, ``runs`` times each, round-robin, each run in a fresh
process; checks W=1 against W=2 batches; writes OUT/results.json,
OUT/results.md and OUT/*.png.
"""

import argparse
import contextlib
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
if __package__ in (None, ""):
    sys.path.insert(0, str(HERE.parent))
    __package__ = "harness"  # noqa: A001

from harness import venv  # noqa: E402

SCALES = {
    "quick": dict(small_rows=(200_000, 800_000), large_rows=(1_500, 1_500), runs=3,
                  small=dict(warmup=20, measure=8_000), large=dict(warmup=3, measure=400),
                  max_secs=2, min_steps=10, ceiling_batches=dict(small=5_000, large=150), iperf_s=1, timeout=240,
                  ids_steps=10),
    "full": dict(small_rows=(1_000_000, 4_000_000), large_rows=(10_485, 10_485), runs=5,
                 small=dict(warmup=50, measure=20_000), large=dict(warmup=10, measure=300),
                 ids_steps=20, max_secs=60, min_steps=50, ceiling_batches=dict(small=20_000, large=500), iperf_s=5, timeout=1800),
}
RESUME_STEP = 100_000


def log(msg):
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", flush=True)


class Phases:
    """Wall seconds per phase of one harness run (results.json "phases"),
    printed as a summary at the end."""

    def __init__(self):
        self.secs = {}

    @contextlib.contextmanager
    def __call__(self, name):
        t0 = time.monotonic()
        try:
            yield
        finally:
            self.add(name, time.monotonic() - t0)

    def add(self, name, secs):
        self.secs[name] = self.secs.get(name, 0.0) + secs

    def summary(self, total):
        lines = [f"phase timing (wall s; total {total:.1f} s):"]
        groups = {}
        for k, v in self.secs.items():
            groups[k.split(":")[0]] = groups.get(k.split(":")[0], 0.0) + v
        for g, v in sorted(groups.items(), key=lambda kv: -kv[1]):
            lines.append(f"  {g:<28} {v:7.1f}  ({100 * v / max(total, 1e-9):4.1f} %)")
            for k, kv in sorted(self.secs.items(), key=lambda kv: -kv[1]):
                if k.split(":")[0] == g and k != g:
                    lines.append(f"      {k.split(':', 1)[1]:<36} {kv:7.1f}")
        lines.append(f"  {'(unaccounted)':<28} {total - sum(self.secs.values()):7.1f}")
        return "\n".join(lines)


class Harness:
    def __init__(self, args):
        self.args = args
        self.mode = "quick" if args.quick else "full"
        self.scale = SCALES[self.mode]
        self.work = REPO / "bench" / "work"
        self.data_dir = self.work / "data"
        self.out = Path(args.out).resolve()
        self.flightd_bin = str(REPO / "bin" / "flightd")
        self.weftbench_bin = str(self.work / "bin" / "weftbench")
        self.minio = None
        self.minio_error = None
        self.flightd_runs = 0
        self.log = log
        self.repo = REPO
        self.phase = Phases()

    def base_env(self):
        return {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}


def build(h):
    """go build of flightd and weftbench (Go's build cache makes this a
    no-op link check, ~0.3 s each, when nothing changed)."""
    log("building bin/flightd and weftbench")
    subprocess.run(["go", "build", "-o", h.flightd_bin, "./cmd/flightd"], cwd=REPO, check=True)
    subprocess.run(["go", "build", "-o", h.weftbench_bin, "./bench/cmd/weftbench"], cwd=REPO, check=True)


def machine():
    mem = next(int(l.split()[1]) * 1024 for l in Path("/proc/meminfo").read_text().splitlines()
               if l.startswith("MemTotal:"))
    model = next((l.split(":", 1)[1].strip() for l in Path("/proc/cpuinfo").read_text().splitlines()
                  if l.startswith("model name")), platform.processor())
    return {"cpus": os.cpu_count(), "cpu_model": model, "memory_bytes": mem, "kernel": platform.release(),
            "python": platform.python_version()}


def versions():
    from importlib import metadata

    out = {}
    for d in ("torch", "numpy", "pyarrow", "mosaicml-streaming", "datasets", "huggingface-hub", "pylance", "litdata", "weft",
              "matplotlib", "transformers"):
        try:
            out[d] = metadata.version(d)
        except metadata.PackageNotFoundError:
            out[d] = None
    for name, cmd in (("go", ["go", "version"]), ("iperf3", ["iperf3", "--version"])):
        try:
            out[name] = subprocess.run(cmd, capture_output=True, text=True).stdout.splitlines()[0]
        except (OSError, IndexError):
            out[name] = None
    out["minio"] = None
    if shutil.which(minio_binary() or ""):
        out["minio"] = subprocess.run([minio_binary(), "--version"], capture_output=True,
                                      text=True).stdout.splitlines()[0:1]
    return out


def minio_binary():
    for d in (os.environ.get("WEFT_TOOLS_BIN"), os.path.expanduser("~/.cache/weft/bin")):
        if d and os.access(os.path.join(d, "minio"), os.X_OK):
            return os.path.join(d, "minio")
    return shutil.which("minio")


def spawn_worker(h, spec, env_extra=None):
    env = dict(os.environ, PYTHONPATH=str(HERE.parent), **(env_extra or {}))
    proc = subprocess.Popen([sys.executable, "-m", "harness.worker", json.dumps(spec)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, cwd=str(REPO))
    proc.spawned_at = time.time()
    return proc


def collect(h, proc, what):
    try:
        out, err = proc.communicate(timeout=h.scale["timeout"])
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        return {"error": f"timed out after {h.scale['timeout']}s", "stderr": err[-3000:]}
    wall = time.time() - proc.spawned_at
    for line in reversed(out.splitlines()):
        if line.startswith("RESULT "):
            res = json.loads(line[7:])
            t = res.setdefault("timing", {})
            t["process_s"] = wall
            if "main_at" in t:  # interpreter start + imports, before the loader is opened
                t["startup_s"] = t.pop("main_at") - proc.spawned_at
            if "error" in res:
                log(f"  {what}: ERROR {res['error']}")
                res["stderr"] = err[-3000:]
            return res
    return {"error": f"worker exited {proc.returncode} without a result", "stderr": err[-3000:]}


def one_run(h, ld, wl, params):
    sc = h.scale[wl.name]
    spec = {"loader": ld.name, "workload": wl.spec(), "params": params, "mode": "run", "scale": h.mode,
            "ids_steps": h.scale["ids_steps"], "warmup": sc["warmup"], "measure": sc["measure"], "resume_step": RESUME_STEP,
            "max_secs": h.scale["max_secs"], "min_steps": h.scale["min_steps"]}
    from harness.servers import RSSSampler

    with ld.serving(h, wl, params) as served:
        spec["params"] = {**params, **served.params}
        spec["server_pids"] = served.pids
        sampler = RSSSampler(served.pids) if served.pids else None
        res = collect(h, spawn_worker(h, spec), ld.name)
        if sampler:
            res["server_rss"] = sampler.stop()
            # A server started for this run: its exact peak (VmHWM).
            from harness.servers import status_kb
            for k, pid in served.pids.items():
                if k == "flightd":
                    res["server_rss"][k] = status_kb(pid, "VmHWM") or res["server_rss"][k]
            res["server_rss_kind"] = {k: ("VmHWM" if k == "flightd" else "sampled VmRSS") for k in served.pids}
    return res


def identity(h, ld, wl, params, w1_ids):
    """Two ranks (concurrent processes, RANK/WORLD_SIZE) with B/2 each,
    against the W=1 global batches."""
    from harness.servers import free_port

    with ld.serving(h, wl, params) as served:
        port = free_port()
        procs = []
        for rank in range(2):
            spec = {"loader": ld.name, "workload": wl.spec(), "params": {**params, **served.params},
                    "mode": "ids", "scale": h.mode, "rank": rank, "world": 2, "ids_steps": h.scale["ids_steps"]}
            env = {"RANK": str(rank), "WORLD_SIZE": "2", "LOCAL_RANK": str(rank), "LOCAL_WORLD_SIZE": "2",
                   "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)}
            procs.append(spawn_worker(h, spec, env))
        ranks = [collect(h, p, f"{ld.name} rank {r}") for r, p in enumerate(procs)]
    errs = [r["error"] for r in ranks if "error" in r]
    if errs:
        return {"identical": None, "error": "; ".join(errs)}
    same_set = same_order = 0
    n = h.scale["ids_steps"]
    for s in range(n):
        union = ranks[0]["ids"][s] + ranks[1]["ids"][s]
        if sorted(union) == sorted(w1_ids[s]):
            same_set += 1
        interleaved = [x for pair in zip(ranks[0]["ids"][s], ranks[1]["ids"][s]) for x in pair]
        if interleaved == w1_ids[s]:
            same_order += 1
    return {"identical": same_set == n, "steps": n, "steps_same_samples": same_set,
            "steps_same_order": same_order, "timing": [r.get("timing") for r in ranks]}


# The loaders measured with W = 4 ranks on this host (issue 14): Weft (one
# flightd serves the four) against the in-process peers (each rank reads
# on its own).
SCALING = ("weft-fs", "weft-fs-shm", "lance", "litdata", "torch-dl-w0")


def scaling(h, ld, wl, params, world):
    """``world`` rank processes of one job at once, each B/world samples
    per step; they warm up, meet at a barrier (files in a fresh
    directory), then read for the same wall time. Aggregate samples/s =
    all samples / that time; CPU = every rank's and server's CPU-seconds
    over it."""
    import tempfile

    from harness.servers import free_port

    sc = h.scale[wl.name]
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="weft-w4-") as barrier, ld.serving(h, wl, params) as served:
        procs = []
        for rank in range(world):
            spec = {"loader": ld.name, "workload": wl.spec(), "params": {**params, **served.params},
                    "mode": "scale", "scale": h.mode, "rank": rank, "world": world, "barrier": barrier,
                    "warmup": sc["warmup"], "secs": h.scale["max_secs"] * 2, "server_pids": served.pids}
            env = {"RANK": str(rank), "WORLD_SIZE": str(world), "LOCAL_RANK": str(rank),
                   "LOCAL_WORLD_SIZE": str(world), "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)}
            procs.append(spawn_worker(h, spec, env))
        ranks = [collect(h, p, f"{ld.name} W={world} rank {r}") for r, p in enumerate(procs)]
    errs = [r["error"] for r in ranks if "error" in r]
    if errs:
        return {"error": "; ".join(errs)}
    secs = max(r["secs"] for r in ranks)
    samples = sum(r["samples"] for r in ranks)
    trainer_cpu = sum(r["cpu"]["trainer_s"] for r in ranks)
    server_cpu = max((r["cpu"]["servers_s_total"] for r in ranks), default=0.0)  # each rank saw the same servers
    return {"world": world, "samples": samples, "secs": secs, "samples_per_s": samples / secs,
            "per_rank_samples_per_s": [r["samples"] / r["secs"] for r in ranks],
            "cpu_trainers_s": trainer_cpu, "cpu_servers_s": server_cpu,
            "cpu_us_per_sample": (trainer_cpu + server_cpu) / max(samples, 1) * 1e6,
            "trainer_rss_max": max(r.get("trainer_rss") or 0 for r in ranks)}


def summarize(vals):
    vals = [v for v in vals if v is not None]
    if not vals:
        return None
    return {"median": statistics.median(vals), "min": min(vals), "max": max(vals), "n": len(vals)}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--quick", action="store_true", help="scaled-down data, 3 runs (about 12 min on 2 cores)")
    g.add_argument("--full", action="store_true", help="the issue's scale: 1 M + 4 M small rows, ~2 GB large")
    ap.add_argument("--out", default=str(REPO / "bench"), help="where results.md, results.json and PNGs go")
    ap.add_argument("--runs", type=int, help="runs per loader (default 3 quick, 5 full)")
    ap.add_argument("--only", help="comma-separated loader names (default: all)")
    ap.add_argument("--workloads", default="small,large")
    ap.add_argument("--no-scaling", action="store_true", help="skip the W = 4 ranks-on-one-host runs")
    ap.add_argument("--allow-missing-weft", action="store_true", help="run without the weft client (its rows record the error)")
    args = ap.parse_args()

    if Path(sys.prefix).resolve() != venv.VENV.resolve():
        t0 = time.monotonic()
        created = not venv.up_to_date()
        py = venv.ensure(require_weft=not args.allow_missing_weft)
        os.environ["WEFT_BENCH_VENV_S"] = f"{time.monotonic() - t0:.3f}"
        os.environ["WEFT_BENCH_VENV_CREATED"] = "1" if created else "0"
        os.execv(str(py), [str(py), str(Path(__file__).resolve()), *sys.argv[1:]])

    start = time.monotonic()
    h = Harness(args)
    ph = h.phase
    venv_s = float(os.environ.get("WEFT_BENCH_VENV_S", "0"))
    venv_created = os.environ.get("WEFT_BENCH_VENV_CREATED") == "1"
    h.out.mkdir(parents=True, exist_ok=True)
    runs = args.runs or h.scale["runs"]
    mode = "quick" if args.quick else "full"
    log(f"{mode} mode: {runs} runs per loader; results to {h.out}")
    with ph("build"):
        build(h)
    with ph("imports"):
        from harness import data, limits, report
        from harness.loaders import registry

        loaders = registry.all_loaders()
    if args.only:
        keep = set(args.only.split(","))
        loaders = [ld for ld in loaders if ld.name in keep]
    mb = minio_binary()
    if any(ld.name.startswith("weft-minio") for ld in loaders):
        if mb is None:
            h.minio_error = "minio binary not found (run `make tools`)"
        else:
            from harness.servers import MinIO
            try:
                with ph("minio start"):
                    h.minio = MinIO(mb, h.work / "minio", log)
            except Exception as e:  # noqa: BLE001
                h.minio_error = f"MinIO did not start: {e}"
    with ph("versions"):
        vers = versions()
    results = {"mode": mode, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "machine": machine(),
               "versions": vers, "runs": runs, "resume_step": RESUME_STEP, "ids_steps": h.scale["ids_steps"],
               "scale": h.scale, "workloads": {}, "loaders": {},
               "venv": {"secs": venv_s, "created_or_updated": venv_created}}
    for ld in loaders:
        ld.configure(mode)
        results["loaders"][ld.name] = {"title": ld.title, "how": ld.how, "package": ld.package}
    try:
        for wname in args.workloads.split(","):
            rows = h.scale[f"{wname}_rows"]
            wl = data.Workload(wname, rows, 256 if wname == "small" else 64)
            wres = results["workloads"][wname] = {"spec": wl.spec(), "loaders": {}, "limits": {}}
            with ph(f"data:{wname}"):
                paths = data.ensure_parquet(h.data_dir, wl, log)
            wres["parquet_bytes"] = sum(p.stat().st_size for p in paths)
            params = {}
            for ld in loaders:
                t0 = time.monotonic()
                try:
                    with ph(f"prepare:{wname} {ld.name}"):
                        params[ld.name] = {"parquet": [str(p) for p in paths], **ld.prepare(h, wl)}
                    wres["loaders"][ld.name] = {"runs": [], "prepare_s": time.monotonic() - t0}
                except Exception as e:  # noqa: BLE001
                    log(f"{ld.name}: prepare failed: {type(e).__name__}: {e}")
                    wres["loaders"][ld.name] = {"runs": [], "error": f"prepare: {type(e).__name__}: {e}"}
            lim = wres["limits"]
            lim["iperf3"], lim["flight_ceiling"], lim["decode"], lim["memcpy"] = [], [], [], []
            for r in range(runs):
                for key, fn in (("iperf3", lambda: limits.iperf3(h.scale["iperf_s"])),
                                ("flight_ceiling", lambda: limits.flight_ceiling(h.weftbench_bin, wl,
                                                                                 h.scale["ceiling_batches"][wname])),
                                ("decode", lambda: limits.decode(h.weftbench_bin, paths)),
                                ("memcpy", limits.memcpy)):
                    try:
                        with ph(f"limits:{wname} {key}"):
                            lim[key].append(fn())
                    except Exception as e:  # noqa: BLE001
                        lim[key].append({"error": f"{type(e).__name__}: {e}"})
                log(f"{wname} limits round {r + 1}: " + ", ".join(
                    f"{k} {v[-1].get('mb_per_s', 0):.0f} MB/s" if "error" not in v[-1] else f"{k} ERROR"
                    for k, v in lim.items()))
                for ld in loaders:
                    lr = wres["loaders"][ld.name]
                    if "error" in lr:
                        continue
                    with ph(f"runs:{wname} {ld.name}"):
                        res = one_run(h, ld, wl, params[ld.name])
                    lr["runs"].append(res)
                    if "error" not in res:
                        rs = res.get("resume", {})
                        log(f"{wname} run {r + 1}/{runs} {ld.name}: {res['samples_per_s']:,.0f} samples/s, "
                            f"{res['mb_per_s']:.1f} MB/s, first batch {res['first_batch_s']:.2f}s, resume "
                            f"{rs.get('kind')} {rs.get('secs', float('nan')):.3f}s, RSS {res['trainer_rss'] / 2**20:.0f} MiB"
                            f"; process {fmt_timing(res.get('timing'))}")
            for ld in loaders:
                lr = wres["loaders"][ld.name]
                good = [r for r in lr["runs"] if "error" not in r]
                if not good:
                    if not lr.get("error"):
                        lr["error"] = next((r["error"] for r in lr["runs"]), "no run")
                    continue
                with ph(f"W=2 check:{wname} {ld.name}"):
                    lr["identity"] = identity(h, ld, wl, params[ld.name], good[0]["ids"])
                log(f"{wname} {ld.name}: W=1 vs W=2: {lr['identity']}")
                for r in lr["runs"]:
                    r.pop("ids", None)
            for ld in loaders:
                lr = wres["loaders"][ld.name]
                if "error" in lr or ld.name not in SCALING or args.no_scaling:
                    continue
                lr["w4"] = []
                for r in range(runs):
                    with ph(f"W=4:{wname} {ld.name}"):
                        res = scaling(h, ld, wl, params[ld.name], 4)
                    lr["w4"].append(res)
                    log(f"{wname} W=4 run {r + 1}/{runs} {ld.name}: " + (
                        f"ERROR {res['error']}" if "error" in res else
                        f"{res['samples_per_s']:,.0f} samples/s in all, CPU {res['cpu_us_per_sample']:.1f} µs/sample"))
            results["wall_s"] = time.monotonic() - start
            json.dump(results, open(h.out / "results.json", "w"), indent=1)
    finally:
        if h.minio:
            h.minio.stop()
    with ph("report"):
        results["wall_s"] = time.monotonic() - start
        results["phases"] = {k: round(v, 2) for k, v in ph.secs.items()}
        report.write(results, h.out)
    results["wall_s"] = time.monotonic() - start
    results["phases"] = {k: round(v, 2) for k, v in ph.secs.items()}
    (h.out / "results.json").write_text(json.dumps(results, indent=1))
    print(ph.summary(results["wall_s"]), flush=True)
    log(f"done in {results['wall_s']:.0f}s (+ venv check {venv_s:.1f}s{', venv created/updated' if venv_created else ''}): "
        f"{h.out / 'results.md'}")


def fmt_timing(t):
    if not t:
        return "?"
    return " ".join(f"{k[:-2]} {v:.1f}s" for k, v in t.items())


if __name__ == "__main__":
    main()
