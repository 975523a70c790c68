"""Which decode pool for video windows: frames/s delivered by weft._video
for a batch of windows, sequential vs 2 threads vs 2 processes, and PyAV's
own codec threading. Clips made with ffmpeg (H.264, testsrc2, GOP 30).

    PYTHONPATH=python python bench/video_decode.py [--batch 8] [--repeat 3]
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import multiprocessing
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "python" / "tests"))
import videoref as ref  # noqa: E402

from weft import _video  # noqa: E402


def _task(args):
    seg, want, threads, thread_type = args
    return _video.decode_rgb(seg, want, threads, thread_type)


class ProcessDecoder(_video.VideoDecoder):
    """The same decoder with segments decoded in a process pool (results
    pickled back), as TrainLoader's map_workers would."""

    def __init__(self, pool):
        super().__init__(threads=2)
        self.pool = pool

    def _map(self, tasks):
        return list(self.pool.map(_task, [(s, w, self.codec_threads, self.thread_type) for s, w in tasks]))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--gop", type=int, default=30)
    args = ap.parse_args()
    print(f"cpus={os.cpu_count()} batch={args.batch} gop={args.gop} (frames/s delivered = B*T / wall s; "
          f"{args.repeat} rounds)")
    ctx = multiprocessing.get_context("spawn")
    with tempfile.TemporaryDirectory() as d, cf.ProcessPoolExecutor(2, mp_context=ctx) as procs:
        list(procs.map(abs, range(4)))  # start the workers
        for size in ((96, 96), (224, 224)):
            ref.CLIPS["bench"] = (["-c:v", "libx264", "-g", str(args.gop), "-bf", "2", "-pix_fmt", "yuv420p"],
                                  size, 10.0, [])
            clip = ref.demux(ref.make_clip("bench", Path(d), size=size))
            pts = clip.frame_pts
            for t in (16, 90):
                rnd = random.Random(t)
                windows = []
                for _ in range(args.batch):
                    s = rnd.randrange(len(pts) - t)
                    windows.append(pts[s:s + t])
                col, nseg = ref.build_windows(clip, windows, merge=False)  # as if from different episodes
                batch = pa.RecordBatch.from_arrays([col], ["cam"])
                decoded = sum(e - s for s, e in (ref.decode_range(clip, w) for w in windows))
                modes = [
                    ("sequential", _video.VideoDecoder(threads=1, codec_threads=1)),
                    ("seq+codec FRAME x2", _video.VideoDecoder(threads=1, codec_threads=2, thread_type="FRAME")),
                    ("seq+codec SLICE x2", _video.VideoDecoder(threads=1, codec_threads=2, thread_type="SLICE")),
                    ("2 threads", _video.VideoDecoder(threads=2, codec_threads=1)),
                    ("2 processes", ProcessDecoder(procs)),
                ]
                times: dict[str, list[float]] = {name: [] for name, _ in modes}
                cpu: dict[str, list[float]] = {name: [] for name, _ in modes}
                for _ in range(args.repeat):  # round robin, so a burst of load elsewhere hits every mode
                    for name, dec in modes:
                        c0, t0 = time.process_time(), time.perf_counter()
                        out = dec.decode(batch)["cam"]
                        times[name].append(time.perf_counter() - t0)
                        cpu[name].append(time.process_time() - c0)
                        assert out.shape[:2] == (args.batch, t)
                        del out
                for name, dec in modes:
                    n = args.batch * t
                    med = statistics.median(times[name])
                    cpu_s = statistics.median(cpu[name])
                    print(f"{size[0]}x{size[1]} T={t:<3} segments={nseg:<2} units/frame {decoded / n:.2f}  {name:<20} "
                          f"median {n / med:6.0f} best {n / min(times[name]):6.0f} frames/s"
                          + ("" if isinstance(dec, ProcessDecoder) else f"  ({n / cpu_s:6.0f} frames per CPU s)"),
                          flush=True)
                    if not isinstance(dec, ProcessDecoder):
                        dec.close()

if __name__ == "__main__":
    main()
