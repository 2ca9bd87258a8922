"""Probes that speak SQL: server status counters, InnoDB mutex/rw-lock waits, INNODB_METRICS.

Each probe owns one connection, opened by `open()` (which also decides, once, whether the probe can work
on this server and says why not) and re-opened after a lost connection. Anything a probe changes on the
server (performance_schema instruments and consumers, InnoDB monitor counters) is recorded when changed
and put back by `close()`.
"""

from __future__ import annotations

import contextlib
import json
import re
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import mysql.connector

from tunebench.core.probe import ProbeUnavailable, Reading, TopN, name_part
from tunebench.mysql.connect import ServerInfo, query_all
from tunebench.mysql.connect import num_of as _num
from tunebench.mysql.connect import text_of as _text

Connector = Callable[[], Any]

# errno -> why a probe cannot work, in the user's words.
ER_ACCESS_DENIED = (1044, 1142, 1143, 1227, 1370)  # db access, table access, column, privilege, routine
ER_NO_TABLE = (1109, 1146)
LOST_CONNECTION = (None, -1, 2006, 2013, 2055)  # gone away, lost, "connection not available" (no errno)




class SettingsJournal(Protocol):
    """Where a probe records a server setting before it changes it (see tuning.ProbeJournal): a killed run's
    settings are then put back at the next start by `undo_probe_setting`."""

    def add(self, name: str, original: str) -> int | None: ...

    def settle(self, row: int | None, state: str = "restored") -> None: ...


