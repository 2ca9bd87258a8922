"""Server settings the probes change (InnoDB monitors, performance_schema consumers and instruments), as
named in the journal, and how one is put back after a killed run."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

import mysql.connector

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


Query = Callable[[str, tuple[Any, ...]], Any]


class PfsSwitches:
    """The performance_schema consumers and instruments a probe switched on, each journaled before it changes (so a
    killed run's are put back by `undo_probe_setting`), set again after a restart and put back as found. The
    waits and statements probes share it."""

    def __init__(self, journal: Any):
        self.journal = journal
        self.instruments: list[tuple[str, str, str]] = []  # (name, ENABLED, TIMED) as found
        self.consumers: list[tuple[str, str, int | None]] = []  # (name, ENABLED as found, journal row)
        self._instruments_row: int | None = None

    def enable(self, query: Query, consumers: list[tuple[str, str]], instruments: list[tuple[str, str, str]]) -> None:
        """Switch on the `consumers` (name, ENABLED as found) and `instruments` given as off. A consumer the server
        refuses is unjournaled and raises; an instrument chunk that fails raises too, with what was done kept
        (and put back by `restore`)."""
        for name, enabled in consumers:
            row = self.journal.add(f"{CONSUMER}{name}", enabled)
            try:
                query("UPDATE performance_schema.setup_consumers SET ENABLED='YES' WHERE NAME=%s", (name,))
            except mysql.connector.Error:
                self.journal.settle(row, "discarded")
                raise
            self.consumers.append((name, enabled, row))
        if instruments:
            self._instruments_row = self.journal.add(INSTRUMENTS, json.dumps(instruments))
        for chunk in _chunks(instruments, 200):
            query("UPDATE performance_schema.setup_instruments SET ENABLED='YES', TIMED='YES' WHERE NAME IN "
                  f"({','.join(['%s'] * len(chunk))})", tuple(i[0] for i in chunk))
            self.instruments.extend(chunk)

    def reapply(self, conn: Any) -> None:
        """A restarted server: everything switched on, on again."""
        for name, _enabled, _row in self.consumers:
            query_all(conn, "UPDATE performance_schema.setup_consumers SET ENABLED='YES' WHERE NAME=%s", (name,))
        for chunk in _chunks(self.instruments, 200):
            query_all(conn, "UPDATE performance_schema.setup_instruments SET ENABLED='YES', TIMED='YES' WHERE NAME "
                            f"IN ({','.join(['%s'] * len(chunk))})", tuple(i[0] for i in chunk))

    def restore(self, query: Query) -> None:
        """Everything back as found, and its journal rows settled."""
        set_instruments(query, list(self.instruments))
        self.instruments = []
        self.journal.settle(self._instruments_row)
        self._instruments_row = None
        for name, enabled, row in self.consumers:
            query("UPDATE performance_schema.setup_consumers SET ENABLED=%s WHERE NAME=%s", (enabled, name))
            self.journal.settle(row)
        self.consumers = []

    @property
    def pending(self) -> bool:
        return bool(self.instruments or self.consumers)
