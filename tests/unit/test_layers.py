"""Nothing below ui/ may import Qt (STYLE.md rule 1): import the core with PySide6 blocked."""

import subprocess
import sys

CODE = """
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in ('PySide6', 'pyqtgraph', 'shiboken6'):
            raise ImportError('Qt is blocked below ui/: ' + name)
sys.meta_path.insert(0, Block())
import tunebench.cli, tunebench.run.experiment, tunebench.core.stats, tunebench.load.builtin
import tunebench.load.sysbench, tunebench.load.prepare, tunebench.hosts.sandbox, tunebench.store.repo
import tunebench.mysql.connect, tunebench.mysql.probes, tunebench.mysql.knobs, tunebench.run.monitor
import tunebench.run.tuning, tunebench.run.child, tunebench.core.sweep, tunebench.core.results, tunebench.store.export
import tunebench.run.tasks
print('ok')
"""


def test_core_imports_without_qt():
    out = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"
