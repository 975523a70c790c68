#!/bin/sh
# LeRobot import: frames/s of video indexed (and rows/s, MB/s) next to the
# rate of just reading the source bytes, same run: bench/lerobot_import.sh
# [EPISODES] (default 600). Builds a v2.1 dataset of EPISODES episodes
# (the fixture's four repeated, each MP4 a distinct file; 2 cameras, 64x48,
# 30 frames an episode on average) with the test helper, then times `cat`
# of the files and `flightd import lerobot` into a fresh fs store.
set -eu
eps=${1:-600}
py=${PYTHON:-.venv/bin/python}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/flightd" ./cmd/flightd
PYTHONPATH=python/tests:python "$py" -c "
import sys; from pathlib import Path; from test_import_lerobot import _big_v21
_big_v21(Path(sys.argv[1]), int(sys.argv[2]))" "$work/src" "$eps"
frames=$("$py" -c "
import sys, av, pathlib
print(sum(av.open(str(p)).streams.video[0].frames for p in pathlib.Path(sys.argv[1]).rglob('*.mp4')))" "$work/src")
bytes=$(du -sb "$work/src" | cut -f1)
t0=$(date +%s.%N); find "$work/src" -type f -exec cat {} + >/dev/null; t1=$(date +%s.%N)
"$work/flightd" import lerobot "$work/src" --store "$work/store" --project p --table t --create 2>"$work/log" >/dev/null
t2=$(date +%s.%N)
rows=$(sed -n 's/^imported \([0-9]*\) rows.*/\1/p' "$work/log")
awk -v b="$bytes" -v f="$frames" -v r="$rows" -v t0="$t0" -v t1="$t1" -v t2="$t2" 'BEGIN {
  printf "lerobot v2.1, %d episodes: %.1f MB, %d video frames, %d rows\n", '"$eps"', b/1e6, f, r
  printf "  read (cat):  %.1f MB/s\n", b/1e6/(t1-t0)
  printf "  import (fs): %.2f s, %.1f MB/s, %.0f video frames/s indexed, %.0f rows/s\n", t2-t1, b/1e6/(t2-t1), f/(t2-t1), r/(t2-t1)
}'
