"""Busy seconds: the seconds in which the machine's CPU went elsewhere than the measurement.

`proc.<host>.other.cpu` (hosts/telemetry.ProcessCpuProbe) is what a host's CPUs spent outside the server and
Tunebench's own processes each second: other programs, the kernel's threads, steal (a neighbour on the
hypervisor). A second over BUSY_PCT of the machine on any host is a busy second: its TPS says as much about the
neighbour as about the server. A step says how many of its measured seconds were busy and how much CPU other
processes took then; verdicts leave them out (core/verdict.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

SeriesMap = Mapping[str, tuple[Any, Any]]  # name -> (t, v), as core.verdict's

BUSY_PCT = 10.0  # % of the whole machine (all CPUs) used outside the measurement: a busy second
SUFFIX = ".other.cpu"


def other_series(names: Any) -> list[str]:
    """The per-host `proc.<host>.other.cpu` series among `names`."""
    return sorted(n for n in names if n.startswith("proc.") and n.endswith(SUFFIX))


def busy_mask(series: SeriesMap, t: np.ndarray, threshold: float = BUSY_PCT) -> np.ndarray:
    """For each second ending at `t` (the engine's seconds), whether some host's other CPU passed `threshold` in
    it: the probe's sample whose second overlaps it most (its own end within half a second)."""
    out = np.zeros(len(t), dtype=bool)
    for name in other_series(series):
        pt, pv = (np.asarray(x, dtype=np.float64) for x in series[name])
        if not len(pt):
            continue
        idx = np.clip(np.searchsorted(pt, t), 0, len(pt) - 1)
        prev = np.clip(idx - 1, 0, len(pt) - 1)
        near = np.where(np.abs(pt[prev] - t) < np.abs(pt[idx] - t), prev, idx)
        close = np.abs(pt[near] - t) <= 0.5
        out |= close & (pv[near] > threshold)
    return out


def step_busy(series: SeriesMap, lo: float, hi: float, threshold: float = BUSY_PCT) -> dict[str, Any] | None:
    """The busy seconds of [lo, hi] (a step's measured seconds): {seconds, of, other_pct (the mean other CPU over
    the busy ones, % of the machine), host (the busiest)}; None when no host's other CPU was measured."""
    best: dict[str, Any] | None = None
    for name in other_series(series):
        pt, pv = (np.asarray(x, dtype=np.float64) for x in series[name])
        keep = (pt - 1.0 >= lo - 0.5) & (pt <= hi + 0.5)
        v = pv[keep]
        if not len(v):
            continue
        busy = v[v > threshold]
        host = name[len("proc."):-len(SUFFIX)]
        found = {"seconds": len(busy), "of": len(v), "threshold_pct": threshold,
                 "other_pct": round(float(busy.mean()), 1) if len(busy) else round(float(v.mean()), 1),
                 "host": host}
        if best is None or (found["seconds"], found["other_pct"]) > (best["seconds"], best["other_pct"]):
            best = found
    return best


def busy_text(busy: Mapping[str, Any]) -> str:
    """"busy 12 of 20 s: 34 % of the CPU used by other processes" (on host h when not this machine)."""
    where = "" if busy.get("host") == "local" else f" on {busy['host']}"
    return (f"busy {busy['seconds']} of {busy['of']} s: {busy['other_pct']:.0f} % of the CPU used by other "
            f"processes{where}")
