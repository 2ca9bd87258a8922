"""The `statements` probe's arithmetic (no I/O): per-second deltas of the statement digest table with gaps where a
row was reset, and what a span of its series says per statement (calls/s, mean latency, rows examined per call,
share of the statements' time). The probe, the Statements panel and `sessions diff` all use it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

PREFIX = "stmt."
# Not digests: the statements of digests outside the top ones, the prepared statements a server executes without
# a digest (MariaDB), and all of them.
OTHER, PREPARED, TOTAL = "other", "prepared", "total"
BUCKETS = (OTHER, PREPARED, TOTAL)
BUCKET_TEXT = {OTHER: "(every other statement)",
               PREPARED: "(prepared statements: MariaDB keeps no per-statement figures for them)"}
FIELDS = ("calls", "lat_us", "rows_examined")
PS_TO_US = 1e-6
TEXT_MAX = 1024  # characters of a digest text kept (performance_schema_max_digest_length is 1024 by default)


def digest_id(digest: str) -> str:
    """The series name part of a digest: its first 12 hex digits (MySQL's 64, MariaDB's 32)."""
    return "".join(c for c in digest.lower() if c in "0123456789abcdef")[:12] or "_"


@dataclass(frozen=True, slots=True)
class DigestRow:
    """One row of events_statements_summary_by_digest (or the prepared-statements row of the global table), its
    cumulative figures; `key` tells rows apart (schema + digest), `first_seen` tells a row re-created since."""

    key: str
    digest: str  # the series id (digest_id), or a bucket name
    count: float
    timer_ps: float
    rows_examined: float
    first_seen: str


@dataclass(frozen=True, slots=True)
class Delta:
    calls: float
    time_us: float
    rows_examined: float

    def add(self, other: Delta) -> Delta:
        return Delta(self.calls + other.calls, self.time_us + other.time_us, self.rows_examined + other.rows_examined)


ZERO = Delta(0.0, 0.0, 0.0)


def deltas(prev: Mapping[str, DigestRow], rows: Iterable[DigestRow], seen_before: bool
           ) -> tuple[dict[str, Delta], set[str]]:
    """Per series id: what its rows did since `prev` (summed over schemas), and the ids whose figures are unknown
    this time (a row that went down, was re-created - TRUNCATE, a restart - or vanished): those get no sample, never
    a negative or partial one. A row new since the last read counts from zero (it did not exist then), unless there
    was no last read (`seen_before` False: the first read is only the base)."""
    out: dict[str, Delta] = {}
    unknown: set[str] = set()
    now_keys = set()
    for r in rows:
        now_keys.add(r.key)
        old = prev.get(r.key)
        if old is None:
            if not seen_before:
                continue
            d = Delta(r.count, r.timer_ps * PS_TO_US, r.rows_examined)
        elif old.first_seen != r.first_seen or r.count < old.count or r.timer_ps < old.timer_ps \
                or r.rows_examined < old.rows_examined:
            unknown.add(r.digest)
            continue
        else:
            d = Delta(r.count - old.count, (r.timer_ps - old.timer_ps) * PS_TO_US, r.rows_examined - old.rows_examined)
        out[r.digest] = out.get(r.digest, ZERO).add(d)
    unknown |= {old.digest for k, old in prev.items() if k not in now_keys}
    for k in unknown:
        out.pop(k, None)
    return out, unknown


def samples(d: str, delta: Delta, dt: float) -> tuple[dict[str, float], dict[str, float]]:
    """(rates, gauges) of one series id for one read: calls/s; mean latency and rows examined per call when it ran."""
    rates = {f"{PREFIX}{d}.calls": delta.calls / dt}
    gauges = {}
    if delta.calls > 0:
        gauges[f"{PREFIX}{d}.lat_us"] = delta.time_us / delta.calls
        gauges[f"{PREFIX}{d}.rows_examined"] = delta.rows_examined / delta.calls
    return rates, gauges


# -- a span of the recorded series --
@dataclass(frozen=True, slots=True)
class Statement:
    """One statement (or bucket) over a span: calls/s (mean of its seconds), mean latency and rows examined per
    call (weighted by the calls of each second), and its share of all statements' time in the span."""

    digest: str
    text: str
    calls: float
    lat_us: float | None
    rows_examined: float | None
    time_pct: float | None
    seconds: int


def _span(series: Mapping[str, tuple[Any, Any]], name: str, lo: float, hi: float) -> dict[float, float]:
    if name not in series:
        return {}
    t, v = (np.asarray(a, dtype=np.float64) for a in series[name])
    keep = (t >= lo) & (t <= hi) & np.isfinite(v)
    return dict(zip(t[keep].tolist(), v[keep].tolist(), strict=True))


def _one(series: Mapping[str, tuple[Any, Any]], d: str, lo: float, hi: float
         ) -> tuple[float, float, float, float, int] | None:
    """(mean calls/s, calls, time µs, rows examined, seconds) of series id `d` in [lo, hi]; None: no seconds."""
    calls = _span(series, f"{PREFIX}{d}.calls", lo, hi)
    if not calls:
        return None
    lat, rows = _span(series, f"{PREFIX}{d}.lat_us", lo, hi), _span(series, f"{PREFIX}{d}.rows_examined", lo, hi)
    n = time_us = rows_ex = 0.0
    for t, c in calls.items():
        if c > 0 and t in lat:  # the same read stamps all three
            n += c
            time_us += c * lat[t]
            rows_ex += c * rows.get(t, 0.0)
    return float(np.mean(list(calls.values()))), n, time_us, rows_ex, len(calls)


def digests_of(names: Iterable[str]) -> list[str]:
    """The series ids (digests and buckets) a session or timeline has."""
    return sorted({n[len(PREFIX):].rsplit(".", 1)[0] for n in names if n.startswith(PREFIX) and n.endswith(".calls")})


def statements(series: Mapping[str, tuple[Any, Any]], lo: float, hi: float, texts: Mapping[str, str],
               top: int | None = None) -> list[Statement]:
    """The statements of [lo, hi], the most time first (the buckets after the digests; `total` last)."""
    whole = _one(series, TOTAL, lo, hi)
    total_us = whole[2] if whole else 0.0
    out = []
    for d in digests_of(series):
        got = _one(series, d, lo, hi)
        if got is None:
            continue
        mean, n, time_us, rows_ex, secs = got
        out.append(Statement(d, texts.get(d) or BUCKET_TEXT.get(d, d), mean, time_us / n if n else None,
                             rows_ex / n if n else None, 100.0 * time_us / total_us if total_us else None, secs))
    digests = sorted((s for s in out if s.digest not in BUCKETS), key=lambda s: -(s.calls * (s.lat_us or 0.0)))
    buckets = sorted((s for s in out if s.digest in BUCKETS), key=lambda s: BUCKETS.index(s.digest))
    return (digests[:top] if top is not None else digests) + buckets


def texts_of(events: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """Series id -> digest text, from a session's `statement` events (as the store gives them back)."""
    out = {}
    for e in events:
        if e.get("kind") == "statement":
            data = e.get("data") or {}
            if isinstance(data, Mapping) and isinstance(data.get("digest"), str):
                out[data["digest"]] = str(data.get("text") or "")
    return out


def elide(text: str, width: int = 80) -> str:
    one = " ".join(text.split())
    return one if len(one) <= width else one[: width - 1] + "…"
