"""A stand-in for a MySQL 8.0 server, answering only the statements the probes send, from fixtures.

MySQL 8.0 binaries cannot be installed here, so the MySQL branches of the probes are exercised against
output written from the MySQL reference manual (tests/fixtures/mysql). The fake keeps the state the
probes may change (innodb_monitor_enable/disable) so restore logic is checked too.
"""

from __future__ import annotations

import fnmatch
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "mysql"


def load_rows(name: str) -> list[list[str]]:
    return [ln.split("\t") for ln in (FIXTURES / name).read_text().splitlines()
            if ln.strip() and not ln.startswith("#")]


class FakeError(Exception):
    pass


SERVER_CLOCK = "SELECT UNIX_TIMESTAMP(SYSDATE(6))"


class MultiStatements:
    """What a cursor of mysql-connector does with 'a; b; c' (the probes' timed reads): each statement in turn, its
    %s marks taking their share of the arguments, one result set each for nextset(); SYSDATE from `clock()`."""

    rows: list[tuple]
    with_rows: bool
    _sets: list[tuple[bool, list[tuple]]]

    def execute(self, sql: str, args: tuple = ()) -> None:
        parts = sql.split("; ")
        if len(parts) == 1:
            self.one(sql, args)
            return
        if not getattr(self.s, "multi", True):
            import mysql.connector

            raise mysql.connector.ProgrammingError(msg="You have an error in your SQL syntax", errno=1064)
        sets = []
        rest = list(args)
        for part in parts:
            n = part.replace("%%", "").count("%s")
            mine, rest = tuple(rest[:n]), rest[n:]
            one = part.replace("%%", "%") if args else part
            if one == SERVER_CLOCK:
                self.s.log.append(one)
                self.rows, self.with_rows = [(f"{self.server_clock():.6f}",)], True
            else:
                self.rows, self.with_rows = [], True
                self.one(one, mine)
            sets.append((self.with_rows, list(self.rows)))
        assert not rest, rest
        (self.with_rows, self.rows), *self._sets = sets

    def nextset(self) -> bool | None:
        if not getattr(self, "_sets", None):
            return None
        (self.with_rows, self.rows), *self._sets = self._sets
        return True

    s: Any  # the fake server: its log, whether it takes several statements in one packet (`multi`)

    def server_clock(self) -> float:
        raise NotImplementedError

    def one(self, sql: str, args: tuple) -> None:
        raise NotImplementedError


class FakeMySQL80:
    def __init__(self, process_privilege: bool = True, super_privilege: bool = True):
        self.metrics = {r[0]: {"subsystem": r[1], "count": int(r[2]), "type": r[3], "status": r[4]}
                        for r in load_rows("innodb_metrics_8.0.txt")}
        self.mutex_rows = load_rows("show_engine_innodb_mutex_8.0.txt")
        self.status = dict(load_rows("show_global_status_8.0.txt"))
        self.process = process_privilege
        self.super = super_privilege
        self.log: list[str] = []
        self.clock: Callable[[], float] = time.time  # the server's SYSDATE(6)
        self.multi = True  # several statements in one packet (a proxy may refuse them)
        # information_schema.INNODB_TABLESPACES (8.0): NAME is schema/table, FILE_SIZE bytes
        self.tablespaces = [("tb/purchases_index1", 98566144), ("tb/purchases_index2", 12582912),
                            ("tb/t#p#p0", 1048576), ("tb/t#p#p1", 2097152), ("other/x", 65536),
                            ("mysql", 25165824)]

    def connect(self) -> FakeConn:
        return FakeConn(self)

    def monitor_state(self) -> dict[str, str]:
        return {k: v["status"] for k, v in self.metrics.items()}


class FakeConn:
    def __init__(self, server: FakeMySQL80):
        self.server = server

    def cursor(self) -> FakeCursor:
        return FakeCursor(self.server)

    def close(self) -> None:
        pass


def _denied(what: str) -> Exception:
    import mysql.connector

    return mysql.connector.Error(msg=f"Access denied; you need (at least one of) the {what} privilege(s)",
                                 errno=1227)


class FakeCursor(MultiStatements):
    def __init__(self, server: FakeMySQL80):
        self.s = server
        self.rows: list[tuple] = []
        self.description: list[tuple] = []
        self.with_rows = False

    def server_clock(self) -> float:
        return self.s.clock()

    def one(self, sql: str, args: tuple = ()) -> None:
        s = self.s
        s.log.append(sql)
        sql1 = " ".join(sql.split())
        self.with_rows, self.rows = True, []
        if sql1 == "SHOW GLOBAL STATUS":
            self.rows = list(s.status.items())
            return
        if ("INNODB_METRICS" in sql1 or sql1 == "SHOW ENGINE INNODB MUTEX") and not s.process:
            raise _denied("PROCESS")
        if "INNODB_SYS_TABLESPACES" in sql1:  # MariaDB's and 5.7's name; 8.0 has INNODB_TABLESPACES
            import mysql.connector

            raise mysql.connector.Error(msg="Unknown table 'INNODB_SYS_TABLESPACES' in information_schema",
                                        errno=1109)
        m = re.match(r"SELECT NAME, FILE_SIZE FROM information_schema.INNODB_TABLESPACES"
                     r"( LIMIT 1| WHERE NAME LIKE %s)$", sql1)
        if m:
            rows = s.tablespaces if m.group(1) != " LIMIT 1" else s.tablespaces[:1]
            if args:
                rows = [r for r in rows if fnmatch.fnmatch(r[0], args[0].replace("%", "*"))]
            self.rows = list(rows)
            return
        if sql1 == "SHOW ENGINE INNODB MUTEX":
            on = s.metrics["latch"]["status"] == "enabled"
            self.rows = [tuple(r) for r in s.mutex_rows if on or r[1].startswith(("rwlock", "sum rwlock"))]
            return
        if sql1.startswith("SELECT * FROM information_schema.INNODB_METRICS LIMIT 1"):
            self.description = [(c,) for c in ("NAME", "SUBSYSTEM", "COUNT", "TYPE", "STATUS")]
            return
        m = re.match(r"SET GLOBAL innodb_monitor_(enable|disable) = (?:'(\w+)'|%s)$", sql1)
        if m:
            if not s.super:
                raise _denied("SUPER or SYSTEM_VARIABLES_ADMIN")
            name = m.group(2) or args[0]
            s.metrics[name]["status"] = "enabled" if m.group(1) == "enable" else "disabled"
            self.with_rows = False
            return
        m = re.match(r"SELECT (.+) FROM information_schema.INNODB_METRICS WHERE (.+)$", sql1)
        if m:
            cols = [c.strip().lower() for c in m.group(1).split(",")]
            where = m.group(2)
            if where.startswith("NAME LIKE"):
                pat = args[0].replace("%", "*").replace("_", "?")
                names = [n for n in s.metrics if fnmatch.fnmatch(n, pat)]
            elif where.startswith("NAME IN"):
                names = [n for n in args if n in s.metrics]
            elif where.startswith("SUBSYSTEM = 'latch'"):
                names = [n for n, v in s.metrics.items() if v["subsystem"] == "latch"]
            else:
                raise AssertionError(f"fake server cannot answer: {sql1}")
            self.rows = [tuple(n if c == "name" else s.metrics[n][c] for c in cols) for n in names]
            return
        raise AssertionError(f"fake server cannot answer: {sql1}")

    def fetchall(self) -> list[tuple]:
        return self.rows

    def close(self) -> None:
        pass
