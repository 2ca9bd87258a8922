"""The layer rules (DESIGN.md "Layers", STYLE.md rule 1): import-linter's contracts in pyproject.toml hold, and
every module below ui/ imports with Qt blocked."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
APP = ROOT / "app"

LINT = "import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())"


def test_import_contracts_hold():
    # app/ first on the path: the contracts are about this checkout, not whatever `tunebench` is installed.
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(APP), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, "-c", LINT, "--config", str(ROOT / "pyproject.toml"), "--no-cache"],
                         cwd=ROOT, env=env, capture_output=True, text=True, check=False, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "0 broken" in out.stdout, out.stdout


CODE = """
import pkgutil, sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in ('PySide6', 'pyqtgraph', 'shiboken6'):
            raise ImportError('Qt is blocked below ui/: ' + name)
sys.meta_path.insert(0, Block())
import tunebench
names = [m.name for m in pkgutil.walk_packages(tunebench.__path__, 'tunebench.')
         if not m.name.startswith('tunebench.ui') and m.name != 'tunebench.__main__']
for name in names:
    __import__(name)
assert 'tunebench.store.repo' in sys.modules and 'tunebench.cli' in sys.modules, names
print(len(names), 'ok')
"""


def test_everything_below_ui_imports_without_qt():
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(APP), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, check=False, env=env,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().endswith("ok")