class NoJournal:
    def add(self, name: str, original: str) -> int | None:
        return None

    def settle(self, row: int | None, state: str = "restored") -> None:
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
            return query_all(self.conn(), sql, args)  # the server restarted since: once more, reconnected
        except mysql.connector.Error:
            self.drop()
            raise

    def drop(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(Exception):
                self._conn.close()
            self._conn = None

    def close(self) -> None:
        self.drop()


# ---- server status ------------------------------------------------------------------------------
STATUS_COUNTERS = (
    "Questions", "Queries", "Com_select", "Com_insert", "Com_update", "Com_delete", "Com_replace", "Com_begin",
    "Com_commit", "Com_rollback", "Innodb_row_lock_waits", "Innodb_row_lock_time", "Innodb_buffer_pool_reads",
    "Innodb_buffer_pool_read_requests", "Innodb_buffer_pool_write_requests", "Innodb_buffer_pool_wait_free",
    "Innodb_buffer_pool_pages_flushed", "Innodb_data_fsyncs", "Innodb_data_reads", "Innodb_data_writes",
    "Innodb_data_read", "Innodb_data_written", "Innodb_os_log_fsyncs", "Innodb_os_log_written",
    "Innodb_log_waits", "Innodb_log_writes", "Innodb_rows_read", "Innodb_rows_inserted", "Innodb_rows_updated",
    "Innodb_rows_deleted", "Created_tmp_disk_tables", "Created_tmp_tables", "Select_scan", "Select_full_join",
    "Sort_merge_passes", "Bytes_received", "Bytes_sent", "Connections", "Aborted_clients", "Aborted_connects",
    "Slow_queries", "Binlog_commits", "Binlog_group_commits", "Handler_commit", "Handler_rollback",
    # Row traffic where Innodb_rows_* is missing (MariaDB 10.6+ dropped them): handler calls, Rows_read.
    "Handler_read_key", "Handler_read_next", "Handler_read_rnd_next", "Handler_write", "Handler_update",
    "Handler_delete", "Rows_read", "Rows_sent",
)
STATUS_GAUGES = (
    "Threads_running", "Threads_connected", "Threads_cached", "Innodb_buffer_pool_pages_dirty",
    "Innodb_buffer_pool_pages_free", "Innodb_buffer_pool_pages_data", "Innodb_row_lock_current_waits",
    "Open_tables",
)
# History list length and checkpoint age, per flavor (status vars), with INNODB_METRICS as the fallback.
HLL_STATUS = "Innodb_history_list_length"  # MariaDB
CKPT_STATUS_MARIADB = "Innodb_checkpoint_age"
CKPT_STATUS_MYSQL = ("Innodb_redo_log_current_lsn", "Innodb_redo_log_checkpoint_lsn")  # MySQL 8.0.30+
HLL_METRIC = "trx_rseg_history_len"
CKPT_METRICS = ("log_lsn_checkpoint_age", "log_lsn_current", "log_lsn_last_checkpoint")


def parse_status(rows: Iterable[tuple[Any, Any]]) -> dict[str, float]:
    out = {}
    for k, v in rows:
        num = _num(v)
        if num is not None:
            out[_text(k)] = num
    return out


def status_reading(status: Mapping[str, float], metrics: Mapping[str, float] | None = None) -> Reading:
    """The `server.*` series from one SHOW GLOBAL STATUS (+ INNODB_METRICS fallback values)."""
    r = Reading()
    for name in STATUS_COUNTERS:
        if name in status:
            r.counters["server." + name.lower()] = status[name]
    for name in STATUS_GAUGES:
        if name in status:
            r.gauges["server." + name.lower()] = status[name]
    metrics = metrics or {}
    if HLL_STATUS in status:
        r.gauges["server.history_list_length"] = status[HLL_STATUS]
    elif HLL_METRIC in metrics:
        r.gauges["server.history_list_length"] = metrics[HLL_METRIC]
    if CKPT_STATUS_MARIADB in status:
        r.gauges["server.checkpoint_age"] = status[CKPT_STATUS_MARIADB]
    elif all(k in status for k in CKPT_STATUS_MYSQL):
        r.gauges["server.checkpoint_age"] = status[CKPT_STATUS_MYSQL[0]] - status[CKPT_STATUS_MYSQL[1]]
    elif metrics.get(CKPT_METRICS[0]):
        r.gauges["server.checkpoint_age"] = metrics[CKPT_METRICS[0]]
    elif metrics.get(CKPT_METRICS[1]) and CKPT_METRICS[2] in metrics:
        r.gauges["server.checkpoint_age"] = metrics[CKPT_METRICS[1]] - metrics[CKPT_METRICS[2]]
    return r


@dataclass(frozen=True, slots=True)
class MetricsColumns:
    """INNODB_METRICS differs by flavor: MySQL has STATUS ('enabled'/'disabled'), MariaDB ENABLED (1/0)."""

    enabled_col: str

    @classmethod
    def detect(cls, columns: Iterable[str]) -> MetricsColumns:
        cols = {c.upper() for c in columns}
        if "STATUS" in cols:
            return cls("STATUS")
        if "ENABLED" in cols:
            return cls("ENABLED")
        raise ProbeUnavailable("INNODB_METRICS has neither a STATUS nor an ENABLED column")

    @staticmethod
    def is_enabled(value: Any) -> bool:
        text = _text(value).strip().lower()
        return text in ("enabled", "1", "yes", "on")


def metrics_columns(probe: SqlProbe) -> MetricsColumns:
    cur = probe.conn().cursor()
    try:
        cur.execute("SELECT * FROM information_schema.INNODB_METRICS LIMIT 0")
        cur.fetchall()
        return MetricsColumns.detect(d[0] for d in cur.description)
    finally:
        cur.close()


class StatusProbe(SqlProbe):
    """SHOW GLOBAL STATUS -> `server.*` (counters as rates, Threads_running & co as gauges)."""

    name = "status"

    def __init__(self, connect: Connector, info: ServerInfo):
        super().__init__(connect, info)
        self._fallback: tuple[str, ...] = ()
        self._metrics_cols: MetricsColumns | None = None

    def open(self) -> str:
        try:
            status = parse_status(self.query("SHOW GLOBAL STATUS"))
        except mysql.connector.Error as exc:
            raise ProbeUnavailable(f"SHOW GLOBAL STATUS failed: {_why(exc, 'PROCESS')}") from None
        wanted = []
        if HLL_STATUS not in status:
            wanted.append(HLL_METRIC)
        if CKPT_STATUS_MARIADB not in status and not all(k in status for k in CKPT_STATUS_MYSQL):
            wanted.extend(CKPT_METRICS)
        note = ""
        if wanted:
            try:
                self._metrics_cols = metrics_columns(self)
                self._fallback = tuple(wanted)
            except mysql.connector.Error as exc:
                note = f"; history list length/checkpoint age unavailable ({_why(exc, 'PROCESS')})"
        first = status_reading(status)
        found = len(first.counters) + len(first.gauges)
        return f"SHOW GLOBAL STATUS, {found} series" + (
            f" (+{', '.join(self._fallback)} from INNODB_METRICS)" if self._fallback else "") + note

    def read(self) -> Reading:
        status = parse_status(self.query("SHOW GLOBAL STATUS"))
        metrics: dict[str, float] = {}
        if self._fallback and self._metrics_cols:
            marks = ",".join(["%s"] * len(self._fallback))
            for name, count, enabled in self.query(
                    f"SELECT NAME, COUNT, {self._metrics_cols.enabled_col} FROM information_schema.INNODB_METRICS "
                    f"WHERE NAME IN ({marks})", self._fallback):
                if MetricsColumns.is_enabled(enabled) and (v := _num(count)) is not None:
                    metrics[_text(name)] = v
        return status_reading(status, metrics)


# ---- INNODB_METRICS -----------------------------------------------------------------------------
# Chosen counters: name -> kind. Names missing on a server (flavor/version) are skipped.
METRICS: dict[str, str] = {
    "lock_deadlocks": "counter", "lock_timeouts": "counter", "lock_row_lock_waits": "counter",
    "lock_row_lock_time": "counter", "lock_row_lock_current_waits": "gauge",
    "buffer_pool_wait_free": "counter", "buffer_pool_reads": "counter", "buffer_pool_read_requests": "counter",
    "buffer_pool_write_requests": "counter", "buffer_pages_written": "counter",
    "buffer_pool_pages_dirty": "gauge", "buffer_pool_pages_free": "gauge", "buffer_flush_sync_waits": "counter",
    "log_waits": "counter", "log_write_requests": "counter", "log_writes": "counter",
    "log_lsn_checkpoint_age": "gauge", "os_data_fsyncs": "counter", "os_log_fsyncs": "counter",
    "os_log_bytes_written": "counter", "os_pending_reads": "gauge", "os_pending_writes": "gauge",
    "innodb_dblwr_writes": "counter", "innodb_dblwr_pages_written": "counter",
    "trx_rw_commits": "counter", "trx_ro_commits": "counter", "trx_nl_ro_commits": "counter",
    "trx_rollbacks": "counter", "trx_rseg_history_len": "gauge",
    "adaptive_hash_searches": "counter", "adaptive_hash_searches_btree": "counter",
    "dml_reads": "counter", "dml_inserts": "counter", "dml_updates": "counter", "dml_deletes": "counter",
    "purge_invoked": "counter", "purge_undo_log_pages": "counter", "purge_dml_delay_usec": "gauge",
}


class MetricsProbe(SqlProbe):
    """Chosen INNODB_METRICS counters -> `innodb.<name>`; enables the disabled ones it can, then puts
    them back."""

    name = "metrics"

    def __init__(self, connect: Connector, info: ServerInfo, names: Mapping[str, str] | None = None,
                 journal: SettingsJournal | None = None):
        super().__init__(connect, info, journal)
        self.catalog = dict(names or METRICS)
        self.names: tuple[str, ...] = ()
        self.enabled_by_us: list[tuple[str, int | None]] = []  # (monitor, journal row)
        self.cols: MetricsColumns | None = None

    def open(self) -> str:
        try:
            self.cols = metrics_columns(self)
            marks = ",".join(["%s"] * len(self.catalog))
            rows = self.query(f"SELECT NAME, {self.cols.enabled_col} FROM information_schema.INNODB_METRICS "
                              f"WHERE NAME IN ({marks})", tuple(self.catalog))
        except mysql.connector.Error as exc:
            raise ProbeUnavailable(f"cannot read information_schema.INNODB_METRICS: {_why(exc, 'PROCESS')}") \
                from None
        present = {_text(n): MetricsColumns.is_enabled(e) for n, e in rows}
        if not present:
            raise ProbeUnavailable("none of the chosen InnoDB metrics exist on this server")
        refused = []
        for name in (n for n, on in present.items() if not on):
            row = self.journal.add(f"{MONITOR}{name}", "disabled")
            try:
                self.query("SET GLOBAL innodb_monitor_enable = %s", (name,))
                self.enabled_by_us.append((name, row))
                present[name] = True
            except mysql.connector.Error as exc:
                self.journal.settle(row, "discarded")
                refused.append(name)
                if getattr(exc, "errno", None) in ER_ACCESS_DENIED:
                    refused.extend(n for n, on in present.items() if not on and n not in refused)
                    break
        self.names = tuple(n for n, on in present.items() if on)
        if not self.names:
            raise ProbeUnavailable("the chosen InnoDB metrics are disabled and the account cannot enable them")
        return (f"INNODB_METRICS ({self.cols.enabled_col} column), {len(self.names)} counters"
                + (f", enabled {len(self.enabled_by_us)} for the session" if self.enabled_by_us else "")
                + (f", {len(refused)} left disabled (no privilege)" if refused else ""))

    def read(self) -> Reading:
        marks = ",".join(["%s"] * len(self.names))
        rows = self.query(f"SELECT NAME, COUNT FROM information_schema.INNODB_METRICS WHERE NAME IN ({marks})",
                          self.names)
        r = Reading()
        for name, count in rows:
            v = _num(count)
            n = _text(name)
            if v is None:
                continue
            (r.gauges if self.catalog.get(n) == "gauge" else r.counters)["innodb." + n] = v
        return r

    def close(self) -> None:
        failed = []
        for name, row in self.enabled_by_us:
            try:
                self.query("SET GLOBAL innodb_monitor_disable = %s", (name,))
                self.journal.settle(row)
            except mysql.connector.Error:
                failed.append((name, row))  # the journal keeps it for the run's end or the next start
        self.enabled_by_us = failed
        self.drop()


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


# ---- waits ---------------------------------------------------------------------------------------
PFS_PATTERNS = ("wait/synch/mutex/innodb/%", "wait/synch/rwlock/innodb/%", "wait/synch/sxlock/innodb/%")
PFS_CONSUMERS = ("global_instrumentation",)
RWLOCK_METRICS = re.compile(r"^innodb_rwlock_(s|x|sx)_(spin_waits|spin_rounds|os_waits)$")
PS_TO_MS = 1e-9


def pfs_instrument(event_name: str) -> str:
    """'wait/synch/mutex/innodb/log_sys_mutex' -> 'mutex/log_sys_mutex'."""
    parts = event_name.split("/")
    if len(parts) >= 5:
        return f"{parts[2]}/{name_part('/'.join(parts[4:]))}"
    return name_part(event_name)


def parse_mutex_status(status: str) -> dict[str, float]:
    """SHOW ENGINE INNODB MUTEX Status: 'waits=6' or 'spins=0,waits=4,calls=20' (and older os_waits=)."""
    out = {}
    for part in re.split(r"[,\s]+", status.strip()):
        if "=" in part:
            k, _, v = part.partition("=")
            if (num := _num(v)) is not None:
                out[k.strip()] = num
    return out


def mutex_instrument(name: str) -> str:
    """SHOW ENGINE INNODB MUTEX Name: 'LOG_SYS' (mutex) or 'rwlock: dict0dict.cc:2782' / 'sum rwlock: ...'."""
    text = name.strip()
    m = re.match(r"^(?:sum\s+)?rwlock:\s*(.+)$", text)
    if m:
        return "rwlock/" + name_part(m.group(1))
    return "mutex/" + name_part(text)


def parse_mutex_rows(rows: Iterable[tuple[Any, ...]]) -> dict[str, dict[str, float]]:
    """Rows (Type, Name, Status) -> instrument -> {'count': waits, 'spins': ...}; same names are summed."""
    out: dict[str, dict[str, float]] = {}
    for row in rows:
        if len(row) < 3:
            continue
        fields = parse_mutex_status(_text(row[2]))
        waits = fields.get("waits", fields.get("os_waits"))
        if waits is None:
            continue
        entry = out.setdefault(mutex_instrument(_text(row[1])), {"count": 0.0})
        entry["count"] += waits
        if "spins" in fields:
            entry["spins"] = entry.get("spins", 0.0) + fields["spins"]
    return out


def parse_rwlock_metrics(rows: Iterable[tuple[Any, Any]]) -> dict[str, dict[str, float]]:
    """INNODB_METRICS innodb_rwlock_{s,x,sx}_{spin_waits,spin_rounds,os_waits} -> rwlock_<mode> entries."""
    out: dict[str, dict[str, float]] = {}
    for name, count in rows:
        m = RWLOCK_METRICS.match(_text(name))
        if not m or (v := _num(count)) is None:
            continue
        entry = out.setdefault(f"rwlock_{m.group(1)}", {"count": 0.0})
        if m.group(2) == "os_waits":
            entry["count"] = v
        else:
            entry[m.group(2)] = v
    return out


class WaitsProbe(SqlProbe):
    """InnoDB mutex / rw-lock / sx-lock waits -> `waits.<instrument>.count` (and `.ms` when timed).

    Sources, first that works: performance_schema events_waits_summary_global_by_event_name; MySQL's
    INNODB_METRICS innodb_rwlock_* counters; MySQL's SHOW ENGINE INNODB MUTEX (with the 'latch' monitor).
    The `top` busiest instruments get their own series, the rest is `waits.other.*`; `waits.total.*`
    is everything.
    """

    name = "waits"

    def __init__(self, connect: Connector, info: ServerInfo, top: int = 10, journal: SettingsJournal | None = None):
        super().__init__(connect, info, journal)
        self.source = ""
        self.topn = TopN(top)
        self._prev: dict[str, dict[str, float]] = {}
        self._prev_t: float | None = None
        self.changed_instruments: list[tuple[str, str, str]] = []  # (name, ENABLED, TIMED) as found
        self.changed_consumers: list[tuple[str, str, int | None]] = []  # (name, ENABLED as found, journal row)
        self.latch_enabled_by_us = False
        self._rows: dict[str, int | None] = {}  # journal rows of the instruments and the latch monitor
        self.clock: Callable[[], float] = time.monotonic

    # -- choosing a source --
    def open(self) -> str:
        reasons, other_flavor = [], []
        for source in (self._open_pfs, self._open_rwlock_metrics, self._open_show_mutex):
            try:
                return source()
            except NotThisFlavor as exc:
                other_flavor.append(str(exc))
            except ProbeUnavailable as exc:
                reasons.append(str(exc))
        raise ProbeUnavailable("; ".join(reasons or other_flavor))

    def _open_pfs(self) -> str:
        if not self.info.performance_schema:
            hint = " (static on MariaDB: restart the server with performance_schema=ON)" \
                if self.info.flavor == "mariadb" else ""
            raise ProbeUnavailable(f"performance_schema is OFF{hint}")
        where = " OR ".join(["NAME LIKE %s"] * len(PFS_PATTERNS))
        try:
            rows = self.query(f"SELECT NAME, ENABLED, TIMED FROM performance_schema.setup_instruments WHERE {where}",
                              PFS_PATTERNS)
            marks = ",".join(["%s"] * len(PFS_CONSUMERS))
            consumers = self.query("SELECT NAME, ENABLED FROM performance_schema.setup_consumers "
                                   f"WHERE NAME IN ({marks})", PFS_CONSUMERS)
        except mysql.connector.Error as exc:
            raise ProbeUnavailable(f"performance_schema not readable: {_why(exc, 'SELECT on performance_schema')}") \
                from None
        if not rows:
            raise ProbeUnavailable("performance_schema has no InnoDB synch instruments")
        instruments = [(_text(n), _text(e), _text(t)) for n, e, t in rows]
        off = [i for i in instruments if i[1] != "YES" or i[2] != "YES"]
        off_consumers = [(_text(n), _text(e)) for n, e in consumers if _text(e) != "YES"]
        note = ""
        try:
            for name, enabled in off_consumers:
                row = self.journal.add(f"{CONSUMER}{name}", enabled)
                try:
                    self.query("UPDATE performance_schema.setup_consumers SET ENABLED='YES' WHERE NAME=%s", (name,))
                except mysql.connector.Error:
                    self.journal.settle(row, "discarded")
                    raise
                self.changed_consumers.append((name, enabled, row))
            if off:
                self._rows[INSTRUMENTS] = self.journal.add(INSTRUMENTS, json.dumps(off))
            for chunk in _chunks(off, 200):
                self.query("UPDATE performance_schema.setup_instruments SET ENABLED='YES', TIMED='YES' WHERE NAME IN "
                           f"({','.join(['%s'] * len(chunk))})", tuple(i[0] for i in chunk))
                self.changed_instruments.extend(chunk)
        except mysql.connector.Error as exc:
            note = f"; could not enable the rest ({_why(exc, 'UPDATE on performance_schema')})"
        if off_consumers and len(self.changed_consumers) < len(off_consumers):
            self._restore_pfs()
            raise ProbeUnavailable("performance_schema consumer global_instrumentation is off and cannot be "
                                   "enabled by this account")
        usable = len(instruments) - len(off) + len(self.changed_instruments)
        if usable == 0:
            raise ProbeUnavailable("the InnoDB synch instruments are disabled and cannot be enabled" + note)
        self.source = "pfs"
        self.reading(self.clock(), self._read_raw())  # the base for the first rates
        return (f"performance_schema, {usable} InnoDB mutex/rwlock/sxlock instruments"
                + (f" ({len(self.changed_instruments)} enabled for the session; instruments enabled at runtime "
                   "only count latches created afterwards)" if self.changed_instruments else "") + note)

    def _open_rwlock_metrics(self) -> str:
        if self.info.flavor == "mariadb":
            raise NotThisFlavor("MariaDB has no innodb_rwlock_* metrics")
        try:
            rows = self.query("SELECT NAME, COUNT FROM information_schema.INNODB_METRICS WHERE NAME LIKE %s",
                              ("innodb_rwlock_%",))
        except mysql.connector.Error as exc:
            raise ProbeUnavailable(f"INNODB_METRICS not readable: {_why(exc, 'PROCESS')}") from None
        if not parse_rwlock_metrics(rows):
            raise ProbeUnavailable("no innodb_rwlock_* counters in INNODB_METRICS")
        self.source = "innodb_metrics"
        self.reading(self.clock(), self._read_raw())  # the base for the first rates
        return "INNODB_METRICS innodb_rwlock_{s,x,sx} spin/os waits"

    def _open_show_mutex(self) -> str:
        if self.info.flavor == "mariadb":
            raise NotThisFlavor("SHOW ENGINE INNODB MUTEX is empty on MariaDB")
        try:
            cols = metrics_columns(self)
            rows = self.query(f"SELECT {cols.enabled_col} FROM information_schema.INNODB_METRICS "
                              "WHERE SUBSYSTEM = 'latch'")
            if not any(MetricsColumns.is_enabled(r[0]) for r in rows):
                self._rows["latch"] = self.journal.add(f"{MONITOR}latch", "disabled")
                self.query("SET GLOBAL innodb_monitor_enable = 'latch'")
                self.latch_enabled_by_us = True
            self.query("SHOW ENGINE INNODB MUTEX")
        except mysql.connector.Error as exc:
            self._restore_latch()
            raise ProbeUnavailable(f"SHOW ENGINE INNODB MUTEX not available: {_why(exc, 'PROCESS')}") from None
        self.source = "show_mutex"
        self.reading(self.clock(), self._read_raw())  # the base for the first rates
        return "SHOW ENGINE INNODB MUTEX" + (" ('latch' monitor enabled for the session)"
                                             if self.latch_enabled_by_us else "")

    # -- reading --
    def _read_raw(self) -> dict[str, dict[str, float]]:
        if self.source == "pfs":
            where = " OR ".join(["EVENT_NAME LIKE %s"] * len(PFS_PATTERNS))
            rows = self.query("SELECT EVENT_NAME, COUNT_STAR, SUM_TIMER_WAIT FROM "
                              f"performance_schema.events_waits_summary_global_by_event_name WHERE {where}",
                              PFS_PATTERNS)
            raw: dict[str, dict[str, float]] = {}
            for name, count, timer in rows:
                entry = raw.setdefault(pfs_instrument(_text(name)), {"count": 0.0, "ms": 0.0})
                entry["count"] += _num(count) or 0.0
                entry["ms"] += (_num(timer) or 0.0) * PS_TO_MS
            return raw
        if self.source == "innodb_metrics":
            return parse_rwlock_metrics(self.query(
                "SELECT NAME, COUNT FROM information_schema.INNODB_METRICS WHERE NAME LIKE %s", ("innodb_rwlock_%",)))
        return parse_mutex_rows(self.query("SHOW ENGINE INNODB MUTEX"))

    def read(self) -> Reading:
        t = self.clock()
        raw = self._read_raw()
        return self.reading(t, raw)

    def reading(self, t: float, raw: Mapping[str, Mapping[str, float]]) -> Reading:
        """Per-second deltas per instrument -> top-N series + other + total (rates)."""
        prev, prev_t = self._prev, self._prev_t
        self._prev, self._prev_t = {k: dict(v) for k, v in raw.items()}, t
        r = Reading()
        if prev_t is None or t <= prev_t:
            return r
        dt = t - prev_t
        deltas: dict[str, dict[str, float]] = {}
        for inst, fields in raw.items():
            old = prev.get(inst, {})
            d = {}
            for k, v in fields.items():
                delta = v - old.get(k, 0.0)
                d[k] = max(delta, 0.0) / dt
            deltas[inst] = d
        # Rank by wait time where the source times waits, else by waits of any kind (OS + spin).
        if self.source == "pfs":
            ranks = {k: v.get("ms", 0.0) for k, v in deltas.items()}
        else:
            ranks = {k: v.get("count", 0.0) + v.get("spin_waits", 0.0) + v.get("spins", 0.0)
                     for k, v in deltas.items()}
        tracked = self.topn.update(ranks)
        other: dict[str, float] = {}
        total: dict[str, float] = {}
        for inst, d in deltas.items():
            for k, v in d.items():
                total[k] = total.get(k, 0.0) + v
                if inst in tracked:
                    r.rates[f"waits.{inst}.{k}"] = v
                else:
                    other[k] = other.get(k, 0.0) + v
        for inst in tracked:
            if inst not in deltas:
                r.rates[f"waits.{inst}.count"] = 0.0
        for k, v in total.items():
            r.rates[f"waits.other.{k}"] = other.get(k, 0.0)
            r.rates[f"waits.total.{k}"] = v
        return r

    # -- restoring --
    def _restore_pfs(self) -> None:
        set_instruments(self.query, list(self.changed_instruments))
        self.changed_instruments = []
        self.journal.settle(self._rows.pop(INSTRUMENTS, None))
        for name, enabled, row in self.changed_consumers:
            self.query("UPDATE performance_schema.setup_consumers SET ENABLED=%s WHERE NAME=%s", (enabled, name))
            self.journal.settle(row)
        self.changed_consumers = []

    def _restore_latch(self) -> None:
        if self.latch_enabled_by_us:
            self.query("SET GLOBAL innodb_monitor_disable = 'latch'")
            self.latch_enabled_by_us = False
        self.journal.settle(self._rows.pop("latch", None), "restored")

    def pending_restore(self) -> bool:
        return bool(self.changed_instruments or self.changed_consumers or self.latch_enabled_by_us)

    def close(self) -> None:
        try:
            self._restore_pfs()
            self._restore_latch()
        finally:
            self.drop()


def _chunks(items: list[Any], size: int) -> Iterable[list[Any]]:
    for i in range(0, len(items), size):
        yield items[i:i + size]
