"""Every test that uses a real server, sysbench or sshd through a fixture is marked integration, so that
`-m "not integration"` never starts one (the check itself is the conftest's; a test that escapes it fails
at its setup)."""

import subprocess
import sys

from tests.conftest import ROOT


def test_every_test_using_a_server_fixture_is_marked_integration():
    out = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                          "--check-markers", "tests"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, (out.stdout + out.stderr)[-3000:]
