"""One large-row weft-fs-shm run against a flightd started with --cpu-profile
(same recipe and transform as bench/harness weft-fs-shm, large workload), to
see what the server spends per step. Needs a harness run first (bin/flightd,
bench/work/weft-fs/large), then:

    bench/.venv/bin/python bench/rerun-slotgather/profile_large_shm.py 20000 /tmp/flightd.prof
    go tool pprof -top -nodecount=10 bin/flightd /tmp/flightd.prof

Prints samples/s and flightd / trainer CPU per sample for the first 47 steps
(about one pass over the 3,000 rows: the blocks are decoded, cold cache) and
for the rest (every block cached)."""
import json, os, signal, subprocess, sys, time
import psutil, weft

REPO = str(__import__("pathlib").Path(__file__).resolve().parents[2])
steps = int(sys.argv[1]) if len(sys.argv) > 1 else 3000
prof = sys.argv[2] if len(sys.argv) > 2 else "/tmp/weft-flightd.prof"
log = open("/tmp/weft-prof-flightd.log", "wb")
p = subprocess.Popen([f"{REPO}/bin/flightd", "serve", "--store", f"{REPO}/bench/work/weft-fs/large",
                      "--addr", "127.0.0.1:0", "--log-format", "json", "--cpu-profile", prof],
                     stdout=log, stderr=log)
addr = None
while addr is None:
    for line in open("/tmp/weft-prof-flightd.log"):
        try:
            r = json.loads(line)
        except ValueError:
            continue
        if r.get("msg") == "serving":
            addr = r["addr"]
    time.sleep(0.02)
c = weft.Client(f"grpc://{addr}")
ref = c.project("bench").branch("main")

def fixed_blobs(batch):
    i = batch.schema.get_field_index("image")
    return batch.set_column(i, "image", weft.fixed_size_binary(batch.column(i), "image"))
# the harness's large workload: seed, weights, B = 64
sys.path.insert(0, f"{REPO}/bench")
from harness import data
wl = data.Workload("large", (1500, 1500), 64)
recipe = weft.Recipe(seed=wl.seed, batch_size=64, components=[weft.Component(ref.table(f"large_{t}"), weight=w) for t, w in zip("ab", wl.weights)], steps=200_000)
loader = weft.TrainLoader(recipe, world=weft.World(rank=0, world_size=1), delivery="shm", transform_fn=fixed_blobs)
it = iter(loader)
sp = psutil.Process(p.pid); me = psutil.Process()
def cpu(q):
    t = q.cpu_times(); return t.user + t.system
marks = []
t0 = time.perf_counter(); s0, m0 = cpu(sp), cpu(me)
n = 0
for i in range(steps):
    b = next(it)
    assert b["image"].shape == (64, 102400)
    n += b["id"].shape[0]
    if i + 1 in (47, steps):  # 47 steps = 3,008 samples: about one pass over the 3,000 rows' blocks
        marks.append((i + 1, n, time.perf_counter() - t0, cpu(sp) - s0, cpu(me) - m0))
loader.close() if hasattr(loader, "close") else None
del it, loader
p.send_signal(signal.SIGTERM); p.wait(30)
for st, n, w, s, m in marks:
    print(f"steps {st} samples {n} wall {w:.3f}s  samples/s {n / w:,.0f}  flightd CPU {s:.3f}s ({s / n * 1e6:.1f} us/sample, {s / st * 1e3:.2f} ms/step)  trainer CPU {m:.3f}s ({m / n * 1e6:.1f} us/sample)")
(st1, n1, w1, s1, m1), (st2, n2, w2, s2, m2) = marks
print(f"after step 47: samples/s {(n2 - n1) / (w2 - w1):,.0f}; flightd {(s2 - s1) / (n2 - n1) * 1e6:.1f} us/sample = {(s2 - s1) / (st2 - st1) * 1e3:.2f} ms/step; trainer {(m2 - m1) / (n2 - n1) * 1e6:.1f} us/sample")
