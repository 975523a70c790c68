"""Out of CI: Weft's windows after a LeRobot import against
LeRobotDataset(delta_timestamps=...) itself, on the committed fixtures.
Run with the LeRobot venv (PyPI torch; never the main venv):

    go build -o bin/flightd ./cmd/flightd
    PYTHONPATH=python ~/.cache/weft/lerobot-venv/bin/python python/tests/lerobot_check.py [testdata/lerobot/v30 ...]

For every row and camera it compares the frames of
Video(range(-K, K)) and Rows(range(H)) of "action" with LeRobot's item for
delta_timestamps {cam: [k/fps for k in range(-K, K)], action: [h/fps ...]}:
pad flags equal, action values equal, RGB frames within a stated
tolerance (LeRobot's decoder backend converts YUV to RGB through swscale or
torchcodec; Weft with exact BT.601 arithmetic). Prints the max difference.
"""
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
K, H = 3, 4
RGB_TOL = 4


def main(paths):
    import weft
    from weft.testing import free_port
    from lerobot.datasets.lerobot_dataset import LeRobotDataset
    flightd = REPO / "bin" / "flightd"
    ok = True
    for root in paths:
        root = Path(root).resolve()
        with tempfile.TemporaryDirectory() as tmp:
            store = Path(tmp) / "store"
            subprocess.run([str(flightd), "import", "lerobot", str(root), "--store", str(store), "--project", "p",
                            "--table", "t", "--create"], check=True, capture_output=True)
            port = free_port()
            srv = subprocess.Popen([str(flightd), "serve", "--store", str(store), "--addr", f"127.0.0.1:{port}"],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                for _ in range(100):
                    try:
                        t = weft.Client(f"grpc://127.0.0.1:{port}").project("p").branch("main").table("t")
                        t.schema
                        break
                    except Exception:
                        time.sleep(0.1)
                info = t.schema.metadata
                import json
                fps = json.loads(info[b"lerobot.info"])["fps"]
                cams = [f.name for f in t.schema if (f.metadata or {}).get(b"weft.kind") == b"video"]
                ds = LeRobotDataset("weft/fixture", root=root, video_backend="pyav",
                                    delta_timestamps={**{c: [k / fps for k in range(-K, K)] for c in cams},
                                                      "action": [h / fps for h in range(H)]})
                windows = {c: weft.Video(range(-K, K)) for c in cams}
                windows["action"] = weft.Rows(range(H))
                recipe = weft.Recipe(seed=3, batch_size=8, components=[weft.Component(t, windows=weft.Windows(windows))])
                worst, n, bad = 0, 0, []
                with weft.TrainLoader(recipe, decode_threads=2) as loader:
                    for b in loader:
                        for i, row in enumerate(b["_row"].tolist()):
                            item = ds[row]
                            for c in cams:
                                ref = (item[c].numpy().transpose(0, 2, 3, 1) * 255).round().astype(np.int16)
                                got = b[c].numpy()[i].astype(np.int16)
                                d = int(np.abs(got - ref).max())
                                worst = max(worst, d)
                                n += len(ref)
                                if d > RGB_TOL:
                                    bad.append(f"{c} row {row}: RGB {d} LSB off")
                                if b[f"{c}_is_pad"].numpy()[i].tolist() != item[f"{c}_is_pad"].tolist():
                                    bad.append(f"{c} row {row}: is_pad differs")
                            if b["action_is_pad"].numpy()[i].tolist() != item["action_is_pad"].tolist():
                                bad.append(f"action row {row}: is_pad differs")
                            live = ~item["action_is_pad"].numpy()
                            if not np.array_equal(b["action"].numpy()[i][live], item["action"].numpy()[live]):
                                bad.append(f"action row {row}: values differ")
                print(f"{root.name} ({ds.meta.info['codebase_version']}): {n} frames vs LeRobotDataset "
                      f"(video_backend=pyav): max RGB difference {worst} LSB (tolerance {RGB_TOL}); "
                      f"{len(bad)} mismatches")
                for m in bad[:10]:
                    print("  ", m)
                ok = ok and not bad
            finally:
                srv.terminate()
                srv.wait()
    return 0 if ok else 1


if __name__ == "__main__":
    # LeRobot 0.4.4 loads only v3.0 (v2.1 raises BackwardCompatibilityError).
    sys.exit(main(sys.argv[1:] or [REPO / "testdata" / "lerobot" / "v30"]))
