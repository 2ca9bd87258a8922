"""Exports of a recorded session: one wide table on the 1-second timeline (CSV), or everything (JSON)."""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from tunebench.core.display import is_time
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


FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")  # what a spreadsheet reads as the start of a formula


def spreadsheet_text(cell: str) -> str:
    """A text cell a spreadsheet shows as text: one that would start a formula (a series named
    =HYPERLINK(...)) gets a leading apostrophe, as OWASP's CSV-injection advice has it."""
    return f"'{cell}" if cell.startswith(FORMULA_STARTS) else cell


def origin(session: Mapping[str, Any], series: Mapping[str, SeriesData]) -> float:
    """The time the session's table counts from: its start, or its first sample's when the start is no date."""
    t0 = session["started_at"]
    if is_time(t0):
        return float(t0)
    return min((float(d.t[0]) for d in series.values() if len(d.t)), default=0.0)


def to_csv(session: Mapping[str, Any], series: Mapping[str, SeriesData]) -> str:
    t0 = origin(session, series)
    names, rows = timeline_table(series, t0)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["elapsed_s", "t", *map(spreadsheet_text, names)])
    for elapsed, values in rows:
        w.writerow([f"{elapsed:g}", f"{t0 + elapsed:.0f}",
                    *("" if v is None or math.isnan(v) else f"{v:.6g}" for v in values)])
    return buf.getvalue()
