"""CPU binding of the sandbox server (the `cpus` sweep axis): a taskset list checked against the CPUs this
process may use."""

from __future__ import annotations

import os
import re

from tunebench.core.errors import SandboxError


def check_cpus(cpus: str) -> str:
    """A taskset list whose every CPU this process may use (else the server would not start, or start
    bound to something else than asked)."""
    text = cpus.strip()
    if not re.fullmatch(r"\d+(-\d+)?(,\d+(-\d+)?)*", text):
        raise SandboxError(f"--cpus wants a CPU list like 0 or 0-1 or 0,2, got {cpus!r}")
    wanted: set[int] = set()
    for part in text.split(","):
        first, _, last = part.partition("-")
        lo, hi = int(first), int(last or first)
        if lo > hi:
            raise SandboxError(f"--cpus {cpus}: the range {part} runs backwards")
        if hi > 65535:
            raise SandboxError(f"--cpus {cpus}: there is no CPU {hi}")
        wanted.update(range(lo, hi + 1))
    usable = os.sched_getaffinity(0)
    missing = sorted(wanted - usable)
    if missing:
        raise SandboxError(f"--cpus {cpus}: CPU {missing[0]}{' and more' if len(missing) > 1 else ''} not "
                           f"available; this machine lets us use {_cpu_list(usable)}")
    return text


def _cpu_list(cpus: set[int]) -> str:
    out: list[str] = []
    run: list[int] = []
    for c in sorted(cpus):
        if run and c != run[-1] + 1:
            out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
            run = []
        run.append(c)
    if run:
        out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
    return ",".join(out)
