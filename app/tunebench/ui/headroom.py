"""Room above a plot's curves for its label rows: the y auto-range reaches high enough that the curves stay
below the band names, step, knob and verdict labels at the plot's top, so no curve ever crosses a label."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import pyqtgraph as pg
from PySide6.QtCore import QRectF

MAX_SHARE = 0.45  # the labels never take more than this share of a plot's height from the curves


class Headroom(pg.GraphicsObject):
    """An invisible item whose y bounds are the curves' bounds stretched upward by the labels' pixel height: the
    ViewBox's own auto-range then leaves that band at the top free (the user's zoom still wins)."""

    def __init__(self, curves: Callable[[], Iterable[pg.PlotDataItem]]):
        super().__init__()
        self._curves = curves
        self.pixels = 0.0  # the label rows' height, from the plot's top

    def boundingRect(self) -> QRectF:
        return QRectF()

    def paint(self, *args: Any) -> None:
        pass

    def set_pixels(self, pixels: float) -> bool:
        """The label rows' height; True when it changed (the auto-range wants updating)."""
        changed = abs(pixels - self.pixels) >= 1
        self.pixels = pixels
        return changed

    def dataBounds(self, ax: int, frac: float = 1.0, orthoRange: Any = None) -> tuple[float | None, float | None]:
        if ax != 1 or self.pixels <= 0:
            return (None, None)
        view = self.getViewBox()
        height = view.height() if view is not None else 0.0
        lo = hi = None
        for c in self._curves():
            if not c.isVisible():
                continue
            b = c.dataBounds(1, frac, orthoRange)
            if b is None or b[0] is None or b[1] is None:
                continue
            lo = b[0] if lo is None else min(lo, b[0])
            hi = b[1] if hi is None else max(hi, b[1])
        if lo is None or hi is None or height <= 0:
            return (None, None)
        share = min(self.pixels / height, MAX_SHARE)
        span = (hi - min(lo, 0.0)) or abs(hi) or 1.0
        # curves in the lower (1 - share) of the height: the top grows by span * share / (1 - share)
        return (lo, hi + span * share / (1 - share))
