"""Host slots across languages (issue 14): a Go program (slots/internal/
slotwriter) makes a ring in /dev/shm and writes a record batch of int64,
fixed_size_list<float32>[4] and binary columns into a slot; Python maps the
ring, reads the batch and checks the values and that the numeric buffers lie
inside the mapping (no copy). Then it sends the release message back.
"""

import base64
import json
import os
import stat
import subprocess

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc
import pytest

from conftest import REPO
from weft import _slots

SHM = "/dev/shm"


@pytest.fixture(scope="module")
def slotwriter(tmp_path_factory):
    if not os.path.isdir(SHM):
        if os.environ.get("CI") == "true":
            pytest.fail(f"{SHM} is missing: host slots cannot be tested")
        pytest.skip(f"SKIPPED: {SHM} is missing: host slots are not tested here")
    out = tmp_path_factory.mktemp("bin") / "slotwriter"
    subprocess.run(["go", "build", "-o", str(out), "./slots/internal/slotwriter"], cwd=REPO, check=True)
    return str(out)


class Writer:
    """A running slotwriter: its descriptor and schema, and its stdin for the release."""

    def __init__(self, binary, rows, slot_bytes=1 << 20):
        self.proc = subprocess.Popen([binary, "-rows", str(rows), "-slot-bytes", str(slot_bytes)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        line = self.proc.stdout.readline()
        if not line:
            self.proc.kill()
            raise AssertionError(f"slotwriter printed nothing: {self.proc.stderr.read().decode()}")
        first = json.loads(line)
        self.desc = _slots.SlotDescriptor.from_json(first["descriptor"])
        self.schema = ipc.read_schema(pa.py_buffer(base64.b64decode(first["schema"])))

    def release(self, msg: bytes):
        out, err = self.proc.communicate(msg + b"\n", timeout=60)
        self.proc.stdin = None
        assert self.proc.returncode == 0, err.decode()
        return json.loads(out)

    def kill(self):
        """End the writer: EOF on its stdin makes it close its ring (unlinking
        the file); SIGKILL only if it does not exit."""
        if self.proc.poll() is None:
            try:
                self.proc.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for f in (self.proc.stdout, self.proc.stderr):
            if f:
                f.close()
        assert not os.path.exists(self.desc.ring), "the writer left its ring behind"


def expected(rows):
    ids = [i * 3 - 7 for i in range(rows)]
    vecs = [[np.float32(i + j / 4) for j in range(4)] for i in range(rows)]
    blobs = [(f"row-{i}" * (i % 3 + 1)).encode() for i in range(rows)]
    return ids, vecs, blobs


def inside(buf, ring):
    return buf is None or buf.size == 0 or (ring.address <= buf.address and buf.address + buf.size <= ring.address + ring.size)


@pytest.mark.parametrize("rows", [1000, 1, 0])
def test_read_batch_zero_copy(slotwriter, rows):
    w = Writer(slotwriter, rows)
    try:
        d = w.desc
        assert d.ring.startswith(SHM + "/weft-ring-")
        assert d.slot == 1 and d.generation == 2  # the writer reused its slots first
        st = os.stat(d.ring)
        assert stat.S_IMODE(st.st_mode) == 0o600, oct(st.st_mode)
        assert st.st_uid == os.getuid()

        ring = _slots.Ring(d.ring)
        batch = ring.read_batch(d, w.schema)
        assert batch.schema == w.schema
        assert batch.num_rows == rows
        ids, vecs, blobs = expected(rows)
        assert batch.column("id").to_pylist() == ids
        assert batch.column("vec").to_pylist() == [[float(x) for x in v] for v in vecs]
        assert batch.column("blob").to_pylist() == blobs

        # Zero copy: the columns' buffers are slices of the mapping, inside
        # the descriptor's message.
        msg = ring.message(d)
        vec = batch.column("vec")
        numeric = [batch.column("id").buffers()[1], vec.values.buffers()[1]]
        for buf in numeric + batch.column("blob").buffers()[1:]:
            assert inside(buf, ring), "a column buffer was copied out of the mapping"
            if buf is not None and buf.size:
                assert msg.address <= buf.address < msg.address + msg.size
        if rows:
            # A torch/numpy view on the mapping, no copy either.
            arr = np.frombuffer(numeric[0], dtype=np.int64, count=rows)
            assert arr.ctypes.data == numeric[0].address
            assert arr.tolist() == ids
            # The body is 64-byte aligned in the mapping.
            assert numeric[0].address % 8 == 0
            assert (numeric[1].address - ring.address) % 8 == 0

        # Release up, as the client will over DoExchange.
        assert w.release(_slots.release_message(d)) == {"released": True, "held": 0}
        assert not os.path.exists(d.ring), "the server unlinks the ring at close"
        # The mapping outlives the unlink: the batch still reads.
        assert batch.column("id").to_pylist() == ids
        ring.close()
        assert batch.column("blob").to_pylist() == blobs, "batches keep the mapping alive past close"
    finally:
        w.kill()


def test_release_refused(slotwriter):
    w = Writer(slotwriter, 10)
    try:
        stale = _slots.SlotDescriptor(w.desc.ring, w.desc.slot, w.desc.generation - 1, w.desc.offset, w.desc.length)
        out = w.release(_slots.release_message(stale))
        assert "stale generation" in out["error"], out
    finally:
        w.kill()


def test_descriptor_checked(slotwriter, tmp_path):
    w = Writer(slotwriter, 10)
    try:
        d = w.desc
        with pytest.raises(ValueError):
            _slots.SlotDescriptor.from_json({**d.__dict__, "generation": 0})
        with pytest.raises(ValueError):
            _slots.SlotDescriptor.from_json({**d.__dict__, "extra": 1})
        with _slots.Ring(d.ring) as ring:
            past = _slots.SlotDescriptor(d.ring, d.slot, d.generation, ring.size - 8, 64)
            with pytest.raises(ValueError, match="past the end"):
                ring.read_batch(past, w.schema)
        rings = _slots.Rings()
        assert rings.read_batch(d.__dict__, w.schema).num_rows == 10
        rings.close()
    finally:
        w.kill()
