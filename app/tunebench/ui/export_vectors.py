"""The plots made ready for a vector picture: what each plot's view box would clip, cut off beforehand.

A plot's view box clips its curves, marker lines and bands to its rectangle. A QSvgGenerator can write that
clip (SVG 1.1 clip paths), but QtSvg (at least up to 6.8) and other renderers ignore it: a curve zoomed past
the plot's top then crosses the title, and a marker left of the visible range lands on the axis. So for the
length of an SVG export each curve draws only its part inside the plot (cut at the edges), and what lies
wholly outside is hidden; the curves are painted as vectors (not their pixel cache). Afterwards every item is
as it was, and no plot's range moves meanwhile.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

import numpy as np
import pyqtgraph as pg
from PySide6.QtWidgets import QGraphicsItem

from tunebench.ui.dashboard import Dashboard

Rect = tuple[float, float, float, float]  # x0, x1, y0, y1 in the view's data coordinates


def clip_polyline(x: np.ndarray, y: np.ndarray, rect: Rect) -> tuple[np.ndarray, np.ndarray]:
    """The polyline through (x, y) cut to `rect` (Liang-Barsky on every segment): its pieces inside, joined
    where they meet and separated by a NaN point where the line left the rectangle (or had a NaN)."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if len(x) < 2:
        inside = (len(x) == 1 and rect[0] <= x[0] <= rect[1] and rect[2] <= y[0] <= rect[3])
        return (x, y) if inside else (x[:0], y[:0])
    x0, y0, dx, dy = x[:-1], y[:-1], np.diff(x), np.diff(y)
    t0, t1 = np.zeros(len(dx)), np.ones(len(dx))
    keep = np.isfinite(x0) & np.isfinite(y0) & np.isfinite(dx) & np.isfinite(dy)
    with np.errstate(divide="ignore", invalid="ignore"):
        for p, q in ((-dx, x0 - rect[0]), (dx, rect[1] - x0), (-dy, y0 - rect[2]), (dy, rect[3] - y0)):
            r = q / p
            keep &= ~((p == 0) & (q < 0))  # parallel to this edge and outside it
            t0 = np.where(p < 0, np.maximum(t0, r), t0)
            t1 = np.where(p > 0, np.minimum(t1, r), t1)
    keep &= t0 <= t1
    xs: list[float] = []
    ys: list[float] = []
    px, py = x0 + t0 * dx, y0 + t0 * dy
    qx, qy = x0 + t1 * dx, y0 + t1 * dy
    joined = False  # the last point written is this segment's start
    for i in np.flatnonzero(keep):
        if not (joined and i > 0 and keep[i - 1] and t1[i - 1] == 1 and t0[i] == 0):
            if xs:
                xs.append(np.nan)
                ys.append(np.nan)
            xs.append(px[i])
            ys.append(py[i])
        xs.append(qx[i])
        ys.append(qy[i])
        joined = True
    return np.array(xs, dtype=np.float64), np.array(ys, dtype=np.float64)


def _inside(lo: float, hi: float, rng: tuple[float, float]) -> bool:
    return hi >= rng[0] and lo <= rng[1]


@contextmanager
def clipped_to_views(dashboard: Dashboard) -> Iterator[None]:
    """Every plot's items cut to its view box while the block runs (see the module's docstring)."""
    undo: list[Callable[[], None]] = []
    try:
        for panel in dashboard.panels:
            _clip_view(panel.plot, undo)
        yield
    finally:
        for step in reversed(undo):
            step()


def _clip_view(plot: pg.PlotItem, undo: list[Callable[[], None]]) -> None:
    vb = plot.getViewBox()
    # no auto-range while the curves hold only their visible part: the range stays what the PNG shows
    auto = list(vb.state["autoRange"])
    vb.disableAutoRange()
    undo.append(lambda: vb.enableAutoRange(x=auto[0], y=auto[1]))
    (xa, xb), (ya, yb) = vb.viewRange()
    rect = (xa, xb, ya, yb)
    for item in vb.childGroup.childItems():  # (addedItems leaves out those added with ignoreBounds)
        if not item.isVisible():
            continue
        if isinstance(item, pg.PlotDataItem):
            _clip_curve(item.curve, rect, undo)
        elif isinstance(item, pg.InfiniteLine) and item.angle == 90:
            if not xa <= item.value() <= xb:
                _hide(item, undo)
        elif isinstance(item, pg.LinearRegionItem):
            _clip_region(item, (xa, xb), undo)
        elif isinstance(item, pg.VTickGroup):
            _clip_ticks(item, (xa, xb), undo)
        else:
            br = item.mapRectToView(item.boundingRect()) if item.boundingRect().isValid() else None
            if br is not None and not (_inside(br.left(), br.right(), (xa, xb))
                                       and _inside(br.top(), br.bottom(), (ya, yb))):
                _hide(item, undo)


def _hide(item: QGraphicsItem, undo: list[Callable[[], None]]) -> None:
    item.setVisible(False)
    undo.append(lambda: item.setVisible(True))


def _clip_ticks(ticks: pg.VTickGroup, xr: tuple[float, float], undo: list[Callable[[], None]]) -> None:
    xvals = list(ticks.xvals)
    ticks.setXVals([v for v in xvals if xr[0] <= v <= xr[1]])
    undo.append(lambda: ticks.setXVals(xvals))


def _clip_curve(curve: pg.PlotCurveItem, rect: Rect, undo: list[Callable[[], None]]) -> None:
    x, y = curve.xData, curve.yData
    if x is None or y is None:
        return
    connect, cache = curve.opts["connect"], curve.cacheMode()
    cx, cy = clip_polyline(x, y, rect)
    curve.setCacheMode(QGraphicsItem.CacheMode.NoCache)  # vectors, not the pixels of its cache
    curve.setData(cx, cy, connect="finite")

    def restore() -> None:
        curve.setData(x, y, connect=connect)
        curve.setCacheMode(cache)

    undo.append(restore)


def _clip_region(region: pg.LinearRegionItem, xr: tuple[float, float], undo: list[Callable[[], None]]) -> None:
    lo, hi = region.getRegion()
    if not _inside(lo, hi, xr):
        _hide(region, undo)
        return
    if lo >= xr[0] and hi <= xr[1]:
        return
    # its edges are lines of their own that tell the band (and its listeners) when moved: quiet while cut
    with _quiet(region):
        region.setRegion((max(lo, xr[0]), min(hi, xr[1])))

    def restore() -> None:
        with _quiet(region):
            region.setRegion((lo, hi))

    undo.append(restore)


@contextmanager
def _quiet(region: pg.LinearRegionItem) -> Iterator[None]:
    blocked = [region.blockSignals(True)] + [ln.blockSignals(True) for ln in region.lines]
    try:
        yield
    finally:
        for ln, was in zip(region.lines, blocked[1:], strict=True):
            ln.blockSignals(was)
        region.blockSignals(blocked[0])
