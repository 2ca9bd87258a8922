"""A plot's legend beside its plot, never over its curves; and the marker labels along the top of the plot.

Inside the view box, a legend of up to seven waits covered most of the short waits plot. Here it is a column
right of the view box, in room the plot's layout keeps for it. That column is equally wide on every plot of
a dashboard (the width is the dashboard's to decide), so the time axes still line up. Names are elided to
the width; a plot too short for all its entries shows the first ones and "+N more", whose values the hover
readout lists in full.

The legend is laid out here only: pyqtgraph's LegendItem sized itself from its entries' previous geometry
(after a font change it kept the old, bigger grid) and put itself at the plot's top left when an entry came.
"""

from __future__ import annotations

import math

import pyqtgraph as pg
from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QFont, QFontMetricsF, QPainter
from PySide6.QtWidgets import QGraphicsWidget, QSizePolicy

GAP = 6  # pixels between the view box and its legend
SAMPLE = 20  # the width of an entry's line sample
SPACING = 4  # between a sample and its name
MARGIN = 2  # the legend's own margin, all round
LABEL_GAP = 3  # pixels between two rows of marker labels
# Where a marker's label sits along its line (0 bottom, 1 top) when the rows above leave it room
# until place_marker_labels puts them in place
LABEL_POSITION = {"step": 0.92, "knob": 0.92, "verdict": 0.92, "rate": 0.92}
TOP_ROWS = 2  # rows of step and knob labels at a plot's top (the second only for labels the first has no room for)
PRIORITY = {"step": 0, "ramp": 1, "mark": 1, "restart": 2}  # which label of the step row stays when two would overlap


class Swatch(pg.ItemSample):
    """An entry's line sample, centred on its row whatever the font size (pyqtgraph's draws at y = 11)."""

    def boundingRect(self) -> QRectF:
        return QRectF(0, 0, SAMPLE, max(1.0, self.size().height()))

    def paint(self, p: QPainter, *args: object) -> None:
        pen = pg.mkPen(self.item.opts["pen"])
        if not self.item.isVisible():  # switched off by a click on its entry: a faint sample
            color = pen.color()
            color.setAlpha(60)
            pen.setColor(color)
        p.setPen(pen)
        y = self.size().height() / 2
        p.drawLine(0, round(y), SAMPLE, round(y))


class SideLegend(pg.LegendItem):
    """The legend of one plot, in a column right of its view box."""

    items: list[tuple[Swatch, pg.LabelItem]]  # pyqtgraph's: (sample, label) of each entry

    def __init__(self) -> None:
        super().__init__(offset=None, horSpacing=SPACING, verSpacing=0, labelTextSize="9pt", sampleType=Swatch,
                         frame=False)
        self.layout.setContentsMargins(MARGIN, MARGIN, MARGIN, MARGIN)
        self.points = 9.0  # the entries' font size: what elision measures with
        self.width_px = 0.0  # the column's width, set by fit_legend
        # "+N more" when the plot is too short for every entry
        self.more = pg.LabelItem("", parent=self, justify="left")
        self.more.hide()
        # keeps the column in the plot's grid, right of the view box; the legend sits over it
        self.spacer = QGraphicsWidget()
        self.spacer.setSizePolicy(QSizePolicy.Policy.Fixed, QSizePolicy.Policy.Ignored)
        self.spacer.setMaximumWidth(0)

    def updateSize(self) -> None:
        """Nothing: fit_legend sizes and places the legend."""

    def mouseDragEvent(self, ev: object) -> None:
        """Not draggable: dragged into the view it covered the curves again."""

    def _empty_grid(self) -> None:
        for i in range(self.layout.count() - 1, -1, -1):
            self.layout.removeAt(i)

    def _drop(self, sample: Swatch, label: pg.LabelItem) -> None:
        for w in (sample, label):
            w.close()
            if w.scene() is not None:  # (PySide does not take a closed item out of its scene)
                w.scene().removeItem(w)

    def removeItem(self, item: object) -> None:
        """An entry out (pyqtgraph's asked the grid for entries "+N more" had left out of it: Qt warnings)."""
        for sample, label in self.items:
            if sample.item is item or label.text == item:
                self._empty_grid()  # fit_legend lays the rest out again
                self.items.remove((sample, label))
                self._drop(sample, label)
                return

    def clear(self) -> None:
        self._empty_grid()
        for sample, label in self.items:
            self._drop(sample, label)
        self.items = []


