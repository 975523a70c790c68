#!/bin/sh
# Create the Python test venv: bootstrap-venv.sh VENV REQUIREMENTS.
# Uses $PYTHON (default Debian's /usr/bin/python3) with --system-site-packages
# so Debian's python3-torch (CPU, 1.13) and its NumPy 1.24 are the torch and
# NumPy the venv sees: the PyPI torch wheel pulls gigabytes of CUDA packages.
# As root with apt-get, installs python3-venv and python3-torch if missing.
# Then installs the pinned test requirements and the weft client (editable).
set -eu
venv=$1
reqs=$2
python=${PYTHON:-/usr/bin/python3}
here=$(dirname "$0")

apt_install() {
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
		echo "bootstrap-venv: installing $* with apt-get"
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
	else
		return 1
	fi
}

if ! "$python" -c 'import venv, ensurepip' 2>/dev/null; then
	apt_install python3-venv || {
		echo "bootstrap-venv: $python has no venv module; install python3-venv (Debian) or set PYTHON=" >&2
		exit 1
	}
fi
# torch before pip: otherwise pip would put a NumPy 2 (from pandas' and
# weft's requirements) in front of the NumPy that Debian's torch needs.
if ! "$python" -c 'import torch' 2>/dev/null; then
	apt_install python3-torch || {
		echo "bootstrap-venv: $python cannot import torch, which the client tests need;" >&2
		echo "  install python3-torch (Debian, as root) or torch >= 1.13 for $python" >&2
		exit 1
	}
fi
"$python" -m venv --system-site-packages "$venv"
"$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$reqs"
# The dataset formats' writers, for the import tests, without their
# heavyweight declared dependencies (see the file).
if [ -f "$here/requirements-import.txt" ]; then
	"$venv/bin/python" -m pip install -q --disable-pip-version-check --no-deps -r "$here/requirements-import.txt"
fi
"$venv/bin/python" -m pip install -q --disable-pip-version-check --no-build-isolation -e "$here"
"$venv/bin/python" -c 'import numpy, pyarrow, torch, weft; torch.from_numpy(numpy.zeros(1)); print("bootstrap-venv: torch", torch.__version__, "numpy", numpy.__version__, "pyarrow", pyarrow.__version__)'
