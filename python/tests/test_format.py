"""docs/format.md is precise enough to reimplement: an independent Python
implementation of the content-id encoding (docs/verify_ids.py) reproduces the
ids of the golden objects that the Go code pins in versions/testdata (commits,
manifests) and mix/testdata (run records)."""
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_ids_recomputed_from_the_format_doc():
    out = subprocess.run([sys.executable, str(ROOT / "docs" / "verify_ids.py"), str(ROOT / "versions" / "testdata"),
                          str(ROOT / "mix" / "testdata")],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.count(" ok") == 5, out.stdout
    assert "run " in out.stdout, out.stdout