def add_legend(plot: pg.PlotItem) -> SideLegend:
    legend = SideLegend()
    legend.setParentItem(plot)
    plot.legend = legend  # where PlotItem.addItem puts a named curve's entry
    plot.layout.addItem(legend.spacer, 2, 3)
    return legend


def entry_font(points: float) -> QFont:
    f = QFont()
    f.setPointSizeF(points)
    return f


def _full_name(sample: Swatch, label: pg.LabelItem) -> str:
    return str(sample.item.name() or label.text)


def natural_width(legend: SideLegend) -> float:
    """The column's width with every name in full (0 without entries)."""
    if not legend.items:
        return 0.0
    fm = QFontMetricsF(entry_font(legend.points))
    widest = max(fm.horizontalAdvance(_full_name(s, lab)) for s, lab in legend.items)
    return math.ceil(2 * MARGIN + SAMPLE + SPACING + widest + 2 * 2 + 2)  # + the text's document margins


def _relayout(legend: SideLegend, shown: int, label_width: float) -> None:
    """The first `shown` entries in one column, names elided to `label_width`; the rest hidden and counted."""
    grid = legend.layout
    for i in range(grid.count() - 1, -1, -1):
        grid.removeAt(i)
    fm = QFontMetricsF(entry_font(legend.points))
    for k, (sample, label) in enumerate(legend.items):
        label.item.document().setDocumentMargin(2)  # (4 by default: rows 8 px taller than their text)
        label.updateMin()
        visible = k < shown
        sample.setVisible(visible)
        label.setVisible(visible)
        if not visible:
            continue
        text = fm.elidedText(_full_name(sample, label), Qt.TextElideMode.ElideRight, max(8.0, label_width))
        if text != label.text:
            label.setText(text)
        sample.setPreferredSize(SAMPLE, label.minimumHeight())
        sample.setSizePolicy(QSizePolicy.Policy.Fixed, QSizePolicy.Policy.Fixed)
        grid.addItem(sample, k, 0)
        grid.addItem(label, k, 1)
        grid.setAlignment(label, Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter)
    hidden = len(legend.items) - shown
    legend.more.setVisible(hidden > 0)
    if hidden > 0:
        legend.more.item.document().setDocumentMargin(2)
        legend.more.setText(f"+{hidden} more", size=f"{legend.points:.4g}pt", color=legend.opts["labelTextColor"])
        grid.addItem(legend.more, shown, 0, 1, 2)
        grid.setAlignment(legend.more, Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter)


def _preferred(legend: SideLegend) -> tuple[float, float]:
    legend.layout.invalidate()  # the entries' size hints may have changed with their font
    size = legend.layout.effectiveSizeHint(Qt.SizeHint.PreferredSize)
    return size.width(), size.height()


def set_column_width(legend: SideLegend, width: float) -> None:
    """The room right of the view box (the plot relays itself out when it changes)."""
    width = float(math.ceil(width))
    if legend.spacer.maximumWidth() != width:
        legend.spacer.setMinimumWidth(width)
        legend.spacer.setMaximumWidth(width)
    legend.width_px = width


