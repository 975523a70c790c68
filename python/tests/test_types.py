"""The weft package is typed (py.typed): mypy finds no errors in it."""

import subprocess
import sys
from pathlib import Path

PKG = Path(__file__).resolve().parents[1] / "weft"


def test_mypy_clean():
    run = subprocess.run([sys.executable, "-m", "mypy", "--ignore-missing-imports", "--no-error-summary", str(PKG)],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
