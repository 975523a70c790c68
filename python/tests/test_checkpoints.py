"""weft.Checkpoints against a real flightd: a row per checkpoint and its
weights as a "file" media object in one commit; restore streams it back."""

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest
import torch

import weft

BIG = int(os.environ.get("WEFT_CKPT_BYTES", 200 << 20))  # 2 GB: WEFT_CKPT_BYTES=2147483648
ENV = {**os.environ, "PYTHONPATH": os.path.join(os.path.dirname(__file__), "..")}


@pytest.fixture
def wc(server):
    c = weft.Client(server.location)
    c.create_project("p")
    yield c
    c.close()


def run_py(code, *args, wait=True):
    p = subprocess.Popen([sys.executable, "-c", textwrap.dedent(code), *map(str, args)], env=ENV,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if not wait:
        return p
    out, err = p.communicate(timeout=600)
    assert p.returncode == 0, err.decode()
    return out.decode()


def test_save_restore_state_dict_and_loader(wc, tmp_path):
    ck = weft.Checkpoints(wc.project("p").branch("main").table("checkpoints"))
    assert ck.latest() is None
    model = {"w": torch.arange(10.0)}
    ck.save(step=10, model=model, loader={"run": "r1", "sample": 20}, extra={"loss": 0.5})
    ck.save(step=20, model={"w": torch.ones(3)}, extra={"loss": 0.25})
    ck.save(step=20, extra={"rank": 1, "loss": 0.3})  # a rank without weights adds metrics
    last = ck.latest()
    assert last.step == 20 and torch.equal(last.load()["w"], torch.ones(3))
    first = ck.at(10)
    assert first.loader == {"run": "r1", "sample": 20} and first.run == {"run": "r1"} and first.extra == {"loss": 0.5}
    assert torch.equal(first.load()["w"], model["w"])
    assert len(ck.all()) == 3
    with pytest.raises(weft.NotFound):
        ck.at(15)


def test_large_file_streams(wc, server, tmp_path):
    src = tmp_path / "weights.bin"
    with open(src, "wb") as f:
        block = os.urandom(1 << 20)
        for i in range(BIG >> 20):
            f.write(block[i % 7:] + block[:i % 7])
    code = """
        import sys, time, weft
        t0 = time.perf_counter()
        c = weft.Client(sys.argv[1])
        ck = weft.Checkpoints(c.project("p").branch("main").table("checkpoints"))
        if sys.argv[2] == "save":
            ck.save(step=1, model=sys.argv[3])
        else:
            ck.latest().weights_to(sys.argv[3])
        # VmHWM, not ru_maxrss: Linux carries a parent's larger ru_maxrss
        # through fork and exec (pytest's own, after many tests).
        hwm = [l for l in open("/proc/self/status") if l.startswith("VmHWM:")][0].split()[1]
        print(int(hwm) * 1024, time.perf_counter() - t0)
    """
    rss_save, t_save = run_py(code, server.location, "save", src).split()
    dst = tmp_path / "restored.bin"
    rss_load, t_load = run_py(code, server.location, "load", dst).split()
    rss_save, rss_load = int(rss_save), int(rss_load)
    print(f"checkpoint of {BIG} bytes: save {float(t_save):.1f} s, client peak RSS {rss_save >> 20} MiB; "
          f"restore {float(t_load):.1f} s, client peak RSS {rss_load >> 20} MiB")
    assert os.path.getsize(dst) == BIG
    assert subprocess.run(["cmp", str(src), str(dst)]).returncode == 0
    for rss in (rss_save, rss_load):
        assert rss < 400 << 20 or rss < BIG / 2, f"peak RSS {rss >> 20} MiB for a {BIG >> 20} MiB file"


def test_kill_during_save_leaves_previous(wc, server, tmp_path):
    ck = weft.Checkpoints(wc.project("p").branch("main").table("checkpoints"))
    ck.save(step=1, model={"w": torch.zeros(2)})
    src = tmp_path / "big.bin"
    with open(src, "wb") as f:
        f.truncate(300 << 20)  # sparse: quick to write, slow enough to upload
    # The saver stops in the middle of its upload (after the first chunks
    # went out) and says so; it is killed there: no timing.
    p = run_py("""
        import sys, threading, weft
        from weft import _client
        chunks = _client.media_chunks
        def slow(*a, **kw):
            for i, b in enumerate(chunks(*a, **kw)):
                if i == 2:
                    print("uploading", flush=True)
                    threading.Event().wait()  # until killed
                yield b
        _client.media_chunks = slow
        c = weft.Client(sys.argv[1])
        weft.Checkpoints(c.project("p").branch("main").table("checkpoints")).save(step=2, model=sys.argv[2])
    """, server.location, src, wait=False)
    line = p.stdout.readline()
    assert line.strip() == b"uploading", (line, p.poll())
    p.send_signal(signal.SIGKILL)
    p.wait()
    assert ck.latest().step == 1
    assert [c.step for c in ck.all()] == [1]


def test_concurrent_savers_lose_nothing(wc, server):
    procs = [run_py("""
        import sys, torch, weft
        c = weft.Client(sys.argv[1])
        ck = weft.Checkpoints(c.project("p").branch("main").table("checkpoints"))
        r = int(sys.argv[2])
        for s in range(5):
            ck.save(step=s * 4 + r, model={"w": torch.full((4,), float(r))} if r == 0 else None, extra={"rank": r})
    """, server.location, r, wait=False) for r in range(4)]
    for p in procs:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err.decode()
    ck = weft.Checkpoints(wc.project("p").branch("main").table("checkpoints"))
    assert sorted(c.step for c in ck.all()) == list(range(20))
    assert ck.latest().step == 16


def test_checkpoint_example_as_written(wc, tmp_path, monkeypatch):
    """The block of docs/python.md ("Checkpoints") runs as written, and the
    restarted loader continues at the saved sample."""
    import pyarrow as pa

    text = open(os.path.join(os.path.dirname(__file__), "..", "..", "docs/python.md")).read()
    block = text.split("<!-- checkpoint-example -->", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    wc.project("p").branch("main").table("t").append(pa.table({"id": pa.array(range(100), pa.int64())}))
    scan = wc.project("p").branch("main").table("t").scan_request(["id"])
    loader = scan.to_data_loader(batch_size=2, seed=7)
    seen = [int(v) for _, b in zip(range(3), loader) for v in b["id"]]
    model = torch.nn.Linear(4, 2)
    want = {k: v.clone() for k, v in model.state_dict().items()}
    monkeypatch.chdir(tmp_path)
    ns = {"weft": weft, "client": wc, "model": model, "loader": loader, "scan": scan}
    exec(compile(block, "docs/python.md", "exec"), ns)
    assert ns["start"] == 1001
    assert all(torch.equal(model.state_dict()[k], v) for k, v in want.items())
    assert torch.equal(torch.load(tmp_path / "w1000.pt")["weight"], want["weight"])
    rest = [int(v) for b in ns["loader"] for v in b["id"]]
    assert len(seen) == 6 and sorted(seen + rest) == list(range(100))
