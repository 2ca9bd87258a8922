"""SHOW GLOBAL STATUS -> `server.*`, with INNODB_METRICS filling in history list length and checkpoint age."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import mysql.connector

from tunebench.core.probe import ProbeUnavailable, Reading
from tunebench.mysql.connect import ServerInfo
from tunebench.mysql.connect import num_of as _num
from tunebench.mysql.connect import text_of as _text
from tunebench.mysql.probes.metrics import MetricsColumns, metrics_columns
from tunebench.mysql.probes.sql_probe import TIMED, Connector, SqlProbe, _why

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
    # Prepared statements executed (what the builtin engine and sysbench send): beside the statements probe's
    # stmt.prepared on MariaDB, which gives them no digest
    "Com_stmt_execute",
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
    if "Rows_read" not in status and "Innodb_rows_read" in status:
        # MySQL has no Rows_read (MariaDB's, all engines): InnoDB's own count is the rows/query of an InnoDB
        # workload; without it a MySQL session's efficiency table said n/a
        r.counters["server.rows_read"] = status["Innodb_rows_read"]
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


class StatusProbe(SqlProbe):
    """SHOW GLOBAL STATUS -> `server.*` (counters as rates, Threads_running & co as gauges)."""

    name = "status"

    def __init__(self, connect: Connector, info: ServerInfo):
        super().__init__(connect, info)
        self._fallback: tuple[str, ...] = ()
        self._metrics_cols: MetricsColumns | None = None

    def open(self) -> str:
        try:
            status = parse_status(self.read_sets(("SHOW GLOBAL STATUS", ()))[0])
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
        return f"SHOW GLOBAL STATUS{TIMED if self.timed else ''}, {found} series" + (
            f" (+{', '.join(self._fallback)} from INNODB_METRICS)" if self._fallback else "") + note

    def read(self) -> Reading:
        statements: list[tuple[str, tuple[str, ...]]] = [("SHOW GLOBAL STATUS", ())]
        if self._fallback and self._metrics_cols:
            marks = ",".join(["%s"] * len(self._fallback))
            statements.append((f"SELECT NAME, COUNT, {self._metrics_cols.enabled_col} FROM "
                               f"information_schema.INNODB_METRICS WHERE NAME IN ({marks})", self._fallback))
        rows, *more = self.read_sets(*statements)
        metrics: dict[str, float] = {}
        for name, count, enabled in (more[0] if more else ()):
            if MetricsColumns.is_enabled(enabled) and (v := _num(count)) is not None:
                metrics[_text(name)] = v
        r = status_reading(parse_status(rows), metrics)
        r.at = self.at
        r.uncertainty = self.uncertainty()
        return r
