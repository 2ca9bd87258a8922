"""Shared fixtures. Every test gets a private TUNEBENCH_HOME; integration tests share one real sandbox."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

# Before anything imports tunebench.paths: never touch the user's real data dir or sandbox.
_HOME = Path(tempfile.mkdtemp(prefix="tb-test-"))
os.environ["TUNEBENCH_HOME"] = str(_HOME)
os.environ.pop("MYSQL_PWD", None)

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def sandbox():
    from tunebench.hosts.sandbox import SandboxServer

    sb = SandboxServer(_HOME / "sandbox")
    sb.start()
    yield sb
    sb.stop()


@pytest.fixture(scope="session")
def sandbox_params(sandbox):
    from tunebench.mysql.target import conn_params

    return conn_params(sandbox.target(), "socket", database="tunebench")


def run_cli(*args: str, env: dict[str, str] | None = None, timeout: float = 180) -> subprocess.CompletedProcess:
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-m", "tunebench", *args], capture_output=True, text=True,
                          env=full_env, timeout=timeout, cwd=ROOT)


@pytest.fixture
def cli():
    return run_cli
