"""InnoDB mutex / rw-lock / sx-lock waits -> `waits.*`, from performance_schema, INNODB_METRICS or
SHOW ENGINE INNODB MUTEX, whichever this server has."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import mysql.connector

from tunebench.core.probe import ProbeUnavailable, Reading, TopN, name_part
from tunebench.mysql.connect import ServerInfo, query_all
from tunebench.mysql.connect import num_of as _num
from tunebench.mysql.connect import text_of as _text
from tunebench.mysql.probes.metrics import MetricsColumns, metrics_columns
from tunebench.mysql.probes.settings import MONITOR, PfsSwitches
from tunebench.mysql.probes.sql_probe import (
    Connector,
    NotThisFlavor,
    SettingsJournal,
    SqlProbe,
    _why,
)

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
        self.pfs = PfsSwitches(self.journal)  # the consumers and instruments it switched on
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
            self.pfs.enable(self.query, off_consumers, off)
        except mysql.connector.Error as exc:
            note = f"; could not enable the rest ({_why(exc, 'UPDATE on performance_schema')})"
        if off_consumers and len(self.pfs.consumers) < len(off_consumers):
            self._restore_pfs()
            raise ProbeUnavailable("performance_schema consumer global_instrumentation is off and cannot be "
                                   "enabled by this account")
        usable = len(instruments) - len(off) + len(self.pfs.instruments)
        if usable == 0:
            raise ProbeUnavailable("the InnoDB synch instruments are disabled and cannot be enabled" + note)
        self.source = "pfs"
        self._base()  # the base for the first rates
        return (f"performance_schema, {usable} InnoDB mutex/rwlock/sxlock instruments"
                + (f" ({len(self.pfs.instruments)} enabled for the session; instruments enabled at runtime "
                   "only count latches created afterwards)" if self.pfs.instruments else "") + note)

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
        self._base()  # the base for the first rates
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
        self._base()  # the base for the first rates
        return "SHOW ENGINE INNODB MUTEX" + (" ('latch' monitor enabled for the session)"
                                             if self.latch_enabled_by_us else "")

    # -- reading --
    def _read_raw(self) -> dict[str, dict[str, float]]:
        if self.source == "pfs":
            where = " OR ".join(["EVENT_NAME LIKE %s"] * len(PFS_PATTERNS))
            rows = self.read_sets(("SELECT EVENT_NAME, COUNT_STAR, SUM_TIMER_WAIT FROM "
                                   f"performance_schema.events_waits_summary_global_by_event_name WHERE {where}",
                                   PFS_PATTERNS))[0]
            raw: dict[str, dict[str, float]] = {}
            for name, count, timer in rows:
                entry = raw.setdefault(pfs_instrument(_text(name)), {"count": 0.0, "ms": 0.0})
                entry["count"] += _num(count) or 0.0
                entry["ms"] += (_num(timer) or 0.0) * PS_TO_MS
            return raw
        if self.source == "innodb_metrics":
            rwlocks = ("SELECT NAME, COUNT FROM information_schema.INNODB_METRICS WHERE NAME LIKE %s",
                       ("innodb_rwlock_%",))
            return parse_rwlock_metrics(self.read_sets(rwlocks)[0])
        return parse_mutex_rows(self.read_sets(("SHOW ENGINE INNODB MUTEX", ()))[0])

    def _base(self) -> None:
        raw = self._read_raw()
        self.reading(self._instant(), raw)

    def _instant(self) -> float:
        """The instant of the last read for its rates: the server's, where the read was timed."""
        return sum(self.server_span) / 2 if self.server_span is not None else self.clock()

    def read(self) -> Reading:
        raw = self._read_raw()
        r = self.reading(self._instant(), raw)
        r.at = self.at
        r.uncertainty = self.uncertainty()
        return r

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

    def reapply(self) -> None:
        """A restarted server: the consumers and instruments this probe enabled (and the latch monitor) again."""
        conn = self.conn()
        self.pfs.reapply(conn)
        if self.latch_enabled_by_us:
            query_all(conn, "SET GLOBAL innodb_monitor_enable = 'latch'")

    # -- restoring --
    def _restore_pfs(self) -> None:
        self.pfs.restore(self.query)

    def _restore_latch(self) -> None:
        if self.latch_enabled_by_us:
            self.query("SET GLOBAL innodb_monitor_disable = 'latch'")
            self.latch_enabled_by_us = False
        self.journal.settle(self._rows.pop("latch", None), "restored")

    def pending_restore(self) -> bool:
        return self.pfs.pending or self.latch_enabled_by_us

    def close(self) -> None:
        try:
            self._restore_pfs()
            self._restore_latch()
        finally:
            self.drop()
