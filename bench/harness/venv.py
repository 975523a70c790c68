"""Create bench/.venv and install the pinned benchmark requirements.

Runs with any python3; the venv is made from Debian's /usr/bin/python3 with
--system-site-packages so that python3-torch (1.13) and python3-numpy are
the torch and numpy every loader uses. pip never installs torch or any
nvidia package here: mosaicml-streaming and litdata are installed with --no-deps and the
result is checked.
"""

import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
VENV = REPO / "bench" / ".venv"
BASE_PYTHON = os.environ.get("WEFT_BENCH_PYTHON", "/usr/bin/python3")
STAMP = VENV / ".installed"
FORBIDDEN = ("torch", "torchvision", "triton", "nvidia-")


def log(msg):
    print(f"[venv] {msg}", flush=True)


def run(cmd, **kw):
    log("$ " + " ".join(str(c) for c in cmd))
    subprocess.run([str(c) for c in cmd], check=True, **kw)


def python():
    return VENV / "bin" / "python"


def inputs_key():
    parts = [p.read_text() for p in (HERE / "requirements.txt", HERE / "constraints.txt", HERE / "streaming.txt")]
    # The weft client: reinstalled whenever its sources change.
    client = REPO / "python"
    for p in sorted(client.glob("pyproject.toml")) + sorted((client / "weft").glob("*.py")):
        parts.append(f"{p}:{p.stat().st_mtime_ns}")
    return "\n".join(parts)


DEBIAN = ["python3-venv", "python3-torch", "python3-torchvision", "python3-numpy"]


def base_packages():
    """Debian's torch, torchvision (mosaicml-streaming imports it) and numpy,
    installed with apt-get when missing and we are root."""
    probe = [BASE_PYTHON, "-c", "import venv, ensurepip, torch, torchvision, numpy; "
             "print(torch.__version__, torchvision.__version__, numpy.__version__)"]
    check = subprocess.run(probe, capture_output=True, text=True)
    if check.returncode != 0 and os.geteuid() == 0 and Path("/usr/bin/apt-get").exists():
        log(f"{BASE_PYTHON} lacks torch/torchvision/venv; installing {' '.join(DEBIAN)} with apt-get")
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        run(["apt-get", "update", "-qq"], env=env)
        run(["apt-get", "install", "-y", "-qq", "--no-install-recommends", *DEBIAN], env=env)
        check = subprocess.run(probe, capture_output=True, text=True)
    if check.returncode != 0:
        sys.exit(f"[venv] {BASE_PYTHON} cannot import torch, torchvision and numpy; install Debian's "
                 f"{' '.join(DEBIAN)} or set WEFT_BENCH_PYTHON:\n{check.stderr}")
    log(f"{BASE_PYTHON}: torch, torchvision, numpy {check.stdout.strip()}")


def up_to_date():
    return STAMP.exists() and STAMP.read_text() == inputs_key()


def ensure(require_weft=True):
    """Make the venv if needed; returns the path of its python."""
    key = inputs_key()
    if STAMP.exists() and STAMP.read_text() == key:
        return python()
    if not python().exists():
        base_packages()
        run([BASE_PYTHON, "-m", "venv", "--system-site-packages", VENV])
    pip = [python(), "-m", "pip", "install", "--disable-pip-version-check", "--progress-bar", "off"]
    run(pip + ["-c", HERE / "constraints.txt", "-r", HERE / "requirements.txt"])
    run(pip + ["--no-deps", "-r", HERE / "streaming.txt"])
    client = REPO / "python"
    if (client / "pyproject.toml").exists():
        # The client's own dependencies (pyarrow, numpy) are pinned above.
        run(pip + ["--no-deps", "--force-reinstall", client])
    elif require_weft:
        sys.exit("[venv] python/pyproject.toml is missing: the weft client cannot be installed")
    else:
        log("python/pyproject.toml missing: the weft client is not installed (its rows will record the error)")
    verify()
    STAMP.write_text(key)
    return python()


def verify():
    """No torch or CUDA package came from PyPI; the imports every loader needs work."""
    [site] = (VENV / "lib").glob("python3.*/site-packages")
    out = subprocess.run([python(), "-m", "pip", "list", "--format", "freeze", "--path", site],
                         capture_output=True, text=True, check=True)
    bad = [line for line in out.stdout.splitlines() if line.lower().startswith(FORBIDDEN)]
    if bad:
        sys.exit(f"[venv] pip installed {bad} into {VENV}; the benchmark must use Debian's torch")
    code = ("import torch, torchvision, numpy, pyarrow, matplotlib, psutil, datasets, streaming, lance, litdata; "
            "print('torch', torch.__version__, torch.__file__); print('numpy', numpy.__version__); "
            "print('pyarrow', pyarrow.__version__); print('datasets', datasets.__version__); "
            "print('streaming', streaming.__version__); print('pylance', lance.__version__); "
            "print('litdata', litdata.__version__)")
    run([python(), "-c", code])


if __name__ == "__main__":
    print(ensure(require_weft="--allow-missing-weft" not in sys.argv))
