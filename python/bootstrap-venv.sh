#!/bin/sh
# Create the Python test venv: bootstrap-venv.sh VENV REQUIREMENTS.
# Uses $PYTHON (default Debian's /usr/bin/python3) with --system-site-packages
# so Debian's python packages (python3-torch, later) stay importable. If that
# python lacks the venv module, installs python3-venv with apt-get (as root).
set -eu
venv=$1
reqs=$2
python=${PYTHON:-/usr/bin/python3}
if ! "$python" -c 'import venv, ensurepip' 2>/dev/null; then
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
		echo "bootstrap-venv: $python has no venv/ensurepip; installing python3-venv"
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv
	else
		echo "bootstrap-venv: $python has no venv module; install python3-venv (Debian) or set PYTHON=" >&2
		exit 1
	fi
fi
"$python" -m venv --system-site-packages "$venv"
"$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$reqs"
