#!/usr/bin/env bash
# setup-lerobot.sh: the LeRobot side of bench/video lives in its own venv,
# outside the repository and never in CI: lerobot 0.4.4 needs PyPI torch
# (>= 2.2), while the project's venv has Debian's torch 1.13.
#
#   bench/video/setup-lerobot.sh            # creates or checks the venv, prints its python
#   LEROBOT_VENV=/elsewhere bench/video/setup-lerobot.sh
#
# The set of packages is pinned in lerobot-requirements.txt (what pip
# resolved for `lerobot` on CPython 3.11) and installed with --no-deps, so a
# second machine gets exactly the same versions. It is idempotent: a venv
# whose stamp matches the requirements file is left alone (~1 s).
#
# Size: ~8.3 GB, of which ~5 GB are the nvidia-* CUDA wheels. PyPI has no
# CPU-only torch for Linux (that wheel lives on PyTorch's own index, which
# this machine cannot reach), and PyPI's torch does not import without them
# ("ValueError: libcublasLt.so.*[0-9] not found"), so they are installed.
# torchcodec (LeRobot's default video backend) uses the system FFmpeg
# libraries (apt-get install ffmpeg: libavcodec59 on Debian 12).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="${LEROBOT_VENV:-$HOME/.cache/weft/lerobot-venv}"
req="$here/lerobot-requirements.txt"
python="${PYTHON:-python3.11}"
stamp="$venv/.weft-requirements.sha256"
want="$(sha256sum "$req" | cut -d' ' -f1)"

if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]] && "$venv/bin/python" -c "import lerobot, torchcodec" 2>/dev/null; then
    echo "$venv/bin/python"
    exit 0
fi

command -v "$python" >/dev/null || { echo "setup-lerobot.sh: $python not found; set PYTHON=/path/to/python3.11 (lerobot 0.4.4 needs CPython >= 3.10)" >&2; exit 1; }
command -v ffmpeg >/dev/null || { echo "setup-lerobot.sh: ffmpeg not found; apt-get install ffmpeg (torchcodec loads its libraries)" >&2; exit 1; }

mkdir -p "$(dirname "$venv")"
[[ -x "$venv/bin/python" ]] || "$python" -m venv "$venv"
"$venv/bin/pip" install -q -U pip >&2
# evdev is an sdist (gcc and kernel headers); everything else is a wheel.
"$venv/bin/pip" install -q --no-deps -r "$req" >&2
"$venv/bin/python" - >&2 <<'EOF'
import av, lerobot, torch, torchcodec
from lerobot.datasets.lerobot_dataset import CODEBASE_VERSION
from lerobot.datasets.video_utils import get_safe_default_codec
print(f"lerobot {lerobot.__version__} (dataset {CODEBASE_VERSION}), torch {torch.__version__}, "
      f"torchcodec {torchcodec.__version__}, av {av.__version__}, default video backend {get_safe_default_codec()}")
EOF
echo "$want" > "$stamp"
echo "$venv/bin/python"
