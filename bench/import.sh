#!/bin/sh
# Import throughput next to the rate of just reading the source bytes, same
# run: bench/import.sh [MB] (default 200). Writes a WebDataset and an MDS
# dataset of about MB megabytes with their own writers (needs the test venv,
# python/requirements-import.txt), then times `cat` of the files and
# `flightd import` into a fresh fs store. Prints MB/s and rows/s.
set -eu
mb=${1:-200}
py=${PYTHON:-.venv/bin/python}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/flightd" ./cmd/flightd
"$py" - "$work" "$mb" <<'PY'
import os, sys, types, importlib.util
work, mb = sys.argv[1], int(sys.argv[2])
import webdataset as wds
n = mb * 1024 // 100  # samples of ~100 KiB
blob = os.urandom(1 << 20)
with wds.ShardWriter(f"{work}/wds/shard-%06d.tar", maxcount=1000, verbose=0) if os.makedirs(f"{work}/wds") is None else None as sink:
    for i in range(n):
        o = (i * 7919) % (len(blob) - 102400)
        sink.write({"__key__": f"k{i:08d}", "jpg": blob[o:o + 102400], "cls": i % 1000, "txt": f"caption {i}"})
spec = importlib.util.find_spec("streaming"); root = os.path.dirname(spec.origin)
for name, sub in [("streaming", ""), ("streaming.base", "base")]:
    m = types.ModuleType(name); m.__path__ = [os.path.join(root, sub)]; sys.modules[name] = m
from streaming.base.format.mds.writer import MDSWriter
with MDSWriter(out=f"{work}/mds", columns={"img": "bytes", "label": "int", "txt": "str"}, compression=None) as w:
    for i in range(n):
        o = (i * 7919) % (len(blob) - 102400)
        w.write({"img": blob[o:o + 102400], "label": i % 1000, "txt": f"caption {i}"})
print(f"samples: {n}")
PY
for fmt in wds mds; do
	bytes=$(du -sb "$work/$fmt" | cut -f1)
	sync
	t0=$(date +%s.%N); cat "$work/$fmt"/* > /dev/null; t1=$(date +%s.%N)
	rows=$("$work/flightd" import "$fmt" "$work/$fmt" --store "$work/store-$fmt" --project b --table t --create --quiet 2>&1 >/dev/null | sed -n 's/^imported \([0-9]*\) rows.*/\1/p')
	t2=$(date +%s.%N)
	awk -v f="$fmt" -v b="$bytes" -v r="$rows" -v t0="$t0" -v t1="$t1" -v t2="$t2" 'BEGIN {
		read = b / 1e6 / (t1 - t0); imp = b / 1e6 / (t2 - t1)
		printf "%s fs: read %.0f MB/s; import %.0f MB/s, %.0f rows/s (%.0f%% of read), %d rows, %.0f MB\n", f, read, imp, r / (t2 - t1), 100 * imp / read, r, b / 1e6 }'
done
