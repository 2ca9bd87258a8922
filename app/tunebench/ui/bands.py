"""Sweep configurations as shaded bands across a plot, each with one readable label on the plot that shows it.

A configuration's band spans from its "config" event to the next one (the last: to the newest data). Its
label sits at the top of the band, elided to the band's visible width and moved in from the left edge when
the band starts off screen, so a zoomed or followed view still names the configuration it shows.
"""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QBrush, QColor, QFont, QFontMetricsF, QPainter, QPen
from PySide6.QtWidgets import QGraphicsItem, QStyleOptionGraphicsItem, QWidget

from tunebench.ui.theme import Theme

PAD = 3  # pixels around a band label's text
MIN_LABEL = 28  # narrower than this (pixels), a band shows no label


def band_names(labels: list[str]) -> list[tuple[str, str]]:
    """Per configuration event label ("configuration 2: log_bin=ON, sync_binlog=1"), its name in two lengths
    without what every configuration shares (("configuration 2: sync_binlog=1", "2: sync_binlog=1") when all
    have log_bin=ON): what tells the bands apart, readable in the room a band has."""
    split = []
    for label in labels:
        head, _, knobs = label.partition(": ")
        split.append((head.removeprefix("configuration ").strip(), [k.strip() for k in knobs.split(",") if k.strip()]))
    common = set.intersection(*(set(parts) for _n, parts in split)) if len(split) > 1 else set()
    out = []
    for (number, parts), label in zip(split, labels, strict=True):
        distinct = ", ".join(p for p in parts if p not in common) or ", ".join(parts)
        out.append((f"configuration {number}: {distinct}", f"{number}: {distinct}") if distinct else (label, label))
    return out


def band_brush(theme: Theme, k: int) -> QBrush:
    """Alternate tints, faint enough that curves stay the contrast on top of them."""
    tints = ("#4c8fd6", "#e0922f") if theme.name == "light" else ("#5aa9ff", "#ffb347")
    color = QColor(tints[k % 2])
    color.setAlpha(30 if theme.name == "light" else 42)
    return QBrush(color)


BUSY_TIP = ("busy: other processes used more than 10 % of the machine's CPU in these seconds; every verdict "
            "leaves them out")


def busy_brush(theme: Theme) -> QBrush:
    """The busy seconds: hatched, so they read as "not this load's" over any configuration's tint."""
    color = QColor("#b35c00" if theme.name == "light" else "#ffb347")
    color.setAlpha(110 if theme.name == "light" else 130)
    return QBrush(color, Qt.BrushStyle.BDiagPattern)


class BandLabel(QGraphicsItem):
    """A configuration's name in a box, in the view box's pixel coordinates (a child of the view box)."""

    def __init__(self, parent: QGraphicsItem) -> None:
        super().__init__(parent)
        self.text = ""
        self.font = QFont()
        self.fg = QColor("#202020")
        self.fill = QColor(255, 255, 255, 220)
        self.border = QColor("#888888")
        self._size = (0.0, 0.0)
        self.setZValue(900)  # above the curves, below the hover readout

    def set_text(self, text: str, font: QFont) -> None:
        fm = QFontMetricsF(font)
        size = (fm.horizontalAdvance(text) + 2 * PAD, fm.height() + 2 * PAD)
        if (text, size) != (self.text, self._size) or font != self.font:
            self.prepareGeometryChange()
            self.text, self.font, self._size = text, QFont(font), size
            self.update()

    def boundingRect(self) -> QRectF:
        return QRectF(0, 0, *self._size)

    def paint(self, p: QPainter, option: QStyleOptionGraphicsItem, widget: QWidget | None = None) -> None:
        rect = self.boundingRect()
        p.setPen(QPen(self.border, 1))
        p.setBrush(self.fill)
        p.drawRect(rect.adjusted(0.5, 0.5, -0.5, -0.5))
        p.setFont(self.font)
        p.setPen(self.fg)
        p.drawText(rect.adjusted(PAD, 0, -PAD, 0), Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft,
                   self.text)


class ConfigBand:
    """One configuration's band on one plot; its label only where `labelled`."""

    def __init__(self, plot: pg.PlotItem, start: float, name: str, k: int, theme: Theme, labelled: bool):
        self.plot = plot
        self.start, self.end = start, start
        self.name = name  # the event's label: the tooltip
        self.names = (name, name)  # what the label says, long and short (set_names)
        self.region = pg.LinearRegionItem((start, start), movable=False, brush=band_brush(theme, k),
                                          pen=pg.mkPen(None))
        self.region.setZValue(-100)  # under the curves and the markers
        plot.addItem(self.region, ignoreBounds=True)
        self.label = BandLabel(plot.getViewBox()) if labelled else None
        if self.label is not None:
            self.label.setToolTip(name)
        self.k = k

    def set_end(self, end: float) -> None:
        if end != self.end:
            self.end = end
            self.region.setRegion((self.start, max(self.start, end)))

    def remove(self) -> None:
        self.plot.removeItem(self.region)
        if self.label is not None:
            scene = self.label.scene()
            if scene is not None:
                scene.removeItem(self.label)
            self.label = None

    def set_appearance(self, theme: Theme) -> None:
        self.region.setBrush(band_brush(theme, self.k))
        self.region.update()
        if self.label is not None:
            self.label.fg = QColor(theme.plot_foreground)
            self.label.fill = QColor(*theme.label_fill[:3], 235)
            self.label.border = QColor(band_brush(theme, self.k).color().name())
            self.label.update()

    def hide_label(self) -> None:
        if self.label is not None:
            self.label.hide()

    def place_label(self, font: QFont) -> float:
        """The label at the top of the band's visible part, elided to its width; returns its height (0: none)."""
        label = self.label
        if label is None:
            return 0.0
        view = self.plot.getViewBox()
        left = view.mapFromView(QPointF(self.start, 0)).x()
        right = view.mapFromView(QPointF(self.end, 0)).x()
        left, right = max(left, 0.0), min(right, view.width())
        room = right - left - 2 * PAD - 2
        if room < MIN_LABEL:
            label.hide()
            return 0.0
        # long when it fits, else short (the knobs are what the reader wants), elided at the end
        fm = QFontMetricsF(font)
        long, short = self.names
        text = long if fm.horizontalAdvance(long) <= room else fm.elidedText(short, Qt.TextElideMode.ElideRight, room)
        label.set_text(text, font)
        label.setPos(left + 1, 1)
        label.show()
        return label.boundingRect().height() + 1
