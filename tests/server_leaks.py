"""Finding database servers a test left running: mariadbd/mysqld processes whose command line names a
directory of this test session (its TUNEBENCH_HOME or pytest's base temp), kits started through their own
loader included."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterable
from pathlib import Path

from tunebench.hosts.server_binary import program_of

SERVER_NAMES = ("mariadbd", "mysqld")


def servers_under(roots: Iterable[str]) -> dict[int, str]:
    """pid -> command line of every live mariadbd/mysqld whose command line mentions one of `roots`."""
    roots = [r for r in roots if r]
    found: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        if not argv or not argv[0] or stat.rsplit(")", 1)[-1].split()[0] == "Z":
            continue
        if program_of(argv) not in SERVER_NAMES:  # a kit runs through its loader: the program after it
            continue
        line = " ".join(a.decode(errors="replace") for a in argv if a)
        if any(root in line for root in roots):
            found[int(entry.name)] = line
    return found


def kill_all(pids: Iterable[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
