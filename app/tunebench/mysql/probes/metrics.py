"""INNODB_METRICS -> `innodb.*`: the chosen counters, enabled for the session where they are off."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import mysql.connector

from tunebench.core.probe import ProbeUnavailable, Reading
from tunebench.mysql.connect import ServerInfo, query_all
from tunebench.mysql.connect import num_of as _num
from tunebench.mysql.connect import text_of as _text
from tunebench.mysql.probes.settings import MONITOR
from tunebench.mysql.probes.sql_probe import ER_ACCESS_DENIED, Connector, SettingsJournal, SqlProbe, _why


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
        # LIMIT 1, not 0: MySQL checks the PROCESS privilege only when it fills the table (LIMIT 0 passed, and every
        # later read failed: "probe status failing" each second)
        cur.execute("SELECT * FROM information_schema.INNODB_METRICS LIMIT 1")
        cur.fetchall()
        return MetricsColumns.detect(d[0] for d in cur.description)
    finally:
        cur.close()


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

    def reapply(self) -> None:
        for name, _row in self.enabled_by_us:
            query_all(self.conn(), "SET GLOBAL innodb_monitor_enable = %s", (name,))

    def read(self) -> Reading:
        assert self.cols is not None, "open() first"
        marks = ",".join(["%s"] * len(self.names))
        rows = self.read_sets((f"SELECT NAME, COUNT, {self.cols.enabled_col} FROM information_schema.INNODB_METRICS "
                               f"WHERE NAME IN ({marks})", self.names))[0]
        r = Reading(at=self.at)
        off = []
        for name, count, enabled in rows:
            v = _num(count)
            n = _text(name)
            if not MetricsColumns.is_enabled(enabled):  # disabled (a restart, someone else): not counting, no 0
                off.append(n)
                continue
            if v is None:
                continue
            (r.gauges if self.catalog.get(n) == "gauge" else r.counters)["innodb." + n] = v
        mine = {name for name, _row in self.enabled_by_us}
        for n in off:  # ours, off again: on again, counting from the next read
            if n in mine:
                with contextlib.suppress(mysql.connector.Error):
                    self.query("SET GLOBAL innodb_monitor_enable = %s", (n,))
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
