"""The one record every load engine emits: one Interval per client group per second."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from tunebench.core.kinds import EventKind

LATENCY_KEYS = ("p50", "p95", "p99", "max")


@dataclass(frozen=True, slots=True)
class Interval:
    """One second of one client group, like a sysbench `--report-interval=1` line, extended.

    `t` is the wall-clock time (epoch seconds) at the end of the second. Rates are per second.
    `lat_ms` maps p50/p95/p99/max to milliseconds, or None where the engine cannot know it
    (sysbench reports a single percentile per interval).
    """

    t: float
    group: str
    threads: int
    tps: float
    qps: float
    reads: float
    writes: float
    other: float
    lat_ms: Mapping[str, float | None] = field(default_factory=dict)
    errors: float = 0.0
    reconnects: float = 0.0
    # Per transaction type, for families of several (TPC-C: new_order, payment, ...): name -> {"tps",
    # "errors", "rollbacks", "retries", "lat.p95", ...}; empty for one-type families (OLTP).
    trx: Mapping[str, Mapping[str, float | None]] = field(default_factory=dict)
    # Open-loop load (core/schedule.py), None/empty in closed loop: the target rate, the service-time percentiles
    # (`lat_ms` then counts from each transaction's intended start, queue wait included), the transactions due
    # and not started at the second's end and how late the oldest of them is, those over the latency limit
    # (late) and those skipped for it; `dropped`: the backlog the warm-up (or the ramp) left, dropped in this second
    # (not started, ever: the measured seconds start without it).
    rate: float | None = None
    svc_lat_ms: Mapping[str, float | None] = field(default_factory=dict)
    backlog: float | None = None
    lag_ms: float | None = None
    late: float = 0.0
    skipped: float = 0.0
    dropped: float = 0.0
    # Where the engine really took this second's counts (epoch seconds), when it knows and it is on this machine's
    # clock (the builtin engine and sysbench run here; None from client hosts): a builtin worker takes them when it
    # wakes after the second's deadline, late when the machine is busy, and a tick counts from the last take to
    # this one; sysbench's report hook reads the clock as it takes them. Kept as `edge_ms`, how late after `t`: a
    # starved load generator shows there, and a count over a span uses the seconds' real edges.
    edge: float | None = None
    # The second's errors by server error code (1213 deadlock, 1205 lock wait timeout, ...; 0: no code known), summing
    # to `errors`; empty where the engine does not know them (sysbench reports a count only)
    error_codes: Mapping[int, float] = field(default_factory=dict)

    def series(self) -> dict[str, float]:
        """The interval as named series values (DESIGN.md naming), skipping unknown latencies."""
        prefix = f"client.{self.group}."
        out = {
            prefix + "threads": float(self.threads),
            prefix + "tps": self.tps,
            prefix + "qps": self.qps,
            prefix + "reads": self.reads,
            prefix + "writes": self.writes,
            prefix + "other": self.other,
            prefix + "errors": self.errors,
            prefix + "reconnects": self.reconnects,
        }
        for key in LATENCY_KEYS:
            value = self.lat_ms.get(key)
            if value is not None:
                out[f"{prefix}lat.{key}"] = value
        if self.rate is not None:
            out[prefix + "rate"] = self.rate
            out[prefix + "late"] = self.late
            out[prefix + "skipped"] = self.skipped
            if self.dropped:
                out[prefix + "dropped"] = self.dropped
            if self.backlog is not None:
                out[prefix + "backlog"] = self.backlog
            if self.lag_ms is not None:
                out[prefix + "lag_ms"] = self.lag_ms
            for key in LATENCY_KEYS:
                value = self.svc_lat_ms.get(key)
                if value is not None:
                    out[f"{prefix}svc.lat.{key}"] = value
        if self.edge is not None:
            out[prefix + "edge_ms"] = (self.edge - self.t) * 1000.0
        for code, n in self.error_codes.items():
            out[f"{prefix}errcode.{int(code)}"] = float(n)
        for name, values in self.trx.items():
            for key, value in values.items():
                if value is not None:
                    out[f"{prefix}trx.{name}.{key}"] = value
        return out


def is_trx_series(name: str) -> bool:
    """client.<group>.trx.<type>.<metric>: one transaction type's series, not its group's."""
    parts = name.split(".", 3)
    return len(parts) == 4 and parts[0] == "client" and parts[2] == "trx"


@dataclass(frozen=True, slots=True)
class Event:
    """Something that happened at a point on the session clock: step start/end, knob change, error, gap."""

    t: float
    kind: EventKind
    label: str
    data: Mapping[str, object] = field(default_factory=dict)
