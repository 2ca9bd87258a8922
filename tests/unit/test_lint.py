"""`make lint` inside `make test`: ruff over the code and mypy over all of app/ (pyproject.toml [tool.mypy])."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def test_ruff_is_clean():
    out = subprocess.run([str(BIN / "ruff"), "check", "app", "tests", "bench"], cwd=ROOT, capture_output=True,
                         text=True, check=False)
    assert out.returncode == 0, out.stdout + out.stderr


def test_mypy_is_clean():
    out = subprocess.run([str(BIN / "mypy")], cwd=ROOT, capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stdout + out.stderr
