"""Exports of a recorded session: one wide table on the 1-second timeline (CSV), or everything (JSON)."""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from tunebench.store.repo import SeriesData


def timeline_table(series: Mapping[str, SeriesData], t0: float, step: float = 1.0
                   ) -> tuple[list[str], list[tuple[float, list[float | None]]]]:
    """Every series on one grid of `step` seconds from t0: the mean of the samples in each cell.

    Engine intervals and probe samples are stamped on the same wall clock (end of the interval they
    describe); a cell [k, k+1) holds what ended in that second. Cells a series has no sample in are None.
    """
    names = sorted(series)
    cells: dict[int, dict[str, float]] = {}
    for name in names:
        d = series[name]
        if not len(d.t):
            continue
        idx = np.floor((d.t - t0) / step).astype(np.int64)
        order = np.argsort(idx, kind="stable")
        idx, vals = idx[order], d.v[order]
        uniq, starts = np.unique(idx, return_index=True)
        sums = np.add.reduceat(vals, starts)
        counts = np.diff(np.append(starts, len(idx)))
        for k, s, c in zip(uniq.tolist(), sums.tolist(), counts.tolist(), strict=True):
            cells.setdefault(k, {})[name] = s / c
    rows = [(k * step, [cells[k].get(n) for n in names]) for k in sorted(cells)]
    return names, rows


def to_csv(session: Mapping[str, Any], series: Mapping[str, SeriesData]) -> str:
    t0 = float(session["started_at"])
    names, rows = timeline_table(series, t0)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["elapsed_s", "t", *names])
    for elapsed, values in rows:
        w.writerow([f"{elapsed:g}", f"{t0 + elapsed:.0f}",
                    *("" if v is None or math.isnan(v) else f"{v:.6g}" for v in values)])
    return buf.getvalue()
