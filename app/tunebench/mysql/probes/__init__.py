"""Probes that speak SQL: server status counters, InnoDB mutex/rw-lock waits, INNODB_METRICS.

Each probe owns one connection, opened by `open()` (which also decides, once, whether the probe can work
on this server and says why not) and re-opened after a lost connection. Anything a probe changes on the
server (performance_schema instruments and consumers, InnoDB monitor counters) is recorded when changed
and put back by `close()`.
"""

from tunebench.mysql.probes.metrics import METRICS, MetricsColumns, MetricsProbe, metrics_columns
from tunebench.mysql.probes.settings import CONSUMER, INSTRUMENTS, MONITOR, set_instruments, undo_probe_setting
from tunebench.mysql.probes.sql_probe import (
    ER_ACCESS_DENIED,
    ER_NO_TABLE,
    LOST_CONNECTION,
    Connector,
    NoJournal,
    NotThisFlavor,
    SettingsJournal,
    SqlProbe,
)
from tunebench.mysql.probes.status import (
    CKPT_METRICS,
    CKPT_STATUS_MARIADB,
    CKPT_STATUS_MYSQL,
    HLL_METRIC,
    HLL_STATUS,
    STATUS_COUNTERS,
    STATUS_GAUGES,
    StatusProbe,
    parse_status,
    status_reading,
)
from tunebench.mysql.probes.waits import (
    PFS_CONSUMERS,
    PFS_PATTERNS,
    PS_TO_MS,
    RWLOCK_METRICS,
    WaitsProbe,
    mutex_instrument,
    parse_mutex_rows,
    parse_mutex_status,
    parse_rwlock_metrics,
    pfs_instrument,
)

__all__ = [
    "CKPT_METRICS", "CKPT_STATUS_MARIADB", "CKPT_STATUS_MYSQL", "CONSUMER", "ER_ACCESS_DENIED", "ER_NO_TABLE",
    "HLL_METRIC", "HLL_STATUS", "INSTRUMENTS", "LOST_CONNECTION", "METRICS", "MONITOR", "PFS_CONSUMERS",
    "PFS_PATTERNS", "PS_TO_MS", "RWLOCK_METRICS", "STATUS_COUNTERS", "STATUS_GAUGES", "Connector", "MetricsColumns",
    "MetricsProbe", "NoJournal", "NotThisFlavor", "SettingsJournal", "SqlProbe", "StatusProbe", "WaitsProbe",
    "metrics_columns", "mutex_instrument", "parse_mutex_rows", "parse_mutex_status", "parse_rwlock_metrics",
    "parse_status", "pfs_instrument", "set_instruments", "status_reading", "undo_probe_setting",
]
