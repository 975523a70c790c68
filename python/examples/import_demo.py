"""The import part of `make demo`: a LeRobot v3.0 dataset becomes a Weft table.

Starts `flightd serve --import-root testdata/lerobot` on a fresh
local-directory store and imports testdata/lerobot/v30 (4 episodes, two
64×48 cameras, written by LeRobot 0.4.4's own writer) server-side with
``Table.import_from("lerobot", …)``: the rows, the tasks, the episodes'
metadata and every MP4 as a media object, in one commit. Then trains on
windows of both cameras and an action chunk, as LeRobot's
``delta_timestamps`` would give them. Usage (make demo runs it):

    python python/examples/import_demo.py --flightd bin/flightd --source testdata/lerobot/v30
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from pathlib import Path

import weft
from video_demo import start_flightd  # the same directory


def run(uri: str, source: Path) -> None:
    c = weft.Client(uri)
    main = c.create_project("robots").branch("main")
    table = main.table("fixturebot")
    t0 = time.monotonic()
    commit = table.import_from("lerobot", str(source), progress=False)
    print(f"imported {source} as robots/main/fixturebot in {time.monotonic() - t0:.2f} s: commit {commit[:12]}")
    log = c.project("robots").log("main", limit=1)[0]
    record = json.loads(log.message.split("weft-import: ", 1)[1])
    print(f"  import record: format {record['format']} {record['format_version']}, "
          f"{record['rows']} rows in all its tables, {record.get('media', 0)} media objects, tables {sorted(record['tables'])}")
    info = json.loads((source / "meta" / "info.json").read_text())
    cams = sorted(k for k, f in info["features"].items() if f["dtype"] == "video")
    fps = info["fps"]
    # LeRobot: delta_timestamps={cam: [-2/fps, -1/fps, 0], "action": [k/fps for k in range(4)]}
    windows = {cam: weft.Video(range(-2, 1)) for cam in cams}
    windows["action"] = weft.Rows(range(4))
    recipe = weft.Recipe(seed=7, batch_size=8, steps=3,
                         components=[weft.Component(table, windows=weft.Windows(windows))])
    for i, batch in enumerate(weft.TrainLoader(recipe)):
        shapes = ", ".join(f"{k} {tuple(v.shape)}" for k, v in batch.items() if hasattr(v, "shape") and k in windows)
        pads = int(sum(batch[f"{cam}_is_pad"].sum() for cam in cams))
        print(f"  step {i}: {shapes}; {pads} padded frames (episode starts)")
    print(f"  ({fps} fps; the frames equal LeRobot's own decode of the same timestamps: "
          "python/tests/test_import_lerobot.py, and lerobot_check.py against LeRobotDataset)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--flightd", default="bin/flightd")
    ap.add_argument("--source", default="testdata/lerobot/v30")
    args = ap.parse_args()
    source = Path(args.source).resolve()
    work = Path(tempfile.mkdtemp(prefix="weft-demo-import-"))
    store = work / "store"
    store.parent.mkdir(parents=True, exist_ok=True)
    proc, uri = start_flightd(args.flightd, store, "--import-root", str(source.parent))
    try:
        run(uri, source)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
