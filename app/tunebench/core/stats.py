"""Per-step summaries computed from a list of Intervals."""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from tunebench.core.interval import Interval


@dataclass(frozen=True, slots=True)
class StepSummary:
    """What one step measured, warm-up excluded."""

    group: str
    threads: int
    seconds: int
    tps: float
    qps: float
    tps_median: float
    cv: float | None
    lat_p50_ms: float | None
    lat_p95_ms: float | None
    lat_p99_ms: float | None
    lat_max_ms: float | None
    errors: float
    reconnects: float
    transactions: float
    qps_median: float = 0.0
    steady_skipped: int = 0  # leading seconds the steady-state detector left out (after the fixed warm-up)
    # the connections that ran (median over the measured seconds): fewer than `threads` when some could not open
    threads_running: float | None = None
    # Families of several transaction types: per type {tps, share, errors, rollbacks, retries, lat_p95_ms, ...}
    trx: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    # The family's headline figure beside TPS (TPC-C: NewOrders per minute, "NOPM"), or None
    headline: float | None = None
    headline_label: str = ""
    # Open-loop load (core/schedule.py): the target rate (None: closed loop); the latency figures above count
    # from each transaction's intended start, the service ones from its actual start; transactions over the
    # latency limit (late) and skipped for it
    rate: float | None = None
    service_p50_ms: float | None = None
    service_p95_ms: float | None = None
    service_p99_ms: float | None = None
    late: float = 0.0
    skipped: float = 0.0
    # the errors by server error code ("1213": deadlocks, ...; "0": no code known), summing to `errors`; empty where
    # the engine does not know them (sysbench)
    error_codes: Mapping[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, object]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, object]) -> StepSummary:
        names = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in d.items() if k in names})  # type: ignore[arg-type]


def codes_of(intervals: Sequence[Interval]) -> dict[str, float]:
    """The intervals' errors by server error code, summed (keys as text: a session's JSON)."""
    out: dict[str, float] = {}
    for iv in intervals:
        for code, n in iv.error_codes.items():
            out[str(int(code))] = out.get(str(int(code)), 0.0) + float(n)
    return {k: v for k, v in sorted(out.items(), key=lambda kv: -kv[1]) if v}


