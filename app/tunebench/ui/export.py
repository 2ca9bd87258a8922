"""Exports of the session on screen: PNG and SVG of the plots, CSV of the plotted series (1-second means), and a
Markdown report with a picture of the session beside it.

Every export holds the whole session unless the user asks for the visible range only, and says which in the
file (a title line on a picture, a comment line in a CSV, a line in the report). Whatever the view shows at
the moment (a zoom, a replay's play head halfway) is put back afterwards.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRect, QRectF, QSize, Qt
from PySide6.QtGui import QColor, QFont, QFontMetrics, QImage, QPainter
from PySide6.QtSvg import QSvgGenerator

from tunebench.core.display import local_time, seconds_between
from tunebench.core.errors import ConfigError
from tunebench.core.results import markdown, range_line, series_rows, settings_changed, title_line
from tunebench.store.export import spreadsheet_text, timeline_table
from tunebench.store.repo import SeriesData, Store
from tunebench.ui.dashboard import Dashboard
from tunebench.ui.empty_state import EmptyState
from tunebench.ui.export_vectors import clipped_to_views

Arrays = Mapping[str, tuple[np.ndarray, np.ndarray]]


@dataclass(frozen=True)
class Scope:
    """The part of the timeline an export holds: seconds from the start, and whether that is all of it."""

    lo: float
    hi: float
    whole: bool

    def line(self) -> str:
        return range_line(self.lo, self.hi, self.whole)


def recorded(dashboard: Dashboard) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Every sample of every series the timeline holds, not only up to a replay's play head."""
    tl = dashboard.timeline
    return {name: (buf.t, buf.v) if tl.head is not None else buf.view() for name, buf in tl.series.items()}


def scope(dashboard: Dashboard, visible: bool = False) -> Scope:
    """The whole session (a replay's end, or the live run so far), or what the plots show now."""
    tl = dashboard.timeline
    end = max([float(t[-1]) for t, _ in recorded(dashboard).values() if len(t)] + [tl.end, tl.x_max, 0.0])
    if not visible:
        return Scope(0.0, end, True)
    lo, hi = dashboard.panels[0].view.viewRange()[0]
    return Scope(max(0.0, float(lo)), min(end, float(hi)), False)


@contextmanager
def showing(dashboard: Dashboard, sc: Scope) -> Iterator[None]:
    """The plots drawn over `sc` (a replay's head at its end for the whole session), then as they were."""
    tl = dashboard.timeline
    head, following = tl.head, dashboard.follow_box.isChecked()
    x_range = dashboard.panels[0].view.viewRange()[0]
    try:
        if sc.whole:
            if head is not None:
                tl.seek(tl.end)
            dashboard.follow_box.setChecked(False)
            dashboard.set_x_range(sc.lo, max(sc.hi, sc.lo + 1))
        # no processEvents here: a timer run inside the export (the replay's tick, a redraw) would see the
        # head at the end and the whole range, or move them under the export
        dashboard.redraw()
        # the "No data yet" line checks a few times a second: not over the picture of a replay just opened
        for empty in dashboard.graphics.findChildren(EmptyState):
            empty.update_state()
        yield
    finally:
        if sc.whole:
            if head is not None:
                tl.seek(head)
            dashboard.set_x_range(*x_range)
            dashboard.follow_box.setChecked(following)
            dashboard.redraw()


def _ready(path: Path | str) -> Path:
    p = Path(path)
    if not p.parent.is_dir():
        raise ConfigError(f"cannot write {p}: no directory {p.parent}")
    return p


def heading(session: Mapping[str, Any] | None, sc: Scope) -> list[str]:
    """The picture's title lines: the session (or the live run) and the range it holds."""
    first = title_line(session) if session else "Live run (not recorded yet)"
    return [first, f"Range: {sc.line()}"]


def _heading_font(dashboard: Dashboard) -> QFont:
    f = QFont()
    f.setPointSizeF(10 * dashboard.font_scale)
    return f


