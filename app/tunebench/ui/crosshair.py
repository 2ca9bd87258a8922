"""The hover readout (Grafana's shared crosshair): over any plot of a stack, one vertical line at the hovered
sample's time through every plot, and on each plot a box with each curve's value there, with its unit.

The line snaps to the nearest sample of the stack's first curve (TPS on the dashboard); every curve then
shows its own sample nearest that time, or "—" when it has none within half a step. The values are the
plotted arrays themselves (the timeline's samples), never a second computation.

Cheap by design: a mouse move only records where the mouse is; at most ~30 times a second the lines and the
boxes move. They are items in the view boxes' own pixel coordinates, so no curve, axis or layout is touched
and Qt repaints only the strips they cover. Nothing runs while the mouse is over no plot.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QEvent, QLineF, QObject, QPointF, QRectF, Qt, QTimer
from PySide6.QtGui import QColor, QFont, QFontMetricsF, QPainter, QPen
from PySide6.QtWidgets import QGraphicsItem, QGraphicsLineItem, QStyleOptionGraphicsItem, QWidget

from tunebench.ui.theme import Theme

HOVER_MS = 33  # ~30 updates a second at most
PAD = 4  # pixels inside the box
SWATCH = 14  # the length of a row's colour sample
BOX_GAP = 10  # between the line and its box
NO_VALUE = "—"
# How each unit's values are written: as the big readouts write TPS, QPS and p95
FORMATS = {"TPS": ",.0f", "QPS": ",.0f", "ms": ",.2f", "threads": ",.0f", "ms/s": ",.1f", "%": ".1f"}


@dataclass(frozen=True, slots=True)
class Trace:
    """One curve as the readout reads it: its legend name, colour, samples (sorted by x) and unit."""

    label: str
    color: QColor
    x: np.ndarray
    y: np.ndarray
    unit: str


HoverPlot = tuple[pg.ViewBox, list[Trace]]


def format_value(v: float | None, unit: str) -> str:
    if v is None or not math.isfinite(v):
        return NO_VALUE
    text = format(v, FORMATS.get(unit, ",.6g"))
    return f"{text} {unit}" if unit != "%" else f"{text} %"


def nearest(x: np.ndarray, at: float, within: float) -> int | None:
    """The index of the sample nearest `at`, when it is within `within` of it."""
    n = len(x)
    if n == 0:
        return None
    i = int(np.searchsorted(x, at))
    best = min((j for j in (i - 1, i) if 0 <= j < n), key=lambda j: abs(float(x[j]) - at))
    return best if abs(float(x[best]) - at) <= within else None


def seconds(x: float) -> str:
    return f"{x:,.0f} s"


class ReadoutBox(QGraphicsItem):
    """A plot's readout: an optional header (the time), then per curve its colour, name and value."""

    def __init__(self, parent: QGraphicsItem) -> None:
        super().__init__(parent)
        self.rows: list[tuple[QColor, str, str]] = []
        self.header = ""
        self.font = QFont()
        self.bold = QFont()
        self.fg = QColor("#202020")
        self.fill = QColor(255, 255, 255)
        self.border = QColor("#888888")
        self._size = (0.0, 0.0)
        self._columns = (0.0, 0.0)  # where the names and the values start
        self.setZValue(1000)

    def set_font(self, points: float) -> None:
        self.font = QFont()
        self.font.setPointSizeF(points)
        self.bold = QFont(self.font)
        self.bold.setBold(True)

    def set_rows(self, header: str, rows: list[tuple[QColor, str, str]], room: float) -> None:
        """The rows, the names shortened when the box would be wider than `room` (the values never are)."""
        fm, fb = QFontMetricsF(self.font), QFontMetricsF(self.bold)
        names = max([fm.horizontalAdvance(r[1]) for r in rows] + [0.0])
        values = max([fb.horizontalAdvance(r[2]) for r in rows] + [0.0])
        fixed = SWATCH + 3 * PAD + values + 2 * PAD
        if fixed + names > room and rows:
            names = max(3 * fm.averageCharWidth(), room - fixed)
            rows = [(c, fm.elidedText(n, Qt.TextElideMode.ElideRight, names), v) for c, n, v in rows]
        header = fb.elidedText(header, Qt.TextElideMode.ElideRight, max(0.0, room - 2 * PAD))
        width = max(fixed + names, fb.horizontalAdvance(header) + 2 * PAD)
        height = (len(rows) + bool(header)) * fm.height() + 2 * PAD
        if (width, height) != self._size:
            self.prepareGeometryChange()
            self._size = (width, height)
        self.header, self.rows = header, rows
        self._columns = (PAD + SWATCH + PAD, width - PAD - values)
        self.update()

    def boundingRect(self) -> QRectF:
        return QRectF(0, 0, *self._size)

    def paint(self, p: QPainter, option: QStyleOptionGraphicsItem, widget: QWidget | None = None) -> None:
        p.setPen(QPen(self.border, 1))
        p.setBrush(self.fill)
        p.drawRoundedRect(self.boundingRect().adjusted(0.5, 0.5, -0.5, -0.5), 3, 3)
        line = QFontMetricsF(self.font).height()
        top = float(PAD)
        if self.header:
            p.setFont(self.bold)
            p.setPen(self.fg)
            p.drawText(QRectF(PAD, top, self._size[0], line), Qt.AlignmentFlag.AlignVCenter, self.header)
            top += line
        names_at, values_at = self._columns
        for color, name, value in self.rows:
            p.setPen(QPen(color, 3))
            p.drawLine(QLineF(PAD, top + line / 2, PAD + SWATCH, top + line / 2))
            p.setPen(self.fg)
            p.setFont(self.font)
            p.drawText(QRectF(names_at, top, values_at - names_at, line), Qt.AlignmentFlag.AlignVCenter, name)
            p.setFont(self.bold)
            p.drawText(QRectF(values_at, top, self._size[0] - values_at - PAD, line),
                       Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignRight, value)
            top += line


