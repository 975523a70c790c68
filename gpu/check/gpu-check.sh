#!/usr/bin/env bash
# gpu-check.sh - `make gpu-check`: the GPU machine's check of issue 15, one script, < 5 min on
# one H200. Prints RESULT key=value lines (docs/gpu.md lists them) and copies them to
# $OUT/results.txt. Needs, from the CPU machine (`make gpu-check-prep`): bin/weftgpu and
# gpu/check/data/ (clips + ffmpeg's hashes); optionally gpu-probe/ with its data/ (see
# ../shared/tools/gpu-probe/README.md), which runs first for the raw NVDEC rate with no Weft
# code in between. No Go, ffmpeg or CUDA toolkit is needed here: the driver is dlopened.
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
OUT=${OUT:-/tmp/weft-gpu-check}
mkdir -p "$OUT"
LOG="$OUT/gpu-check-log.txt"
: > "$LOG"
T0=$(date +%s)
# the driver may live outside the loader's default path (the probe found /usr/local/nvidia)
for d in /usr/local/nvidia/lib64 /usr/local/nvidia/lib /usr/lib/x86_64-linux-gnu; do
  [ -d "$d" ] && export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$d"
done
echo "RESULT gpu_check_start=$(date -u +%FT%TZ) host=$(hostname)" | tee -a "$LOG"
if [ -f gpu-probe/run.sh ] && [ -d gpu-probe/data ]; then
  echo "== gpu-probe (raw NVDEC, no Weft code)" | tee -a "$LOG"
  BENCH_SECS=${BENCH_SECS:-5} OUT="$OUT/probe" timeout -k 5 200 bash gpu-probe/run.sh >>"$LOG" 2>&1
  echo "RESULT probe_rc=$?" | tee -a "$LOG"
  [ -f "$OUT/probe/results.txt" ] && sed 's/^RESULT /RESULT probe_/' "$OUT/probe/results.txt" | grep -E 'probe_(nvcuvid|cuda|caps|exact|bench|mem|ipc)' | tee -a "$LOG"
else
  echo "RESULT probe=absent (copy ../shared/tools/gpu-probe to gpu-probe/ and make its data to get the raw NVDEC rate)" | tee -a "$LOG"
fi
if [ ! -x bin/weftgpu ] || [ ! -f gpu/check/data/manifest.json ]; then
  echo "RESULT weft=absent: run make gpu-check-prep on the CPU machine and carry bin and gpu/check/data" | tee -a "$LOG"
  exit 1
fi
PY=python3
command -v "$PY" >/dev/null || PY=
echo "== weftgpu check" | tee -a "$LOG"
timeout -k 5 ${WEFT_CHECK_TIMEOUT:-150} bin/weftgpu check --secs "${WEFT_CHECK_SECS:-5}" --python "$PY" gpu/check/data 2>>"$LOG" | tee -a "$LOG"
echo "RESULT weft_rc=${PIPESTATUS[0]}" | tee -a "$LOG"
echo "RESULT gpu_check_secs=$(( $(date +%s) - T0 ))" | tee -a "$LOG"
grep '^RESULT ' "$LOG" > "$OUT/results.txt"