WRAP = int(Qt.TextFlag.TextWordWrap)


def _heading_rects(dashboard: Dashboard, lines: list[str], width: int) -> list[QRect]:
    """Where each title line goes, wrapped to the picture's width (a sweep's knobs make a long line)."""
    metrics = QFontMetrics(_heading_font(dashboard))
    rects, y = [], 6
    for text in lines:
        r = metrics.boundingRect(QRect(8, y, width - 16, 10_000), WRAP, text)
        rects.append(QRect(8, y, width - 16, r.height()))
        y += r.height()
    return rects


def _heading_height(dashboard: Dashboard, lines: list[str], width: int) -> int:
    return _heading_rects(dashboard, lines, width)[-1].bottom() + 8


def _paint_heading(painter: QPainter, dashboard: Dashboard, lines: list[str], width: int) -> None:
    """The title lines across the top, on the plots' background."""
    painter.setFont(_heading_font(dashboard))
    painter.fillRect(QRectF(0, 0, width, _heading_height(dashboard, lines, width)),
                     QColor(dashboard.theme.plot_background))
    painter.setPen(QColor(dashboard.theme.plot_foreground))
    for rect, text in zip(_heading_rects(dashboard, lines, width), lines, strict=True):
        painter.drawText(rect, int(Qt.AlignmentFlag.AlignLeft) | WRAP, text)


Key = list[tuple[str, list[tuple[str, QColor]]]]  # per plot: its title, every curve's (name, colour)


def legend_key(dashboard: Dashboard) -> Key:
    """Every curve of every plot shown, by name in full: a picture's legend cannot say "+5 more" or cut a name (a
    curve no one can identify). Empty when every plot's own legend shows all its names whole."""
    key: Key = []
    complete = True
    for panel in dashboard.panels:
        if not panel.plot.isVisible():  # a plot the user hid is not in the picture
            continue
        entries = []
        for sample, label in panel.legend.items:
            name = str(sample.item.name() or label.text)
            pen = sample.item.opts.get("pen") if hasattr(sample.item, "opts") else None
            colour = pg.mkPen(pen).color() if pen is not None else QColor(dashboard.theme.plot_foreground)
            entries.append((name, colour))
            complete = complete and label.isVisible() and label.text == name
        if entries:
            key.append((panel.title, entries))
    return [] if complete else key


SWATCH = 14


def _key_layout(dashboard: Dashboard, key: Key, width: int) -> tuple[list[tuple[QRectF, str, QColor | None]], int]:
    """Where each title and entry of the key goes, rows filled left to right across `width`; its height."""
    metrics = QFontMetrics(_heading_font(dashboard))
    row_h = max(metrics.height(), SWATCH) + 4
    out: list[tuple[QRectF, str, QColor | None]] = []
    y = 4
    for title, entries in key:
        x = 8
        w = metrics.horizontalAdvance(f"{title}:") + 10
        out.append((QRectF(x, y, w, row_h), f"{title}:", None))
        x += w
        for name, colour in entries:
            w = SWATCH + 6 + metrics.horizontalAdvance(name) + 16
            if x + w > width - 8 and x > 8 + 40:
                x, y = 8 + 24, y + row_h
            out.append((QRectF(x, y, w, row_h), name, colour))
            x += w
        y += row_h
    return out, y + 6


def _paint_key(painter: QPainter, dashboard: Dashboard, key: Key, width: int, top: int) -> None:
    layout, height = _key_layout(dashboard, key, width)
    painter.fillRect(QRectF(0, top, width, height), QColor(dashboard.theme.plot_background))
    painter.setFont(_heading_font(dashboard))
    fg = QColor(dashboard.theme.plot_foreground)
    for rect, text, colour in layout:
        r = rect.translated(0, top)
        if colour is None:
            painter.setPen(fg)
            painter.drawText(r, int(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter), text)
            continue
        painter.fillRect(QRectF(r.left(), r.center().y() - 2, SWATCH, 4), colour)
        painter.setPen(fg)
        painter.drawText(r.adjusted(SWATCH + 6, 0, 0, 0),
                         int(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter), text)