class Crosshair(QObject):
    """The crosshair of one stack of plots (a GraphicsView). `plots()` gives the plots shown now, top first,
    with their curves; `half_step` is how far from the line a sample still counts as being there."""

    def __init__(self, view: pg.GraphicsView, plots: Callable[[], list[HoverPlot]], theme: Theme,
                 x_text: Callable[[float], str] = seconds, half_step: float = 0.5):
        super().__init__(view)
        self.plots = plots
        self.x_text = x_text
        self.half_step = half_step
        self.x: float | None = None  # where the line is (data x), None while hidden
        self.values: dict[pg.ViewBox, list[tuple[str, str]]] = {}  # per plot: (name, value) as shown
        self._mouse: QPointF | None = None
        self.hovered_x: float | None = None  # the data x under the mouse (kept while the view scrolls under it)
        self._items: dict[pg.ViewBox, tuple[QGraphicsLineItem, ReadoutBox]] = {}
        self._pen = QPen(QColor("#202020"))
        self._style = (QColor("#202020"), QColor(255, 255, 255), 9.0)
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(HOVER_MS)
        self._timer.timeout.connect(self._on_hover_tick)
        self.enabled = True  # off on stage: no hover boxes over the flip's label when the pointer rests
        view.scene().sigMouseMoved.connect(self._on_mouse_moved)
        view.viewport().installEventFilter(self)
        self.set_appearance(theme, 1.0)

    def set_appearance(self, theme: Theme, scale: float) -> None:
        line = QColor(theme.plot_foreground)
        line.setAlpha(170)
        self._pen = QPen(line, max(1.0, round(scale)))
        self._pen.setCosmetic(True)
        # opaque: the marker labels under the box showed through it
        self._style = (QColor(theme.plot_foreground), QColor(*theme.label_fill[:3]), 9 * scale)
        for ln, box in self._items.values():
            ln.setPen(self._pen)
            self._style_box(box)
        self.refresh()

    def _style_box(self, box: ReadoutBox) -> None:
        box.fg, box.fill, points = self._style
        box.border = QColor(self._style[0])
        box.border.setAlpha(120)
        box.set_font(points)

    # -- the mouse --
    def set_enabled(self, on: bool) -> None:
        self.enabled = on
        if not on:
            self._timer.stop()
            self._mouse = None
            self.hide()

    def _on_mouse_moved(self, pos: QPointF) -> None:
        if not self.enabled:
            return
        self._mouse = QPointF(pos)
        if not self._timer.isActive():
            self._timer.start()

    def eventFilter(self, obj: QObject, ev: QEvent) -> bool:
        if ev.type() == QEvent.Type.Leave:  # off the stack: no line, no work
            self._timer.stop()
            self._mouse = None
            self.hide()
        return False

    def _on_hover_tick(self) -> None:
        pos = self._mouse
        if pos is None:
            return
        for vb, _traces in self.plots():
            if vb.sceneBoundingRect().contains(pos):
                self.show_at(vb.mapSceneToView(pos).x())
                return
        self.hide()

    # -- the line and the boxes --
    def show_at(self, x: float) -> None:
        """The line at the sample nearest data x `x` on every plot, each plot's values beside it."""
        self.hovered_x = x
        plots = self.plots()
        anchor = next((t for _vb, traces in plots for t in traces if len(t.x)), None)
        i = None if anchor is None else nearest(anchor.x, x, 2 * self.half_step)
        at = float(anchor.x[i]) if anchor is not None and i is not None else x
        self.x = at
        self.values = {}
        placed: list[tuple[float, float, ReadoutBox]] = []  # per plot drawn on: line x, view width, box
        for k, (vb, traces) in enumerate(plots):
            rows = []
            for t in traces:
                j = nearest(t.x, at, self.half_step)
                rows.append((t.color, t.label, format_value(None if j is None else float(t.y[j]), t.unit)))
            self.values[vb] = [(name, value) for _c, name, value in rows]
            drawn = self._draw(vb, at, self.x_text(at) if k == 0 else "", rows)
            if drawn is not None:
                placed.append(drawn)
        # every box on the same side of the line: right of it, else left of it, else (a narrow plot) inside it
        widest = max([box.boundingRect().width() for _px, _w, box in placed] + [0.0])
        for px, width, box in placed:
            w = box.boundingRect().width()
            if px + BOX_GAP + widest <= width:
                left = px + BOX_GAP
            elif px - BOX_GAP - widest >= 0:
                left = px - BOX_GAP - w
            else:
                left = max(0.0, min(px + BOX_GAP, width - w))
            box.setPos(left, 2)
        drawn_on = {box for _px, _w, box in placed}
        for ln, box in self._items.values():
            if box not in drawn_on:
                ln.hide()
                box.hide()

    def _draw(self, vb: pg.ViewBox, at: float, header: str,
              rows: list[tuple[QColor, str, str]]) -> tuple[float, float, ReadoutBox] | None:
        """The line on one plot and its box's content (placed by the caller); None when `at` is off the plot."""
        px = vb.mapFromView(QPointF(at, 0)).x()
        width, height = vb.width(), vb.height()
        if not (0 <= px <= width) or height <= 0:
            return None
        items = self._items.get(vb)
        if items is None:
            ln = QGraphicsLineItem(vb)  # a child of the view box, not of its data: pixel coordinates
            ln.setPen(self._pen)
            ln.setZValue(999)
            box = ReadoutBox(vb)
            self._style_box(box)
            items = self._items[vb] = (ln, box)
        ln, box = items
        ln.setLine(px, 0, px, height)
        ln.show()
        box.set_rows(header, rows, width - 2)
        box.setVisible(bool(rows or header))
        return px, width, box

    def refresh(self) -> None:
        """Again at the same hovered time (new data, another range, a new font): only while shown."""
        if self.x is not None and self.hovered_x is not None:
            self.show_at(self.hovered_x)

    def hide(self) -> None:
        if self.x is None:
            return
        self.x = None
        self.values = {}
        for ln, box in self._items.values():
            ln.hide()
            box.hide()

    def line_x(self, vb: pg.ViewBox) -> float | None:
        """Where the line is drawn on a plot, in data x (None: not drawn there)."""
        items = self._items.get(vb)
        if items is None or not items[0].isVisible():
            return None
        return float(vb.mapToView(QPointF(items[0].line().x1(), 0)).x())
