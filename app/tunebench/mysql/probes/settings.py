"""Server settings the probes change (InnoDB monitors, performance_schema consumers and instruments), as
named in the journal, and how one is put back after a killed run."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

from tunebench.core.probe import ProbeUnavailable
from tunebench.mysql.connect import query_all

MONITOR, CONSUMER, INSTRUMENTS = "monitor:", "pfs_consumer:", "pfs_instruments"


def undo_probe_setting(conn: Any, name: str, original: str) -> None:
    """Put back one journaled probe setting (written by a probe's `open`, left by a killed run)."""
    if name.startswith(MONITOR):
        query_all(conn, "SET GLOBAL innodb_monitor_disable = %s", (name[len(MONITOR):],))
    elif name.startswith(CONSUMER):
        query_all(conn, "UPDATE performance_schema.setup_consumers SET ENABLED=%s WHERE NAME=%s",
                  (original, name[len(CONSUMER):]))
    elif name == INSTRUMENTS:
        set_instruments(lambda sql, args: query_all(conn, sql, args), [tuple(i) for i in json.loads(original)])
    else:
        raise ProbeUnavailable(f"unknown probe setting {name!r} in the journal (written by a newer Tunebench?)")


def set_instruments(query: Callable[[str, tuple[Any, ...]], Any], instruments: list[tuple[str, ...]]) -> None:
    """(name, ENABLED, TIMED) of each instrument as given, grouped by state, 200 names a statement."""
    by_state: dict[tuple[str, str], list[str]] = {}
    for name, enabled, timed in instruments:
        by_state.setdefault((enabled, timed), []).append(name)
    for (enabled, timed), names in by_state.items():
        for chunk in _chunks(names, 200):
            query(f"UPDATE performance_schema.setup_instruments SET ENABLED=%s, TIMED=%s WHERE NAME IN "
                  f"({','.join(['%s'] * len(chunk))})", (enabled, timed, *chunk))


def _chunks(items: list[Any], size: int) -> Iterable[list[Any]]:
    for i in range(0, len(items), size):
        yield items[i:i + size]