def save_png(dashboard: Dashboard, path: Path | str, session: Mapping[str, Any] | None = None,
             visible: bool = False) -> Path:
    """The plots under their title lines, and over a key naming every curve when a plot's legend could not."""
    p = _ready(path)
    sc = scope(dashboard, visible)
    with showing(dashboard, sc):
        plots = dashboard.graphics.grab()
        key = legend_key(dashboard)
    lines = heading(session, sc)
    top = _heading_height(dashboard, lines, plots.width())
    bottom = _key_layout(dashboard, key, plots.width())[1] if key else 0
    image = QImage(plots.width(), plots.height() + top + bottom, QImage.Format.Format_ARGB32)
    image.fill(QColor(dashboard.theme.plot_background))
    painter = QPainter(image)
    try:
        _paint_heading(painter, dashboard, lines, image.width())
        painter.drawPixmap(0, top, plots)
        if key:
            _paint_key(painter, dashboard, key, image.width(), top + plots.height())
    finally:
        painter.end()
    # PySide6 6.8's stub types `format` as bytes; the binding refuses bytes and takes str
    if not image.save(str(p), "PNG"):  # type: ignore[call-overload]
        raise ConfigError(f"cannot write {p}")
    return p


def save_svg(dashboard: Dashboard, path: Path | str, session: Mapping[str, Any] | None = None,
             visible: bool = False) -> Path:
    """The plots as vectors under the same title lines (also the SVG's title and description), at the PNG's
    size and geometry."""
    p = _ready(path)
    sc = scope(dashboard, visible)
    lines = heading(session, sc)
    view = dashboard.graphics
    top = _heading_height(dashboard, lines, view.width())
    with showing(dashboard, sc), clipped_to_views(dashboard):
        key = legend_key(dashboard)
        bottom = _key_layout(dashboard, key, view.width())[1] if key else 0
        # SVG 1.1: its clip paths are honoured where a renderer can (QtSvg cannot: clipped_to_views)
        gen = QSvgGenerator(QSvgGenerator.SvgVersion.Svg11)
        gen.setFileName(str(p))
        gen.setTitle(lines[0])
        gen.setDescription(lines[1])
        # the screen's dots per inch, not the generator's 72: pyqtgraph paints its axes from a QPicture recorded
        # at the screen's, which a 72-dpi device replays scaled by 72/96 (axes two-thirds across, ticks off)
        gen.setResolution(view.logicalDpiX())
        gen.setSize(QSize(view.width(), view.height() + top + bottom))
        gen.setViewBox(QRect(0, 0, view.width(), view.height() + top + bottom))
        painter = QPainter(gen)
        try:
            _paint_heading(painter, dashboard, lines, view.width())
            if key:
                _paint_key(painter, dashboard, key, view.width(), top + view.height())
            painter.translate(0, top)
            view.render(painter)
        finally:
            painter.end()
    return p


def plotted(dashboard: Dashboard) -> list[str]:
    """The series the shown plots draw."""
    return sorted({n for p in dashboard.panels if p.plot.isVisible() and p.plot.scene() is not None
                   for n in p.curves})


def save_csv(dashboard: Dashboard, path: Path | str, session: Mapping[str, Any] | None = None,
             visible: bool = False) -> Path:
    """Wide CSV after one comment line (the session and the range): elapsed seconds, wall-clock time, then
    one column per plotted series: the mean of each 1-second cell, cells centred on the samples (so a sample
    stamped at 4.998 s and the next at 6.002 s never share one)."""
    p = _ready(path)
    sc = scope(dashboard, visible)
    with showing(dashboard, sc):
        names = plotted(dashboard)
    data = recorded(dashboard)
    series = {}
    for n in names:
        t, v = data[n]
        keep = (t >= sc.lo) & (t <= sc.hi)
        series[n] = SeriesData(n, "", t[keep], v[keep])
    t0 = dashboard.timeline.t0 or 0.0
    firsts = [float(d.t[0]) for d in series.values() if len(d.t)]
    origin = (min(firsts) - 0.5) if firsts else 0.0
    names, rows = timeline_table(series, origin)
    with p.open("w", newline="") as f:
        f.write("# " + " | ".join(heading(session, sc)) + "\n")
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["elapsed_s", "t", *map(spreadsheet_text, names)])
        for offset, values in rows:
            elapsed = origin + offset + 0.5
            w.writerow([f"{elapsed:.3f}", f"{t0 + elapsed:.3f}",
                        *("" if v is None or math.isnan(v) else f"{v:.6g}" for v in values)])
    return p


