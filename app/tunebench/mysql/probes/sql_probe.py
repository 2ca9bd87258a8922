"""What the SQL probes share: one connection each (re-opened once after a lost connection), the journal
of server settings a probe changes, and why a probe cannot work, in the user's words."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any, Protocol

import mysql.connector

from tunebench.core.kinds import JournalState
from tunebench.core.probe import ProbeUnavailable
from tunebench.mysql.connect import ServerInfo, query_all

Connector = Callable[[], Any]

# errno -> why a probe cannot work, in the user's words.
ER_ACCESS_DENIED = (1044, 1142, 1143, 1227, 1370)  # db access, table access, column, privilege, routine
ER_NO_TABLE = (1109, 1146)
LOST_CONNECTION = (None, -1, 2006, 2013, 2055)  # gone away, lost, "connection not available" (no errno)




class SettingsJournal(Protocol):
    """Where a probe records a server setting before it changes it (see tuning.ProbeJournal): a killed run's
    settings are then put back at the next start by `undo_probe_setting`."""

    def add(self, name: str, original: str) -> int | None: ...

    def settle(self, row: int | None, state: JournalState = "restored") -> None: ...


class NoJournal:
    def add(self, name: str, original: str) -> int | None:
        return None

    def settle(self, row: int | None, state: JournalState = "restored") -> None:
        pass


class NotThisFlavor(ProbeUnavailable):
    """A source that does not exist on this flavor: only mentioned when no other reason is known."""


def _why(exc: mysql.connector.Error, need: str) -> str:
    errno = getattr(exc, "errno", None)
    if errno in ER_ACCESS_DENIED:
        return f"the account lacks the {need} privilege"
    msg = getattr(exc, "msg", None) or str(exc)
    return f"{msg} (error {errno})"


class SqlProbe:
    """Connection handling shared by the SQL probes."""

    name = "sql"

    def __init__(self, connect: Connector, info: ServerInfo, journal: SettingsJournal | None = None):
        self.connect = connect
        self.info = info
        self.journal: SettingsJournal = journal or NoJournal()
        self._conn: Any = None

    def conn(self) -> Any:
        if self._conn is None:
            self._conn = self.connect()
        return self._conn

    def query(self, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        fresh = self._conn is None
        try:
            return query_all(self.conn(), sql, args)
        except (mysql.connector.InterfaceError, mysql.connector.OperationalError) as exc:
            self.drop()
            if fresh or getattr(exc, "errno", None) not in LOST_CONNECTION:
                raise
            # the server restarted since (a static knob): what this probe set on it is gone with the old server,
            # set it again, then once more, reconnected
            self.reapply()
            return query_all(self.conn(), sql, args)
        except mysql.connector.Error:
            self.drop()
            raise

    def reapply(self) -> None:
        """After a reconnect to a restarted server: set again what this probe set on it at open (a restart puts
        the server's runtime settings back to its my.cnf: an InnoDB monitor off reads 0, never a 0 we may show)."""

    def drop(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(Exception):
                self._conn.close()
            self._conn = None

    def close(self) -> None:
        self.drop()
