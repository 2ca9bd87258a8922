"""Latency against rate (open loop): each configuration's p99 from the intended start at each rate it was asked
for, against the rate it achieved; the SLO as a line and each configuration's knee (the highest rate served whose
p99 meets it) as a star. The sweep results view and Compare draw it; it takes its data, computes nothing."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QFont

from tunebench.ui.dashboard import PALETTE
from tunebench.ui.legend import add_legend, fit_legend, natural_width, set_column_width
from tunebench.ui.theme import Theme

LEGEND_SHARE = 0.35


class KneePlot(pg.PlotWidget):
    """`show(curves)`: {label: {"points": [{rate, tps, lat_p99_ms, served}], "knee": rate|None, "slo_p99_ms"}}."""

    def __init__(self, theme: Theme):
        super().__init__()
        add_legend(self.getPlotItem())
        self.setLabel("bottom", "achieved TPS")
        self.setLabel("left", "p99 ms (intended start)")
        self.showGrid(x=True, y=True, alpha=0.2)
        self.curves: dict[str, pg.PlotDataItem] = {}
        self.points = 9.0
        self.getPlotItem().getViewBox().sigResized.connect(self._fit_legend)
        self.apply_theme(theme)

    def _fit_legend(self) -> None:
        """The legend beside the plot, at most LEGEND_SHARE of its width (as Compare's plots have theirs)."""
        item = self.getPlotItem()
        if item.legend is not None:
            set_column_width(item.legend, min(natural_width(item.legend), LEGEND_SHARE * self.width()))
            fit_legend(item.legend, item.getViewBox())

    def apply_theme(self, theme: Theme) -> None:
        self.setBackground(theme.plot_background)
        item = self.getPlotItem()
        for axis in ("left", "bottom"):
            item.getAxis(axis).setTextPen(pg.mkPen(theme.plot_foreground))
        if item.legend is not None:
            item.legend.setLabelTextColor(theme.plot_foreground)

    def set_points(self, points: float) -> None:
        """Its text size (stage: the plots' own, readable from the back of a hall): ticks, axis names, legend."""
        self.points = points
        item = self.getPlotItem()
        f = QFont()
        f.setPointSizeF(points)
        for axis in ("left", "bottom"):
            ax = item.getAxis(axis)
            ax.setTickFont(f)
            ax.label.setFont(f)
        item.getAxis("left").setWidth(int(70 * points / 9))
        item.getAxis("bottom").setHeight(int(40 * points / 9))
        if item.legend is not None:
            item.legend.points = points
            size = f"{points:.4g}pt"
            item.legend.setLabelTextSize(size)
            for _sample, label in item.legend.items:
                label.setText(label.text, size=size)
        self._fit_legend()

    def show_curves(self, curves: Mapping[str, Mapping[str, Any]]) -> None:
        item = self.getPlotItem()
        item.clear()
        if item.legend is not None:
            item.legend.clear()
        self.curves = {}
        slo = next((c.get("slo_p99_ms") for c in curves.values() if c.get("slo_p99_ms")), None)
        for i, (label, c) in enumerate(curves.items()):
            pts = [p for p in c["points"] if p["lat_p99_ms"] is not None and p["lat_p99_ms"] > 0]
            if not pts:
                continue
            color = PALETTE[i % len(PALETTE)]
            x = np.array([p["tps"] for p in pts])
            y = np.array([p["lat_p99_ms"] for p in pts])
            brushes = [pg.mkBrush(color) if p["served"] else pg.mkBrush(None) for p in pts]
            name = (label or "this run") + (f" · knee {c['knee']:,.0f}/s" if c.get("knee") is not None
                                             else " · no rate meets the SLO" if slo else "")
            curve = item.plot(x, y, pen=pg.mkPen(color, width=2), symbol="o", symbolSize=9, symbolBrush=brushes,
                              symbolPen=pg.mkPen(color), name=name)
            self.curves[label] = curve
            knee = next((p for p in pts if p["rate"] == c.get("knee")), None)
            if knee is not None:
                item.plot([knee["tps"]], [knee["lat_p99_ms"]], pen=None, symbol="star", symbolSize=18,
                          symbolBrush=pg.mkBrush(color), symbolPen=pg.mkPen("k"))
        if slo:
            line = pg.InfiniteLine(pos=slo, angle=0,
                                   pen=pg.mkPen("#d62728", width=1.5, style=Qt.PenStyle.DashLine),
                                   label=f"SLO p99 {slo:g} ms", labelOpts={"position": 0.95, "color": "#d62728",
                                                                           "anchors": [(1, 1), (1, 1)]})
            f = QFont()
            f.setPointSizeF(self.points)
            line.label.setFont(f)
            item.addItem(line)
        self._fit_legend()
