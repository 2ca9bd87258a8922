"""Whether a run's concurrency fits the server's connection limit and this machine's memory, and a data set the
free space of the server's disk.

Checked before the first load connection: 100,000 threads otherwise open what the server allows, sit
there for the whole step, report nothing useful and take gigabytes on the way. And before a prepare: 100,000
TPC-C warehouses (about 10 TB) otherwise load until the disk is full.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from tunebench.core.errors import ConfigError

MB = 1024 * 1024
# Measured by bench/engine_vs_sysbench.py (oltp_point_select at 1,024 and 4,096 connections from one host, the
# README's table): 75 KB per added builtin connection and 295 KB per sysbench thread; 421 MB of client memory in
# all at 4,096 builtin connections (two worker processes of ~60 MB each and the connections).
CLIENT_MB_PER_CONNECTION = 0.075
WORKER_MB = 60.0  # one builtin worker process: Python, numpy, the connector
SYSBENCH_MB_PER_THREAD = 0.295
SERVER_OVERHEAD_MB = 0.25  # per server thread, beside its stack and network buffers
# Tunebench's own connections beside the load's: the run lock, the server watch, the drift guard, the probes'
# and the admin one. Measured: a 1-thread run's peak is 7 connections of its account (MariaDB 10.11 sandbox).
SPARE_CONNECTIONS = 6
MEMORY_SHARE = 0.8  # leave a fifth of what is available to everything else


@dataclass(frozen=True, slots=True)
class Capacity:
    connections: int  # what the load opens at its peak
    max_connections: int
    in_use: int
    memory_mb: float  # estimate for the load (and the server's threads when it runs here)
    available_mb: float | None
    user: str = ""
    user_limit: int = 0  # the account's MAX_USER_CONNECTIONS (or the server's max_user_connections); 0: none
    user_in_use: int = 0  # the account's connections open now


def mem_available_mb(meminfo: str = "/proc/meminfo") -> float | None:
    try:
        with open(meminfo) as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) / 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def peak_connections(schedules: Sequence[Sequence[int]]) -> int:
    """Every group opens the connections of its largest step up front (and keeps them between steps)."""
    return sum(max(s) for s in schedules)


def estimate_mb(connections: int, engine: str, workers: int, server_here: bool,
                variables: Mapping[str, str]) -> float:
    if engine == "builtin":
        client = WORKER_MB * workers + CLIENT_MB_PER_CONNECTION * connections
    else:
        client = SYSBENCH_MB_PER_THREAD * connections
    server = 0.0
    if server_here:
        per_thread = SERVER_OVERHEAD_MB
        for name, default in (("thread_stack", 299008), ("net_buffer_length", 16384)):
            try:
                per_thread += int(variables.get(name, default)) / MB * (2 if name == "net_buffer_length" else 1)
            except ValueError:
                per_thread += default / MB
        server = per_thread * connections
    return client + server


def check_capacity(c: Capacity) -> None:
    """Refuse, with the numbers, a run that cannot get its connections or would exhaust memory."""
    free = c.max_connections - c.in_use - SPARE_CONNECTIONS
    if c.connections > free:
        raise ConfigError(
            f"{c.connections:,} client connections do not fit: the server allows max_connections="
            f"{c.max_connections:,} and {c.in_use:,} are in use ({SPARE_CONNECTIONS} kept for Tunebench's own); "
            f"use at most {max(free, 0):,} threads or raise max_connections")
    if c.user_limit > 0:
        free = c.user_limit - c.user_in_use - SPARE_CONNECTIONS
        if c.connections > free:
            raise ConfigError(
                f"{c.connections:,} client connections do not fit the account's limit: {c.user!r} may open "
                f"max_user_connections={c.user_limit:,}, has {c.user_in_use:,} open, and Tunebench keeps "
                f"{SPARE_CONNECTIONS} for its own (lock, probes, server watch); "
                + (f"use at most {free:,} threads or raise the account's MAX_USER_CONNECTIONS" if free > 0 else
                   "raise the account's MAX_USER_CONNECTIONS to at least "
                   f"{c.connections + c.user_in_use + SPARE_CONNECTIONS}"))
    if c.available_mb is not None and c.memory_mb > c.available_mb * MEMORY_SHARE:
        raise ConfigError(
            f"{c.connections:,} client connections need about {c.memory_mb:,.0f} MB here and "
            f"{c.available_mb:,.0f} MB is available (MemAvailable); use fewer threads or workers")


def free_bytes(path: str) -> int | None:
    """What an unprivileged writer may still put on the filesystem of `path`; None when it cannot be told."""
    try:
        st = os.statvfs(path)
    except (OSError, ValueError):
        return None
    return st.f_bavail * st.f_frsize


def size_text(n: float) -> str:
    for unit in ("bytes", "KB", "MB", "GB", "TB", "PB"):
        if n < 1024 or unit == "PB":
            return f"{n:,.0f} {unit}" if unit == "bytes" else f"{n:,.1f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


def check_disk(what: str, need: int | None, where: str, free: int | None) -> None:
    """Refuse, with the numbers, a data set that cannot fit on the server's disk (`need`: the family's estimate;
    `free`: the datadir filesystem's free bytes; None for either: nothing known, nothing refused)."""
    if need is None or free is None or need <= free:
        return
    raise ConfigError(f"{what} needs about {size_text(need)} on the server's disk and the filesystem of its datadir "
                      f"({where}) has {size_text(free)} free: choose a smaller data set")
