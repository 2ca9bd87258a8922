"""Exports of what the dashboard shows: PNG and SVG of the plots, CSV of the visible series (the plotted
curves over the visible time range, on the 1-second grid), and a Markdown report of a session with its
plots as PNG files next to it."""

from __future__ import annotations

import csv
import math
import time
from pathlib import Path
from typing import Any

import numpy as np
from PySide6.QtCore import QRect
from PySide6.QtGui import QPainter
from PySide6.QtSvg import QSvgGenerator
from PySide6.QtWidgets import QApplication

from tunebench.core.errors import ConfigError
from tunebench.core.results import markdown
from tunebench.store.export import timeline_table
from tunebench.store.repo import SeriesData
from tunebench.ui.dashboard import Dashboard


def _ready(dashboard: Dashboard, path: Path | str) -> Path:
    """The path, once its directory is known to exist, and the plots drawn up to date."""
    p = Path(path)
    if not p.parent.is_dir():
        raise ConfigError(f"cannot write {p}: no directory {p.parent}")
    dashboard.redraw()
    QApplication.processEvents()
    return p


def save_png(dashboard: Dashboard, path: Path | str) -> Path:
    p = _ready(dashboard, path)
    if not dashboard.graphics.grab().save(str(p), "PNG"):
        raise ConfigError(f"cannot write {p}")
    return p


def save_svg(dashboard: Dashboard, path: Path | str) -> Path:
    p = _ready(dashboard, path)
    view = dashboard.graphics
    gen = QSvgGenerator()
    gen.setFileName(str(p))
    gen.setSize(view.size())
    gen.setViewBox(QRect(0, 0, view.width(), view.height()))
    gen.setTitle("Tunebench")
    painter = QPainter(gen)
    try:
        view.render(painter)
    finally:
        painter.end()
    return p


def visible_series(dashboard: Dashboard) -> dict[str, SeriesData]:
    """The curves of the shown plots, cut to each plot's visible time range (x: seconds from the start)."""
    out: dict[str, SeriesData] = {}
    tl = dashboard.timeline
    for p in dashboard.panels:
        if not p.plot.isVisible() or p.plot.scene() is None:
            continue
        lo, hi = p.view.viewRange()[0]
        for name in p.curves:
            t, v = tl.series[name].view()
            keep = (t >= lo) & (t <= hi)
            out[name] = SeriesData(name, "", t[keep], v[keep])
    return out


def save_csv(dashboard: Dashboard, path: Path | str) -> Path:
    """Wide CSV: elapsed seconds, wall-clock time, then one column per visible series: the mean of each
    1-second cell, cells centred on the samples (so a sample stamped at 4.998 s and the next at 6.002 s
    never share one)."""
    p = _ready(dashboard, path)
    series = visible_series(dashboard)
    t0 = dashboard.timeline.t0 or 0.0
    firsts = [float(d.t[0]) for d in series.values() if len(d.t)]
    origin = (min(firsts) - 0.5) if firsts else 0.0
    names, rows = timeline_table(series, origin)
    with p.open("w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["elapsed_s", "t", *names])
        for offset, values in rows:
            elapsed = origin + offset + 0.5
            w.writerow([f"{elapsed:.3f}", f"{t0 + elapsed:.3f}",
                        *("" if v is None or math.isnan(v) else f"{v:.6g}" for v in values)])
    return p


def save_report(session: dict[str, Any], dashboard: Dashboard, path: Path | str) -> Path:
    """Markdown report: the session's tables (core.results.markdown), its events, and the dashboard as
    PNG and SVG files beside the report, linked from it."""
    p = _ready(dashboard, path)
    png = save_png(dashboard, p.with_name(p.stem + "-timeline.png"))
    lines = [markdown(session).rstrip(), ""]
    lines += [f"- started {time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(session['started_at']))}"
              + (f", {int(session['ended_at'] - session['started_at'])} s" if session.get("ended_at") else "")]
    for key in ("name", "tags", "notes"):
        if session.get(key):
            lines.append(f"- {key}: {session[key]}")
    lines += ["", "## Timeline", "", f"![timeline]({png.name})", ""]
    events = [e for e in session.get("events", []) if e["kind"] in ("step_start", "knob", "mark", "restart", "config")]
    if events:
        lines += ["## Events", "", "| time | kind | event |", "|---|---|---|"]
        t0 = float(session["started_at"])
        for e in events:
            lines.append(f"| +{e['t'] - t0:.0f} s | {e['kind']} | {e['label']} |")
        lines.append("")
    series = dashboard.timeline.series
    shown = sorted({n for panel in dashboard.panels for n in panel.curves})
    if shown:
        lines += ["## Series shown", "", "| series | min | mean | max |", "|---|---:|---:|---:|"]
        for n in shown:
            v = series[n].view()[1]
            v = v[np.isfinite(v)]
            if len(v):
                lines.append(f"| {n} | {v.min():,.3f} | {v.mean():,.3f} | {v.max():,.3f} |")
        lines.append("")
    p.write_text("\n".join(lines))
    return p


FILTERS = {"png": "PNG image (*.png)", "svg": "SVG image (*.svg)", "csv": "CSV (*.csv)", "md": "Markdown (*.md)"}


def export(kind: str, dashboard: Dashboard, path: Path | str, session: dict[str, Any] | None = None) -> Path:
    """`kind` (png, svg, csv, md) of what the dashboard shows to `path`; md needs the recorded `session`."""
    if kind == "png":
        return save_png(dashboard, path)
    if kind == "svg":
        return save_svg(dashboard, path)
    if kind == "csv":
        return save_csv(dashboard, path)
    if session is None:
        raise ConfigError("a report is of a recorded session: replay one or finish a run first")
    return save_report(session, dashboard, path)
