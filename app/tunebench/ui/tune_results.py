"""The tune results view: the trials table (the CLI's TABLE_HEADER and rows), the convergence plot (each trial's
ratio to its baselines with its 95 % interval, the best so far as a step line, 1.0 dashed, and the A/B/A/B
confirmation's ratio and interval once it is known) and the result line. It draws a run/tune_progress.TuneProgress:
the live tune's, or the replayed session's while a replay is on screen (the live one goes on filling in)."""

from __future__ import annotations

import html

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QSize, Qt, QTimer
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (
    QDockWidget,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QMainWindow,
    QSizePolicy,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from tunebench.core.tune import confirm_text
from tunebench.run.tune import TABLE_HEADER
from tunebench.run.tune_progress import TuneProgress, counts
from tunebench.ui.theme import LIGHT, Theme

POINT = "#1f77b4"
EARLY = "#d62728"  # a trial ended early (under half the baseline's TPS): not a candidate
CONFIRM_GOOD, CONFIRM_NONE = "#2ca02c", "#888888"
NUMERIC = {2, 3, 4, 5, 6, 7}  # right-aligned columns (TPS ... seconds)


class ConvergencePlot(pg.PlotWidget):
    """Trial number across, ratio to the baseline up (higher is better, whatever the objective)."""

    def __init__(self, theme: Theme = LIGHT) -> None:
        super().__init__()
        self.setMinimumHeight(160)
        self.plotItem.setLabel("bottom", "trial")
        self.plotItem.setLabel("left", "ratio to baseline")
        self.plotItem.setMenuEnabled(False)
        self.one = pg.InfiniteLine(pos=1.0, angle=0, movable=False,
                                   pen=pg.mkPen("#888888", width=1, style=Qt.PenStyle.DashLine))
        self.addItem(self.one, ignoreBounds=True)
        self.errors = pg.ErrorBarItem(x=np.array([]), y=np.array([]), beam=0.15, pen=pg.mkPen(POINT, width=1))
        self.addItem(self.errors)
        self.points = pg.ScatterPlotItem(size=9, pen=pg.mkPen(None), brush=pg.mkBrush(POINT), name="trial")
        self.addItem(self.points)
        self.early = pg.ScatterPlotItem(size=10, symbol="x", pen=pg.mkPen(EARLY, width=2), brush=pg.mkBrush(EARLY))
        self.addItem(self.early)
        self.best = pg.PlotDataItem([], [], pen=pg.mkPen("#ff7f0e", width=2))
        self.addItem(self.best)
        self.confirm_bar = pg.ErrorBarItem(x=np.array([]), y=np.array([]), beam=0.2, pen=pg.mkPen(CONFIRM_GOOD,
                                                                                                  width=2))
        self.addItem(self.confirm_bar)
        self.confirm = pg.ScatterPlotItem(size=13, symbol="d", pen=pg.mkPen(None), brush=pg.mkBrush(CONFIRM_GOOD))
        self.addItem(self.confirm)
        self.confirm_label = pg.TextItem("", anchor=(0.5, -0.2))  # under its interval: inside the plot
        self.addItem(self.confirm_label, ignoreBounds=True)
        self.apply_theme(theme)

    def apply_theme(self, theme: Theme) -> None:
        self.setBackground(theme.plot_background)
        for axis in ("left", "bottom"):
            ax = self.plotItem.getAxis(axis)
            ax.setPen(pg.mkPen(theme.plot_foreground))
            ax.setTextPen(pg.mkPen(theme.plot_foreground))
        self.confirm_label.setColor(theme.plot_foreground)

    def show_progress(self, model: TuneProgress) -> None:
        trials = model.shown()
        ok = [t for t in trials if counts(t)]
        early = [t for t in trials if t.objective is not None and not counts(t)]
        self.points.setData([float(t.n) for t in ok], [float(t.objective or 0.0) for t in ok])
        self.early.setData([float(t.n) for t in early], [float(t.objective or 0.0) for t in early])
        with_ci = [t for t in ok if t.ci_low is not None and t.ci_high is not None]
        x = np.array([float(t.n) for t in with_ci])
        y = np.array([float(t.objective or 0.0) for t in with_ci])
        lo = np.array([float(t.ci_low or 0.0) for t in with_ci])
        hi = np.array([float(t.ci_high or 0.0) for t in with_ci])
        self.errors.setData(x=x, y=y, top=hi - y, bottom=y - lo)
        # best so far: a step at each trial, from the run's own best_so_far (as the search counted it)
        sx: list[float] = []
        sy: list[float] = []
        for t in trials:
            if t.best_so_far is None:
                continue
            if sy:
                sx.append(float(t.n))
                sy.append(sy[-1])
            sx.append(float(t.n))
            sy.append(float(t.best_so_far))
        if sx:
            sx.append(sx[-1] + 0.5)
            sy.append(sy[-1])
        self.best.setData(sx, sy)
        result = model.shown_result()
        c = result.confirm if result is not None else None
        if c and all(isinstance(c.get(k), int | float) for k in ("ratio", "ci_low", "ci_high")):
            cx = float(max((t.n for t in trials), default=0) + 1)
            colour = CONFIRM_GOOD if result is not None and result.improved else CONFIRM_NONE
            r, low, high = float(c["ratio"]), float(c["ci_low"]), float(c["ci_high"])
            self.confirm.setData([cx], [r], brush=pg.mkBrush(colour))
            self.confirm_bar.setData(x=np.array([cx]), y=np.array([r]), top=np.array([high - r]),
                                     bottom=np.array([r - low]), pen=pg.mkPen(colour, width=2))
            self.confirm_label.setText("ABBA BAAB")
            self.confirm_label.setPos(cx, low)
        else:
            self.confirm.setData([], [])
            self.confirm_bar.setData(x=np.array([]), y=np.array([]))
            self.confirm_label.setText("")
        self._fit(model)

    def _fit(self, model: TuneProgress) -> None:
        """The range set, not left to auto-range: an empty plot's auto-range (no point yet) went degenerate under a
        real window system (an x axis of 0 to 4e-306) and stayed so when the points came. Across: every trial
        planned or shown, and the confirmation. Up: 1.0, every ratio and interval, an interval cut at twice
        the points' spread beyond them (a 6-second trial's interval can reach 14x: it runs off the edge)."""
        trials = model.shown()
        ran = max((t.n for t in trials), default=0)
        last = ran + 1 if model.shown_result() is not None else max(ran, model.planned() or 1)
        self.plotItem.setXRange(0.5, last + 0.5, padding=0)
        points = [1.0] + [float(t.objective) for t in trials if t.objective is not None]
        result = model.shown_result()
        c = result.confirm if result is not None else None
        if c and isinstance(c.get("ratio"), int | float):
            points.append(float(c["ratio"]))
        bars = [float(v) for t in trials for v in (t.ci_low, t.ci_high) if v is not None]
        if c:
            bars += [float(c[k]) for k in ("ci_low", "ci_high") if isinstance(c.get(k), int | float)]
        lo, hi = min(points), max(points)
        room = max(hi - lo, 0.1)
        lo, hi = min([lo, *bars]) if bars else lo, max([hi, *bars]) if bars else hi
        lo, hi = max(lo, min(points) - 2 * room), min(hi, max(points) + 2 * room)
        pad = 0.05 * (hi - lo) or 0.05
        self.plotItem.setYRange(lo - pad, hi + pad, padding=0)


class TuneResultsView(QWidget):
    """Takes its models: the live tune's and the replayed session's; `model` is the one on screen."""

    def __init__(self, live: TuneProgress, replayed: TuneProgress, parent: QWidget | None = None):
        super().__init__(parent)
        self.live, self.replayed = live, replayed
        self.model = live
        self._drawn = (-1, -1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        self.result_label = QLabel("")
        self.result_label.setObjectName("tune-result")
        self.result_label.setWordWrap(True)
        self.result_label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Minimum)
        self.result_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout.addWidget(self.result_label)
        row = QHBoxLayout()
        self.table = QTableWidget(0, len(TABLE_HEADER))
        self.table.setHorizontalHeaderLabels([h or "note" for h in TABLE_HEADER])
        self.table.verticalHeader().setVisible(False)
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.table.setWordWrap(False)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setStretchLastSection(True)
        row.addWidget(self.table, 5)
        self.plot = ConvergencePlot()
        row.addWidget(self.plot, 3)
        layout.addLayout(row, 1)

    def apply_theme(self, theme: Theme) -> None:
        self.plot.apply_theme(theme)

    def sizeHint(self) -> QSize:
        return QSize(640, 260)

    def reveal(self, window: QMainWindow) -> None:
        """Show the dock this view is in, about a third of the window's height: the plots above keep room for
        their trial bands and labels."""
        dock = self.parentWidget()
        if not isinstance(dock, QDockWidget):
            return
        dock.show()
        want = max(self.sizeHint().height(), window.height() // 3)
        QTimer.singleShot(0, lambda: window.resizeDocks([dock], [want], Qt.Orientation.Vertical))

    def show_model(self, model: TuneProgress) -> None:
        self.model = model
        self.refresh(force=True)

    def refresh(self, force: bool = False) -> None:
        """Redraw when the model on screen changed."""
        key = (id(self.model), self.model.version)
        if key == self._drawn and not force:
            return
        self._drawn = key
        m = self.model
        self._fill_table(m)
        self.plot.show_progress(m)
        result = m.shown_result()
        lines = [f"<b>{html.escape(m.status_text())}</b>" if result is not None else html.escape(m.status_text())]
        if result is not None and result.confirm:
            c = result.confirm
            lines.append(html.escape(f"ABBA BAAB confirmation: {confirm_text(c)} the baseline's, over "
                                     f"{sum(c.get('seconds') or [])} s"))
        self.result_label.setText("<br>".join(lines))

    def _fill_table(self, m: TuneProgress) -> None:
        rows = m.table()
        self.table.setRowCount(len(rows))
        lead = m.leader()
        result = m.shown_result()
        best_n = result.best if result is not None else (lead.n if lead is not None else None)
        for r, cells in enumerate(rows):
            for c, text in enumerate(cells):
                item = QTableWidgetItem(text)
                if c in NUMERIC:
                    item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                if cells[0] == str(best_n):
                    font = item.font()
                    font.setBold(True)
                    item.setFont(font)
                if c == len(cells) - 1 and ("ended early" in text or "refused" in text):
                    item.setForeground(QColor(EARLY))
                self.table.setItem(r, c, item)
        if rows:
            self.table.scrollToBottom()
