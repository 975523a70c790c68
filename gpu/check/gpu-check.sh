#!/usr/bin/env bash
# gpu-check.sh - `make gpu-check`: the GPU machine's check of issue 15, one script, under
# 5 min on one H200 (WEFT_CHECK_BUDGET, default 285 s, bounds the whole run; every stage has
# its own limit, so one hang cannot eat the session). Prints RESULT key=value lines
# (docs/gpu.md lists them) and copies them to $OUT/results.txt.
#
# Needs, from the CPU machine (`make gpu-check-prep`): gpu/check/data/ (carry that one path):
# bin/weftgpu.gz, bin/flightd.gz, bin/nvdec_probe, the clips with ffmpeg's per-frame hashes and
# the delivery stage's store (about 35 MB; with gpu-probe's 18 MB and the checkout's ~7 MB it
# stays under the device tool's 64 MiB). Optionally gpu-probe/ with its data/
# (../shared/tools/gpu-probe/README.md), run last with the time left. No Go, ffmpeg or CUDA
# toolkit is needed here: the driver is dlopened.
#
# Stages (limit in s): info 20, check 120, raw 70, deliver 170, probe (what is left).
#   check    bin/weftgpu check: caps, NV12/P016 exactness, RGB/resize/normalisation vs the Go
#            reference, CUDA IPC (CuPy and the loader's own code), decode-only throughput
#   raw      nvdec_probe bench on the same 1080p H.264 clip at 1/4/8/16 sessions: the raw NVDEC
#            rate with no Weft code in between (RESULT raw_h264_s<N>)
#   deliver  bin/weftgpu deliver: a real flightd serve on the store, 1/4/8/16 trainer processes
#            (python TrainLoader cuda-ipc, and Go trainers), rates next to raw, frame copies,
#            GPU memory per session
#   probe    gpu-probe/run.sh, when carried (from a copy: its weft_cuda_test stage is skipped)
#
# Dry run (CPU machine, cmd/weftgpu's TestCheckDryRun): WEFT_CHECK_FAKE=<the fake driver .so>
# runs every stage against gpu/testdata/fakedriver (flightd --gpu-fake-memory, trainers on
# /dev/shm slots). Other knobs: WEFT_CHECK_DATA (gpu/check/data), WEFT_CHECK_SECS (4, per
# throughput point), WEFT_CHECK_PYTHON (python3), WEFT_CHECK_SESSIONS (1,4,8,16),
# WEFT_CHECK_GO_SESSIONS (1,16), WEFT_CHECK_AV1_SESSIONS (8), WEFT_CHECK_NORM_SESSIONS (8).
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
OUT=${OUT:-/tmp/weft-gpu-check}
mkdir -p "$OUT"
LOG="$OUT/gpu-check-log.txt"
RES="$OUT/results.txt"
: > "$LOG"
: > "$RES"
T0=$(date +%s)
BUDGET=${WEFT_CHECK_BUDGET:-285}
DATA=${WEFT_CHECK_DATA:-gpu/check/data}
BIN=$DATA/bin
FAKE=${WEFT_CHECK_FAKE:-}
SECS=${WEFT_CHECK_SECS:-4}
PY=${WEFT_CHECK_PYTHON-python3}
SESSIONS=${WEFT_CHECK_SESSIONS:-1,4,8,16}
# The binaries are unpacked here: the checkout's own directory first (a /tmp mounted noexec
# would make every stage fail), /tmp if the checkout is read-only.
WORK=$(mktemp -d "$ROOT/gpu/check/.work.XXXXXX" 2>/dev/null || mktemp -d /tmp/weft-gpu-check.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
WEFTGPU=$WORK/weftgpu   # unpacked from $BIN/weftgpu.gz below

say() { echo "$*" | tee -a "$LOG"; }
# result lines go to the log and to results.txt as they come
collect() { tee -a "$LOG" | grep --line-buffered -a '^RESULT ' >> "$RES"; }
left() { echo $(( BUDGET - ($(date +%s) - T0) )); }
# stage NAME LIMIT CMD...: CMD under timeout (LIMIT, or the time left if less), its output
# through collect; says how it ended
stage() {
    local name=$1 limit=$2 t0 rc st=ok l
    shift 2
    l=$(left)
    [ "$l" -lt "$limit" ] && limit=$l
    if [ "$limit" -lt 5 ]; then
        echo "RESULT stage_$name=skipped (no time left of ${BUDGET}s)" | collect
        return
    fi
    t0=$(date +%s)
    say "=================== stage $name (limit ${limit}s) $(date -u +%H:%M:%S)"
    timeout -k 5 "$limit" "$@" 2>&1 | collect
    rc=${PIPESTATUS[0]}
    [ "$rc" -ne 0 ] && st="rc$rc"
    { [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; } && st=timeout
    echo "RESULT stage_$name=$st secs=$(( $(date +%s) - t0 ))" | collect
}
# dmon NAME: NVDEC/SM utilisation while a stage runs (stop with dmon_end)
DMON_PID=""
dmon() {
    DMON_FILE="$OUT/dmon-$1.txt"
    DMON_PID=""
    command -v nvidia-smi >/dev/null 2>&1 || return 0
    nvidia-smi dmon -s u -d 1 > "$DMON_FILE" 2>&1 &
    DMON_PID=$!
}
dmon_end() {
    [ -n "$DMON_PID" ] || return 0
    kill "$DMON_PID" 2>/dev/null
    wait "$DMON_PID" 2>/dev/null
    # columns of `dmon -s u`: gpu sm mem enc dec [jpg ofa]
    awk -v name="$1" '/^#/ && /sm/ { for (i = 2; i <= NF; i++) { if ($i == "sm") s = i - 1; if ($i == "dec") d = i - 1 } next }
        !/^#/ && NF >= 5 && s && d { n++; sm += $s; dec += $d; if ($s + 0 > msm) msm = $s + 0; if ($d + 0 > mdec) mdec = $d + 0 }
        END { printf "RESULT dmon_%s=samples:%d sm_pct_avg:%.0f sm_pct_max:%d nvdec_pct_avg:%.0f nvdec_pct_max:%d\n", name, n, n ? sm / n : 0, msm, n ? dec / n : 0, mdec }' \
        "$DMON_FILE" | collect
    [ "$1" = deliver ] || rm -f "$DMON_FILE"
}

st_info() {
    echo "RESULT gpu_check=v2 start=$(date -u +%FT%TZ) host=$(uname -n) budget_s=$BUDGET secs_per_point=$SECS fake=$([ -n "$FAKE" ] && echo yes || echo no)"
    echo "RESULT glibc=$(ldd --version 2>/dev/null | head -1 | grep -o '[0-9.]*$') (the binaries need >= 2.34)"
    if command -v nvidia-smi >/dev/null 2>&1; then
        echo "RESULT nvidia_smi=$(nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used --format=csv,noheader | tr ' ' '_')"
    else
        echo "RESULT nvidia_smi=absent"
    fi
    if [ -n "$PY" ]; then
        echo "RESULT python=$(timeout 15 "$PY" -c 'import sys; v=[sys.version.split()[0]]
for m in ("torch", "cupy", "pyarrow", "numpy"):
    try:
        v.append(m + "=" + __import__(m).__version__)
    except Exception as e:
        v.append(m + "=absent")
print(" ".join(v))' 2>&1 | tail -1)"
    fi
    cat "$DATA/manifest.json" 2>/dev/null | grep -o '"\(version\|made\|small\)": *[^,]*' | tr -d ' "' | tr '\n' ' ' | sed 's/^/RESULT data=/; s/$/\n/'
}

st_raw() {
    local n rc clip="$WORK/h264_1080p_bf.h264"
    # the bench clip as Annex B (SPS/PPS before every IDR, so that it loops)
    if [ ! -x "$BIN/nvdec_probe" ] || ! "$WEFTGPU" annexb "$DATA/h264_1080p_bf.mp4" "$clip"; then
        echo "RESULT raw=absent (no $BIN/nvdec_probe or no $DATA/h264_1080p_bf.mp4: make gpu-check-prep)"
        return 0
    fi
    for n in ${SESSIONS//,/ }; do
        timeout -k 2 $((SECS + 20)) "$BIN/nvdec_probe" bench "$clip" h264 "$n" "$SECS" > "$WORK/raw.txt" 2>&1
        rc=$?
        grep -a '^RESULT ' "$WORK/raw.txt" | sed 's/^RESULT bench_/RESULT raw_/; t; s/^RESULT mem_/RESULT raw_mem_/; t; s/^RESULT /RESULT raw_/'
        if [ "$rc" -ne 0 ]; then
            echo "RESULT raw_h264_s${n}_rc=$rc $(grep -av '^RESULT ' "$WORK/raw.txt" | tail -2 | tr '\n' ' ')"
            # 2: no libcuda, 3: no libnvcuvid: no other count can do better
            { [ "$rc" -eq 2 ] || [ "$rc" -eq 3 ]; } && return 1
        fi
    done
}

# the driver may live outside the loader's default path (the probe found /usr/local/nvidia)
for d in /usr/local/nvidia/lib64 /usr/local/nvidia/lib /usr/lib/x86_64-linux-gnu; do
    [ -d "$d" ] && export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$d"
done
DRIVER=()
DELIVER_FAKE=()
if [ -n "$FAKE" ]; then
    # nvdec_probe dlopens libcuda.so.1 and libnvcuvid.so.1 by name: the fake under both
    mkdir -p "$WORK/fakelib"
    ln -sf "$(realpath "$FAKE")" "$WORK/fakelib/libcuda.so.1"
    ln -sf "$(realpath "$FAKE")" "$WORK/fakelib/libnvcuvid.so.1"
    export LD_LIBRARY_PATH="$WORK/fakelib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    DRIVER=(--cuda-lib "$FAKE" --cuvid-lib "$FAKE")
    DELIVER_FAKE=(--fake-memory)
fi

export DATA BIN FAKE SECS PY SESSIONS BUDGET WORK WEFTGPU
export -f st_info st_raw
stage info 20 bash -c st_info
# the binaries travel gzipped (the carry limit): unpacked here
for b in weftgpu flightd; do
    if [ -f "$BIN/$b.gz" ]; then
        gunzip -c "$BIN/$b.gz" > "$WORK/$b" && chmod +x "$WORK/$b"
    elif [ -x "$BIN/$b" ]; then
        cp "$BIN/$b" "$WORK/$b"
    fi
done
if [ ! -x "$WEFTGPU" ] || [ ! -f "$DATA/manifest.json" ]; then
    echo "RESULT weft=absent: run make gpu-check-prep on the CPU machine and carry gpu/check/data" | collect
    exit 1
fi

dmon check
stage check 120 "$WEFTGPU" check ${DRIVER[@]+"${DRIVER[@]}"} --secs "$SECS" --sessions "$SESSIONS" \
    --av1-sessions "${WEFT_CHECK_AV1_SESSIONS:-1,8}" --norm-sessions "${WEFT_CHECK_NORM_SESSIONS:-8}" \
    --python "${WEFT_CHECK_IPC_PYTHON-$PY}" --scripts gpu/check "$DATA"
dmon_end check

dmon raw
stage raw 70 bash -c st_raw
dmon_end raw

if [ -x "$WORK/flightd" ]; then
    dmon deliver
    lim=170
    [ "$(left)" -lt "$lim" ] && lim=$(left)
    stage deliver "$lim" "$WEFTGPU" deliver ${DRIVER[@]+"${DRIVER[@]}"} ${DELIVER_FAKE[@]+"${DELIVER_FAKE[@]}"} --flightd "$WORK/flightd" \
        --python "$PY" --scripts gpu/check --secs "$SECS" --sessions "$SESSIONS" \
        --go-sessions "${WEFT_CHECK_GO_SESSIONS:-1,16}" --av1-sessions "${WEFT_CHECK_AV1_SESSIONS_DELIVER:-8}" \
        --norm-sessions "${WEFT_CHECK_NORM_SESSIONS:-8}" --raw "$RES" --budget "$(( lim > 16 ? lim - 8 : lim / 2 ))s" "$DATA"
    dmon_end deliver
else
    echo "RESULT deliver=absent (no $BIN/flightd.gz: make gpu-check-prep)" | collect
fi

if [ -z "$FAKE" ] && [ -f gpu-probe/run.sh ] && [ -d gpu-probe/data ]; then
    # from a copy whose root has no bin/flightd, so its weft_cuda_test stage (up to 125 s) is
    # skipped: the deliver stage ran the real loader already
    mkdir -p "$WORK/probe" && cp -r gpu-probe "$WORK/probe/"
    l=$(( $(left) - 3 ))
    if [ "$l" -ge 30 ]; then
        t0=$(date +%s)
        say "=================== stage probe (limit ${l}s) $(date -u +%H:%M:%S)"
        BENCH_SECS=${PROBE_BENCH_SECS:-3} OUT="$OUT/probe" timeout -k 3 "$l" bash "$WORK/probe/gpu-probe/run.sh" >> "$LOG" 2>&1
        echo "RESULT stage_probe=rc$? secs=$(( $(date +%s) - t0 ))" | collect
        [ -f "$OUT/probe/results.txt" ] && sed 's/^RESULT /RESULT probe_/' "$OUT/probe/results.txt" | collect
        rm -f "$OUT/probe/dmon.txt" "$OUT/probe/dmon_all.txt"   # $OUT brings back at most 8 files
    else
        echo "RESULT stage_probe=skipped (${l}s left)" | collect
    fi
else
    echo "RESULT probe=absent (copy ../shared/tools/gpu-probe to gpu-probe/ and make its data to run it too)" | collect
fi

# the acceptance, from the lines above
{
    ex=$(grep -a '^RESULT exact_' "$RES" | grep -v '_hwcrop' | grep -v '^RESULT probe_')
    n=$(echo "$ex" | grep -c 'exact_'); ok=$(echo "$ex" | awk -F'[=/ ]' '/exact_/ && $3 == $4' | wc -l)
    echo "RESULT acc_exact=$ok/$n clips bit-exact"
    r=$(grep -a '^RESULT rgb_' "$RES"); n=$(echo "$r" | grep -c 'rgb_'); ok=$(echo "$r" | grep -c '=ok ')
    echo "RESULT acc_rgb=$ok/$n rgb/resize/norm lines ok"
    echo "RESULT acc_ipc=$(grep -ao '^RESULT ipc=[a-z]*' "$RES" | cut -d= -f2),loader:$(grep -ao '^RESULT loader_ipc=[a-z]*' "$RES" | cut -d= -f2)"
    c=$(grep -a '^RESULT \(weft\|deliver\)_' "$RES")
    echo "RESULT acc_frame_copy_bytes=lines:$(echo "$c" | grep -c ' frame_copy_bytes=') nonzero:$(echo "$c" | grep -c ' frame_copy_bytes=[1-9]') (weft_ and deliver_ lines; must be 0 nonzero)"
    g=$(grep -a '^RESULT deliver_py_h264_s[0-9]*=' "$RES" | sed 's/^RESULT deliver_py_h264_\(s[0-9]*\)=.*decoded_vs_raw=\([0-9.]*\).*goal80=\([a-z]*\).*/\1:\2:\3/' | tr '\n' ',')
    echo "RESULT acc_goal80=${g:-none} (decoded/s in flightd over raw NVDEC fps, same clip and sessions)"
    echo "RESULT gpu_check_secs=$(( $(date +%s) - T0 ))"
} | collect
echo
echo "=================== results ($RES)"
cat "$RES"
