"""Helpers of the import tests: run `flightd import`, serve a store, put a
fixture directory into MinIO, read an import's commit record."""
import json
import os
import subprocess
from pathlib import Path

import pyarrow.fs as pafs

from conftest import Flightd, SMALL


def cli_import(flightd_bin, store, fmt, src, table="t", project="p", extra=(), env_extra=None, check=True):
    env = dict(store.env)
    env.update(env_extra or {})
    cmd = [flightd_bin, "import", fmt, src, "--store", store.url, *store.args, "--project", project,
           "--table", table, "--create", *extra]
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    if check:
        assert r.returncode == 0, f"{cmd}: rc={r.returncode}\n{r.stderr}"
    return r


def serve(flightd_bin, store, tmp_path, *args):
    d = Flightd(flightd_bin, store, tmp_path, [*SMALL, *args])
    d.start()
    return d


def upload_dir(minio, local: Path) -> str:
    """Copies a directory into a new bucket; returns s3://BUCKET."""
    bucket = minio.new_bucket()
    for p in sorted(local.rglob("*")):
        if p.is_file():
            with minio.fs.open_output_stream(f"{bucket}/{p.relative_to(local).as_posix()}") as out:
                out.write(p.read_bytes())
    return f"s3://{bucket}"


def import_record(commit_message: str) -> dict:
    for line in commit_message.splitlines():
        if line.startswith("weft-import: "):
            return json.loads(line[len("weft-import: "):])
    raise AssertionError(f"no import record in {commit_message!r}")


def heads(store_snapshot_before, store_snapshot_after):
    """The refs that changed between two snapshots."""
    refs = lambda s: {k: v for k, v in s.items() if "/refs/heads/" in k}
    return refs(store_snapshot_before) != refs(store_snapshot_after)