def stored_series(store: Store, session: Mapping[str, Any], names: list[str]) -> Arrays:
    """The named series of a recorded session as the store holds them, on seconds from its start."""
    t0 = float(session["started_at"])
    return {n: (d.t - t0, d.v) for n, d in store.series(int(session["id"]), names).items()}


def save_report(session: dict[str, Any], dashboard: Dashboard, path: Path | str, store: Store,
                visible: bool = False) -> Path:
    """Markdown report: the session's tables (core.results.markdown, as `sessions export --format md`), the
    settings it changed, a picture of the whole session (or of the visible range) beside it, its events,
    and the plotted series' min/mean/max over the same range, read from the store like the tables."""
    p = _ready(path)
    sc = scope(dashboard, visible)
    png = save_png(dashboard, p.with_name(p.stem + "-timeline.png"), session, visible)
    lines = [markdown(session).rstrip(), ""]
    took = seconds_between(session["started_at"], session.get("ended_at"))
    lines += [f"- started {local_time(session['started_at'])}" + (f", {int(took)} s" if took is not None else "")]
    for key in ("name", "tags", "notes"):
        if session.get(key):
            lines.append(f"- {key}: {session[key]}")
    lines.append(f"- range of the picture and of the series below: {sc.line()}")
    changed = settings_changed(session)
    if changed:
        lines += ["", "## Settings changed", ""] + [f"- {c}" for c in changed]
    lines += ["", "## Timeline", "", f"![timeline]({png.name})", ""]
    events = [e for e in session.get("events", []) if e["kind"] in ("step_start", "knob", "mark", "restart", "config")]
    if events:
        lines += ["## Events", "", "| time | kind | event |", "|---|---|---|"]
        t0 = float(session["started_at"])
        for e in events:
            lines.append(f"| +{e['t'] - t0:.0f} s | {e['kind']} | {e['label']} |")
        lines.append("")
    with showing(dashboard, sc):
        names = plotted(dashboard)
    rows = series_rows(stored_series(store, session, names), sc.lo, sc.hi)
    if rows:
        lines += [f"## Series plotted ({sc.line()})", "", "| series | min | mean | max | samples |",
                  "|---|---:|---:|---:|---:|"]
        lines += [f"| {n} | {lo:,.3f} | {mean:,.3f} | {hi:,.3f} | {k} |" for n, lo, mean, hi, k in rows]
        lines.append("")
    p.write_text("\n".join(lines))
    return p


FILTERS = {"png": "PNG image (*.png)", "svg": "SVG image (*.svg)", "csv": "CSV (*.csv)", "md": "Markdown (*.md)"}


def export(kind: str, dashboard: Dashboard, path: Path | str, session: dict[str, Any] | None = None,
           store: Store | None = None, visible: bool = False) -> Path:
    """`kind` (png, svg, csv, md) of the session on screen to `path`, whole unless `visible`; md needs the
    recorded `session` and its `store`."""
    if kind == "png":
        return save_png(dashboard, path, session, visible)
    if kind == "svg":
        return save_svg(dashboard, path, session, visible)
    if kind == "csv":
        return save_csv(dashboard, path, session, visible)
    if session is None or store is None:
        raise ConfigError("a report is of a recorded session: replay one or finish a run first")
    return save_report(session, dashboard, path, store, visible)
