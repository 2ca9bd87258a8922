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


def _nearest(series: SeriesMap, name: str, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each second ending at `t`: the value of the probe's sample whose end is nearest (NaN when none is
    within half a second), per host series `name`."""
    pt, pv = (np.asarray(x, dtype=np.float64) for x in series[name])
    if not len(pt) or not len(t):
        return np.full(len(t), np.nan), np.zeros(len(t), dtype=bool)
    idx = np.clip(np.searchsorted(pt, t), 0, len(pt) - 1)
    prev = np.clip(idx - 1, 0, len(pt) - 1)
    near = np.where(np.abs(pt[prev] - t) < np.abs(pt[idx] - t), prev, idx)
    close = np.abs(pt[near] - t) <= 0.5
    return np.where(close, pv[near], np.nan), close


def busy_mask(series: SeriesMap, t: np.ndarray, threshold: float = BUSY_PCT) -> np.ndarray:
    """For each second ending at `t` (the engine's seconds), whether some host's other CPU passed `threshold` in
    it: the probe's sample whose second overlaps it most (its own end within half a second)."""
    out = np.zeros(len(t), dtype=bool)
    for name in other_series(series):
        v, close = _nearest(series, name, t)
        out |= close & (np.nan_to_num(v) > threshold)
    return out


def step_busy(series: SeriesMap, lo: float, hi: float, group: str = "main",
              threshold: float = BUSY_PCT) -> dict[str, Any] | None:
    """The busy seconds among the step's measured seconds (the engine's `client.<group>.tps` seconds wholly in
    [lo, hi], each judged by the probe's sample nearest its end): {seconds, of (those a probe sample covers),
    other_pct (the mean other CPU over the busy ones, else over all; % of the machine), host (the busiest),
    threshold_pct}; None when no host's other CPU was measured."""
    tps = series.get(f"client.{group}.tps")
    if tps is None:
        return None
    t = np.asarray(tps[0], dtype=np.float64)
    t = t[(t - 1.0 >= lo) & (t <= hi)]
    best: dict[str, Any] | None = None
    for name in other_series(series):
        v, close = _nearest(series, name, t)
        v = v[close]
        if not len(v):
            continue
        busy = v[v > threshold]
        found = {"seconds": len(busy), "of": len(v), "threshold_pct": threshold,
                 "other_pct": round(float(busy.mean() if len(busy) else v.mean()), 1),
                 "host": name[len("proc."):-len(SUFFIX)]}
        if best is None or (found["seconds"], found["other_pct"]) > (best["seconds"], best["other_pct"]):
            best = found
    return best


def busy_text(busy: Mapping[str, Any]) -> str:
    """"busy 12 of 20 s: 34 % of the CPU used by other processes" (on host h when not this machine)."""
    where = "" if busy.get("host") == "local" else f" on {busy['host']}"
    return (f"busy {busy['seconds']} of {busy['of']} s: {busy['other_pct']:.0f} % of the CPU used by other "
            f"processes{where}")
