"""Why a worker process died: its exit status and what it left on its stderr (faulthandler, glibc)."""

from __future__ import annotations

import os
import re
import signal
from dataclasses import dataclass, field
from pathlib import Path

_FRAME = re.compile(r'^\s+File "(?P<path>[^"]+)", line (?P<line>\d+) in (?P<func>\S+)')
_NOT_A_HEADLINE = ("Thread 0x", "Current thread", "Extension modules:", "Stack (most recent")
# Frames that mean "inside the MySQL client": our driver wrapper or mysql.connector itself.
_DRIVER_PATHS = (os.sep + os.path.join("load", "driver.py"), os.sep + "mysql" + os.sep + "connector" + os.sep)


@dataclass(frozen=True, slots=True)
class Postmortem:
    exitcode: int | None
    signal: str | None  # SIGSEGV, SIGKILL, ... when a signal ended it
    where: str | None  # "in the driver" / "in worker.py:212 (_run)": the crashing thread's innermost frame
    headline: str | None  # the message that says most: glibc's "double free ...", faulthandler's line
    stderr_tail: tuple[str, ...] = field(default_factory=tuple)

    def how(self) -> str:
        if self.signal:
            return f"killed by {self.signal}"
        if self.exitcode is None:
            return "gone (exit status unknown)"
        return f"exited with code {self.exitcode}"

    def describe(self) -> str:
        where = f" {self.where}" if self.where else ""
        return f"{self.how()}{where}: {self.headline or 'no output'}"


def signal_name(exitcode: int | None) -> str | None:
    if exitcode is None or exitcode >= 0:
        return None
    try:
        return signal.Signals(-exitcode).name
    except ValueError:
        return f"signal {-exitcode}"


def read_tail(path: Path | None, limit: int = 64 * 1024) -> str:
    """The end of a captured stderr file ('' if there is none)."""
    if path is None:
        return ""
    try:
        with path.open("rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - limit))
            return f.read().decode(errors="replace")
    except OSError:
        return ""


def _crash_site(lines: list[str]) -> str | None:
    for i, ln in enumerate(lines):
        if ln.startswith("Current thread"):
            for frame in lines[i + 1:]:
                m = _FRAME.match(frame)
                if m:
                    if any(p in m["path"] for p in _DRIVER_PATHS):
                        return "in the driver"
                    return f"in {os.path.basename(m['path'])}:{m['line']} ({m['func']})"
            return None
    return None


def _headline(lines: list[str]) -> str | None:
    meaningful = [ln.strip() for ln in lines if ln.strip() and not _FRAME.match(ln)
                  and not ln.startswith(_NOT_A_HEADLINE)]
    if not meaningful:
        return None
    fatal = next((i for i, ln in enumerate(meaningful) if ln.startswith("Fatal Python error")), None)
    if fatal is None:
        return meaningful[-1]
    # glibc prints its own reason ("double free or corruption (out)") just before faulthandler's line
    return meaningful[fatal - 1] if fatal > 0 else meaningful[fatal]


def examine(exitcode: int | None, stderr_text: str) -> Postmortem:
    lines = stderr_text.splitlines()
    tail = tuple(ln for ln in lines if ln.strip())[-10:]
    return Postmortem(exitcode, signal_name(exitcode), _crash_site(lines), _headline(lines), tail)
