"""What the SQL probes share: one connection each (re-opened once after a lost connection), the journal
of server settings a probe changes, and why a probe cannot work, in the user's words."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from typing import Any, Protocol

import mysql.connector

from tunebench.core.kinds import JournalState
from tunebench.core.probe import ProbeUnavailable, ServerClock
from tunebench.mysql.connect import ServerInfo, query_all, query_sets

Connector = Callable[[], Any]

# errno -> why a probe cannot work, in the user's words.
ER_ACCESS_DENIED = (1044, 1142, 1143, 1227, 1370)  # db access, table access, column, privilege, routine
ER_NO_TABLE = (1109, 1146)
LOST_CONNECTION = (None, -1, 2006, 2013, 2055)  # gone away, lost, "connection not available" (no errno)
# The server's clock, read before and after a timed read's statements in the same round trip. SYSDATE, not NOW (the
# instant it runs, not the statement's start); each is its own statement, so even with sysdate_is_now it is right.
SERVER_CLOCK = ("SELECT UNIX_TIMESTAMP(SYSDATE(6))", ())
TIMED = " between readings of the server's clock"  # how a probe's description says its reads are timed


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
        self._clock = ServerClock()
        # where the last query_timed's values were taken (this machine's clock), and the server's [s1, s2] of it
        self.at: float | None = None
        self.server_span: tuple[float, float] | None = None
        self.timed: bool | None = None  # whether this server answers a timed read (None: not tried yet)

    def uncertainty(self) -> float:
        """Half the server's own time on the last timed read (0 when it was not timed)."""
        return (self.server_span[1] - self.server_span[0]) / 2 if self.server_span is not None else 0.0

    def same_clock(self) -> None:
        """The server runs on this machine: its clock is this one (no offset to estimate)."""
        self._clock = ServerClock(same_clock=True)

    def conn(self) -> Any:
        if self._conn is None:
            self._conn = self.connect()
        return self._conn

    def query(self, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        return self._run(lambda conn: query_all(conn, sql, args))

    def query_timed(self, *statements: tuple[str, tuple[Any, ...]]) -> list[list[tuple[Any, ...]]]:
        """The statements' rows, read in one round trip between two readings of the server's clock: `at` is then
        the instant they were taken on this machine's clock (ServerClock), `server_span` the server's [s1, s2]."""
        sent = time.time()
        sets = self._run(lambda conn: query_sets(conn, (SERVER_CLOCK, *statements, SERVER_CLOCK)))
        answered = time.time()
        s1, s2 = float(sets[0][0][0]), float(sets[-1][0][0])
        self.server_span = (s1, s2)
        self.at = self._clock.instant(s1, s2, sent, answered)
        return sets[1:-1]

    def read_sets(self, *statements: tuple[str, tuple[Any, ...]]) -> list[list[tuple[Any, ...]]]:
        """The statements' rows: timed (query_timed) where the server answers multi-statements (a proxy may not: then
        one by one, `at` None, the sampler's midpoint of the read is the instant, as for every probe before)."""
        if self.timed is not False:
            try:
                sets = self.query_timed(*statements)
                self.timed = True
                return sets
            except mysql.connector.Error:
                if self.timed:
                    raise
        self.at = self.server_span = None
        sets = [self.query(sql, args) for sql, args in statements]
        self.timed = False
        return sets

    def _run(self, call: Callable[[Any], Any]) -> Any:
        fresh = self._conn is None
        try:
            return call(self.conn())
        except (mysql.connector.InterfaceError, mysql.connector.OperationalError) as exc:
            self.drop()
            if fresh or getattr(exc, "errno", None) not in LOST_CONNECTION:
                raise
            # the server restarted since (a static knob): what this probe set on it is gone with the old server,
            # set it again, then once more, reconnected
            self.reapply()
            return call(self.conn())
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
