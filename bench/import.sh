#!/bin/sh
# Import throughput next to the rate of just reading the source bytes, same
# run: bench/import.sh [MB] (default 200). Writes a WebDataset, an MDS
# dataset and a Hugging Face dataset (save_to_disk, and Hub Parquet) of about
# MB megabytes each with their own writers (needs the test venv,
# python/requirements-import.txt), then runs BenchmarkImportThroughput
# (importers/bench_test.go): for each dataset, from the local directory and
# from MinIO (~/.cache/weft/bin/minio), the source read through the same
# Source the import uses, then `import` into a fresh fs store. Prints MB/s,
# rows/s and import/read. DIR=... keeps the datasets there (reused if
# present).
set -eu
mb=${1:-200}
py=${PYTHON:-.venv/bin/python}
if [ -n "${DIR:-}" ]; then
	work=$DIR
	mkdir -p "$work"
else
	work=$(mktemp -d)
	trap 'rm -rf "$work"' EXIT
fi
[ -d "$work/wds" ] || "$py" - "$work" "$mb" <<'PY'
import os, random, sys, types, importlib.util
work, mb = sys.argv[1], int(sys.argv[2])
import webdataset as wds
n = mb * 1024 // 100  # samples of ~100 KiB
def img(i):
    # Random bytes, independent per sample, like JPEGs: no compressor
    # shrinks them (windows of one buffer would repeat across rows).
    return random.Random(i).randbytes(102400)
os.makedirs(f"{work}/wds")
with wds.ShardWriter(f"{work}/wds/shard-%06d.tar", maxcount=1000, verbose=0) as sink:
    for i in range(n):
        sink.write({"__key__": f"k{i:08d}", "jpg": img(i), "cls": i % 1000, "txt": f"caption {i}"})
spec = importlib.util.find_spec("streaming"); root = os.path.dirname(spec.origin)
for name, sub in [("streaming", ""), ("streaming.base", "base")]:
    m = types.ModuleType(name); m.__path__ = [os.path.join(root, sub)]; sys.modules[name] = m
from streaming.base.format.mds.writer import MDSWriter
with MDSWriter(out=f"{work}/mds", columns={"img": "bytes", "label": "int", "txt": "str"}, compression=None) as w:
    for i in range(n):
        w.write({"img": img(i), "label": i % 1000, "txt": f"caption {i}"})
import datasets
datasets.disable_progress_bars()
feats = datasets.Features({"image": datasets.Image(), "label": datasets.ClassLabel(num_classes=1000), "text": datasets.Value("string")})
def gen():
    for i in range(n):
        yield {"image": {"bytes": img(i), "path": None}, "label": i % 1000, "text": f"caption {i}"}
ds = datasets.Dataset.from_generator(gen, features=feats, cache_dir=f"{work}/.hfcache")
ds.save_to_disk(f"{work}/hf", max_shard_size="64MB")
os.makedirs(f"{work}/hf-parquet/data")
k = max(1, (mb + 63) // 64)
for s in range(k):
    ds.shard(k, s, contiguous=True).to_parquet(f"{work}/hf-parquet/data/train-{s:05d}-of-{k:05d}.parquet")
import shutil; shutil.rmtree(f"{work}/.hfcache")
print(f"samples: {n}")
PY
WEFT_IMPORT_BENCH=$work WEFT_TOOLS_BIN=${WEFT_TOOLS_BIN:-$HOME/.cache/weft/bin} \
	go test -run '^$' -bench '^BenchmarkImportThroughput$' -benchtime 1x -count 1 ./importers/ | grep -v '^\(goos\|goarch\|pkg\|cpu\|PASS\|ok\)'
