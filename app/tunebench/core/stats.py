"""Per-step summaries computed from a list of Intervals."""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass

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
    steady_skipped: int = 0  # leading seconds the steady-state detector left out (after the fixed warm-up)

    def to_dict(self) -> dict[str, object]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, object]) -> StepSummary:
        names = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in d.items() if k in names})  # type: ignore[arg-type]


def steady_start(values: Sequence[float], min_keep: int = 3) -> int:
    """Index where the steady state begins, by MSER (marginal standard error rule, White 1997).

    Picks the truncation d (at most half the series) minimising sum((x[d:] - mean)^2) / (n - d)^2: a
    ramp-up at the start inflates the spread more than dropping its seconds costs in sample size.
    """
    n = len(values)
    if n < 2 * min_keep:
        return 0
    best_d, best = 0, float("inf")
    for d in range(n // 2 + 1):
        tail = values[d:]
        m = statistics.fmean(tail)
        score = sum((x - m) ** 2 for x in tail) / (len(tail) ** 2)
        if score < best * 0.999999:  # prefer the smaller cut on ties
            best_d, best = d, score
    return best_d


def summarize(
    group: str,
    threads: int,
    intervals: Sequence[Interval],
    latency: Mapping[str, float | None] | None = None,
    detect_steady: bool = False,
) -> StepSummary:
    """Summarize a step's steady-state intervals.

    `latency` is the step's latency over the whole step when the engine has it exactly (merged
    histograms); otherwise per-interval percentiles are averaged, which is what sysbench users do
    with its per-second lines.
    """
    skipped = steady_start([iv.tps for iv in intervals]) if detect_steady else 0
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
        reconnects=sum(iv.reconnects for iv in intervals),
        transactions=sum(iv.tps for iv in intervals),
        steady_skipped=skipped,
    )
