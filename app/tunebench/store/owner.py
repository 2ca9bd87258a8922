"""Which process owns a journal entry or a running session, and whether it still lives.

A pid alone can be reused after a crash; the process start time (field 22 of /proc/PID/stat) makes the
pair unique for the machine's uptime.
"""

from __future__ import annotations

import os


def proc_start(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return ""


def owner_alive(pid: int | None, start: str | None) -> bool:
    return pid is not None and pid > 0 and bool(start) and proc_start(pid) == start


def me() -> tuple[int, str]:
    pid = os.getpid()
    return pid, proc_start(pid)
