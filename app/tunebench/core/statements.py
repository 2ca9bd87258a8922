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


def _arrays(series: Mapping[str, tuple[Any, Any]], name: str, lo: float, hi: float
            ) -> tuple[np.ndarray, np.ndarray]:
    if name not in series:
        return np.empty(0), np.empty(0)
    t, v = (np.asarray(a, dtype=np.float64) for a in series[name])
    keep = (t >= lo) & (t <= hi) & np.isfinite(v)
    return t[keep], v[keep]


def _at(t: np.ndarray, other: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """`other`'s values at the times `t` (NaN where it has none): one read stamps a digest's three series alike (to
    the store's microsecond, give or take its rounding; reads are 0.25 s apart at the least)."""
    ot, ov = other
    out = np.full(len(t), np.nan)
    if len(ot):
        i = np.clip(np.searchsorted(ot, t), 1, max(1, len(ot) - 1))
        j = np.where(np.abs(ot[i - 1] - t) <= np.abs(ot[np.minimum(i, len(ot) - 1)] - t), i - 1,
                     np.minimum(i, len(ot) - 1))
        hit = np.abs(ot[j] - t) < 0.01
        out[hit] = ov[j[hit]]
    return out


def _one(series: Mapping[str, tuple[Any, Any]], d: str, lo: float, hi: float
         ) -> tuple[float, float, float, float, int] | None:
    """(mean calls/s, calls, time µs, rows examined, seconds) of series id `d` in [lo, hi]; None: no seconds."""
    t, calls = _arrays(series, f"{PREFIX}{d}.calls", lo, hi)
    if not len(t):
        return None
    lat = _at(t, _arrays(series, f"{PREFIX}{d}.lat_us", lo, hi))
    rows = np.nan_to_num(_at(t, _arrays(series, f"{PREFIX}{d}.rows_examined", lo, hi)))
    ran = (calls > 0) & np.isfinite(lat)
    n = float(calls[ran].sum())
    return float(calls.mean()), n, float((calls * lat)[ran].sum()), float((calls * rows)[ran].sum()), len(t)


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
    """One line of at most `width` characters; a long one keeps its start and its end (two statements on one table
    differ at the end: `... ORDER BY c`), joined by '…'."""
    one = " ".join(text.split())
    if len(one) <= width:
        return one
    tail = width // 3
    return one[: width - tail - 1] + "…" + one[-tail:]
