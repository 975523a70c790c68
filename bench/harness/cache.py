"""Keys of cached artifacts (bench/work): an artifact is reused only while
its key is unchanged, and a key names the inputs *and the producer*: the
workload spec, the source of the code that wrote it, the versions of the
libraries it used, and, for the Weft tables, the sha256 of the bin/flightd
that ingested them (a changed server — e.g. a new Parquet page size —
re-ingests). Downstream keys include the upstream key (MDS shards and Weft
tables include the Parquet data's key)."""

import hashlib
import json
from importlib import metadata
from pathlib import Path

_memo = {}


def file_sha256(path):
    """sha256 of a file's bytes (memoized by path, size and mtime)."""
    p = Path(path)
    st = p.stat()
    k = (str(p.resolve()), st.st_size, st.st_mtime_ns)
    if k not in _memo:
        h = hashlib.sha256()
        with open(p, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
        _memo[k] = h.hexdigest()
    return _memo[k]


def sources_sha256(paths):
    """One sha256 over some source files (path names relative, contents)."""
    h = hashlib.sha256()
    for p in sorted(Path(p) for p in paths):
        h.update(p.name.encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()


def version(dist):
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def digest(key):
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()


def fresh(stamp, key):
    """True when ``stamp`` holds exactly ``key``."""
    stamp = Path(stamp)
    try:
        return json.loads(stamp.read_text()) == json.loads(json.dumps(key))
    except (OSError, ValueError):
        return False


def record(stamp, key):
    Path(stamp).parent.mkdir(parents=True, exist_ok=True)
    Path(stamp).write_text(json.dumps(key, indent=1, sort_keys=True))


def changed(stamp, key):
    """What differs between the recorded key and ``key`` (for the log)."""
    try:
        old = json.loads(Path(stamp).read_text())
    except (OSError, ValueError):
        return "no stamp"
    new = json.loads(json.dumps(key))
    if not isinstance(old, dict) or set(old) != set(new):
        return "stamp format"
    return ", ".join(k for k in sorted(new) if old.get(k) != new[k]) or "nothing"
