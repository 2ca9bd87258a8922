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
# what the kernel calls such a process: the server's own binary, or the kit's loader (ld-linux-x86-64.so.2 runs it)
COMMS = frozenset(n.encode() for n in SERVER_NAMES)


def servers_under(roots: Iterable[str]) -> dict[int, str]:
    """pid -> command line of every live mariadbd/mysqld whose command line mentions one of `roots`."""
    roots = [r for r in roots if r]
    found: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:  # the name first (one short read): most processes are not a server nor a loader running one
            comm = (entry / "comm").read_bytes().strip()
        except OSError:
            continue
        if comm not in COMMS and not comm.startswith(b"ld-"):
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


def _environ(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return b""


def not_of_another_session(pids: Iterable[int]) -> list[int]:
    """Those of `pids` not started by another test session: tests run side by side (pytest-xdist workers, or a
    second suite) and each counts its own processes. A process inherits its session's TUNEBENCH_TEST_HOME; one
    with another session's is left out, one without any (its environment cleared, or unreadable) is kept, so a
    leak of this session's is never missed."""
    mine = os.environ.get("TUNEBENCH_TEST_HOME", "").encode()
    out = []
    for pid in pids:
        homes = [v.partition(b"=")[2] for v in _environ(pid).split(b"\0") if v.startswith(b"TUNEBENCH_TEST_HOME=")]
        if not homes or homes[0] == mine:
            out.append(pid)
    return out


def descendants(root: int) -> set[int]:
    """Every live process below `root` (children, their children, ...), e.g. what a test's sshd started."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[-1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(entry.name))
    found, todo = set(), [root]
    while todo:
        for child in children.get(todo.pop(), ()):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found
