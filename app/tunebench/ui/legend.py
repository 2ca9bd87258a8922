"""A plot's legend that fits its plot: at the top right, as many columns (up to three) as the plot is wide, at
its entries' own size; and the marker labels kept below it.

pyqtgraph's LegendItem sizes itself from its entries' current geometry, which after a font change (stage
mode and back) is still the old one: the grid kept the big columns, spaced out, for the small font. And with
a fixed column count a legend of long names ran out of a narrow plot at the left. Here the grid is rebuilt
and the legend set to the grid's preferred size each time its entries, their font or the plot's width change.
"""

from __future__ import annotations

import math

import pyqtgraph as pg
from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QFontMetricsF

OFFSET = (-10, 5)  # from the view box's top right corner
MAX_COLUMNS = 3
SAMPLE = 20  # the size of an entry's line sample
LABEL_GAP = 3  # pixels between the legend and a marker label, and between two rows of marker labels
# Where a marker's label sits along its line (0 bottom, 1 top) when the legend leaves it room
LABEL_POSITION = {"step": 0.92, "knob": 0.72, "verdict": 0.1}


def add_legend(plot: pg.PlotItem, fill: str) -> pg.LegendItem:
    legend = plot.addLegend(offset=OFFSET, labelTextSize="9pt", colCount=MAX_COLUMNS, brush=pg.mkBrush(fill))
    legend.layout.setContentsMargins(4, 2, 4, 2)  # (9 px all round by default: a row's worth on a short plot)
    return legend


def _relayout(legend: pg.LegendItem, columns: int, label_width: float | None) -> None:
    """The entries in a fresh grid of `columns` columns, in order (pyqtgraph's own refill after a removal
    put the next entry on top of another), each label its curve's full name, elided to `label_width`."""
    grid = legend.layout
    for i in range(grid.count() - 1, -1, -1):
        grid.removeAt(i)
    legend.columnCount = columns
    legend.rowCount = math.ceil(len(legend.items) / columns)
    for k, (sample, label) in enumerate(legend.items):
        sample.setPreferredSize(SAMPLE, SAMPLE)  # what it draws (a QGraphicsWidget asks for 50 x 50)
        full = sample.item.name() or label.text
        text = full if label_width is None else QFontMetricsF(label.item.font()).elidedText(
            full, Qt.TextElideMode.ElideRight, label_width)
        if text != label.text:
            label.setText(text)
        row, col = divmod(k, columns)
        grid.addItem(sample, row, 2 * col)
        grid.addItem(label, row, 2 * col + 1)


def _preferred(legend: pg.LegendItem) -> tuple[float, float]:
    legend.layout.invalidate()  # the entries' size hints may have changed with their font
    size = legend.layout.effectiveSizeHint(Qt.SizeHint.PreferredSize)
    return size.width(), size.height()


def fit_legend(legend: pg.LegendItem, view: pg.ViewBox) -> None:
    """The most columns (up to three) that fit the view's width at full names; when their rows are taller than
    the view, more columns with the names shortened to share the width. The legend is exactly its grid's
    preferred size, so no spacing is left over from an earlier, bigger font."""
    n = len(legend.items)
    if not n:
        legend.setGeometry(QRectF(0, 0, 0, 0))
        return
    room_w, room_h = view.width() - 2 * abs(OFFSET[0]), view.height() - 2 * abs(OFFSET[1])
    most = min(MAX_COLUMNS, n)
    for columns in range(most, 0, -1):
        _relayout(legend, columns, None)
        width, height = _preferred(legend)
        if width <= room_w:
            break
    if height > room_h and columns < most:
        columns = most
        width = math.inf
    share = room_w / columns  # a first guess, then less by what is still too wide
    for _ in range(4):
        if width <= room_w:
            break
        share = max(24.0, share - max(1.0, (width - room_w) / columns))
        _relayout(legend, columns, share)
        width, height = _preferred(legend)
    legend.setGeometry(QRectF(0, 0, width, height))
    legend.layout.activate()


def place_marker_labels(legend: pg.LegendItem | None, view: pg.ViewBox,
                        labelled: list[tuple[pg.InfiniteLine, str]]) -> None:
    """Marker labels below the legend (at the top right, it covered a knob label next to the newest line):
    step labels first, knob labels in a row below them, each at its usual height when there is room."""
    height = view.height()
    if height <= 0 or not labelled:
        return
    top = legend.geometry().bottom() + LABEL_GAP if legend is not None and legend.items else 0.0
    for kind in ("step", "knob"):
        lines = [line for line, k in labelled if k == kind]
        if not lines:
            continue
        h = max(line.label.boundingRect().height() for line in lines)
        centre = max((1 - LABEL_POSITION[kind]) * height, top + h / 2)
        position = max(0.0, 1 - centre / height)
        for line in lines:
            if line.label.orthoPos != position:
                line.label.setPosition(position)
        top = centre + h / 2 + LABEL_GAP