def fit_legend(legend: SideLegend, view: pg.ViewBox) -> None:
    """The entries in the column: as many as the view is tall (the others counted), names elided to fit, the
    legend placed at the view's top right, outside it."""
    n = len(legend.items)
    width = legend.width_px - GAP
    view_rect = view.geometry()
    if not n or width <= SAMPLE:
        for sample, label in legend.items:
            sample.hide()
            label.hide()
        legend.more.hide()
        legend.setGeometry(QRectF(view_rect.right() + GAP, view_rect.top(), 0, 0))
        return
    label_width = width - 2 * MARGIN - SAMPLE - SPACING - 6
    shown = n
    _relayout(legend, shown, label_width)
    _w, height = _preferred(legend)
    room = view_rect.height()
    if height > room and n > 1:
        row = (height - 2 * MARGIN) / n
        shown = max(1, int((room - 2 * MARGIN) // row) - 1)  # one row for "+N more"
        _relayout(legend, shown, label_width)
        _w, height = _preferred(legend)
    legend.setGeometry(QRectF(view_rect.right() + GAP, view_rect.top(), width, height))
    legend.layout.activate()


def _fit_label(line: pg.InfiniteLine, width: float, room: float) -> None:
    """A label longer than the plot is wide (a verdict on a projector) wraps inside it; where even wrapped it is
    taller than the room above the curves, its next shorter form (`label_forms`: the verdict without its interval,
    then the change alone) -- rather than hidden, or cut by the legend."""
    label = line.label
    forms = getattr(line, "label_forms", None) or [label.format]
    for i, form in enumerate(forms):
        if label.format != form:
            label.setFormat(form)
        text = label.textItem
        text.setTextWidth(-1)
        if text.boundingRect().width() > width > 40:
            text.setTextWidth(width)
        if label.boundingRect().height() <= room or i == len(forms) - 1:
            return


def _rows_apart(view: pg.ViewBox, lines: list[pg.InfiniteLine], rows: int) -> list[list[pg.InfiniteLine]]:
    """Labels into at most `rows` rows where each fits beside those already there, the rest hidden: drift
    warnings first, then knob changes (newest first), then steps before marks before restarts, left to right.
    Overlapping, none of them could be read."""
    spans: list[list[tuple[float, float]]] = [[] for _ in range(rows)]
    out: list[list[pg.InfiniteLine]] = [[] for _ in range(rows)]
    xs = {id(line): view.mapFromView(QPointF(line.value(), 0)).x() for line in lines}

    def rank(line: pg.InfiniteLine) -> tuple[int, int, float]:
        kind = getattr(line, "kind", "step")
        if kind == "drift":  # a warning that the step measured another server: before anything else
            return (-2, 0, xs[id(line)])
        if kind in ("knob", "verdict", "rate"):  # knob changes, then rate changes (a live PgUp): newest first
            return (-1, int(kind == "rate"), -xs[id(line)])
        return (PRIORITY.get(kind, 1), 0, xs[id(line)])

    for line in sorted(lines, key=rank):
        label = line.label
        w = label.boundingRect().width()
        _pick_side(line, xs[id(line)], w, view.width())
        left = xs[id(line)] - label.anchor.x() * w
        row = next((r for r in range(rows)
                    if all(left + w + LABEL_GAP <= a or left >= b + LABEL_GAP for a, b in spans[r])), None)
        if row is not None:
            spans[row].append((left, left + w))
            out[row].append(line)
        if label.isVisible() != (row is not None):
            label.setVisible(row is not None)
    return out


def _pick_side(line: pg.InfiniteLine, x: float, w: float, width: float) -> None:
    """A knob label sits left of its line (the newest change is near the right edge), other labels right of
    theirs; where its side would cut it at the plot's edge, the other side; where neither has room (a narrow
    plot, a long verdict), across its line, inside the plot (its filled box hides the line under it)."""
    left_first = getattr(line, "kind", "") in ("knob", "verdict", "rate")
    fits_left, fits_right = x - w >= 0, x + w <= width
    if fits_left and (left_first or not fits_right):
        f = 1.0
    elif fits_right:
        f = 0.0
    else:
        f = max(0.0, min(1.0, x / w)) if w > 0 else 0.0
    anchors = [(f, 0.5), (f, 0.5)]
    if line.label.anchors != anchors:
        line.label.anchors = anchors
        line.label.updatePosition()


def _put_row(lines: list[pg.InfiniteLine], centre: float, height: float) -> None:
    position = min(1.0, max(0.0, 1 - centre / height))
    for line in lines:
        if line.label.orthoPos != position:
            line.label.setPosition(position)


def place_marker_labels(view: pg.ViewBox, labelled: list[tuple[pg.InfiniteLine, str]], top: float = 0.0,
                        limit: float | None = None) -> float:
    """Marker labels (steps, knob changes with their verdicts) in a row at `top` (pixels from the view's top;
    below the band names), a second row only for those that would overlap in the first, none over another.
    No row ends below `limit` (pixels from the top: the strip the plot can keep free of curves): on a short plot
    fewer rows, those that do not fit hidden (the knob changes keep their place first). Returns where the rows
    end (pixels from the top): the plot keeps its curves below that line (see Headroom), so no curve crosses a
    label."""
    height = view.height()
    if height <= 0 or not labelled:
        return top
    lines = [line for line, _k in labelled]
    for line in lines:
        _fit_label(line, view.width() - 4, (limit if limit is not None else height) - top)
    h = max(line.label.boundingRect().height() for line in lines)
    rows = TOP_ROWS if limit is None else max(0, min(TOP_ROWS, int((limit - top + LABEL_GAP) // (h + LABEL_GAP))))
    for row in _rows_apart(view, lines, rows):
        if row:
            _put_row(row, top + h / 2, height)
            top += h + LABEL_GAP
    return top