def steady_start(values: Sequence[float], min_keep: int = 3) -> int:
    """Number of leading seconds that are not yet at the steady level.

    The steady level is the median of the second half of the step; a leading second is transient when
    it is below that level by more than 3 robust standard deviations (1.4826 x MAD) and by more than
    5 % (a ramp up: cold caches, connections opening). At most half the step is cut; steps shorter than
    2 x `min_keep` are left alone. Seconds above the level are never cut, and nothing is cut when the second
    half has a stalled (zero) second: a collapse (a server lost or frozen mid-step) is not a warm-up, and
    cutting the measured load would leave only the zeros.
    """
    n = len(values)
    if n < 2 * min_keep:
        return 0
    tail = sorted(values[n // 2:])
    level = statistics.median(tail)
    if tail[0] <= 0 or level <= 0:
        return 0
    mad = statistics.median(abs(x - level) for x in tail)
    band = max(3 * 1.4826 * mad, 0.05 * abs(level))
    d = 0
    while d < n // 2 and level - values[d] > band:
        d += 1
    return d


def summarize(
    group: str,
    threads: int,
    intervals: Sequence[Interval],
    latency: Mapping[str, float | None] | None = None,
    detect_steady: bool = False,
    headline: tuple[str, float, str] | None = None,
    service: Mapping[str, float | None] | None = None,
) -> StepSummary:
    """Summarize a step's steady-state intervals.

    `latency` is the step's latency over the whole step when the engine has it exactly (merged
    histograms); otherwise per-interval percentiles are averaged, which is what sysbench users do
    with its per-second lines.
    """
    # an open-loop step's level is its rate: a second below it is the queue, not a ramp-up, and is kept
    open_loop = any(iv.rate is not None for iv in intervals)
    skipped = steady_start([iv.tps for iv in intervals]) if detect_steady and not open_loop else 0
    intervals = intervals[skipped:]
    n = len(intervals)
    tps = [iv.tps for iv in intervals]
    mean_tps = statistics.fmean(tps) if n else 0.0
    cv = statistics.pstdev(tps) / mean_tps if n > 1 and mean_tps > 0 else None
    if latency is None:
        latency = {}
        for key in ("p50", "p95", "p99"):
            vals = [v for iv in intervals if (v := iv.lat_ms.get(key)) is not None]
            latency[key] = statistics.fmean(vals) if vals else None
        maxes = [v for iv in intervals if (v := iv.lat_ms.get("max")) is not None]
        latency["max"] = max(maxes) if maxes else None
    return StepSummary(
        group=group,
        threads=threads,
        seconds=n,
        tps=mean_tps,
        qps=statistics.fmean(iv.qps for iv in intervals) if n else 0.0,
        tps_median=statistics.median(tps) if n else 0.0,
        cv=cv,
        lat_p50_ms=latency.get("p50"),
        lat_p95_ms=latency.get("p95"),
        lat_p99_ms=latency.get("p99"),
        lat_max_ms=latency.get("max"),
        errors=sum(iv.errors for iv in intervals),
        error_codes=codes_of(intervals),
        reconnects=sum(iv.reconnects for iv in intervals),
        transactions=sum(iv.tps for iv in intervals),
        qps_median=statistics.median(iv.qps for iv in intervals) if n else 0.0,
        steady_skipped=skipped,
        threads_running=statistics.median(iv.threads for iv in intervals) if n else None,
        trx=(trx := trx_summary(intervals)),
        headline=None if (rate := headline_rate(headline, trx, mean_tps)) is None or headline is None
        else round(rate * headline[1], 1),
        headline_label=headline[2] if rate is not None and headline is not None else "",
        **(open_loop_summary(intervals, service) if open_loop else {}),
    )


def open_loop_summary(intervals: Sequence[Interval], service: Mapping[str, float | None] | None
                      ) -> dict[str, Any]:
    """An open-loop step's own figures: its rate, service-time percentiles (exact when the engine merged the
    step's histograms, else the mean of the seconds'), late and skipped transactions."""
    if service is None:
        service = {}
        for key in ("p50", "p95", "p99"):
            vals = [v for iv in intervals if (v := iv.svc_lat_ms.get(key)) is not None]
            service[key] = statistics.fmean(vals) if vals else None
    rates = [iv.rate for iv in intervals if iv.rate is not None]
    return {"rate": rates[-1] if rates else None, "service_p50_ms": service.get("p50"),
            "service_p95_ms": service.get("p95"), "service_p99_ms": service.get("p99"),
            "late": float(sum(iv.late for iv in intervals)), "skipped": float(sum(iv.skipped for iv in intervals))}


def headline_rate(headline: tuple[str, float, str] | None, trx: Mapping[str, Mapping[str, Any]],
                  tps: float) -> float | None:
    """The rate of the headline's transaction type: its own from the per-type figures, or the group's TPS when the
    family reports no types (one type: iiBench's inserts are all its transactions)."""
    if headline is None:
        return None
    if headline[0] in trx:
        return float(trx[headline[0]]["tps"])
    return tps if not trx else None


def trx_summary(intervals: Sequence[Interval]) -> dict[str, dict[str, Any]]:
    """Per transaction type over the step: mean rate, share of all transactions, sums of errors/rollbacks/retries
    and the mean of the per-second latency percentiles."""
    names = list(dict.fromkeys(name for iv in intervals for name in iv.trx))
    if not names:
        return {}
    total = sum(iv.tps for iv in intervals)
    out: dict[str, dict[str, Any]] = {}
    for name in names:
        rows = [iv.trx[name] for iv in intervals if name in iv.trx]
        done = sum(r.get("tps") or 0.0 for r in rows)
        entry: dict[str, Any] = {"tps": round(done / len(intervals), 3),
                                 "share": round(done / total, 4) if total else None}
        for key in ("errors", "rollbacks", "retries"):
            entry[key] = sum(r.get(key) or 0.0 for r in rows)
        for key in ("p95", "p99"):
            vals = [v for r in rows if (v := r.get(f"lat.{key}")) is not None]
            entry[f"lat_{key}_ms"] = round(statistics.fmean(vals), 3) if vals else None
        out[name] = entry
    return out
