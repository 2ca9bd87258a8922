"""The sandbox asks the server binary whether it takes a my.cnf's options (`--help --verbose`) before a restart;
what that says of the datadir's own tables is not a refusal of the options (no server here: a stand-in binary)."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from tunebench.core.errors import SandboxError
from tunebench.hosts.sandbox import SandboxServer
from tunebench.hosts.server_binary import ServerBinary


def _binary(tmp_path: Path, stderr: str, rc: int = 0) -> ServerBinary:
    path = tmp_path / "usr" / "sbin" / "mariadbd"
    path.parent.mkdir(parents=True)
    path.write_text(f"#!/bin/sh\ncat >&2 <<'EOF'\n{stderr}\nEOF\nexit {rc}\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return ServerBinary(str(path), "mariadb", "10.11.14", name="mariadb-10.11.14")


def test_a_table_marked_crashed_is_not_an_option_refused(tmp_path):
    """Seen under load: mysql.plugin, open in the running server (or left unclosed by a kill -9), read as crashed
    by `--help --verbose`, and a sweep's static-knob restart was refused as "the server refuses these options"."""
    server = _binary(tmp_path, "2026-11-28  1:12:13 0 [ERROR] mariadbd: Got error '145 \"Table was marked as crashed "
                               "and should be repaired\"' for './mysql/plugin'\n2026-11-28  1:12:13 0 [ERROR] "
                               "mariadbd: Table './mysql/plugin' is marked as crashed and should be repaired")
    SandboxServer(tmp_path / "sb").check_options(server, {"innodb_doublewrite": "OFF"})


def test_an_option_the_server_refuses_is_still_refused(tmp_path):
    server = _binary(tmp_path, "2026-11-28  1:12:13 0 [ERROR] mariadbd: unknown variable 'innodb_nonsense=1'", rc=7)
    with pytest.raises(SandboxError, match=r"refuses these options.*unknown variable 'innodb_nonsense=1'"):
        SandboxServer(tmp_path / "sb").check_options(server, {"innodb_nonsense": "1"})


def test_an_error_line_with_exit_0_is_still_refused(tmp_path):
    server = _binary(tmp_path, "2026-11-28  1:12:13 0 [ERROR] mariadbd: option 'innodb_io_capacity': bad value")
    with pytest.raises(SandboxError, match="innodb_io_capacity': bad value"):
        SandboxServer(tmp_path / "sb").check_options(server, {"innodb_io_capacity": "x"})
