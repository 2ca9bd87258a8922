"""Statement digests -> `stmt.*`: performance_schema.events_statements_summary_by_digest read every interval and
diffed here (per-second calls, mean latency and rows examined per call of the busiest digests, the rest as
`stmt.other`), each digest's text once per session as a `statement` event.

MariaDB digests only the statements sent as text: the prepared statements it executes (COM_STMT_EXECUTE, what
the builtin engine and sysbench send) appear in no digest, only as `statement/com/Execute` of the global summary;
they are `stmt.prepared` there, so the statements' total still adds up.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

import mysql.connector

from tunebench.core.interval import Event
from tunebench.core.probe import ProbeUnavailable, Reading, TopN
from tunebench.core.statements import (
    OTHER,
    PREPARED,
    TEXT_MAX,
    TOTAL,
    ZERO,
    Delta,
    DigestRow,
    deltas,
    digest_id,
    samples,
)
from tunebench.mysql.connect import ServerInfo
from tunebench.mysql.connect import num_of as _num
from tunebench.mysql.connect import text_of as _text
from tunebench.mysql.probes.settings import PfsSwitches
from tunebench.mysql.probes.sql_probe import TIMED, Connector, SettingsJournal, SqlProbe, _why

CONSUMERS = ("global_instrumentation", "statements_digest")
INSTRUMENT_PATTERN = "statement/%"
TABLE = "performance_schema.events_statements_summary_by_digest"
COLUMNS = "SCHEMA_NAME, DIGEST, COUNT_STAR, SUM_TIMER_WAIT, SUM_ROWS_EXAMINED, FIRST_SEEN"
EXECUTE = "statement/com/Execute"
TOP = 10
# What a read may cost, in seconds: a digest table so big that its read takes longer is read every few intervals
# (measured on ~550 digests: 2-12 ms a read on MariaDB 10.11, MySQL 9.7, MariaDB 11.8; the table holds up to
# performance_schema_digests_size, 10,000 by default)
BUDGET, MAX_EVERY = 0.05, 10


class StatementsProbe(SqlProbe):
    """The `top` digests by statement time get series of their own (and keep them: TopN), the others are summed
    into `stmt.other`; `stmt.total` is every statement. A digest whose row was reset since the last read (TRUNCATE
    by someone, a restart) has no sample that second, nor have the buckets it counts in."""

    name = "statements"

    def __init__(self, connect: Connector, info: ServerInfo, top: int = TOP, journal: SettingsJournal | None = None):
        super().__init__(connect, info, journal)
        self.topn = TopN(top)
        self.prepared_bucket = info.flavor == "mariadb"
        self._prev: dict[str, DigestRow] = {}
        self._prev_t: float | None = None
        self._full: dict[str, str] = {}  # series id -> the full digest (for its text)
        self._told: set[str] = set()  # series ids whose text is in the session already
        self._said_full = False
        self._said_slow = False
        self._skipped = 0
        self.every = 1
        self._took: list[float] = []  # how long the last reads took
        self.pfs = PfsSwitches(self.journal)
        self.clock: Callable[[], float] = time.monotonic

    # -- opening --
    def open(self) -> str:
        if not self.info.performance_schema:
            hint = " (static on MariaDB: restart the server with performance_schema=ON)" \
                if self.info.flavor == "mariadb" else ""
            raise ProbeUnavailable(f"performance_schema is OFF{hint}")
        try:
            self.query(f"SELECT {COLUMNS}, DIGEST_TEXT FROM {TABLE} LIMIT 1")
            consumers = self.query("SELECT NAME, ENABLED FROM performance_schema.setup_consumers WHERE NAME IN "
                                   f"({','.join(['%s'] * len(CONSUMERS))})", CONSUMERS)
            instruments = self.query("SELECT NAME, ENABLED, TIMED FROM performance_schema.setup_instruments "
                                     "WHERE NAME LIKE %s", (INSTRUMENT_PATTERN,))
        except mysql.connector.Error as exc:
            raise ProbeUnavailable(f"{TABLE} not readable: {_why(exc, 'SELECT on performance_schema')}") from None
        if len(consumers) < len(CONSUMERS):
            raise ProbeUnavailable("performance_schema has no statements_digest consumer")
        off_consumers = [(_text(n), _text(e)) for n, e in consumers if _text(e) != "YES"]
        off = [(_text(n), _text(e), _text(t)) for n, e, t in instruments if _text(e) != "YES" or _text(t) != "YES"]
        note = ""
        try:
            self.pfs.enable(self.query, off_consumers, off)
        except mysql.connector.Error as exc:
            note = f"; could not enable the rest ({_why(exc, 'UPDATE on performance_schema')})"
        if len(self.pfs.consumers) < len(off_consumers):
            self._restore()
            raise ProbeUnavailable(f"performance_schema consumer {off_consumers[0][0]} is off and cannot be enabled "
                                   "by this account")
        size = self.info.variables.get("performance_schema_digests_size", "?")
        rows = self._read_rows()  # (its time would be the base of a first rate over milliseconds: read() starts)
        return (f"{TABLE}{TIMED if self.timed else ''} ({len(rows)} digests now, room for {size})"
                + (f"; {len(self.pfs.instruments)} statement instruments enabled for the session"
                   if self.pfs.instruments else "")
                + ("; prepared statements (no digest on MariaDB) as stmt.prepared" if self.prepared_bucket else "")
                + note)

    # -- reading --
    def _read_rows(self) -> list[DigestRow]:
        out = []
        statements: list[tuple[str, tuple[str, ...]]] = [(f"SELECT {COLUMNS} FROM {TABLE}", ())]
        if self.prepared_bucket:
            statements.append(("SELECT COUNT_STAR, SUM_TIMER_WAIT, SUM_ROWS_EXAMINED FROM performance_schema."
                               "events_statements_summary_global_by_event_name WHERE EVENT_NAME = %s", (EXECUTE,)))
        digests, *prepared = self.read_sets(*statements)
        for schema, digest, count, timer, rows_ex, first in digests:
            full = _text(digest)
            # DIGEST NULL: the statements of new digests once the table is full (performance_schema_digests_size)
            d = digest_id(full) if full else OTHER
            if full:
                self._full.setdefault(d, full)
            elif not self._said_full and (_num(count) or 0) > 0:
                self._said_full = True
            out.append(DigestRow(f"{_text(schema)}\0{full}", d, _num(count) or 0.0, _num(timer) or 0.0,
                                 _num(rows_ex) or 0.0, _text(first)))
        if prepared:
            for count, timer, rows_ex in prepared[0]:
                out.append(DigestRow(PREPARED, PREPARED, _num(count) or 0.0, _num(timer) or 0.0,
                                     _num(rows_ex) or 0.0, ""))
        return out

    def read(self) -> Reading:
        r = Reading()
        self._skipped += 1
        if self._skipped < self.every:  # a big digest table: read every `every` intervals (the rates span them)
            return r
        self._skipped = 0
        t = self.clock()
        rows = self._read_rows()
        self._took = [*self._took[-2:], self.clock() - t]
        r.at = self.at
        r.uncertainty = self.uncertainty()
        if self.server_span is not None:  # the rates span the server's instants of the reads, not this machine's
            t = sum(self.server_span) / 2
        took = sorted(self._took)[len(self._took) // 2]  # the median of the last three: one slow read is no trend
        prev, prev_t = self._prev, self._prev_t
        self._prev, self._prev_t = {r.key: r for r in rows}, t
        every = min(MAX_EVERY, max(1, math.ceil(took / BUDGET))) if len(self._took) == 3 else 1
        if every > self.every and not self._said_slow:
            self._said_slow = True
            r.events.append(Event(time.time(), "note", f"statements: a read of the digest table ({len(rows)} rows) "
                                  f"took {took * 1000:.0f} ms: read every {every} intervals from now on",
                                  {"probe": self.name}))
        self.every = max(self.every, every)
        if prev_t is None or t <= prev_t:
            return r  # the first read is the base
        dt = t - prev_t
        per, unknown = deltas(prev, rows, seen_before=True)
        ranks = {d: v.time_us for d, v in per.items() if d not in (OTHER, PREPARED)}
        tracked = self.topn.update(ranks)
        other, total = per.get(OTHER, ZERO), ZERO
        for d, v in per.items():
            total = total.add(v)
            if d not in tracked and d not in (OTHER, PREPARED):
                other = other.add(v)
        untracked_unknown = any(d not in tracked for d in unknown)
        out: dict[str, Delta] = {d: per.get(d, ZERO) for d in tracked if d not in unknown}
        if not untracked_unknown:
            out[OTHER] = other
        if PREPARED in per:
            out[PREPARED] = per[PREPARED]
        if not unknown:
            out[TOTAL] = total
        for d, v in out.items():
            rates, gauges = samples(d, v, dt)
            r.rates.update(rates)
            r.gauges.update(gauges)
        r.events.extend(self._texts([d for d in tracked if d not in self._told]))
        if self._said_full and "full" not in self._told:
            self._told.add("full")
            r.events.append(Event(time.time(), "note", "statements: the digest table is full (performance_schema_"
                                  "digests_size): the statements of new digests are counted together in stmt.other",
                                  {"probe": self.name}))
        return r

    def _texts(self, new: list[str]) -> list[Event]:
        """A `statement` event for each digest newly given series: its text, said once per session."""
        if not new:
            return []
        fulls = [self._full[d] for d in new if d in self._full]
        rows = self.query(f"SELECT DIGEST, MAX(DIGEST_TEXT), GROUP_CONCAT(DISTINCT SCHEMA_NAME) FROM {TABLE} "
                          f"WHERE DIGEST IN ({','.join(['%s'] * len(fulls))}) GROUP BY DIGEST", tuple(fulls)) \
            if fulls else []
        found = {digest_id(_text(dg)): (_text(tx)[:TEXT_MAX], _text(sc)) for dg, tx, sc in rows}
        out = []
        now = time.time()
        for d in new:
            text, schema = found.get(d, ("", ""))
            self._told.add(d)
            out.append(Event(now, "statement", f"statement {d}: {' '.join(text.split())[:120]}",
                             {"probe": self.name, "digest": d, "full": self._full.get(d, ""), "text": text,
                              "schema": schema}))
        return out

    # -- restarts and restoring --
    def reapply(self) -> None:
        self.pfs.reapply(self.conn())

    def _restore(self) -> None:
        self.pfs.restore(self.query)

    def pending_restore(self) -> bool:
        return self.pfs.pending

    def close(self) -> None:
        try:
            self._restore()
        finally:
            self.drop()
