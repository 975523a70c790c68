"""The Loader plugin interface.

A loader is one row of the results table. The driver (run.py, in the parent
process) calls ``prepare`` once per workload and ``serving`` around every
run; the worker (worker.py, a fresh process per run) calls ``open`` and
``resume``. Everything that crosses the process boundary (``params``) is
JSON.

Every loader yields, per step, a dict of torch tensors with at least the
workload's data columns, the same for all loaders:

- small: ``id`` int64 [n], ``features`` float32 [n, 32], ``label`` int64 [n]
- large: ``id`` int64 [n], ``image`` uint8 [n, 102400] (the value bytes,
  one copy into one tensor per batch; see ``images_tensor``)

Only these columns count towards MB/s; extra keys (Weft's ``_component``,
``_row``) are allowed and not counted.
"""

import contextlib
from dataclasses import dataclass, field
from typing import Any, Iterator, Optional


@dataclass
class Resume:
    """How a loader gets to step S.

    kind: "seek"        — ``iterator`` starts at step S; the worker times its first batch.
          "replay"      — ``iterator`` starts at step S after a real replay; timed the same.
          "extrapolated"— no seek: ``rate`` is the measured replay rate in steps/s
                          (``note`` says what was replayed); time = S / rate.
    """

    kind: str
    iterator: Optional[Iterator[dict]] = None
    rate: Optional[float] = None
    note: str = ""


@dataclass
class Served:
    """What ``serving`` hands the worker and the driver."""

    params: dict = field(default_factory=dict)  # merged into the worker's params
    pids: dict = field(default_factory=dict)    # server name -> pid, for peak RSS


class Loader:
    name = ""          # key in results.json, e.g. "torch-dl-w0"
    title = ""         # row label in results.md
    package = ""       # pip distribution whose version is reported
    how = ""           # one line: how it is used (shown in results.md)
    world2 = "processes"  # W=2 check: two concurrent worker processes with RANK/WORLD_SIZE

    def configure(self, mode: str) -> None:
        """Called with "quick" or "full" before anything else, in the parent
        and in every worker (settings that differ by mode, reflected in ``how``)."""

    def release(self, it) -> None:
        """Drop the iterator of the timed run before the resume test (frees
        its memory and server streams)."""
        del it

    # ------------------------------------------------------------ parent
    def prepare(self, h, wl) -> dict:
        """One-time conversion of the workload's data (parent process).
        Returns params for the worker. ``h`` is the run.Harness."""
        return {}

    @contextlib.contextmanager
    def serving(self, h, wl, params):
        """Servers this loader needs for one run (fresh per run)."""
        yield Served()

    # ------------------------------------------------------------ worker
    def open(self, params: dict, wl, rank: int, world: int, steps: int) -> Iterator[dict]:
        """Batches of rank ``rank`` of ``world``, each B/world samples, at
        least ``steps`` of them, from step 0."""
        raise NotImplementedError

    def resume(self, params: dict, wl, step: int, state: Any) -> Resume:
        """Get to global step ``step`` of the same run from a fresh loader.
        ``state`` is what ``checkpoint`` returned for the loader ``open`` made."""
        raise NotImplementedError

    def checkpoint(self, it) -> Any:
        """Whatever the loader saves in a checkpoint (called after the
        throughput phase, in the worker)."""
        return None


# Values that reached the trainer shorter than they were written (seen with
# Hugging Face datasets' torch format, which drops trailing NUL bytes of
# binary values): counted, reported, and padded back with zeros.
SHORT_VALUES = [0]
IMAGE_BYTES = 100 << 10


def images_tensor(values):
    """A list of bytes-like values (or uint8 numpy arrays) of IMAGE_BYTES →
    one uint8 tensor [n, IMAGE_BYTES]: one copy, the same for every loader."""
    import numpy as np
    import torch

    out = np.zeros((len(values), IMAGE_BYTES), dtype=np.uint8)
    for i, v in enumerate(values):
        a = v if isinstance(v, np.ndarray) else np.frombuffer(v, dtype=np.uint8)
        if a.shape[0] != IMAGE_BYTES:
            SHORT_VALUES[0] += 1
        out[i, :a.shape[0]] = a
    return torch.from_numpy(out)


def collate_large(samples):
    """collate_fn for per-sample dicts {id, image(bytes)} (HF, Streaming)."""
    import torch

    return {"id": torch.as_tensor([int(s["id"]) for s in samples], dtype=torch.int64),
            "image": images_tensor([s["image"] for s in samples])}
